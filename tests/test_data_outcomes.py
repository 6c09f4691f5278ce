"""benchmarks/data_outcomes.py: the outcomes of `training.data` shards, counted by source, size and family."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from training import data

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "data_outcomes.py"
TASK = (ROOT / "tests" / "fixtures" / "tasks" / "relu.py").read_text()


def _shard(directory: Path, rows: list[tuple[str, str, dict]]) -> None:
    """An output directory as `training.data` writes it: each task's RL record, its outcome, and a pair if kept;
    ids from the origins."""
    directory.mkdir()
    with (
        (directory / "rl.autotriton.jsonl").open("w") as rl,
        (directory / "progress.jsonl").open("w") as progress,
        (directory / "sft.autotriton.jsonl").open("w") as sft,
    ):
        for origin, source, outcome in rows:
            task = data.Task(
                hashlib.sha256(origin.encode()).hexdigest()[:16], origin, source, origin, ("elementwise",), "train", "c"
            )
            rl.write(json.dumps(data.record(task, "autotriton")) + "\n")
            progress.write(json.dumps({"id": task.id, **outcome}) + "\n")
            if outcome["kept"]:
                sft.write(json.dumps({**data.record(task, "autotriton"), "completion": "", "report": {}}) + "\n")


def test_outcomes_are_counted_by_source_and_size_with_reasons_named(tmp_path):
    failed = {
        "kept": False,
        "verdict": "not_converted",
        "message": "x.py: the backend: the layout of buf12 is not known",
    }
    _shard(
        tmp_path / "a",
        [
            ("harvest:torch.nn.ReLU:small", TASK, {"kept": True, "verdict": "correct"}),
            (
                "harvest:torch.nn.ReLU:large",
                TASK.replace("(8, 200)", "(16, 400)"),
                {"kept": True, "verdict": "correct"},
            ),
        ],
    )
    _shard(tmp_path / "b", [("/t/transformers_LlamaMLP_medium.py", TASK.replace("relu", "sigmoid"), failed)])
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(tmp_path / "c.json")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    counts = json.loads((tmp_path / "c.json").read_text())
    assert counts["verified"] == 2 and counts["distinct_computations_verified"] == 1
    assert counts["source"] == {"torch.nn verified": 2, "transformers not": 1}
    assert counts["size"] == {"large verified": 1, "medium not": 1, "small verified": 1}
    assert counts["reasons"] == {"not_converted: the layout of bufN is not known": 1}
    assert "3 tasks, 3 converted, 2 verified pairs" in result.stdout


def test_a_folder_that_is_no_output_of_training_data_is_named(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 2 and f"no progress.jsonl in {tmp_path}" in result.stderr
