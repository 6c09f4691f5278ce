# Audit precision before (0f516b2, in BEFORE) and after (this tree): `tritonize audit --no-compile --format json`
# over TritonBench-G (thunlp/TritonBench's data/TritonBench_G_v1, a clone kept out of git, in TBG) and over the
# golden Inductor rewrites of tests/fixtures/inductor. Run from the repository root.
BEFORE=${BEFORE:-/tmp/prev} TBG=${TBG:-/tmp/tbg/data/TritonBench_G_v1}
OUT=benchmarks/results/2026-11-27-audit-precision
audit() { (cd "$1" && /usr/bin/time -f "%e s" python -c "import sys; sys.argv=['tritonize', 'audit', '--no-compile', \
  '--format', 'json', '$2']; from verifier.cli import main; main()"); }
audit "$BEFORE" "$TBG" > $OUT/tritonbench-g-before.json; audit . "$TBG" > $OUT/tritonbench-g-after.json
audit "$BEFORE" "$PWD/tests/fixtures/inductor" > $OUT/golden-inductor-before.json
audit . tests/fixtures/inductor > $OUT/golden-inductor-after.json
