"""Wall time per verification, split by phase, pool throughput, and verification at published sizes.

    python benchmarks/verify_overhead.py [--device auto|cuda|cpu] [--repeats 3] [--pool-size 4] [--count 60]
    python benchmarks/verify_overhead.py --published [NAME ...]      # GPU: KernelBench-size tasks only

Part 1 verifies a small task end to end in a fresh pool each time (cold: process start included).
Part 2 pushes `--count` elementwise candidates through one warm pool and reports candidates per minute.
`--published` verifies each task of benchmarks/tasks/published (KernelBench level-1 sizes, GBs of data) that has
a Triton candidate in its triton/ folder (or the tasks NAMEd) with that candidate through one warm pool, twice (the
second run reuses the cached eager/compile baseline), with the default 5 trials and timing, and reports the phases,
the peak host memory of the whole process tree next to the task's input bytes, and the speedups.
Prints tables; `--json PATH` also writes the raw figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verifier import DEVICES, Task, VerifierPool, load_module, procs, resolve_device  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
PUBLISHED = ROOT / "benchmarks" / "tasks" / "published"
ELEMENTWISE = ["add", "relu", "scale"]
PHASES = ["start_s", "reference_s", "candidate_s", "timing_s", "total_s"]
GIB = 2**30


def cold_runs(device: str, repeats: int) -> list[dict]:
    rows = []
    for _ in range(repeats):
        started = time.perf_counter()
        with VerifierPool(size=1, device=device) as pool:
            report = pool.verify(*_pair(FIXTURES / "tasks/add.py", FIXTURES / "candidates/add_ok.py"))
        wall = time.perf_counter() - started
        if report.verdict != "correct":
            raise SystemExit(f"benchmark candidate failed: {report.verdict}: {report.message}")
        rows.append({**{p: report.phases.get(p, 0.0) for p in PHASES}, "wall_s": wall})
    return rows


def _pair(task: Path, candidate: Path) -> tuple[Task, str]:
    return Task.from_file(task), candidate.read_text()


def throughput(device: str, pool_size: int, count: int) -> dict:
    ops = (ELEMENTWISE * count)[:count]
    pairs = [_pair(FIXTURES / f"tasks/{op}.py", FIXTURES / f"candidates/{op}_ok.py") for op in ops]
    started = time.perf_counter()
    with VerifierPool(size=pool_size, device=device) as pool:
        warm = pool.verify_many(pairs[: pool_size * len(ELEMENTWISE)])
        warmed = time.perf_counter()
        reports = pool.verify_many(pairs)
        done = time.perf_counter()
    failed = [r for r in warm + reports if r.verdict != "correct"]
    if failed:
        raise SystemExit(f"benchmark candidate failed: {failed[0].verdict}: {failed[0].message}")
    return {
        "pool_size": pool_size,
        "count": count,
        "warmup_s": warmed - started,
        "steady_s": done - warmed,
        "per_minute": 60 * count / (done - warmed),
        "per_minute_with_warmup": 60 * (count + len(warm)) / (done - started),
    }


class PeakMemory:
    """Samples the resident memory of this process and all its descendants (every sandbox) until stopped."""

    def __init__(self, every: float = 0.02):
        self.every, self.peak = every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            tree = [os.getpid(), *procs.descendants(os.getpid())]
            self.peak = max(self.peak, procs.resident_bytes(tree))
            time.sleep(self.every)


def input_bytes(task: Path) -> int:
    """The bytes of one call's inputs, from the task's shapes (made on the meta device: nothing allocated)."""
    import torch

    module = load_module(str(task), f"sizes_{task.stem}")
    with torch.device("meta"):
        inputs = module.get_inputs()
    return sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))


def published(device: str, names: list[str]) -> list[dict]:
    tasks = [PUBLISHED / f"{n}.py" for n in names] or [
        PUBLISHED / p.name for p in sorted((PUBLISHED / "triton").glob("*.py"))
    ]
    rows = []
    with VerifierPool(size=1, device=device) as pool:
        for task in tasks:
            for run in ("first", "again"):
                started = time.perf_counter()
                with PeakMemory() as memory:
                    report = pool.verify(*_pair(task, PUBLISHED / "triton" / task.name), timeout=300)
                timing = report.timing or {}
                rows.append(
                    {
                        "task": task.stem,
                        "run": run,
                        "verdict": report.verdict,
                        "message": report.message,
                        "input_gib": input_bytes(task) / GIB,
                        "peak_rss_gib": memory.peak / GIB,
                        "wall_s": time.perf_counter() - started,
                        **{p: report.phases.get(p, 0.0) for p in PHASES},
                        "candidate_ms": timing.get("candidate_ms"),
                        "vs_eager": timing.get("speedup_vs_eager"),
                        "vs_compile": timing.get("speedup_vs_compile"),
                        "timed_calls": timing.get("trials"),
                        "max_abs_error": report.max_abs_error,
                    }
                )
                print(_published_row(rows[-1]), flush=True)
    return rows


PUBLISHED_COLUMNS = ["task", "run", "verdict", "input_gib", "peak_rss_gib", *PHASES, "wall_s", "candidate_ms"]
PUBLISHED_COLUMNS += ["timed_calls", "vs_eager", "vs_compile", "max_abs_error"]


def _published_row(row: dict) -> str:
    def show(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3g}" if abs(value) < 0.01 else f"{value:.2f}"
        return "-" if value is None else str(value)

    return "| " + " | ".join(show(row[c]) for c in PUBLISHED_COLUMNS) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", choices=DEVICES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pool-size", type=int, default=2)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument(
        "--published",
        nargs="*",
        metavar="NAME",
        help="verify the published-size tasks with a Triton candidate instead (default: all of them)",
    )
    args = parser.parse_args()
    device = resolve_device(args.device)
    machine = _machine(device)
    print(f"# verify overhead: {machine}, device={device}\n")
    if args.published is not None:
        print("## published sizes: 5 trials + timing, one warm pool; seconds, GiB, ms\n")
        print("| " + " | ".join(PUBLISHED_COLUMNS) + " |")
        print("|---" * len(PUBLISHED_COLUMNS) + "|")
        rows = published(device, args.published)
        failed = [r for r in rows if r["verdict"] != "correct"]
        for row in failed:
            print(f"\n{row['task']} ({row['run']}): {row['verdict']}: {row['message']}")
        if args.json:
            args.json.write_text(json.dumps({"machine": machine, "published": rows}, indent=2))
        return

    rows = cold_runs(device, args.repeats)
    print("## cold verification of a small elementwise task (fresh pool each run), seconds\n")
    print("| run | " + " | ".join(PHASES) + " | wall_s |")
    print("|---" * (len(PHASES) + 2) + "|")
    for i, row in enumerate(rows, 1):
        print(f"| {i} | " + " | ".join(f"{row[p]:.2f}" for p in [*PHASES, "wall_s"]) + " |")
    medians = {p: statistics.median(r[p] for r in rows) for p in [*PHASES, "wall_s"]}
    print("| median | " + " | ".join(f"{medians[p]:.2f}" for p in [*PHASES, "wall_s"]) + " |\n")

    result = throughput(device, args.pool_size, args.count)
    print(f"## pool throughput: {args.count} elementwise candidates, pool size {args.pool_size}\n")
    print("| warm-up s | steady s | candidates/min (steady) | candidates/min (incl. warm-up) |")
    print("|---|---|---|---|")
    print(
        f"| {result['warmup_s']:.1f} | {result['steady_s']:.1f} | {result['per_minute']:.1f} "
        f"| {result['per_minute_with_warmup']:.1f} |"
    )
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "cold": rows, "throughput": result}, indent=2))


def _machine(device: str) -> str:
    import torch
    import triton

    gpu = torch.cuda.get_device_name() if device == "cuda" else "no GPU"
    return f"{platform.node()} ({gpu}), torch {torch.__version__}, triton {triton.__version__}"


if __name__ == "__main__":
    main()
