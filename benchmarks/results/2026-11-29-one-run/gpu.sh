# Issue 36: the whole recorded sample (seed 20261127, benchmarks/results/2026-11-27-kernelbench-sample/sample.json,
# drawn into .kb/sample with benchmarks/kernelbench_sample.py) on one H200, in three calls of one machine, after a
# task's baseline moved to a slot of its own and its memory footprint is measured first (candidates verify beside
# the baseline instead of waiting for it).
# `bash benchmarks/results/2026-11-29-one-run/gpu.sh STEP` from the repository root on a one-GPU machine; logs to $OUT.
#   a      the verifier's GPU tests of the baseline's slot and the task's memory, then shard 0 of the sample (every
#          third task)
#   b, c   shards 1 and 2; then the rest of the verifier's GPU tests of baselines
# Each shard has a cold tritonize cache of its own; the default pool (4 verifications at once), spares on.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
nproc >> $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
shard() {  # shard index
  TASKS=$(ls .kb/sample/*.py | sort | awk -v shard=$1 'NR % 3 == shard')
  TRITONIZE_CACHE=/tmp/cache-$1 TRITON_CACHE_DIR=/tmp/cache-$1/triton timeout ${SECONDS_LEFT:-540} \
    python3 benchmarks/convert_inductor.py --device cuda $TASKS --json $OUT/shard-$1.json > $OUT/shard-$1.txt 2>&1
  tail -n 20 $OUT/shard-$1.txt | cut -c1-220
}
case $1 in
  a)
    TRITONIZE_CACHE=/tmp/cache-t timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/verifier/test_gpu.py \
      -k "slot_of_its_own or tells_how_many" > $OUT/tests-verifier-a.log 2>&1
    tail -n 8 $OUT/tests-verifier-a.log
    SECONDS_LEFT=${SECONDS_LEFT:-440} shard 0 ;;
  b) shard 1 ;;
  c) SECONDS_LEFT=${SECONDS_LEFT:-420} shard 2
    TRITONIZE_CACHE=/tmp/cache-t timeout ${TEST_SECONDS:-120} python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/verifier/test_gpu.py -k "baseline" > $OUT/tests-verifier-c.log 2>&1
    tail -n 8 $OUT/tests-verifier-c.log ;;
esac
