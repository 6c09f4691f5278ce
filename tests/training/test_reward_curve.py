"""`benchmarks/reward_curve.py` on a run directory written by hand in training.grpo's formats: the curve per step,
and the share of replies verified correct per op of the synthetic tasks, in each half of the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from training import grpo, runs, synth

REWARD_CURVE = Path(__file__).parents[2] / "benchmarks" / "reward_curve.py"


def write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def reply(task: synth.SynthTask, passed: bool) -> dict:
    """A rewards.jsonl line as far as the per-op table reads it."""
    return {"task_first_line": task.source.splitlines()[0], "passed": passed}


def test_the_share_correct_per_op_is_counted_in_each_half_of_the_run(tmp_path):
    first, second = (synth.generate(seed, families=("elementwise", "activation"), max_ops=2) for seed in (5001, 5002))
    assert not set(synth.ops_of(first.source)) & set(synth.ops_of(second.source))
    write(tmp_path / runs.LOG, [{"step": 1, "reward": 0.5, "verdicts/correct": 0.25}])
    write(tmp_path / grpo.STEPS_LOG, [{"step": 1, "seconds": 3.0}])
    replies = [reply(first, False), reply(first, False), reply(second, True), {"task_first_line": '"""Other."""'}]
    replies += [reply(first, True), reply(first, True), reply(second, False), reply(second, True)]
    write(tmp_path / grpo.REWARDS_LOG, replies)

    result = subprocess.run(
        [sys.executable, str(REWARD_CURVE), str(tmp_path), "--plot", str(tmp_path / "curve.png")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "| 1 | 0.500 | 0.250 | - | 3.0 |" in result.stdout
    for op in set(synth.ops_of(first.source)):
        assert f"| {op} | 2 | 0.000 | 2 | 1.000 |" in result.stdout
    for op in set(synth.ops_of(second.source)):
        assert f"| {op} | 1 | 1.000 | 2 | 0.500 |" in result.stdout
