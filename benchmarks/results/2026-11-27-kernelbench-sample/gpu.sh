# Issue 36's recorded random sample, on the device machine, one step per call:
# `bash benchmarks/results/2026-11-27-kernelbench-sample/gpu.sh STEP` from the repository root; logs to $OUT.
# The files come from `benchmarks/kernelbench_sample.py CLONE --seed 20261127 --out .kb/sample --list sample.json`.
#   0, 1, 2, 3  convert_inductor.py on every fourth problem of the sample
#   convs       the sample's convolutions with few input channels or one group per channel, again, after the
#               patches-product and depthwise rewrites; KernelBench L2 72 and the published depthwise task beside
#   few         the few-channel ones again, K padded to a multiple of 32 (so the tf32x3 tiles apply)
#   tests       golden capture of the published depthwise task; the GPU tests of the convolution rewrites
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
CONVERT="timeout 570 python3 benchmarks/convert_inductor.py --device cuda"
S=.kb/sample
case $1 in
  [0-3]) TASKS=$(ls $S/*.py | sort | awk -v shard=$1 'NR % 4 == shard')
         $CONVERT $TASKS --json $OUT/shard-$1.json > $OUT/shard-$1.txt 2>&1; tail -14 $OUT/shard-$1.txt ;;
  convs) $CONVERT $S/l1_54_* $S/l1_85_* $S/l1_59_* $S/l1_83_* $S/l1_66_* $S/l1_86_* $S/l1_50_* $S/l2_79_* $S/l2_72_* \
           depthwise_conv2d --json $OUT/convs.json > $OUT/convs.txt 2>&1; tail -18 $OUT/convs.txt ;;
  few) $CONVERT $S/l1_54_* $S/l1_59_* $S/l1_66_* $S/l1_50_* $S/l2_79_* $S/l2_72_* --json $OUT/few.json > $OUT/few.txt 2>&1
       tail -14 $OUT/few.txt ;;
  tests) timeout 60 python3 -m tests.model_server.inductor_fixtures capture --device cuda --as-backend \
           benchmarks/tasks/published/depthwise_conv2d.py > $OUT/capture.log 2>&1
         tail -5 $OUT/capture.log
         tar czf $OUT/fixtures.tgz -C tests/fixtures/inductor $(cd tests/fixtures/inductor && ls published_depthwise_conv2d*)
         timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/model_server/test_inductor_backend.py \
           -k "few_channel or did_not_take" > $OUT/tests.log 2>&1; tail -15 $OUT/tests.log ;;
esac
