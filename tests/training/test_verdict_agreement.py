"""`benchmarks/verdict_agreement.py`: an evaluation's samples verified again by the real verifier on this CPU
(Triton's interpreter), each new verdict set against the one the evaluation recorded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.training.conftest import evaluation

ROOT = Path(__file__).parents[2]
AGREEMENT = ROOT / "benchmarks" / "verdict_agreement.py"
FIXTURES = ROOT / "tests" / "fixtures"
WRONG_RELU = (FIXTURES / "candidates" / "relu_ok.py").read_text().replace("tl.maximum(x, 0.0)", "tl.maximum(x, 1.0)")


def test_counts_where_the_new_device_disagrees_with_the_recorded_verdict(tmp_path):
    good = (FIXTURES / "candidates" / "relu_ok.py").read_text()
    # sample_2: a GPU's hiccup; sample_3: its file did not come back from the machine that evaluated. The task's
    # path is where the evaluation ran (another machine): the copy under OUT/tasks is read instead.
    recorded = [(good, "correct"), (WRONG_RELU, "incorrect"), (good, "runtime_error"), (None, "correct")]
    out = evaluation(tmp_path / "eval", {"relu": ((FIXTURES / "tasks" / "relu.py").read_text(), recorded)})

    result = subprocess.run(
        [sys.executable, str(AGREEMENT), str(out), "--device", "cpu", "--workers", "2", "--timeout", "60"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    summary = next(line for line in result.stdout.splitlines() if line.startswith("| 3 |"))
    assert summary.split(" | ")[1:4] == ["2 (66.7%)", "1", "2"], result.stdout
    assert "| correct | correct | 1 |" in result.stdout
    assert "| incorrect | incorrect | 1 |" in result.stdout
    assert "| runtime_error | correct | 1 |" in result.stdout
    assert f"{out}: 1 samples left out, their task or candidate file is not there" in result.stderr


def test_a_directory_that_is_no_evaluation_is_named(tmp_path):
    result = subprocess.run([sys.executable, str(AGREEMENT), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert f"{tmp_path / 'results.json'} does not exist" in result.stderr
