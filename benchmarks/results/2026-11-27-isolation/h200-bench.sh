set -x
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee $OUT/gpu.txt
# warm the page cache of torch and triton for both (the first import on a fresh machine reads from disk)
python3 -c "import torch, triton, torch._dynamo, torch.profiler" 
(cd .before && timeout 270 python3 benchmarks/verify_overhead.py --device cuda --repeats 3 --pool-size 4 --count 60 --json $OUT/before.json) 2>&1 | tee $OUT/before.txt | tail -25
timeout 270 python3 benchmarks/verify_overhead.py --device cuda --repeats 3 --pool-size 4 --count 60 --json $OUT/after.json 2>&1 | tee $OUT/after.txt | tail -25
