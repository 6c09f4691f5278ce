"""The suites `training.eval` reads: a folder of tasks, a training data file, and KernelBench as its repository
releases it (a clone made here with git, laid out as the released one is)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.training.test_eval import TASK
from training import eval as evaluation
from training import suites

COMPARE = Path(__file__).parents[2] / "benchmarks" / "compare_evals.py"


def kernelbench_clone(root):
    """A clone laid out as ScalingIntelligence/KernelBench's: problems under KernelBench/levelN/N_Name.py."""
    level = root / "KernelBench" / "level1"
    level.mkdir(parents=True)
    for name, body in (("19_ReLU", "torch.relu(x)"), ("2_Neg", "-x"), ("100_Abs", "x.abs()")):
        (level / f"{name}.py").write_text(TASK.format(doc=name, body=body))
    (level / "utils.py").write_text("X = 1\n")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "problems"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def test_a_kernelbench_level_is_read_from_the_clone_in_problem_order(tmp_path):
    commit = kernelbench_clone(tmp_path / "KernelBench")
    by_clone = suites.parse(f"kernelbench:{tmp_path}/KernelBench/level1")
    by_folder = suites.parse(f"kernelbench:{tmp_path}/KernelBench/KernelBench/level1")
    assert by_clone == by_folder
    assert by_clone.source == {
        "kind": "kernelbench",
        "level": 1,
        "path": str(tmp_path / "KernelBench" / "KernelBench" / "level1"),
        "commit": commit,
    }
    said = []
    tasks = suites.discover(by_clone, "test", tmp_path / "out", log=said.append)
    assert [t.name for t in tasks] == ["l1_2_Neg", "l1_19_ReLU", "l1_100_Abs"]
    assert said == ["skipped 1 file(s) that are not tasks: utils.py"]


def test_a_kernelbench_folder_outside_git_has_no_commit(tmp_path):
    level = tmp_path / "level2"
    level.mkdir()
    (level / "1_Relu.py").write_text(TASK.format(doc="r", body="torch.relu(x)"))
    suite = suites.parse(f"kernelbench:{level}")
    assert suite.source["level"] == 2 and suite.source["commit"] is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("kernelbench:{tmp}", "name a level, e.g. kernelbench:{tmp}/level1"),
        ("kernelbench:{tmp}/level9", "no such level folder (looked at {tmp}/level9 and {tmp}/KernelBench/level9)"),
        ("tritonbench-x:{tmp}", "unknown benchmark `tritonbench-x` (known: kernelbench, tritonbench-t, tritonbench-g)"),
        ("tritonbench-g:{tmp}", "--suite tritonbench-g:{tmp}: not a TritonBench clone, {tmp} lacks TritonBench_G_v1/"),
        ("{tmp}/nothing.txt", "not a directory, a .jsonl file, kernelbench:PATH or tritonbench-t/g:PATH"),
    ],
)
def test_a_suite_that_cannot_be_read_is_named(tmp_path, spec, message):
    with pytest.raises(suites.SuiteError) as raised:
        suites.parse(spec.format(tmp=tmp_path))
    assert message.format(tmp=tmp_path) in str(raised.value)


def test_a_training_data_file_gives_the_tasks_of_one_split(tmp_path):
    suite = tmp_path / "rl.autotriton.jsonl"
    records = [
        {"id": "a1b2c3d4e5", "task": TASK.format(doc="relu", body="torch.relu(x)"), "task_origin": "x/relu.py"},
        {"id": "f6e5d4c3b2", "task": TASK.format(doc="neg", body="-x"), "task_origin": "synthetic:7"},
        {"id": "0123456789", "task": TASK.format(doc="abs", body="x.abs()"), "task_origin": "x/abs.py"},
    ]
    splits = ["test", "test", "train"]
    suite.write_text("".join(json.dumps(r | {"split": s}) + "\n" for r, s in zip(records, splits, strict=True)))
    tasks = suites.discover(suites.parse(str(suite)), "test", tmp_path / "out")
    assert [t.name for t in tasks] == ["relu_a1b2c3d4", "synthetic_7_f6e5d4c3"]
    assert tasks[0].path.read_text() == records[0]["task"]


@pytest.mark.slow
def test_an_evaluation_of_a_kernelbench_level_records_the_clone_and_kernelbench_s_metrics(tmp_path, capsys):
    commit = kernelbench_clone(tmp_path / "KernelBench")
    out = tmp_path / "out"
    flags = ["--suite", f"kernelbench:{tmp_path}/KernelBench/level1", "--backend", "inductor", "--samples", "1"]
    assert evaluation.main([*flags, "--device", "cpu", "--trials", "2", "--output-dir", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert [t["name"] for t in results["tasks"]] == ["l1_2_Neg", "l1_19_ReLU", "l1_100_Abs"]
    assert results["totals"]["suite"]["commit"] == commit
    assert results["totals"]["kernelbench"]["correct"] == 1.0
    for task in results["tasks"]:
        assert task["samples"][0]["allclose_tolerance"] < 1e-6, task
    assert "| correct by KernelBench's rule (allclose at 0.01) | 1.000 |" in capsys.readouterr().out

    beside = subprocess.run(
        [sys.executable, str(COMPARE), "--published", str(out)], capture_output=True, text=True, timeout=60
    )
    assert beside.returncode == 0, beside.stderr
    rows = [line for line in beside.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert rows[0].startswith(
        f"| inductor inductor | KernelBench L1 @{commit[:7]} | 3 | 1.000 | n/a (not timed) | 1.000 |"
    )
    quoted = [row for row in rows if "quoted: " in row]
    assert quoted and all("KernelBench" in row or "TritonBench" in row for row in quoted)
