# Issue 37: training data from real library code on a GPU: the building blocks of torch.nn, transformers, timm and
# torchvision (as installed on the device machine) converted by the built-in backend and verified on the GPU.
# `bash benchmarks/results/2026-11-28-harvest-gpu/gpu.sh STEP` from the repository root on a 4-GPU machine; one shard
# of `training.data` per GPU, outputs as $OUT/hv-N.tgz.
#   build   shards 0-3 from nothing, each stopped by --max-minutes. It harvested on the device machine: all four
#           shards were still harvesting after 10 minutes, and the call came back with nothing
#   tasks   shards 0-3 of the tasks harvested on the development machine (torch.nn and transformers 5.24, every size,
#           duplicates removed: .hv/tasks.tgz, written by `python -m training.harvest` and `training.dedup`), one
#           folder per GPU; outputs written back as they come (hv-N.tgz every minute)
#   resume  `tasks` again, from the outputs of a previous step carried in .hv/ (hv-N.tgz): done tasks are skipped
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; nproc
  python3 -c "import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__)"
  python3 -c "import timm, torchvision; print('timm', timm.__version__, 'torchvision', torchvision.__version__)"; } \
  > $OUT/gpu-$1.txt 2>&1
cat $OUT/gpu-$1.txt
MINUTES=${MINUTES:-6}
shard() {  # shard
  mkdir -p /tmp/hv-$1
  [ -f .hv/hv-$1.tgz ] && tar xzf .hv/hv-$1.tgz -C /tmp
  CUDA_VISIBLE_DEVICES=$1 TRITONIZE_CACHE=/tmp/cache-$1 timeout 585 python3 -m training.data --output-dir /tmp/hv-$1 \
    --harvest torch.nn transformers timm torchvision --shard $1/4 --device cuda --workers 4 --trials 3 \
    --max-minutes $MINUTES >> /tmp/hv-$1/run.log 2>&1
  tar czf $OUT/hv-$1.tgz -C /tmp hv-$1
}
given() {  # shard: training.data on the shard's folder of carried tasks, written back every minute
  mkdir -p /tmp/hv-$1
  [ -f .hv/hv-$1.tgz ] && tar xzf .hv/hv-$1.tgz -C /tmp
  (while sleep 60; do tar czf $OUT/.hv-$1.tgz -C /tmp hv-$1 && mv $OUT/.hv-$1.tgz $OUT/hv-$1.tgz; done) &
  SNAPSHOTS=$!
  CUDA_VISIBLE_DEVICES=$1 TRITONIZE_CACHE=/tmp/cache-$1 timeout -k 5 ${SHARD_SECONDS:-430} python3 -m training.data \
    --output-dir /tmp/hv-$1 --tasks /tmp/tasks/s$1 --device cuda --workers 4 --trials 3 --max-minutes $MINUTES \
    >> /tmp/hv-$1/run.log 2>&1
  kill $SNAPSHOTS; tar czf $OUT/.hv-$1.tgz -C /tmp hv-$1 && mv $OUT/.hv-$1.tgz $OUT/hv-$1.tgz
}
case $1 in
  tasks|resume) tar xzf .hv/tasks.tgz -C /tmp
    given 0 & given 1 & given 2 & given 3 & wait ;;&
  build) shard 0 & shard 1 & shard 2 & shard 3 & wait ;;&
  *)
    for n in 0 1 2 3; do grep "training.data:" /tmp/hv-$n/run.log | grep -v "\] " | tail -n 4; done
    cat /tmp/hv-?/progress.jsonl | python3 -c "
import collections, json, sys
outcomes = [json.loads(line) for line in sys.stdin]
print(len(outcomes), 'converted', collections.Counter(o['verdict'] for o in outcomes))" ;;
esac
