"""benchmarks/convert_inductor.py --seed-model: the benchmark converts through a model seeded by the built-in backend,
and each row counts the model's candidates apart from the built-in ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.model_server.tiny_model import build_tiny_llama

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "convert_inductor.py"


@pytest.mark.slow
def test_a_seeded_row_counts_the_model_s_candidates_and_keeps_the_built_in_kernel_when_none_verifies(tmp_path):
    """A scratch model writes no kernel: its two replies of round 2 are tried and fail, and the row says so."""
    model = build_tiny_llama(tmp_path / "model")
    rows = tmp_path / "run.json"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cpu", "--samples", "2", "--seed-model", str(model),
         "--max-tokens", "64", str(ROOT / "tests" / "fixtures" / "tasks" / "relu.py"), "--json", str(rows)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    row = json.loads(rows.read_text())[0]
    assert row["verdict"] == "correct" and row["label"].startswith("Inductor's"), row
    assert (row["model_candidates"], row["model_verified"], row["model_chosen"]) == (2, 0, False), row
    assert any(text.startswith("round 2: inductor+transformers made") for _, text in row["events"]), row["events"]
    assert row["generation_seconds"] is not None
    assert "[model: 0 of 2 verified]" in run.stdout, run.stdout
