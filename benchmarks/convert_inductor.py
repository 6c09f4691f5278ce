"""`tritonize convert --backend inductor` on a set of tasks: what it chose, how fast that is, how long it took.

    python benchmarks/convert_inductor.py [TASK ...] [--device cuda] [--samples 4] [--dynamic SPEC] [--json FILE]
        [--seed-model MODEL [--max-tokens N]]
    python benchmarks/convert_inductor.py --table RUN.json [RUN.json ...]

Default tasks: benchmarks/tasks/published/*.py (KernelBench level 1/2 problems at their published sizes). Each
task runs through the real conversion loop (generation of the backend's variants, verification and timing of
each, a repair round) on one shared verifier pool, so conversion time includes everything a user waits for
except the pool's one-time start. Spare capture processes are kept, as the server keeps them (`--no-spares`:
each capture process starts with its compile, as in one `tritonize convert`). Prints a row per task, then the
geometric means of the chosen candidates' speedups: all tasks, and the tasks that have a matmul or convolution
(a template or library variant). `--table` prints the same table from the `--json` files of earlier runs (a
later file's row replaces an earlier one of the same task), for a table assembled from runs split over several
machines' sessions. `--seed-model MODEL` converts as `tritonize convert --backend transformers --model MODEL
--seed-from inductor` does: round 1 is the built-in backend's, later rounds ask the model for a faster kernel than the
best verified one; each row then says how many of the model's candidates verified and whether one was chosen.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

from model_server.api import ConvertRequest
from model_server.backends import DEFAULT_MAX_TOKENS, BackendConfig, create_backend
from model_server.backends.inductor import InductorBackend
from model_server.loop import ConvertError, Outcome, convert
from verifier import Task, TaskError, VerifierPool

TASKS = Path(__file__).resolve().parent / "tasks" / "published"
HEADER = (
    f"{'task':<44} {'verdict':<9} {'policy':<7} {'vs eager':>8} {'vs compile':>10} {'secs':>6} {'gen s':>6} "
    f"{'tried':>5}  chosen"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task names in benchmarks/tasks/published or paths (default: all)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--workers", type=int, help="verifications at once (default: the pool's, 4 on a GPU)")
    parser.add_argument(
        "--no-spares",
        action="store_true",
        help="start each capture process when its compile starts, as one `tritonize convert` does (default: "
        "spare capture processes started ahead, as the server keeps them)",
    )
    parser.add_argument(
        "--policy", choices=("strict", "hybrid"), default="hybrid", help="hybrid, as the recorded runs (default)"
    )
    parser.add_argument(
        "--dynamic", metavar="SPEC", help="as `tritonize convert --dynamic`: kernels for other sizes (default: none)"
    )
    parser.add_argument(
        "--seed-model",
        metavar="MODEL",
        help="a model directory for the transformers backend, asked for a faster kernel after the built-in backend's "
        "round (as `--seed-from inductor`; default: the built-in backend alone)",
    )
    parser.add_argument(
        "--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, help="with --seed-model: the most tokens of one reply"
    )
    parser.add_argument("--json", help="also write every row here")
    parser.add_argument("--table", nargs="+", metavar="RUN.json", help="print the table of earlier runs instead")
    args = parser.parse_args()
    if args.table:
        rows = {row["task"]: row for path in args.table for row in json.loads(Path(path).read_text())}
        print(HEADER)
        for task in sorted(rows):
            print(_line(rows[task]))
        print(_summary(list(rows.values())))
        return
    paths = [_task_path(t) for t in args.tasks] or sorted(TASKS.glob("*.py"))
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        parser.error(f"no such task: {', '.join(missing)} (names are files of {TASKS})")
    backend = _backend(args.seed_model, args.device, args.max_tokens)
    inductor = backend.seed if args.seed_model else backend
    if not args.no_spares:  # as the server does: each compile in a capture process started ahead
        inductor.start_spares(args.device)
    options = {"samples": args.samples, "rounds": args.rounds, "trials": args.trials, "policy": args.policy}
    options["dynamic"] = args.dynamic
    rows = []
    print(HEADER)
    with VerifierPool(size=args.workers, device=args.device) as pool:
        for path in paths:
            row = _convert(path, backend, pool, options)
            rows.append(row)
            print(_line(row), flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(rows, indent=1))
    inductor.close()
    print(_summary(rows))


def _backend(seed_model: str | None, device: str, max_tokens: int):
    """The built-in backend, or (with a model) the transformers backend seeded by it."""
    if seed_model is None:
        return InductorBackend()
    config = BackendConfig(
        name="transformers", model=seed_model, device=device, seed_from="inductor", max_tokens=max_tokens
    )
    return create_backend(config)


def _task_path(name: str) -> Path:
    path = Path(name)
    return path if path.suffix == ".py" else TASKS / f"{name}.py"


def _convert(path: Path, backend, pool: VerifierPool, options: dict) -> dict:
    started = time.perf_counter()
    phases: list[tuple[float, str]] = []
    task = Task.from_file(path)
    request = ConvertRequest(task=task.source, task_name=task.name, **options)
    try:
        outcome = convert(request, backend, pool, lambda e: phases.append((time.perf_counter(), e["text"])))
    except ConvertError as exc:
        return {"task": path.stem, "verdict": "refused", "error": str(exc), "seconds": time.perf_counter() - started}
    except TaskError as exc:  # the task itself failed (its inputs did not fit beside the pool's other work)
        return {"task": path.stem, "verdict": "error", "error": str(exc), "seconds": time.perf_counter() - started}
    row = {"task": path.stem, "seconds": time.perf_counter() - started, **_chosen(outcome)}
    row["events"] = [(round(at - started, 1), text) for at, text in phases]
    made = [at for at, text in row["events"] if " made " in text and "still generating" not in text]
    row["generation_seconds"] = made[0] if made else None  # round 1's candidates all made
    row["attempts"] = [
        {
            "label": a.label,
            "policy": a.policy,
            "verdict": a.report.verdict,
            "message": a.report.message[:2000],
            "phases": a.report.phases,
            **(a.report.timing or {}),
        }
        for a in outcome.attempts
    ]
    if getattr(backend, "improves", False):  # the model's candidates carry no label; the built-in ones always do
        model_attempts = [a for a in outcome.attempts if not a.label]
        row["model_candidates"] = len(model_attempts)
        row["model_verified"] = sum(a.report.verdict == "correct" for a in model_attempts)
        row["model_chosen"] = outcome.best is not None and not outcome.best.label
    row["library"] = any(a.policy == "hybrid" or "template" in a.label for a in outcome.attempts)
    return row


def _chosen(outcome: Outcome) -> dict:
    best = outcome.best
    if best is None:
        failures = sorted({a.report.verdict for a in outcome.attempts})
        return {"verdict": "none", "error": ", ".join(failures) or outcome.stopped}
    timing = best.report.timing or {}
    return {
        "verdict": "correct",
        "policy": best.policy,
        "dynamic": best.dynamic,
        "label": best.label,
        "why": outcome.why,
        "vs_eager": timing.get("speedup_vs_eager"),
        "vs_compile": timing.get("speedup_vs_compile"),
        "candidate_ms": timing.get("candidate_ms"),
    }


def _line(row: dict) -> str:
    speed = f"{_x(row.get('vs_eager')):>8} {_x(row.get('vs_compile')):>10}"
    what = row.get("label") or row.get("error", "")[:100]
    if "model_candidates" in row:
        what = "the model's kernel" if row["model_chosen"] else what
        what += f" [model: {row['model_verified']} of {row['model_candidates']} verified]"
    tried = len(row.get("attempts", []))
    generation = row.get("generation_seconds")
    generation = "-" if generation is None else f"{generation:.1f}"
    return (
        f"{row['task']:<44} {row['verdict']:<9} {row.get('policy', '-'):<7} {speed} {row['seconds']:>6.1f} "
        f"{generation:>6} {tried:>5}  {what}"
    )


def _strict_verified(row: dict) -> bool:
    return any(a["policy"] == "strict" and a["verdict"] == "correct" for a in row.get("attempts", []))


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _summary(rows: list[dict]) -> str:
    correct = [r for r in rows if r["verdict"] == "correct"]
    strict = [r for r in correct if r["policy"] == "strict"]
    strict_verified = [r for r in rows if _strict_verified(r)]
    seconds = sorted(r["seconds"] for r in rows)
    lines = [
        "",
        f"tasks {len(rows)}: verified {len(correct)} ({_share(len(correct), len(rows))}), all-Triton {len(strict)} "
        f"({_share(len(strict), len(rows))}), hybrid {len(correct) - len(strict)}",
        f"an all-Triton candidate verified (chosen or not): {len(strict_verified)} of {len(rows)} tasks",
    ]
    if seconds:
        within = sum(s <= 60 for s in seconds)
        lines.append(
            f"conversion time: median {statistics.median(seconds):.1f} s, max {seconds[-1]:.1f} s, "
            f"{within} of {len(seconds)} within 60 s"
        )
    slow = sorted((r["vs_compile"], r["task"]) for r in correct if r.get("vs_compile") and r["vs_compile"] < 0.9)
    lines.append(f"below 0.9x vs compile: {len(slow)}" + "".join(f"\n  {x:.2f}x {task}" for x, task in slow))
    for name, subset in (("all verified", correct), ("with a matmul/conv", [r for r in correct if r["library"]])):
        for key in ("vs_eager", "vs_compile"):
            values = [r[key] for r in subset if r.get(key)]
            if values:
                mean = math.exp(sum(math.log(v) for v in values) / len(values))
                lines.append(f"geomean {key.replace('_', ' ')} ({name}, {len(values)} tasks): {mean:.3f}x")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
