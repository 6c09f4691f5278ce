# Issue 36, pools torch.compile hands to ATen, and what Inductor's tuning knobs gain, on the device machine, one
# step per call: `bash benchmarks/results/2026-11-27-pooling/gpu.sh STEP` from the repository root; logs to $OUT.
#   capture  golden captures of the published avg_pool3d task (copied to $OUT/fixtures.tgz)
#   pools    convert_inductor.py on avg_pool3d and KernelBench level 1 pooling problems (a clone's files, in .kb/)
#   tuning   inductor_tuning.py on KernelBench level 1 problems without a matmul
#   tuned    golden tuned captures of published tasks whose kernels tuning changes; convert_inductor.py on
#            KernelBench level 1 problems without a matmul, now with the tuned candidate
#   tests    the GPU tests of the inductor backend, the loop and the decompositions
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
CONVERT="timeout 400 python3 benchmarks/convert_inductor.py --device cuda"
case $1 in
  capture) timeout 150 python3 -m tests.model_server.inductor_fixtures capture --device cuda --as-backend \
             benchmarks/tasks/published/avg_pool3d.py > $OUT/capture.log 2>&1
           tail -5 $OUT/capture.log
           tar czf $OUT/fixtures.tgz -C tests/fixtures/inductor $(cd tests/fixtures/inductor && ls published_avg_pool3d*) ;;
  pools) $CONVERT avg_pool3d .kb/4[1-6]_* --json $OUT/pools.json > $OUT/pools.txt 2>&1; tail -12 $OUT/pools.txt ;;
  tuning) timeout 560 python3 benchmarks/inductor_tuning.py .kb/19_* .kb/23_* .kb/24_* .kb/26_* .kb/33_* .kb/35_* \
            .kb/36_* .kb/37_* .kb/40_* .kb/47_* .kb/49_* .kb/89_* .kb/95_* .kb/97_* .kb/42_* .kb/34_* \
            --json $OUT/tuning.json > $OUT/tuning.txt 2>&1; tail -20 $OUT/tuning.txt ;;
  tuned) timeout 150 python3 -m tests.model_server.inductor_fixtures capture --device cuda --tuned --jobs 3 \
           benchmarks/tasks/published/{cross_entropy,cumsum,max_reduction}.py > $OUT/capture-tuned.log 2>&1
         tail -5 $OUT/capture-tuned.log
         tar czf $OUT/fixtures-tuned.tgz -C tests/fixtures/inductor $(cd tests/fixtures/inductor && ls *-tuned.*)
         $CONVERT .kb/95_* .kb/49_* .kb/89_* .kb/36_* .kb/47_* .kb/34_* .kb/23_* --json $OUT/tuned.json \
           > $OUT/tuned.txt 2>&1; tail -12 $OUT/tuned.txt ;;
  tests) timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider tests/model_server/test_inductor_backend.py \
           tests/model_server/test_loop.py tests/model_server/test_convolutions.py tests/model_server/test_pooling.py \
           > $OUT/tests.log 2>&1; tail -15 $OUT/tests.log ;;
esac
