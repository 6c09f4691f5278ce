"""A TritonBench channel in `training.eval`: a model backend answers each task's own instruction, and each program,
with the task's test code, runs and is scored by the benchmark's rule (`training/tritonbench_score.py`)."""

from __future__ import annotations

import collections
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

from training import eval_jobs, eval_metrics, tritonbench_score
from training.eval_args import EvalArgs
from training.tritonbench import BenchTask


def run(tasks: list[BenchTask], args: EvalArgs, out: Path) -> tuple[list[dict], str, str, str]:
    """`training.eval`'s `run` for a TritonBench suite: no verifier pool, each task's programs run in one-off
    sandboxes (`training/tritonbench_score.py`) on the device candidates are verified on."""
    from verifier import resolve_device

    try:
        device = resolve_device(args.verify_device or args.device)
    except ValueError as exc:
        raise eval_jobs.EvalError(f"--verify-device: {exc}" if args.verify_device else str(exc)) from exc
    finished, pending = eval_jobs.pending_tasks(tasks, out)
    backend = eval_jobs.start_backend(args)
    with ThreadPoolExecutor(max_workers=args.workers) as runners:

        def job(task: BenchTask) -> tuple:
            return evaluate_task, task, backend, runners, device, args, out

        eval_jobs.record_all(pending, finished, job, args, out)
    return [finished[(t.name, t.id)] for t in tasks], backend.name, eval_jobs.model_name(args, backend), device


def evaluate_task(task: BenchTask, backend, runners: Executor, device: str, args: EvalArgs, out: Path) -> dict:
    """One TritonBench task's record: the reference's run, then the samples `backend` writes for the task's own
    instruction, each run and scored, or why there are none. Every program runs through `runners` (so a task's
    samples run at once, and no more programs than --workers run at a time). `correct` counts the samples that pass
    execution, `call` those that pass the call test."""
    from model_server.backends.base import GenerationRequest

    started = time.monotonic()
    record = {"name": task.name, "path": str(task.path), "id": task.id, "samples": [], "correct": 0, "call": 0}
    record["error"] = None
    reference = runners.submit(tritonbench_score.reference_run, task, device, args.timeout, out).result()
    if not reference["call"]:
        error = f"the reference fails on {device}: {tritonbench_score.failure_line(reference)}"
        return record | {"error": error, "unverified": True, "seconds": round(time.monotonic() - started, 2)}
    record["reference_reproducible"] = reference["reproducible"]
    request = GenerationRequest(
        None, args.samples, device, temperature=args.temperature, max_tokens=args.max_tokens, prompt=task.instruction
    )
    generated = eval_jobs.generate(backend, request, record)
    if record.get("unverified"):
        return record | {"seconds": round(time.monotonic() - started, 2)}
    paths = eval_jobs.write_candidates(generated, out / "candidates" / task.name)
    futures = [
        runners.submit(tritonbench_score.score, task, candidate.source, reference, device, args.timeout)
        for candidate in generated
    ]
    samples = [future.result() for future in futures]
    for sample, path in zip(samples, paths, strict=True):
        sample["candidate"] = str(path.relative_to(out))
    record["samples"] = samples
    record["correct"] = sum(sample["exec"] for sample in samples)
    record["call"] = sum(sample["call"] for sample in samples)
    record["seconds"] = round(time.monotonic() - started, 2)
    return record


def summarize(records: list[dict], ks: list[int], channel: str, instruction: str) -> dict:
    """The totals over the TritonBench tasks whose reference ran: call and execution accuracy (pass@1 of `call` and
    of `exec`, a mean over tasks), pass@k of `exec`, the share of samples that pass `exec` with the audit clean, and
    counts."""
    counts, records = eval_metrics.counts(records)
    samples = [s for r in records for s in r["samples"]]
    return {
        **counts,
        "pass@k": {str(k): eval_metrics.mean_pass(records, "correct", k) for k in ks},
        "tritonbench": {
            "channel": channel,
            "instruction": instruction,
            "call_accuracy": eval_metrics.mean_pass(records, "call", 1),
            "exec_accuracy": eval_metrics.mean_pass(records, "correct", 1),
            "exec_audit_clean": eval_metrics.mean_share(records, tritonbench_score.clean_pass),
            "references_not_reproducible": [r["name"] for r in records if r.get("reference_reproducible") is False],
            "exec_rule": "exit 0, and stdout then test_results printed exactly as the reference's (fixed seed)",
        },
        "verdicts": dict(sorted(collections.Counter(s["verdict"] for s in samples).items())),
    }
