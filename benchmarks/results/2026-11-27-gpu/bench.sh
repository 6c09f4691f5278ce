# verify_overhead on the GPU: the code before issue 33's layers (f5cd03e, in .before33), before issue 39's front
# door (525f164, in .before) and now, one after the other on one warm machine. Logs and JSON to $OUT.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -c "import torch, triton, torch._dynamo, torch.profiler"
ARGS="--device cuda --repeats 1 --pool-size 4 --count 24"
for run in "after ." "before39 .before" "before33 .before33"; do
  set -- $run
  (cd $2 && timeout 175 python3 benchmarks/verify_overhead.py $ARGS --json $OUT/$1.json) > $OUT/$1.txt 2>&1
  echo "== $1"; tail -14 $OUT/$1.txt
done
