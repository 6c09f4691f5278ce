# Issue 36: the whole sample again on H100s, after the baseline's compile moved off the GPU lock, one verification
# per task compiles its baselines, and the task's zygote imports Inductor's compiler ahead.
# `bash benchmarks/results/2026-11-28-h100-baseline/gpu.sh STEP` from the repository root on a 2-GPU machine; logs to
# $OUT. KernelBench files come from the recorded sample (benchmarks/results/2026-11-27-kernelbench-sample/sample.json),
# drawn again into .kb/sample with benchmarks/kernelbench_sample.py.
#   01, 23   convert_inductor.py on shards 0 and 1 (2 and 3) of the whole sample: every fourth problem, one per GPU
#   h100     shard 0 alone, on the one-H100 kind (the 2-GPU calls got H200s)
#   tests    the GPU tests of the inductor backend (GPU 0) and the verifier's (GPU 1)
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
case $1 in
  01) shard 0 0 & shard 1 1 & wait; tail -n 13 $OUT/shard-0.txt $OUT/shard-1.txt ;;
  h100) shard 0 0; tail -n 13 $OUT/shard-0.txt ;;
  23) shard 2 0 & shard 3 1 & wait; tail -n 13 $OUT/shard-2.txt $OUT/shard-3.txt ;;
  tests) CUDA_VISIBLE_DEVICES=0 TRITONIZE_CACHE=/tmp/cache-t0 timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider \
           tests/model_server/test_inductor_backend.py > $OUT/tests-backend.log 2>&1 &
         CUDA_VISIBLE_DEVICES=1 TRITONIZE_CACHE=/tmp/cache-t1 timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider \
           -v tests/verifier/test_gpu.py > $OUT/tests-verifier.log 2>&1 &
         wait; tail -n 8 $OUT/tests-backend.log $OUT/tests-verifier.log ;;
esac
