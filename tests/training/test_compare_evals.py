"""`benchmarks/compare_evals.py`: two evaluations of the same tasks compared task by task, with the p-value of a
sign-flip test counted by hand here, and several pairs pooled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

COMPARE = Path(__file__).parents[2] / "benchmarks" / "compare_evals.py"


def evaluation(folder: Path, correct: dict[str, int], samples: int = 4, unverified: tuple[str, ...] = ()) -> Path:
    """A training.eval output directory whose task `name` has `correct[name]` correct samples of `samples`."""
    tasks = []
    for name, count in correct.items():
        verdicts = [{"verdict": "correct", "correct": True}] * count
        verdicts += [{"verdict": "incorrect", "correct": False}] * (samples - count)
        task = {"name": name, "id": f"id-{name}", "samples": verdicts, "correct": count}
        if name in unverified:
            task |= {"samples": [], "correct": 0, "unverified": True}
        tasks.append(task)
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"tasks": tasks, "totals": {}}))
    return folder


def compare(*outs: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(COMPARE), *map(str, outs)], capture_output=True, text=True, timeout=60)


def rows(stdout: str) -> list[list[str]]:
    """The table's rows as cells, the label first."""
    lines = [line for line in stdout.splitlines() if line.startswith("| ")][1:]
    return [line.strip("| ").split(" | ") for line in lines if not line.startswith("| ---")]


def row(stdout: str) -> list[str]:
    """The cells of the only row, without its label."""
    (only,) = rows(stdout)
    return only[1:]


def test_pairs_the_shared_tasks_and_counts_every_sign_assignment(tmp_path):
    a = evaluation(tmp_path / "sft", {"t1": 0, "t2": 1, "t3": 2, "t4": 2, "only-a": 4, "flaky": 0})
    b = evaluation(tmp_path / "grpo", {"t1": 2, "t2": 2, "t3": 2, "t4": 1, "flaky": 0}, unverified=("flaky",))
    result = compare(a, b)
    assert result.returncode == 0, result.stderr
    tasks, pass_a, pass_b, difference, _, better, worse, p = row(result.stdout)
    # t1..t4 only: "only-a" has no pair and "flaky" was not verified on B's side.
    assert (tasks, pass_a, pass_b, difference) == ("4", "0.312", "0.438", "+0.125")
    assert (better, worse) == ("2", "1")
    # Differences +0.5, +0.25, 0, -0.25: of the 8 sign assignments of the three nonzero ones, 3 sum to >= +0.5.
    assert p == "0.375"
    assert "2 tasks evaluated on one side only are left out." in result.stdout


def test_a_model_against_itself_is_no_better(tmp_path):
    scores = {"t1": 1, "t2": 3, "t3": 0}
    result = compare(evaluation(tmp_path / "a", scores), evaluation(tmp_path / "b", scores))
    assert row(result.stdout) == ["3", "0.333", "0.333", "+0.000", "+0.000 to +0.000", "0", "0", "1.000"]


def test_bad_directories_are_named(tmp_path):
    good = evaluation(tmp_path / "good", {"t1": 1})
    missing = compare(good, tmp_path / "missing")
    assert missing.returncode == 2
    assert f"{tmp_path / 'missing' / 'results.json'} does not exist" in missing.stderr
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "results.json").write_text("{")
    assert "is not a training.eval results file" in compare(good, tmp_path / "broken").stderr
    disjoint = compare(good, evaluation(tmp_path / "other", {"t9": 1}))
    assert disjoint.returncode == 1
    assert "share no evaluated task" in disjoint.stderr


def test_an_evaluation_cut_short_is_compared_on_the_tasks_it_finished(tmp_path):
    a = evaluation(tmp_path / "sft", {"t1": 0, "t2": 1, "t3": 4})
    finished = evaluation(tmp_path / "grpo", {"t1": 4, "t2": 1})
    # what training.eval leaves when its machine goes away: tasks.jsonl, the last line cut short, no results.json
    records = json.loads((finished / "results.json").read_text())["tasks"]
    (finished / "results.json").unlink()
    lines = [json.dumps(record) for record in records]
    (finished / "tasks.jsonl").write_text("\n".join(lines) + '\n{"name": "t3", "id": "id-t3", "sam')
    result = compare(a, finished)
    assert result.returncode == 0, result.stderr
    assert row(result.stdout)[:3] == ["2", "0.125", "0.625"]
    assert f"{finished}: no results.json (cut short?): the 2 tasks tasks.jsonl holds" in result.stderr
    assert "1 tasks evaluated on one side only are left out." in result.stdout


def test_evaluations_of_the_same_name_are_told_apart_by_their_folders(tmp_path):
    (tmp_path / "run-g").mkdir()
    (tmp_path / "run-h").mkdir()
    a = evaluation(tmp_path / "run-g" / "eval-sft", {"t1": 1})
    b = evaluation(tmp_path / "run-h" / "eval-sft", {"t1": 2})
    assert rows(compare(a, b).stdout)[0][0] == "run-g/eval-sft -> run-h/eval-sft"


def test_several_pairs_get_a_row_each_and_a_pooled_row(tmp_path):
    for run in ("run-1", "run-2"):
        (tmp_path / run).mkdir()
    sft_1 = evaluation(tmp_path / "run-1" / "sft", {"t1": 0, "t2": 4})
    grpo_1 = evaluation(tmp_path / "run-1" / "grpo", {"t1": 4, "t2": 4})
    sft_2 = evaluation(tmp_path / "run-2" / "sft", {"t1": 2, "t3": 0, "t4": 0})
    grpo_2 = evaluation(tmp_path / "run-2" / "grpo", {"t1": 2, "t3": 2, "t4": 0})
    result = compare(sft_1, grpo_1, sft_2, grpo_2)
    assert result.returncode == 0, result.stderr
    first, second, pooled = rows(result.stdout)
    assert first[:5] == ["run-1/sft -> run-1/grpo", "2", "0.500", "1.000", "+0.500"]
    assert second[:5] == ["run-2/sft -> run-2/grpo", "3", "0.167", "0.333", "+0.167"]
    # t1 of run 1 and t1 of run 2 both count in the difference: 5 task-runs, differences +1, 0, 0, +0.5, 0
    assert pooled[0] == "pooled (2 pairs)"
    assert pooled[1:5] == ["5", "0.300", "0.600", "+0.300"]
    assert (pooled[6], pooled[7]) == ("2", "0")
    # flipped per task, t1's two runs together (+1 + 0): of the 4 sign assignments of +1 and +0.5, only (+, +)
    # reaches +1.5
    assert pooled[8] == "0.250"

    odd = compare(sft_1, grpo_1, sft_2)
    assert odd.returncode == 2
    assert "give the directories in pairs (baseline, challenger); got 3" in odd.stderr


def test_a_task_in_several_pairs_is_one_unit_for_the_interval_and_the_p_value(tmp_path):
    """Two runs that agree on every task are no more evidence than one run: independent sign flips of the same
    task's two differences would count each of them twice."""
    scores_sft = {f"t{i}": 0 for i in range(6)}
    scores_grpo = {"t0": 4, "t1": 4, "t2": 4, "t3": 0, "t4": 0, "t5": 0}
    outs = []
    for run in ("run-1", "run-2"):
        (tmp_path / run).mkdir()
        outs += [evaluation(tmp_path / run / "sft", scores_sft), evaluation(tmp_path / run / "grpo", scores_grpo)]
    first, second, pooled = rows(compare(*outs).stdout)
    assert first[1:] == second[1:]
    # every pair counts in the difference and the counts: 12 task-runs, 6 of them better
    assert (pooled[1], pooled[4], pooled[6], pooled[7]) == ("12", "+0.500", "6", "0")
    # the interval and the p-value are those of one run: 3 tasks better, 1 of 2^3 sign assignments reaches +3
    assert pooled[5] == first[5]
    assert pooled[8] == first[8] == "0.125"


def test_published_needs_each_evaluation_s_totals(tmp_path):
    old = evaluation(tmp_path / "old", {"relu": 1})
    done = subprocess.run(
        [sys.executable, str(COMPARE), "--published", str(old), str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"{old}/results.json lacks what the table needs ('backend')" in done.stderr


def test_a_tritonbench_evaluation_stands_beside_the_published_tritonbench_figures(tmp_path):
    out = tmp_path / "tb"
    out.mkdir()
    totals = {
        "backend": "openai",
        "model": "m",
        "tasks": 4,
        "samples": 8,
        "device": "cuda",
        "date": "2026-11-28T14:00:00+00:00",
        "suite": {"kind": "tritonbench-g", "channel": "G", "path": "/x/data", "commit": "0123456789abcdef"},
        "tritonbench": {"call_accuracy": 0.5, "exec_accuracy": 0.25, "exec_audit_clean": 0.125},
        "pass@k": {"1": 0.25},
    }
    (out / "results.json").write_text(json.dumps({"tasks": [], "totals": totals}))
    done = subprocess.run(
        [sys.executable, str(COMPARE), "--published", str(out)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    measured, *quoted = [line for line in done.stdout.splitlines() if "TritonBench-G" in line]
    assert measured == (
        "| openai m | TritonBench-G @0123456 | 4 | 0.250 (call 0.500) | n/a (not timed) | 0.125 (exec, audit clean) "
        "| 2 samples per task, cuda | measured 2026-11-28 |"
    )
    assert quoted and all("quoted: AutoTriton paper" in line for line in quoted)
