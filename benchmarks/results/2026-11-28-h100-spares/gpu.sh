# Issue 36: conversion time with spare capture processes, on H100s. `bash benchmarks/results/2026-11-28-h100-spares/gpu.sh
# STEP` from the repository root on a 2-GPU machine; logs to $OUT. KernelBench files come from the recorded sample
# (benchmarks/results/2026-11-27-kernelbench-sample/sample.json), copied to .kb/sample.
#   workers  ten tasks of the sample twice at once: 2 verifier workers on GPU 0, 4 on GPU 1 (each its own cache);
#            run (workers/) before the baseline compile shared the GPU, so every capture there waited 6-12 s for it
#   01, 23   convert_inductor.py on shards 0 and 1 (2 and 3) of the whole sample: every fourth problem, one per GPU
#   tests    the GPU tests of the inductor backend (GPU 0) and its rewrite (GPU 1)
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
nproc >> $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
S=.kb/sample
WORKERS=${WORKERS:-4}
shard() {  # shard GPU
  TASKS=$(ls $S/*.py | sort | awk -v shard=$1 'NR % 4 == shard')
  CUDA_VISIBLE_DEVICES=$2 TRITONIZE_CACHE=/tmp/cache-$1 timeout 560 python3 benchmarks/convert_inductor.py \
    --device cuda --workers $WORKERS $TASKS --json $OUT/shard-$1.json > $OUT/shard-$1.txt 2>&1
}
ten() {  # WORKERS GPU
  TASKS=$(ls $S/l1_22_* $S/l1_17_* $S/l2_54_* $S/l2_72_* $S/l1_92_* $S/l2_30_* $S/l1_83_* $S/l2_17_* $S/l1_59_* $S/l2_95_*)
  CUDA_VISIBLE_DEVICES=$2 TRITONIZE_CACHE=/tmp/cache-w$1 timeout 560 python3 benchmarks/convert_inductor.py \
    --device cuda --workers $1 $TASKS --json $OUT/workers-$1.json > $OUT/workers-$1.txt 2>&1
}
case $1 in
  workers) ten 2 0 & ten 4 1 & wait; tail -n 13 $OUT/workers-2.txt $OUT/workers-4.txt ;;
  01) shard 0 0 & shard 1 1 & wait; tail -n 13 $OUT/shard-0.txt $OUT/shard-1.txt ;;
  23) shard 2 0 & shard 3 1 & wait; tail -n 13 $OUT/shard-2.txt $OUT/shard-3.txt ;;
  tests) CUDA_VISIBLE_DEVICES=0 TRITONIZE_CACHE=/tmp/cache-t0 timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider \
           tests/model_server/test_inductor_backend.py > $OUT/tests-backend.log 2>&1 &
         CUDA_VISIBLE_DEVICES=1 TRITONIZE_CACHE=/tmp/cache-t1 timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider \
           tests/model_server/test_inductor_rewrite.py tests/model_server/test_conv_gemm.py \
           tests/verifier/test_gpu.py::test_the_baseline_compiles_beside_other_gpu_work_and_only_its_timing_waits_for_the_gpu_alone \
           > $OUT/tests-rewrite.log 2>&1 &
         wait; tail -n 8 $OUT/tests-backend.log $OUT/tests-rewrite.log ;;
esac
