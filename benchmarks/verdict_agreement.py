"""Do two devices give a model's kernels the same verdict? Every sample of `training.eval` outputs verified again
on another device (Triton's interpreter on a CPU, say), against the verdict the evaluation recorded.

    python benchmarks/verdict_agreement.py OUT [OUT ...] --device cpu [--workers 2] [--timeout 60]

Prints how often the pass condition agrees, the recorded -> new verdict pairs, and the new device's verification
time per sample and samples per minute. What it answers: whether GRPO's rewards can come from the CPU's
interpreter (fast for small tasks, and off the GPU that generates) while the evaluation stays on the GPU.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from training.eval import recorded_samples  # noqa: E402
from training.rewards import passed  # noqa: E402
from verifier import Task, TaskError, VerifierPool  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", type=Path, nargs="+", help="training.eval output directories")
    parser.add_argument("--device", default="cpu", help="where to verify again: cpu or cuda (default: cpu)")
    parser.add_argument("--workers", type=int, default=2, help="verifications at once (default: 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per verification run (default: 60)")
    parser.add_argument("--trials", type=int, default=3, help="input sets compared (default: 3)")
    args = parser.parse_args(argv)
    try:
        samples = [sample for out in args.outputs for sample in recorded_samples(out)]
        if not samples:
            print("verdict_agreement.py: the outputs hold no sample whose files are there", file=sys.stderr)
            return 1
        print(f"{len(samples)} samples, verified again on {args.device} by {args.workers} workers", file=sys.stderr)
        started = time.monotonic()
        rows = again(samples, args)
    except ValueError as exc:
        print(f"verdict_agreement.py: {exc}", file=sys.stderr)
        return 2
    print(table(rows, time.monotonic() - started))
    return 0


def again(samples: list[dict], args: argparse.Namespace) -> list[dict]:
    """Each sample with its new verdict, pass condition and seconds (`task_error` where the task itself cannot
    run on the new device)."""
    with VerifierPool(size=args.workers, device=args.device) as pool, ThreadPoolExecutor(args.workers) as workers:

        def verify(sample: dict) -> dict:
            started = time.monotonic()
            try:
                report = pool.verify(
                    Task.from_file(sample["task"]),
                    Path(sample["candidate"]).read_text(),
                    trials=args.trials,
                    timeout=args.timeout,
                    policy="strict",
                    timing=False,
                )
            except TaskError:
                verdict, ok = "task_error", False
            else:
                verdict, ok = report.verdict, passed(report)
            return sample | {"new_verdict": verdict, "new_passed": ok, "seconds": time.monotonic() - started}

        return list(workers.map(verify, samples))


def table(rows: list[dict], elapsed: float) -> str:
    agree = sum(row["passed"] == row["new_passed"] for row in rows)
    pairs = collections.Counter((row["verdict"], row["new_verdict"]) for row in rows)
    lines = [
        "| samples | pass condition agrees | passed before | passed now | median s | samples/min |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| {len(rows)} | {agree} ({agree / len(rows):.1%}) | {sum(row['passed'] for row in rows)} | "
        f"{sum(row['new_passed'] for row in rows)} | {statistics.median(row['seconds'] for row in rows):.2f} | "
        f"{len(rows) / max(elapsed, 1e-9) * 60:.1f} |",
        "",
        "| recorded verdict | new verdict | samples |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {before} | {now} | {count} |" for (before, now), count in pairs.most_common()]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
