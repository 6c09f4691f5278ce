# Issue 37 item 4, the data half: improve pairs (`training.data --improve`) from real library code on a GPU.
# `bash benchmarks/results/2026-11-29-improve/gpu.sh` from the repository root on a one-GPU machine; logs to $OUT.
# First the GPU test of `training.improve` (cross-entropy at its published size), then `training.data --improve` on
# shard s0 of the harvested tasks of 2026-11-28 (torch.nn and transformers building blocks, duplicates removed:
# benchmarks/results/2026-11-28-harvest-gpu/tasks.tgz), every candidate verified and timed, stopped by --max-minutes.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; nproc
  python3 -c "import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__)"; } \
  > $OUT/gpu.txt 2>&1
cat $OUT/gpu.txt
TRITONIZE_CACHE=/tmp/cache-t timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/training/test_improve.py \
  > $OUT/tests-improve.log 2>&1
tail -n 5 $OUT/tests-improve.log
mkdir -p /tmp/t && tar xzf benchmarks/results/2026-11-28-harvest-gpu/tasks.tgz -C /tmp/t
TRITONIZE_CACHE=/tmp/cache-d timeout ${SECONDS_LEFT:-420} python3 -m training.data --output-dir /tmp/improve \
  --tasks /tmp/t/tasks/s0 --device cuda --timing --improve --workers 4 --trials 3 --max-minutes ${MINUTES:-5.5} \
  > /tmp/improve-run.log 2>&1
cp /tmp/improve-run.log $OUT/run.log; tail -n 8 $OUT/run.log
cd /tmp && tar czf $OUT/improve.tgz improve
