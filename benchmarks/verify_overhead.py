"""Wall time per verification, split by phase, and pool throughput for elementwise candidates.

    python benchmarks/verify_overhead.py [--device auto|cuda|cpu] [--repeats 3] [--pool-size 4] [--count 60]

Part 1 verifies a small task end to end in a fresh pool each time (cold: process start included).
Part 2 pushes `--count` elementwise candidates through one warm pool and reports candidates per minute.
Prints tables; `--json PATH` also writes the raw figures.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verifier import VerifierPool  # noqa: E402
from verifier.device import DEVICES, resolve_device  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
ELEMENTWISE = ["add", "relu", "scale"]
PHASES = ["start_s", "reference_s", "candidate_s", "timing_s", "total_s"]


def cold_runs(device: str, repeats: int) -> list[dict]:
    rows = []
    for _ in range(repeats):
        started = time.perf_counter()
        with VerifierPool(size=1, device=device) as pool:
            report = pool.verify(FIXTURES / "tasks/add.py", FIXTURES / "candidates/add_ok.py")
        wall = time.perf_counter() - started
        if report.verdict != "correct":
            raise SystemExit(f"benchmark candidate failed: {report.verdict}: {report.message}")
        rows.append({**{p: report.phases.get(p, 0.0) for p in PHASES}, "wall_s": wall})
    return rows


def throughput(device: str, pool_size: int, count: int) -> dict:
    pairs = [(FIXTURES / f"tasks/{op}.py", FIXTURES / f"candidates/{op}_ok.py") for op in (ELEMENTWISE * count)[:count]]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", choices=DEVICES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pool-size", type=int, default=2)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    device = resolve_device(args.device)
    machine = _machine(device)
    print(f"# verify overhead: {machine}, device={device}\n")

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
