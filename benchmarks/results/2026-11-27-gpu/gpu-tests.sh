# The gpu-marked tests on the device machine (issue 33, 34, 39). Run from the repository root; logs to $OUT.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee $OUT/gpu.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $OUT/gpu.txt
timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider tests/verifier/test_scaled_trials.py tests/verifier/test_rounding.py \
  tests/verifier/test_gpu.py tests/verifier/test_fallback.py > $OUT/verifier-gpu-tests.log 2>&1
tail -15 $OUT/verifier-gpu-tests.log
timeout 220 python3 -m pytest -q -m gpu -p no:cacheprovider tests/verifier/audit/test_compile_check.py tests/model_server/test_loop.py \
  tests/model_server/test_inductor_backend.py tests/model_server/test_transformers_backend.py > $OUT/other-gpu-tests.log 2>&1
tail -8 $OUT/other-gpu-tests.log
