"""`benchmarks/eval_phases.py`: where a timed evaluation's time went, from the phase seconds its samples record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PHASES = Path(__file__).parents[2] / "benchmarks" / "eval_phases.py"


def sample(correct: bool, **phases: float) -> dict:
    return {"verdict": "correct" if correct else "incorrect", "correct": correct, "phases": phases}


def evaluation(folder: Path, tasks: list[tuple[float, dict]]) -> Path:
    """A training.eval output directory of one-sample tasks: (the task's seconds, its sample)."""
    records = [
        {"name": f"t{i}", "id": f"id{i}", "samples": [s], "correct": int(s["correct"]), "seconds": seconds}
        for i, (seconds, s) in enumerate(tasks)
    ]
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"tasks": records, "totals": {}}))
    return folder


def run(*outs: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PHASES), *map(str, outs)], capture_output=True, text=True, timeout=60)


def cells(*outs: Path) -> list[list[str]]:
    """The table's rows as cells, without their label."""
    result = run(*outs)
    assert result.returncode == 0, result.stderr
    rows = [line.strip("| ").split(" | ") for line in result.stdout.splitlines() if line.startswith("| /")]
    return [row[1:] for row in rows]


def test_the_timing_share_of_the_span_and_the_waits_outside_any_phase(tmp_path):
    out = evaluation(
        tmp_path / "timed",
        [
            # 40 s in all: 1 starting, 4 and 5 s of runs side by side (5 count), 6 timing, so 28 s waiting
            (
                100.0,
                sample(
                    True,
                    total_s=40.0,
                    start_s=1.0,
                    candidate_s=4.0,
                    candidate_load_s=2.0,
                    reference_s=5.0,
                    timing_s=6.0,
                ),
            ),
            (160.0, sample(True, total_s=20.0, start_s=0.0, candidate_s=3.0, reference_s=3.0, timing_s=4.0)),
            (130.0, sample(False, total_s=9.0, start_s=2.0, candidate_s=5.0, reference_s=6.0, sanitize_s=1.0)),
        ],
    )
    [row] = cells(out)
    # span 160 - 100 = 60 s, timing 6 + 4 = 10 s: a sixth of it
    assert row == ["3", "2", "60", "10", "17%", "5.0", "20.5", "0.0"]


def test_an_evaluation_without_phases_shows_dashes(tmp_path):
    out = evaluation(tmp_path / "old", [(10.0, {"verdict": "correct", "correct": True})])
    assert cells(out) == [["1", "1", "0", "-", "-", "-", "-", "-"]]


def test_a_directory_that_is_no_evaluation_is_named(tmp_path):
    result = run(tmp_path / "missing")
    assert result.returncode == 2
    assert "missing" in result.stderr and "results.json does not exist" in result.stderr


def test_a_record_without_its_fields_is_named(tmp_path):
    out = evaluation(tmp_path / "broken", [(1.0, {"verdict": "correct", "correct": True, "phases": {"start_s": 1.0}})])
    result = run(out)
    assert result.returncode == 2
    assert f"{out}: a task or sample record lacks 'total_s'" in result.stderr
