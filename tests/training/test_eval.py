"""`python -m training.eval` on a CPU: the metrics against enumeration and hand values, and whole runs with the
`inductor` backend and a tiny model through the `transformers` backend, verified in Triton's interpreter."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import pytest
import torch

from training import eval as evaluation
from training import eval_metrics

FAILING = {"compile_error", "rejected", "runtime_error", "crashed", "incorrect", "timeout"}
TASK = '''"""{doc}"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {body}


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''


def write_task(directory, name: str, body: str) -> None:
    directory.mkdir(exist_ok=True)
    (directory / f"{name}.py").write_text(TASK.format(doc=name, body=body))


def sample(correct: bool, eager: float | None = None, compile_: float | None = None) -> dict:
    verdict = "correct" if correct else "incorrect"
    return {"verdict": verdict, "correct": correct, "speedup_vs_eager": eager, "speedup_vs_compile": compile_}


def task_record(*samples: dict, error: str | None = None) -> dict:
    return {"samples": list(samples), "correct": sum(s["correct"] for s in samples), "error": error}


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ---------------------------------------------------------------- metrics


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),
        (5, 2, 2, 1 - 3 / 10),
        (10, 3, 5, 1 - 21 / 252),
        (4, 0, 2, 0.0),
        (4, 4, 1, 1.0),
        (4, 3, 2, 1.0),
        (2, 1, 5, 1.0),
        (0, 0, 1, 0.0),
    ],
)
def test_pass_at_k_matches_hand_computed_values(n, c, k, expected):
    assert eval_metrics.pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_is_the_share_of_k_subsets_holding_a_correct_sample():
    for n in range(1, 8):
        for c in range(n + 1):
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(range(n), k))
                hits = sum(any(i < c for i in subset) for subset in subsets)
                assert eval_metrics.pass_at_k(n, c, k) == pytest.approx(hits / len(subsets)), (n, c, k)


def test_pass_at_k_stays_exact_where_the_binomials_are_huge():
    n, c, k = 500, 7, 100
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert eval_metrics.pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-9)


def test_fast_p_averages_each_tasks_share_of_fast_correct_samples():
    records = [
        task_record(sample(True, 2.5, 1.2), sample(True, 0.8, 0.5), sample(False, 3.0, 3.0), sample(True)),
        task_record(sample(True, 1.6, None)),
        task_record(error="generation failed: no model"),
    ]
    assert eval_metrics.fast_p(records, 0, "eager") == pytest.approx((2 / 4 + 1) / 3)
    assert eval_metrics.fast_p(records, 1, "eager") == pytest.approx((1 / 4 + 1) / 3)
    assert eval_metrics.fast_p(records, 1.5, "eager") == pytest.approx((1 / 4 + 1) / 3)
    assert eval_metrics.fast_p(records, 2, "eager") == pytest.approx((1 / 4) / 3)
    assert eval_metrics.fast_p(records, 1, "compile") == pytest.approx((1 / 4) / 3)
    assert eval_metrics.fast_p(records, 1.2, "compile") == 0.0
    assert eval_metrics.fast_p([], 1, "eager") == 0.0


def test_totals_give_fast_p_only_where_candidates_were_timed():
    records = [task_record(sample(True, 2.0, 1.1), sample(False)), task_record(sample(True, 1.2, 0.9))]
    timed = evaluation.summarize(records, [1, 2], [0, 1, 1.5], timed=True)
    assert timed["pass@k"] == {"1": pytest.approx(0.75), "2": 1.0}
    assert timed["fast_p"]["eager"] == {"0": 0.75, "1": 0.75, "1.5": 0.25}
    assert timed["fast_p"]["compile"] == {"0": 0.75, "1": 0.25, "1.5": 0.0}
    assert timed["verdicts"] == {"correct": 2, "incorrect": 1} and timed["tasks_solved"] == 2
    untimed = evaluation.summarize(records, [1], [0, 1], timed=False)
    assert untimed["fast_p"]["eager"] is None and untimed["fast_p"]["compile"] is None
    assert "no timings" in untimed["fast_p"]["note"]


def test_kernelbench_s_rule_counts_what_passes_allclose_at_1e_2_and_is_fast_only_where_timed():
    """A sample the verifier fails may pass KernelBench's looser rule; it is correct there, but not fast (the
    verifier times only what it finds correct)."""
    loose = sample(False) | {"kernelbench_correct": True, "allclose_tolerance": 0.004}
    strict = sample(True, 2.0, 1.1) | {"kernelbench_correct": True, "allclose_tolerance": 1e-7}
    wrong = sample(False) | {"kernelbench_correct": False, "allclose_tolerance": 0.3}
    records = [task_record(loose, strict), task_record(wrong)]
    totals = evaluation.summarize(records, [1], [0, 1, 2.5], timed=True)
    assert totals["kernelbench"]["tolerance"] == 0.01
    assert totals["kernelbench"]["correct"] == pytest.approx((2 / 2 + 0) / 2)
    assert totals["kernelbench"]["fast_p"] == {"0": 0.25, "1": 0.25, "2.5": 0.0}
    assert totals["pass@k"]["1"] == pytest.approx(0.25)
    table = evaluation.table([r | {"name": n} for r, n in zip(records, "ab", strict=True)], totals)
    assert "| correct by KernelBench's rule (allclose at 0.01) | 0.500 |" in table
    assert "| KernelBench's fast_1 (its rule, vs eager) | 0.250 |" in table
    assert evaluation.summarize(records, [1], [0], timed=False)["kernelbench"]["fast_p"] is None


def test_k_defaults_to_1_and_the_usual_values_up_to_the_samples(tmp_path):
    def ks(samples: int, *k: str) -> list[int]:
        return evaluation.EvalArgs(output_dir="o", suite=str(tmp_path), samples=samples, k=list(k)).ks

    assert ks(1) == [1] and ks(4) == [1, 4] and ks(10) == [1, 5, 10] and ks(30) == [1, 5, 10, 20, 30]
    assert ks(8, "3", "1") == [1, 3]


# ---------------------------------------------------------------- suites and bad input


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--suite", "no/such/dir"],
            "--suite: not a directory, a .jsonl file, kernelbench:PATH or tritonbench-t/g:PATH: no/such/dir",
        ),
        (["--suite", "tritonbench-x:dir"], "--suite tritonbench-x:dir: unknown benchmark `tritonbench-x`"),
        (["--samples", "2", "--k", "1", "3"], "--k values must be between 1 and --samples (2)"),
        (["--fast-p", "fast"], "--fast-p numbers"),
        (["--device", "tpu"], "--device must be one of auto, cuda, cpu"),
        (["--verify-device", "gpu"], "--verify-device must be one of auto, cuda, cpu, got 'gpu'"),
        (["--dtype", "fp8"], "--dtype must be one of auto, float32, bfloat16, float16, got 'fp8'"),
    ],
)
def test_bad_flags_are_named(tmp_path, capsys, flags, message):
    suite = tmp_path / "suite"
    write_task(suite, "relu", "torch.relu(x)")
    with pytest.raises(SystemExit) as exited:
        evaluation.main(["--output-dir", str(tmp_path / "out"), "--suite", str(suite), *flags])
    assert exited.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--backend", "nope"], "unknown backend `nope`; available: inductor, openai, transformers, vllm"),
        (["--backend", "transformers"], "the transformers backend needs --model"),
        (["--backend", "vllm"], "the vllm backend needs --model"),
        (["--backend", "transformers", "--model", "no/such/model"], "cannot load model hub id `no/such/model`"),
    ],
)
def test_a_backend_that_cannot_start_is_named_before_any_work(tmp_path, capsys, flags, message):
    suite = tmp_path / "suite"
    write_task(suite, "relu", "torch.relu(x)")
    out = tmp_path / "out"
    assert evaluation.main(["--output-dir", str(out), "--suite", str(suite), "--device", "cpu", *flags]) == 2
    err = capsys.readouterr().err
    assert f"training.eval: {message}" in err and "Traceback" not in err
    assert not (out / "tasks.jsonl").exists()


def test_a_suite_without_task_modules_is_named(tmp_path, capsys):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "helper.py").write_text("X = 1\n")
    assert evaluation.main(["--output-dir", str(tmp_path / "out"), "--suite", str(suite)]) == 2
    err = capsys.readouterr().err
    assert f"--suite {suite} holds no KernelBench task modules" in err and "Traceback" not in err


# ---------------------------------------------------------------- whole runs


@pytest.mark.slow
def test_inductor_kernels_pass_every_task_and_a_rerun_only_evaluates_new_ones(tmp_path, capsys):
    suite, out = tmp_path / "suite", tmp_path / "out"
    write_task(suite, "relu", "torch.relu(x)")
    write_task(suite, "total", "x.sum(dim=1)")
    (suite / "helper.py").write_text("X = 1\n")
    flags = ["--suite", str(suite), "--backend", "inductor", "--samples", "1", "--device", "cpu", "--trials", "2"]
    flags += ["--output-dir", str(out)]
    assert evaluation.main(flags) == 0

    results = json.loads((out / "results.json").read_text())
    totals = results["totals"]
    assert totals["pass@k"] == {"1": 1.0} and totals["verdicts"] == {"correct": 2}
    assert totals["fast_p"]["eager"] is None and totals["fast_p"]["compile"] is None
    assert (totals["backend"], totals["device"], totals["tasks"]) == ("inductor", "cpu", 2)
    assert [t["name"] for t in results["tasks"]] == ["relu", "total"]
    for task in results["tasks"]:
        assert task["correct"] == 1 and task["error"] is None
        assert (out / task["samples"][0]["candidate"]).read_text().count("@triton.jit") >= 1
        phases = task["samples"][0]["phases"]  # where a verification's time went, as the verifier measured it
        assert 0 < phases["candidate_s"] <= phases["total_s"]
    assert (out / "fast_p.png").stat().st_size > 0 and (out / "config.yaml").exists()
    printed = capsys.readouterr()
    assert "| relu | 1/1 | correct 1 |" in printed.out and "| pass@1 | 1.000 |" in printed.out
    assert totals["kernelbench"]["correct"] == 1.0 and totals["suite"] == {"kind": "folder", "path": str(suite)}
    assert "] total: 1/1 correct (" in printed.err and "tasks/min)" in printed.err
    first = lines(out / "tasks.jsonl")
    assert sorted(t["name"] for t in first) == ["relu", "total"]

    cut = '{"name": "cut short by an interrup'
    with (out / "tasks.jsonl").open("a") as log:
        log.write(cut)
    write_task(suite, "broken", "x.no_such_method()")
    assert evaluation.main(flags) == 0
    again = (out / "tasks.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in again[:2]] == first and again[2] == cut and len(again) == 4
    broken = json.loads(again[3])
    assert broken["name"] == "broken"
    assert broken["samples"] == [] and broken["error"].startswith("generation failed: ")
    totals = json.loads((out / "results.json").read_text())["totals"]
    assert totals["pass@k"] == {"1": pytest.approx(2 / 3)} and totals["tasks_failed_to_generate"] == 1
    assert "1 tasks to evaluate (2 finished in an earlier run)" in capsys.readouterr().err

    assert evaluation.main([*flags, "--samples", "2"]) == 2
    assert "holds tasks evaluated with other --samples (1 there)" in capsys.readouterr().err
    assert evaluation.main([*flags, "--verify-device", "cpu"]) == 2
    assert "holds tasks evaluated with other --verify-device ('' there)" in capsys.readouterr().err
    assert evaluation.main([*flags, "--dtype", "bfloat16"]) == 2
    assert "holds tasks evaluated with other --dtype ('auto' there)" in capsys.readouterr().err


@pytest.mark.slow
def test_verify_device_moves_verification_off_the_models_device(tmp_path, capsys):
    """The inductor backend needs no model, so `--device cuda` is accepted for it on this machine, GPU or not;
    verification then follows --verify-device: here the interpreter."""
    suite, out = tmp_path / "suite", tmp_path / "out"
    write_task(suite, "relu", "torch.relu(x)")
    flags = ["--suite", str(suite), "--backend", "inductor", "--samples", "1", "--trials", "2", "--device", "cuda"]
    assert evaluation.main([*flags, "--verify-device", "cpu", "--output-dir", str(out)]) == 0
    totals = json.loads((out / "results.json").read_text())["totals"]
    assert (totals["device"], totals["pass@k"], totals["fast_p"]["eager"]) == ("cpu", {"1": 1.0}, None)
    if not torch.cuda.is_available():
        assert evaluation.main([*flags, "--output-dir", str(tmp_path / "on-cuda")]) == 2
        assert "no CUDA GPU is visible" in capsys.readouterr().err


@pytest.mark.slow
def test_a_task_whose_own_run_fails_is_not_counted_and_a_rerun_tries_it_again(tmp_path, capsys, monkeypatch):
    """The task's reference failing in the verifier (out of GPU memory beside a training job, on the GPU box) cannot
    be made to happen on a CPU: the verifier raising what it raises then stands in for it, on the first run only."""
    from verifier import TaskError

    suite, out = tmp_path / "suite", tmp_path / "out"
    write_task(suite, "relu", "torch.relu(x)")
    write_task(suite, "total", "x.sum(dim=1)")
    flags = ["--suite", str(suite), "--backend", "inductor", "--samples", "1", "--device", "cpu", "--trials", "2"]
    flags += ["--output-dir", str(out)]
    verify_sample = evaluation.verify_sample

    def out_of_memory_for_total(pool, task, candidate, origin, args):
        if task.name == "total":
            raise TaskError(f"{task.origin}:12: forward failed: RuntimeError: CUDA error: out of memory")
        return verify_sample(pool, task, candidate, origin, args)

    monkeypatch.setattr(evaluation, "verify_sample", out_of_memory_for_total)
    assert evaluation.main(flags) == 0
    totals = json.loads((out / "results.json").read_text())["totals"]
    assert (totals["tasks"], totals["pass@k"], totals["tasks_unverified"]) == (1, {"1": 1.0}, ["total"])
    assert [t["name"] for t in lines(out / "tasks.jsonl")] == ["relu"]
    printed = capsys.readouterr()
    assert "| not counted (out of memory, or the task's own run failed) | total |" in printed.out
    assert "total: the task cannot be verified:" in printed.err and "a re-run tries it again" in printed.err

    monkeypatch.undo()
    assert evaluation.main(flags) == 0
    totals = json.loads((out / "results.json").read_text())["totals"]
    assert (totals["tasks"], totals["pass@k"], totals["tasks_unverified"]) == (2, {"1": 1.0}, [])
    assert "1 tasks to evaluate (1 finished in an earlier run)" in capsys.readouterr().err


@pytest.mark.slow
def test_a_generation_out_of_memory_is_not_counted_and_a_rerun_tries_it_again(model_dir, tmp_path, capsys, monkeypatch):
    """A CUDA out-of-memory cannot happen on a CPU: the first run's generate call raises torch's error in its place
    (on the GPU box, three evaluations generating at once filled an 80 GB GPU that way)."""
    from model_server.backends.transformers_backend import TransformersBackend

    suite, out = tmp_path / "suite", tmp_path / "out"
    write_task(suite, "relu", "torch.relu(x)")
    flags = ["--suite", str(suite), "--backend", "transformers", "--model", str(model_dir), "--samples", "1"]
    flags += ["--max-tokens", "8", "--device", "cpu", "--trials", "1", "--output-dir", str(out)]

    def out_of_memory(self, requests):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 960.00 MiB.")

    monkeypatch.setattr(TransformersBackend, "_replies", out_of_memory)
    assert evaluation.main(flags) == 0
    totals = json.loads((out / "results.json").read_text())["totals"]
    assert (totals["tasks"], totals["tasks_unverified"], totals["tasks_failed_to_generate"]) == (0, ["relu"], 0)
    assert not lines(out / "tasks.jsonl")
    assert "relu: generation failed: OutOfMemoryError: CUDA out of memory" in capsys.readouterr().err

    monkeypatch.undo()
    assert evaluation.main(flags) == 0
    totals = json.loads((out / "results.json").read_text())["totals"]
    assert (totals["tasks"], totals["samples"], totals["tasks_unverified"]) == (1, 1, [])


@pytest.mark.slow
def test_a_tiny_models_garbage_is_verified_and_recorded_as_failing(model_dir, tmp_path, capsys):
    suite, out = tmp_path / "suite", tmp_path / "out"
    write_task(suite, "relu", "torch.relu(x)")
    flags = ["--suite", str(suite), "--backend", "transformers", "--model", str(model_dir), "--samples", "3"]
    flags += ["--max-tokens", "24", "--device", "cpu", "--trials", "1", "--output-dir", str(out)]
    assert evaluation.main(flags) == 0

    results = json.loads((out / "results.json").read_text())
    totals = results["totals"]
    assert totals["pass@k"] == {"1": 0.0, "3": 0.0} and totals["model"] == str(model_dir)
    assert totals["samples"] == 3 and set(totals["verdicts"]) <= FAILING
    (task,) = results["tasks"]
    assert task["correct"] == 0 and task["error"] is None and len(task["samples"]) == 3
    assert all(s["verdict"] in FAILING and s["message"] for s in task["samples"])
    assert "| relu | 0/3 |" in capsys.readouterr().out
