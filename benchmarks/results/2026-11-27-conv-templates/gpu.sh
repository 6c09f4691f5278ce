# Issue 36, convolutions the templates did not take (transposed, dilated, 1-D), on the device machine, one step per
# call: `bash benchmarks/results/2026-11-27-conv-templates/gpu.sh STEP` from the repository root; logs to $OUT.
#   capture    golden captures of the published convolution tasks that changed (copied to $OUT/fixtures)
#   published  convert_inductor.py on those published tasks
#   kb1, kb2   convert_inductor.py on KernelBench level 1 convolution problems (a clone's files, carried in .kb/)
#   dilated    the dilated ones again, after the dilation phases
#   tests      the GPU tests of the inductor backend and the loop
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/gpu-$1.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/gpu-$1.txt
cat $OUT/gpu-$1.txt
PUBLISHED="conv1d conv_transpose2d conv_transpose3d_strided_grouped conv2d_dilated"
CONVERT="timeout 560 python3 benchmarks/convert_inductor.py --device cuda"
case $1 in
  capture) timeout 560 python3 -m tests.model_server.inductor_fixtures capture --device cuda --as-backend --jobs 2 \
             $(for t in $PUBLISHED; do echo benchmarks/tasks/published/$t.py; done) > $OUT/capture.log 2>&1
           tail -20 $OUT/capture.log
           tar czf $OUT/fixtures.tgz -C tests/fixtures/inductor $(cd tests/fixtures/inductor && ls published_conv*) ;;
  published) $CONVERT $PUBLISHED conv2d --json $OUT/published.json > $OUT/published.txt 2>&1; tail -12 $OUT/published.txt ;;
  kb1) $CONVERT .kb/57_* .kb/64_* .kb/67_* .kb/74_* .kb/78_* .kb/80_* --json $OUT/kb1.json > $OUT/kb1.txt 2>&1
       tail -12 $OUT/kb1.txt ;;
  kb2) $CONVERT .kb/73_* .kb/79_* .kb/81_* .kb/77_* .kb/65_* .kb/72_* --json $OUT/kb2.json > $OUT/kb2.txt 2>&1
       tail -12 $OUT/kb2.txt ;;
  dilated) $CONVERT conv2d_dilated .kb/80_* .kb/74_* .kb/76_* --json $OUT/dilated.json > $OUT/dilated.txt 2>&1
       tail -12 $OUT/dilated.txt ;;
  tests) timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider tests/model_server/test_inductor_backend.py \
           tests/model_server/test_loop.py tests/model_server/test_convolutions.py > $OUT/tests.log 2>&1; tail -15 $OUT/tests.log ;;
esac
