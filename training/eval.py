"""Evaluate a backend on a suite of tasks: K verified samples per task, pass@k and fast_p.

    python -m training.eval --suite DIR --backend NAME [--model M] [--samples K] --output-dir OUT [flags]

`--suite` is a directory of KernelBench task modules (`*.py` defining `Model`, `get_inputs` and
`get_init_inputs`), an `rl.PROFILE.jsonl` file of `training.data` (its tasks of `--split`), or a level of KernelBench
as released, `kernelbench:CLONE/level1` (`training/suites.py`). A channel of TritonBench, `tritonbench-t:CLONE` or
`tritonbench-g:CLONE`, is evaluated by its own rules (`training/tritonbench_score.py`); what follows is of the
others. Each task gets
`--samples` candidates from a model server backend (`inductor`, `transformers`, `vllm`, `openai`, built by the
model server's own factory, prompted through `model_server/prompts.py`), and each candidate is verified in the
verifier's sandbox under the strict policy (timed against eager and torch.compile on a GPU unless `--no-timing`).

Metrics, each a mean over the suite's tasks (a task whose generation failed counts as 0 everywhere; a task whose
generation ran out of memory, or whose own run failed in the verifier, out of GPU memory beside other jobs say,
says nothing of the model: it is listed in `tasks_unverified`, not counted, and not saved, so a re-run tries it
again):

- pass@k: per task, the unbiased estimator 1 - C(n-c, k) / C(n, k) over its n samples of which c are correct
  (correct: `training.rewards.passed`, what GRPO rewards: verdict `correct` with reward > 0 under the strict
  policy). A backend may return fewer than `--samples` candidates (the `inductor` backend only has so many
  distinct ones): n is what it returned, and a k above n is taken as n.
- fast_p: per task, the share of its n samples that are correct AND have a measured speedup above p (against
  eager, or against torch.compile). A correct sample without a measured speedup is not fast. Without timings (a
  CPU run, or `--no-timing`) fast_p is null.
- kernelbench: the same by KernelBench's own rule of correctness, torch.allclose at rtol = atol = 1e-2 on the
  task's own inputs (the report's `allclose_tolerance`), with no other check: `correct` is the mean share of a
  task's samples it passes (with one sample per task, KernelBench's correctness), and `fast_p` against eager is
  KernelBench's fast_p. The verifier times only the samples it finds correct, so a sample that passes only the
  looser rule counts as correct there but never as fast.

Written to the output directory:

- `tasks.jsonl`: one line per finished task (its samples' verdicts, speedups, messages and the seconds of each
  verification's phases), appended as each finishes; a re-run on the same directory skips the tasks it holds, and
  `benchmarks/compare_evals.py` reads it where an evaluation was cut short before `results.json`;
- `candidates/TASK/sample_I.py`: every candidate, as verified;
- `results.json`: every task and the totals (pass@k, fast_p, verdict counts, backend, model, device, date, and
  the seconds this invocation took);
- `fast_p.png`: fast_p against p, for eager and torch.compile;
- `config.yaml`: the resolved arguments.

A markdown table of the tasks and totals goes to stdout, progress to stderr.
"""

from __future__ import annotations

import collections
import datetime
import json
import sys
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

import yaml

from training import config, jsonl, rewards, suites, tritonbench_eval, tritonbench_score
from training.eval_args import EvalArgs
from training.eval_jobs import (
    TASKS_FILE,
    EvalError,
    generate,
    log,
    model_name,
    pending_tasks,
    record_all,
    start_backend,
    write_candidates,
)
from training.eval_metrics import counts, fast_p, mean_pass, mean_share
from training.suites import SuiteTask
from verifier import Task

RESULTS_FILE = "results.json"
# Arguments that change what a task's samples are: a re-run on the same directory must keep them.
RESULT_ARGUMENTS = (
    "suite",
    "split",
    "backend",
    "model",
    "profile",
    "samples",
    "temperature",
    "max_tokens",
    "trials",
    "device",
    "verify_device",
    "timing",
    "dtype",
    "tritonbench_instruction",
)
PLOT_POINTS = 200
BASELINES = ("eager", "compile")
KERNELBENCH_TOLERANCE = 1e-2  # KernelBench's harness: torch.allclose(rtol=1e-2, atol=1e-2)
NO_MODEL = "the inductor backend converts PyTorch modules; TritonBench tasks need a model backend"


def main(argv: list[str] | None = None) -> int:
    return config.main(
        EvalArgs, evaluate, argv, __doc__, "python -m training.eval", refused=(EvalError, suites.SuiteError)
    )


def evaluate(args: EvalArgs) -> int:
    """Evaluate the suite as the arguments say, write the results, the table and the plot; the exit code."""
    config.announce(args)
    out = Path(args.output_dir)
    started = time.monotonic()
    try:
        suite = suites.parse(args.suite)
        bench = suite.kind in suites.TRITONBENCH
        if bench and args.backend == "inductor":
            raise EvalError(f"{NO_MODEL} (transformers, vllm or openai)")
        if bench:
            tasks = suites.tritonbench_tasks(suite, args.tritonbench_instruction)
        else:
            tasks = suites.discover(suite, args.split, out, log=log)
        check_resumable(args, out)
        config.save(args, out)
        records, backend_name, model, device = (tritonbench_eval.run if bench else run)(tasks, args, out)
    except KeyboardInterrupt:
        log(f"stopped; the finished tasks are in {out / TASKS_FILE}: re-run the same command to go on")
        return 130
    if bench:
        totals = tritonbench_eval.summarize(records, args.ks, suite.source["channel"], args.tritonbench_instruction)
    else:
        totals = summarize(records, args.ks, args.ps, timed=device == "cuda" and args.timing)
    totals |= {
        "suite": suite.source,
        "backend": backend_name,
        "model": model,
        "device": device,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - started, 1),
    }
    results = {"tasks": records, "totals": totals}
    (out / RESULTS_FILE).write_text(json.dumps(results, indent=1) + "\n")
    if not bench:
        plot(records, totals, args.ps, out / "fast_p.png")
    print(tritonbench_score.table(records, totals) if bench else table(records, totals))
    log(f"wrote the results to {out}")
    return 0


def read_results(out: Path) -> list[dict]:
    """The task records of an earlier evaluation's output directory, for the tools that compare evaluations
    (ValueError naming the file and what is wrong with it). An evaluation cut short before `results.json` gives the
    tasks it finished, from `tasks.jsonl`, and says so on stderr."""
    path = out / RESULTS_FILE
    try:
        tasks = json.loads(path.read_text())["tasks"]
    except FileNotFoundError:
        if (out / TASKS_FILE).is_file():
            tasks = jsonl.read(out / TASKS_FILE)
            print(f"{out}: no {RESULTS_FILE} (cut short?): the {len(tasks)} tasks {TASKS_FILE} holds", file=sys.stderr)
            return tasks
        raise ValueError(f"{path} does not exist: is {out} a training.eval output directory?") from None
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a training.eval results file ({exc})") from None
    if not isinstance(tasks, list):
        raise ValueError(f"{path} is not a training.eval results file (its tasks are not a list)")
    return tasks


def recorded_samples(out: Path) -> list[dict]:
    """Each sample of an earlier evaluation whose task and candidate files are there: `task` and `candidate`
    (paths), the recorded `verdict` and `passed`. The others are counted on stderr (ValueError as `read_results`,
    or naming the field a record lacks)."""
    samples, missing = [], 0
    try:
        for task in read_results(out):
            if any("exec" in sample for sample in task["samples"]):
                raise ValueError(
                    f"{out} is a TritonBench evaluation: its programs are scored by the benchmark's own test code, "
                    "not verified as KernelBench-style tasks; its results.json holds their call and execution "
                    "accuracy (benchmarks/compare_evals.py prints them)"
                )
            task_path = Path(task["path"])
            if not task_path.is_file():  # an evaluation made elsewhere: its JSONL tasks are written under OUT/tasks
                task_path = out / suites.TASKS_DIR / task_path.name
            for sample in task["samples"]:
                candidate = out / sample["candidate"]
                if not (task_path.is_file() and candidate.is_file()):
                    missing += 1
                    continue
                samples.append(
                    {
                        "task": task_path,
                        "candidate": candidate,
                        "verdict": sample["verdict"],
                        "passed": sample["correct"],
                    }
                )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{out}: a task or sample record (results.json or tasks.jsonl) lacks {exc}") from None
    if missing:
        print(f"{out}: {missing} samples left out, their task or candidate file is not there", file=sys.stderr)
    return samples


# ---------------------------------------------------------------- tasks


def check_resumable(args: EvalArgs, out: Path) -> None:
    """Refuse to add to a run directory whose finished tasks were evaluated with other arguments."""
    saved = out / config.CONFIG_FILE
    if not (out / TASKS_FILE).exists() or not saved.exists():
        return
    try:
        before = yaml.safe_load(saved.read_text()) or {}
    except yaml.YAMLError:
        return
    now = vars(args)
    changed = [name for name in RESULT_ARGUMENTS if name in before and before[name] != now[name]]
    if changed:
        flags = ", ".join(f"--{name.replace('_', '-')} ({before[name]!r} there)" for name in changed)
        raise EvalError(f"--output-dir {out} holds tasks evaluated with other {flags}; use a fresh --output-dir")


# ---------------------------------------------------------------- generation and verification


def run(tasks: list[SuiteTask], args: EvalArgs, out: Path) -> tuple[list[dict], str, str, str]:
    """Evaluate every task not finished in an earlier run on `out`, appending each to `tasks.jsonl` as it
    finishes; every task's record (in suite order), the backend, model and device. As many tasks are under way as
    fill a generation batch (or keep the verifiers busy): their requests reach the backend together."""
    from verifier import VerifierPool

    finished, pending = pending_tasks(tasks, out)
    try:
        pool = VerifierPool(size=args.workers, device=args.verify_device or args.device)
    except ValueError as exc:
        raise EvalError(f"--verify-device: {exc}" if args.verify_device else str(exc)) from exc
    try:
        backend = start_backend(args)
    except EvalError:
        pool.close()
        raise
    with pool, ThreadPoolExecutor(max_workers=args.workers) as verifiers:

        def job(task: SuiteTask) -> tuple:
            return evaluate_task, task, backend, pool, verifiers, args, out

        record_all(pending, finished, job, args, out)
    return [finished[(task.name, task.id)] for task in tasks], backend.name, model_name(args, backend), pool.device


def evaluate_task(task: SuiteTask, backend, pool, verifiers: Executor, args: EvalArgs, out: Path) -> dict:
    """One task's record: its samples from `backend`, each verified on `pool` (through `verifiers`, so the
    samples of a task are verified at once), or why there are none."""
    from model_server.backends.base import GenerationRequest
    from verifier import TaskError

    started = time.monotonic()
    record = {"name": task.name, "path": str(task.path), "id": task.id, "samples": [], "correct": 0, "error": None}
    request = GenerationRequest(
        task.task, args.samples, pool.device, temperature=args.temperature, max_tokens=args.max_tokens
    )
    generated = generate(backend, request, record)
    if record.get("unverified"):
        return record | {"seconds": round(time.monotonic() - started, 2)}
    paths = write_candidates(generated, out / "candidates" / task.name)
    futures = [
        verifiers.submit(verify_sample, pool, task.task, candidate.source, path.name, args)
        for path, candidate in zip(paths, generated, strict=True)
    ]
    try:
        samples = [future.result() for future in futures]
    except TaskError as exc:  # the task's own run failed (out of GPU memory beside other jobs, say): no verdict
        record["error"] = f"the task cannot be verified: {exc}"
        record["unverified"] = True
        samples = []
    for sample, candidate, path in zip(samples, generated, paths, strict=False):
        sample |= {"candidate": str(path.relative_to(out)), "label": candidate.label, "policy": candidate.policy}
    record["samples"] = samples
    record["correct"] = sum(sample["correct"] for sample in samples)
    record["seconds"] = round(time.monotonic() - started, 2)
    return record


def verify_sample(pool, task: Task, candidate: str, origin: str, args: EvalArgs) -> dict:
    """The verifier's verdict and speedups for one candidate (strict policy); `origin` names it in messages."""
    report = pool.verify(
        task,
        candidate,
        candidate_origin=origin,
        trials=args.trials,
        timeout=args.timeout,
        policy="strict",
        timing=args.timing,
    )
    timing = report.timing or {}
    tolerance = report.allclose_tolerance
    return {
        "verdict": report.verdict,
        "correct": rewards.passed(report),
        "allclose_tolerance": tolerance,
        "kernelbench_correct": tolerance is not None and tolerance <= KERNELBENCH_TOLERANCE,
        "speedup_vs_eager": timing.get("speedup_vs_eager"),
        "speedup_vs_compile": timing.get("speedup_vs_compile"),
        "rules": sorted({v["rule"] for v in report.violations}),
        "message": report.message[:500],
        "phases": report.phases,
    }


# ---------------------------------------------------------------- totals


def summarize(records: list[dict], ks: list[int], ps: list[float], timed: bool) -> dict:
    """The totals over the tasks that could be verified: pass@k, fast_p (null without timings), and counts; a task
    whose own run failed says nothing of the model, so it is listed apart and not counted."""
    counted, records = counts(records)
    fast = {"eager": None, "compile": None, "note": "no timings on a CPU or with --no-timing"}
    if timed:
        fast = {baseline: {f"{p:g}": fast_p(records, p, baseline) for p in ps} for baseline in BASELINES}
        fast["note"] = None
    kernelbench = {
        "tolerance": KERNELBENCH_TOLERANCE,
        "correct": mean_share(records, lambda s: s.get("kernelbench_correct")),
        "fast_p": {f"{p:g}": fast_p(records, p, "eager", "kernelbench_correct") for p in ps} if timed else None,
    }
    samples = [s for r in records for s in r["samples"]]
    return {
        **counted,
        "pass@k": {str(k): mean_pass(records, "correct", k) for k in ks},
        "fast_p": fast,
        "kernelbench": kernelbench,
        "verdicts": dict(collections.Counter(s["verdict"] for s in samples)),
    }


# ---------------------------------------------------------------- report


def table(records: list[dict], totals: dict) -> str:
    """A markdown table of the tasks (correct samples, verdicts, best speedups), then one of the totals."""
    rows = ["| task | correct | verdicts | best vs eager | best vs compile |", "| --- | --- | --- | --- | --- |"]
    for record in records:
        samples = record["samples"]
        verdicts = ", ".join(f"{v} {n}" for v, n in collections.Counter(s["verdict"] for s in samples).items())
        rows.append(
            f"| {record['name']} | {record['correct']}/{len(samples)} | {_cell(record['error'] or verdicts)} "
            f"| {_best(samples, 'eager')} | {_best(samples, 'compile')} |"
        )
    lines = [*rows, "", "| metric | value |", "| --- | --- |"]
    lines.append(f"| tasks solved | {totals['tasks_solved']}/{totals['tasks']} |")
    if totals["tasks_unverified"]:
        lines.append(
            f"| not counted (out of memory, or the task's own run failed) | {', '.join(totals['tasks_unverified'])} |"
        )
    lines += [f"| pass@{k} | {value:.3f} |" for k, value in totals["pass@k"].items()]
    for baseline, name in (("eager", "eager"), ("compile", "torch.compile")):
        values = totals["fast_p"][baseline]
        if values is None:
            lines.append(f"| fast_p vs {name} | n/a: {totals['fast_p']['note']} |")
        else:
            lines += [f"| fast_{p} vs {name} | {value:.3f} |" for p, value in values.items()]
    kernelbench = totals["kernelbench"]
    lines.append(
        f"| correct by KernelBench's rule (allclose at {kernelbench['tolerance']:g}) | {kernelbench['correct']:.3f} |"
    )
    for p, value in (kernelbench["fast_p"] or {}).items():
        lines.append(f"| KernelBench's fast_{p} (its rule, vs eager) | {value:.3f} |")
    verdicts = ", ".join(f"{v} {n}" for v, n in sorted(totals["verdicts"].items())) or "none"
    lines.append(f"| verdicts | {verdicts} |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def _best(samples: list[dict], baseline: str) -> str:
    speedups = [s[f"speedup_vs_{baseline}"] for s in samples if s["correct"] and s.get(f"speedup_vs_{baseline}")]
    return f"{max(speedups):.2f}x" if speedups else "-"


def plot(records: list[dict], totals: dict, ps: list[float], path: Path) -> None:
    """fast_p against p, against eager and against torch.compile, the reported thresholds marked; without
    timings, an empty chart that says so."""
    try:
        import matplotlib
    except ImportError:
        log("matplotlib is not installed: no plot")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    if totals["fast_p"]["eager"] is None:
        axes.text(0.5, 0.5, totals["fast_p"]["note"], ha="center", va="center", wrap=True, transform=axes.transAxes)
    else:
        speedups = [s.get(f"speedup_vs_{b}") or 0.0 for r in records for s in r["samples"] for b in BASELINES]
        top = max([*ps, *speedups, 1.0]) * 1.1
        grid = [top * i / (PLOT_POINTS - 1) for i in range(PLOT_POINTS)]
        for baseline, name in (("eager", "vs eager"), ("compile", "vs torch.compile")):
            (line,) = axes.plot(grid, [fast_p(records, p, baseline) for p in grid], label=name)
            marked = totals["fast_p"][baseline]
            axes.plot(ps, [marked[f"{p:g}"] for p in ps], "o", color=line.get_color())
        axes.legend()
    axes.set_xlabel("speedup threshold p")
    axes.set_ylabel("fast_p")
    axes.set_ylim(0, 1.05)
    axes.set_title(f"fast_p over {totals['tasks']} tasks ({totals['backend']}, {totals['device']})")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


if __name__ == "__main__":
    sys.exit(main())
