# Issue 36: the recorded KernelBench sample again, whole, on one kind of card (two H100s of one host, one shard per
# GPU, each shard with its own tritonize cache, so each conversion sees one GPU and a cold cache as on a one-GPU
# machine). `bash benchmarks/results/2026-11-28-one-card/gpu.sh STEP` from the repository root; logs to $OUT.
# KernelBench files come from the recorded sample (benchmarks/results/2026-11-27-kernelbench-sample/sample.json).
#   01, 23  convert_inductor.py on shards 0 and 1 (2 and 3): every fourth problem of the sample, one shard per GPU
#   tests   the GPU tests of the inductor backend (GPU 0) and its rewrite (GPU 1)
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
nproc >> $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
S=.kb/sample
shard() {  # shard GPU
  TASKS=$(ls $S/*.py | sort | awk -v shard=$1 'NR % 4 == shard')
  CUDA_VISIBLE_DEVICES=$2 TRITONIZE_CACHE=/tmp/cache-$1 timeout 560 python3 benchmarks/convert_inductor.py \
    --device cuda $TASKS --json $OUT/shard-$1.json > $OUT/shard-$1.txt 2>&1
}
case $1 in
  01) shard 0 0 & shard 1 1 & wait; tail -13 $OUT/shard-0.txt $OUT/shard-1.txt ;;
  23) shard 2 0 & shard 3 1 & wait; tail -13 $OUT/shard-2.txt $OUT/shard-3.txt ;;
  tests) CUDA_VISIBLE_DEVICES=0 TRITONIZE_CACHE=/tmp/cache-t0 timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider \
           tests/model_server/test_inductor_backend.py > $OUT/tests-backend.log 2>&1 &
         CUDA_VISIBLE_DEVICES=1 TRITONIZE_CACHE=/tmp/cache-t1 timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider \
           tests/model_server/test_inductor_rewrite.py tests/model_server/test_conv_gemm.py > $OUT/tests-rewrite.log 2>&1 &
         wait; tail -8 $OUT/tests-backend.log $OUT/tests-rewrite.log ;;
esac
# The import measurement (imports.txt, capture_time.txt) ran as one command on one H200 after the tests:
#   python3 -c "import torch; from torch._inductor.compile_fx import compile_fx" timed alone twice, then three at once;
#   timeout 200 python3 benchmarks/capture_time.py relu_6gib gemm_relu_divide --device cuda
# Spare capture processes (after the sample run), one H200, the tail of this session's device time:
#   timeout 200 python3 benchmarks/convert_inductor.py --device cuda .kb/sample/l1_22_* .kb/sample/l2_30_* \
#     .kb/sample/l1_17_* .kb/sample/l2_54_* --json $OUT/spares.json > $OUT/spares.txt
