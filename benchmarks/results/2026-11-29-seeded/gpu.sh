# Issue 36 item 3: a trained model asked for a faster kernel than the built-in backend's (`--seed-from inductor`), on
# the GPU; then the inductor backend's GPU tests (the transposed convolution's final version, the shared test helper).
# `bash benchmarks/results/2026-11-29-seeded/gpu.sh STEP` from the repository root on a one-GPU machine; logs to $OUT.
# The model is carried in .i3model/ (ignored): a 14.6M-parameter scratch model (`training.scratch --size small`)
# fine-tuned by `training.sft` on the five tasks of `model-tasks.txt`, as `model.sh` in this folder records.
#   seeded  benchmarks/convert_inductor.py --seed-model .i3model on two of the model's training tasks (fixture sizes)
#           and one published task it never saw
#   tests   the inductor backend's GPU tests
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
nproc >> $OUT/gpu-$1.txt
python3 -c "import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
F=tests/fixtures/tasks
case $1 in
  seeded)
    TRITONIZE_CACHE=/tmp/cache-s timeout 280 python3 benchmarks/convert_inductor.py --device cuda --seed-model .i3model \
      $F/softmax.py $F/layernorm.py benchmarks/tasks/published/gelu.py --json $OUT/seeded.json > $OUT/seeded.txt 2>&1
    tail -n 12 $OUT/seeded.txt | cut -c1-250 ;;
  tests)
    TRITONIZE_CACHE=/tmp/cache-t timeout ${SECONDS_LEFT:-540} python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/model_server/test_inductor_backend.py ${TESTS:+-k "$TESTS"} > $OUT/tests-backend-${PART:-a}.log 2>&1
    tail -n 15 $OUT/tests-backend-${PART:-a}.log ;;
esac
