# Issue 37 item 1: the transformers tasks that the composite-config and conv-layer changes added (807 files, those
# of this folder's tasks.txt not in ../2026-11-28-harvest-transformers/tasks.txt, copied into .hv/new outside git),
# converted into verified pairs on one GPU for MINUTES minutes. `bash benchmarks/results/2026-11-29-harvest-conv/gpu.sh`
# from the repository root; logs and the output folder (new.tgz) to $OUT.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > $OUT/gpu.txt
python3 -c "import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__)" >> $OUT/gpu.txt
cat $OUT/gpu.txt
TRITONIZE_CACHE=/tmp/cache-d timeout ${SECONDS_LEFT:-300} python3 -m training.data --tasks .hv/new --device cuda \
  --workers 4 --trials 3 --max-minutes ${MINUTES:-3.5} --output-dir $OUT/new > $OUT/run.log 2>&1
tail -n 5 $OUT/run.log
python3 benchmarks/data_outcomes.py $OUT/new --json $OUT/outcomes.json > $OUT/outcomes.txt 2>&1; head -n 30 $OUT/outcomes.txt
cd $OUT && tar czf new.tgz new && rm -rf new
