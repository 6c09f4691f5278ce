# Issue 36: the project's transposed convolution kernel (by output phase) in place of cuDNN's.
# `bash benchmarks/results/2026-11-29-transposed/gpu.sh STEP` from the repository root on a one-GPU machine; logs to $OUT.
#   kernel   benchmarks/conv_gemm.py on KernelBench's transposed shapes, channels last (as Inductor hands them to
#            cuDNN), then the inductor backend's GPU tests of convolutions
#   convert  benchmarks/convert_inductor.py on KernelBench's transposed convolution problems (level 1 and 2, copied
#            from a KernelBench clone into .kb/transposed); TASKS selects them (a pattern over the file names)
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
nproc >> $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
case $1 in
  kernel)
    timeout 250 python3 benchmarks/conv_gemm.py --layouts last --only kb-l2-100-transposed-3d kb-l1-57-transposed \
      kb-l1-64-transposed-1d kb-l1-61-transposed-3d kb-l1-73-transposed-3d-grouped kb-l1-77-transposed-3d-dilated \
      kb-l1-74-transposed-1d-dilated --json $OUT/kernel.json > $OUT/kernel.txt 2>&1
    cat $OUT/kernel.txt
    TRITONIZE_CACHE=/tmp/cache-t timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/model_server/test_inductor_backend.py -k "conv" > $OUT/tests-backend.log 2>&1
    tail -n 15 $OUT/tests-backend.log ;;
  convert)
    TASKS=$(ls .kb/transposed/*.py | grep -E "${TASKS:-.}")
    TRITONIZE_CACHE=/tmp/cache-c timeout ${SECONDS_LEFT:-540} python3 benchmarks/convert_inductor.py --device cuda \
      $TASKS --json $OUT/convert-${PART:-a}.json > $OUT/convert-${PART:-a}.txt 2>&1
    tail -n 30 $OUT/convert-${PART:-a}.txt | cut -c1-250 ;;
esac
