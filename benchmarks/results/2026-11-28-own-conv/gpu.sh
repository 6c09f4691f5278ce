# Issue 36: the project's implicit-GEMM convolution in place of cuDNN's, on the device machine, one step per call:
# `bash benchmarks/results/2026-11-28-own-conv/gpu.sh STEP` from the repository root; logs to $OUT.
# KernelBench files come from the recorded sample (benchmarks/results/2026-11-27-kernelbench-sample/sample.json).
#   kernel  benchmarks/conv_gemm.py: the kernel alone against cuDNN fp32, at each tile (conv_gemm.txt here)
#   a, b    convert_inductor.py on the sample's convolutions that kept cuDNN (hybrids), with the GPU test first in a
#   c       convert_inductor.py on the published convolution tasks
#   tests   the GPU tests of the inductor backend and its rewrite
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
CONVERT="python3 benchmarks/convert_inductor.py --device cuda"
S=.kb/sample
case $1 in
  kernel) python3 benchmarks/conv_gemm.py --json $OUT/conv_gemm.json > $OUT/conv_gemm.txt 2>&1 ;;
  a) timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/model_server/test_inductor_backend.py \
       -k "project_s_kernel" > $OUT/tests-a.log 2>&1; tail -5 $OUT/tests-a.log
     timeout 400 $CONVERT $S/l1_55_* $S/l2_31_* $S/l2_43_* $S/l2_54_* --json $OUT/a.json > $OUT/a.txt 2>&1; tail -8 $OUT/a.txt ;;
  b) timeout 570 $CONVERT $S/l2_17_* $S/l2_35_* $S/l2_46_* $S/l2_82_* $S/l2_90_* $S/l1_50_* --json $OUT/b.json \
       > $OUT/b.txt 2>&1; tail -10 $OUT/b.txt ;;
  c) timeout 570 $CONVERT conv2d conv2d_relu_bias_add conv2d_mish_mish conv1d pointwise_conv2d conv2d_dilated \
       --json $OUT/c.json > $OUT/c.txt 2>&1; tail -10 $OUT/c.txt ;;
  tests) timeout 570 python3 -m pytest -q -m gpu -p no:cacheprovider tests/model_server/test_inductor_backend.py \
           tests/model_server/test_inductor_rewrite.py > $OUT/tests.log 2>&1; tail -15 $OUT/tests.log ;;
esac
