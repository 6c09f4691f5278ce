# Issue 37 item 4: the improve prompts for GRPO (training.data --improve writes rl-improve.PROFILE.jsonl) and the
# speed reward over the seed, on one GPU: tests/training/test_improve.py's GPU test (cross-entropy at its published
# size). `bash benchmarks/results/2026-11-29-improve-grpo/gpu.sh` from the repository root; logs to $OUT.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > $OUT/gpu.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu.txt
cat $OUT/gpu.txt
TRITONIZE_CACHE=/tmp/cache-i timeout ${SECONDS_LEFT:-400} python3 -m pytest -q -m gpu -p no:cacheprovider -rA \
  tests/training/test_improve.py --durations 5 > $OUT/tests-improve.log 2>&1
tail -n 30 $OUT/tests-improve.log | cut -c1-300
