#!/usr/bin/env bash
# Issue 38: kernels for other sizes (`convert --dynamic`) on a GPU, and the GPU-marked tests of the code they touch.
# `bash benchmarks/results/2026-11-28-dynamic/gpu.sh STEP` from the repository root on a one-GPU machine; logs to $OUT.
#   tests  the inductor backend's GPU tests, the verifier's, and the dynamic ones (tests/model_server/test_dynamic.py)
#   bench  benchmarks/convert_inductor.py --dynamic on published KernelBench tasks: `auto` on five, `0` on
#          cross-entropy (its targets share the batch with the logits, so only dimension 0 of both can vary)
#   again  after the first two: matmul templates retuned with a dynamic M, a size the task cannot run skipped;
#          `bench` again, then the GPU tests that failed or did not finish in `tests`, and the dynamic ones
#   convs  after `again`: a candidate refusing a size the task cannot run either is not blamed; the two
#          convolution tasks with `auto` (batch and height vary), then the GPU tests of the verifier's changed calls
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; nproc
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > $OUT/gpu-$1.txt 2>&1
cat $OUT/gpu-$1.txt
case $1 in
  tests)
    TRITONIZE_CACHE=/tmp/cache-b timeout -k 10 560 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/model_server/test_inductor_backend.py > $OUT/tests-backend.log 2>&1 &
    (TRITONIZE_CACHE=/tmp/cache-d timeout -k 10 280 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/model_server/test_dynamic.py > $OUT/tests-dynamic.log 2>&1
     TRITONIZE_CACHE=/tmp/cache-v timeout -k 10 260 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/verifier/test_gpu.py tests/verifier/test_scaled_trials.py tests/verifier/test_rounding.py \
      tests/verifier/test_honest.py tests/verifier/test_fallback.py > $OUT/tests-verifier.log 2>&1) &
    wait; tail -n 3 $OUT/tests-*.log ;;
  bench)
    P=benchmarks/tasks/published
    TRITONIZE_CACHE=/tmp/cache timeout -k 10 440 python3 benchmarks/convert_inductor.py --device cuda --dynamic auto \
      $P/layernorm.py $P/matmul_4096.py $P/gemm_relu_divide.py $P/batched_matmul.py $P/conv2d_relu_bias_add.py \
      --json $OUT/dynamic-auto.json > $OUT/dynamic-auto.txt 2>&1
    TRITONIZE_CACHE=/tmp/cache timeout -k 10 120 python3 benchmarks/convert_inductor.py --device cuda --dynamic 0 \
      $P/cross_entropy.py --json $OUT/dynamic-0.json > $OUT/dynamic-0.txt 2>&1
    cat $OUT/dynamic-auto.txt $OUT/dynamic-0.txt | cut -c1-250 ;;
  again)
    bash $0 bench
    TRITONIZE_CACHE=/tmp/cache-t timeout -k 10 100 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/model_server/test_inductor_backend.py -k tuned_kernels_are_a_second > $OUT/tests-backend.log 2>&1
    TRITONIZE_CACHE=/tmp/cache-d timeout -k 10 100 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/model_server/test_dynamic.py tests/verifier/test_scaled_trials.py > $OUT/tests-dynamic.log 2>&1
    tail -n 2 $OUT/tests-*.log ;;
  convs)
    P=benchmarks/tasks/published
    TRITONIZE_CACHE=/tmp/cache timeout -k 10 200 python3 benchmarks/convert_inductor.py --device cuda --dynamic auto \
      $P/conv2d_relu_bias_add.py $P/conv2d.py --json $OUT/dynamic-convs.json > $OUT/dynamic-convs.txt 2>&1
    cut -c1-250 $OUT/dynamic-convs.txt
    TRITONIZE_CACHE=/tmp/cache-d timeout -k 10 150 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/model_server/test_dynamic.py tests/verifier/test_scaled_trials.py > $OUT/tests-dynamic.log 2>&1
    tail -n 2 $OUT/tests-*.log ;;
esac
