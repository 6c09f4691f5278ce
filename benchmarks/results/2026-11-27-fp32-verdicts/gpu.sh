# Issue 34 on the device machine, one step per call (the device allows 10 minutes a call): run from the repository
# root as `bash benchmarks/results/2026-11-27-fp32-verdicts/gpu.sh STEP`; logs and JSON to $OUT.
#   tests      the rounding cases, the scaled trials and the honest corpus on the GPU
#   zoo        the zoo, GPU faults, the fallback kernels, and the honest corpus again
#   other      the other GPU tests (compile check, loop, inductor and transformers backends)
#   after      verify_overhead --published on this tree
#   before     verify_overhead --published on 21b2e51 (before issue 34's scaled trials and noise; in .before34)
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
PYTEST="python3 -m pytest -q -m gpu -p no:cacheprovider --durations=15"
case $1 in
  tests) timeout 560 $PYTEST tests/verifier/test_rounding.py tests/verifier/test_honest.py \
           tests/verifier/test_scaled_trials.py > $OUT/tests.log 2>&1; tail -40 $OUT/tests.log ;;
  zoo) timeout 360 $PYTEST tests/verifier/test_gpu.py tests/verifier/test_fallback.py > $OUT/zoo.log 2>&1
       tail -25 $OUT/zoo.log
       timeout 200 $PYTEST tests/verifier/test_honest.py > $OUT/honest.log 2>&1; tail -25 $OUT/honest.log ;;
  other) timeout 300 $PYTEST tests/verifier/audit/test_compile_check.py tests/model_server/test_loop.py \
         tests/model_server/test_inductor_backend.py tests/model_server/test_transformers_backend.py > $OUT/other.log 2>&1
       tail -8 $OUT/other.log ;;
  after) timeout 570 python3 benchmarks/verify_overhead.py --device cuda --published argmax batched_matmul batchnorm2d_train conv2d cross_entropy cumsum log_softmax_wide matmul_4096 relu_6gib softmax_wide --json $OUT/after.json > $OUT/after.txt 2>&1
         tail -30 $OUT/after.txt ;;
  before) cd .before34 && timeout 570 python3 benchmarks/verify_overhead.py --device cuda --published argmax batched_matmul batchnorm2d_train conv2d cross_entropy cumsum log_softmax_wide matmul_4096 relu_6gib softmax_wide \
            --json $OUT/before.json > $OUT/before.txt 2>&1; tail -30 $OUT/before.txt ;;
esac
