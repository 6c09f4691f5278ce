# $1 = tree, $2 = label
cd $1
for c in centred_scan cancelling_mean blocked_cumsum split_k_row_sum welford_variance online_softmax; do
  /work/main/.venv/bin/python -m verifier verify /work/main/tests/fixtures/rounding/$c/task.py /work/main/tests/fixtures/rounding/$c/candidate.py --device cpu --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print('$2', '$c', d['verdict'], d['phases'].get('reference_s'), d['phases'].get('total_s'))"
done
/work/main/.venv/bin/python -m verifier verify /work/main/tests/fixtures/tasks/matmul.py /work/main/tests/fixtures/zoo/matmul_tf32_inputs.py --device cpu --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print('$2', 'matmul_tf32_inputs', d['verdict'], d['phases'].get('reference_s'), d['phases'].get('total_s'))"
