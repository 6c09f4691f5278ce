# Issue 36: the project's own matmul kernel (split K where the output has few tiles) in place of cuBLAS, on the
# sample's matmul problems, and the GPU tests of the inductor backend.
# `bash benchmarks/results/2026-11-28-own-matmul/gpu.sh STEP` from the repository root on a 2-GPU machine; logs to
# $OUT. KernelBench files come from the recorded sample (benchmarks/results/2026-11-27-kernelbench-sample/sample.json),
# drawn again into .kb/sample with benchmarks/kernelbench_sample.py.
#   run    GPU 0: the inductor backend's GPU tests; GPU 1: convert_inductor.py on the sample's 13 matmul problems
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
nproc >> $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
S=.kb/sample
MATMULS=$(ls $S/l1_6_* $S/l1_7_* $S/l1_10_* $S/l1_14_* $S/l1_15_* $S/l1_17_* $S/l2_29_* $S/l2_30_* $S/l2_40_* \
  $S/l2_51_* $S/l2_84_* $S/l2_95_* $S/l2_98_*)
case $1 in
  run) CUDA_VISIBLE_DEVICES=0 TRITONIZE_CACHE=/tmp/cache-t0 timeout 520 python3 -m pytest -q -m gpu -p no:cacheprovider \
         tests/model_server/test_inductor_backend.py > $OUT/tests-backend.log 2>&1 &
       CUDA_VISIBLE_DEVICES=1 TRITONIZE_CACHE=/tmp/cache-m timeout 520 python3 benchmarks/convert_inductor.py \
         --device cuda --workers 4 $MATMULS --json $OUT/matmuls.json > $OUT/matmuls.txt 2>&1 &
       wait; tail -n 8 $OUT/tests-backend.log; tail -n 20 $OUT/matmuls.txt ;;
esac
# retest: the one GPU test whose expected progress note changed with the own matmul ranked first, after `run`
if [ "$1" = retest ]; then
  CUDA_VISIBLE_DEVICES=0 TRITONIZE_CACHE=/tmp/cache-r timeout 520 python3 -m pytest -q -m gpu -p no:cacheprovider \
    tests/model_server/test_inductor_backend.py -k hybrid_is_verified_while > $OUT/tests-retest.log 2>&1
  tail -n 4 $OUT/tests-retest.log
fi
# sweep: the kernel alone against cuBLAS at each tile (benchmarks/matmul_gemm.py), KernelBench L1 6's shape at
# several splits on GPU 0, the other shapes on GPU 1
if [ "$1" = sweep ]; then
  CUDA_VISIBLE_DEVICES=0 timeout 580 python3 benchmarks/matmul_gemm.py --only kb-l1-6-large-k --splits 8 16 32 64 128 \
    --json $OUT/sweep-large-k.json > $OUT/sweep-large-k.txt 2>&1 &
  CUDA_VISIBLE_DEVICES=1 timeout 580 python3 benchmarks/matmul_gemm.py --only kb-l1-17-shape kb-l1-7-small-k square-4096 \
    irregular --json $OUT/sweep-others.json > $OUT/sweep-others.txt 2>&1 &
  wait; cat $OUT/sweep-large-k.txt $OUT/sweep-others.txt
fi
