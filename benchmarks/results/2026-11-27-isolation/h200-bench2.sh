export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -c "import torch, triton, torch._dynamo, torch.profiler"
(cd .before && timeout 240 python3 benchmarks/verify_overhead.py --device cuda --repeats 1 --pool-size 4 --count 24 --json $OUT/before.json) > $OUT/before.txt 2>&1
timeout 240 python3 benchmarks/verify_overhead.py --device cuda --repeats 1 --pool-size 4 --count 24 --json $OUT/after.json > $OUT/after.txt 2>&1
tail -12 $OUT/before.txt; tail -12 $OUT/after.txt
