# Issue 36: Inductor's reduction strategies (persistent, looped, split, cooperative) on the published reduction and
# norm tasks; the inductor backend's GPU tests; the project's matmul on an irregular shape, its aligned copy included.
# `bash benchmarks/results/2026-11-28-reductions/gpu.sh STEP` from the repository root on a 4-GPU machine; logs to $OUT.
#   probe  GPUs 0, 1 and 3: benchmarks/inductor_tuning.py on the reduction tasks (three parts); GPU 2: the inductor
#          backend's GPU tests; GPU 3 first: benchmarks/matmul_gemm.py on the irregular and L1 17 shapes
#   sample the whole recorded sample (benchmarks/results/2026-11-27-kernelbench-sample/sample.json, drawn into .kb/sample
#          with benchmarks/kernelbench_sample.py), every fourth problem on each GPU, after the looped reductions and
#          the matmul's peeled K tail and padded wrap
#   alone  shard 1 alone on the one-H200 kind: the conversion times of `sample` came from four shards sharing a host
#   more   GPU 0: the inductor backend's GPU tests that this part touches; GPU 1: convert_inductor.py on the reduction
#          tasks; GPU 2: matmul_gemm.py on the irregular shape, then KernelBench L1 8 (irregular matmul, copied from
#          a KernelBench clone into .kb/extra) converted; GPU 3: golden captures with looped reductions
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
nproc >> $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
P=benchmarks/tasks/published
PART_A="$P/softmax_wide.py $P/log_softmax_wide.py $P/layernorm.py $P/rmsnorm.py $P/groupnorm.py $P/instancenorm.py \
  $P/batchnorm2d_train.py"
PART_B="$P/cross_entropy.py $P/kl_div_loss.py $P/cosine_similarity_loss.py $P/sum_reduction.py $P/mean_reduction.py \
  $P/max_reduction.py $P/min_reduction.py"
PART_C="$P/argmax.py $P/argmin.py $P/cumsum.py $P/mse_loss.py $P/hinge_loss.py $P/huber_loss.py"
S=.kb/sample
shard() {  # shard GPU
  TASKS=$(ls $S/*.py | sort | awk -v shard=$1 'NR % 4 == shard')
  CUDA_VISIBLE_DEVICES=$2 TRITONIZE_CACHE=/tmp/cache-$1 timeout ${SHARD_SECONDS:-560} python3 benchmarks/convert_inductor.py \
    --device cuda --workers 4 $TASKS --json $OUT/shard-$1.json > $OUT/shard-$1.txt 2>&1
}
REDUCTIONS="$P/rmsnorm.py $P/layernorm.py $P/softmax_wide.py $P/log_softmax_wide.py $P/cross_entropy.py \
  $P/instancenorm.py $P/cosine_similarity_loss.py $P/batchnorm2d_train.py"
case $1 in
  alone) shard 1 0; tail -n 12 $OUT/shard-1.txt ;;  # shard 1 alone on a one-GPU machine (16 cores)
  sample) shard 0 0 & shard 1 1 & shard 2 2 & shard 3 3 & wait
    python3 benchmarks/convert_inductor.py --table $OUT/shard-?.json | tail -n 14 ;;
  more)
    CUDA_VISIBLE_DEVICES=0 TRITONIZE_CACHE=/tmp/cache-t timeout 400 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/model_server/test_inductor_backend.py -k "softmax or no_library or large_k or long_k" \
      > $OUT/tests-backend-$1.log 2>&1 &
    CUDA_VISIBLE_DEVICES=1 TRITONIZE_CACHE=/tmp/cache-r timeout 400 python3 benchmarks/convert_inductor.py --device cuda \
      --workers 4 $REDUCTIONS --json $OUT/reductions.json > $OUT/reductions.txt 2>&1 &
    (CUDA_VISIBLE_DEVICES=2 timeout 100 python3 benchmarks/matmul_gemm.py --only irregular \
      --json $OUT/sweep-peeled.json > $OUT/sweep-peeled.txt 2>&1
     CUDA_VISIBLE_DEVICES=2 TRITONIZE_CACHE=/tmp/cache-i timeout 280 python3 benchmarks/convert_inductor.py --device cuda \
      --workers 4 .kb/extra/l1_8_*.py --json $OUT/irregular.json > $OUT/irregular.txt 2>&1) &
    (CUDA_VISIBLE_DEVICES=3 timeout 380 python3 -m tests.model_server.inductor_fixtures capture --device cuda --looped \
      $P/rmsnorm.py $P/layernorm.py $P/cross_entropy.py > $OUT/fixtures.txt 2>&1
     tar czf $OUT/fixtures.tgz tests/fixtures/inductor/*looped*) &
    wait; tail -n 4 $OUT/tests-backend-$1.log; cat $OUT/sweep-peeled.txt $OUT/fixtures.txt; tail -n 12 $OUT/irregular.txt
    python3 benchmarks/convert_inductor.py --table $OUT/reductions.json | cut -c1-220 ;;
  probe)
    CUDA_VISIBLE_DEVICES=0 timeout 540 python3 benchmarks/inductor_tuning.py $PART_A --json $OUT/tuning-a.json \
      > $OUT/tuning-a.txt 2>&1 &
    CUDA_VISIBLE_DEVICES=1 timeout 540 python3 benchmarks/inductor_tuning.py $PART_B --json $OUT/tuning-b.json \
      > $OUT/tuning-b.txt 2>&1 &
    CUDA_VISIBLE_DEVICES=2 TRITONIZE_CACHE=/tmp/cache-t timeout 540 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/model_server/test_inductor_backend.py > $OUT/tests-backend-$1.log 2>&1 &
    (CUDA_VISIBLE_DEVICES=3 timeout 150 python3 benchmarks/matmul_gemm.py --only irregular kb-l1-17-shape \
      --json $OUT/sweep-irregular.json > $OUT/sweep-irregular.txt 2>&1
     CUDA_VISIBLE_DEVICES=3 timeout 380 python3 benchmarks/inductor_tuning.py $PART_C --json $OUT/tuning-c.json \
      > $OUT/tuning-c.txt 2>&1) &
    wait; grep -hv "^ *$" $OUT/tuning-?.txt | tail -n 40; tail -n 6 $OUT/tests-backend-$1.log
    cat $OUT/sweep-irregular.txt ;;
esac
cd $OUT && tar czf $1.tgz --remove-files $(ls | grep -v '\.tgz$')  # the device returns at most 8 files
