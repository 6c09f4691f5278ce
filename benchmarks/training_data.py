"""How fast `python -m training.data` makes verified SFT pairs from synthetic tasks, on this machine's device.

    python benchmarks/training_data.py [--synthetic 20] [--sizes small|large] [--device auto] [--workers 2]

Runs the real command into a fresh directory (cold caches: every task is new to the Inductor and capture
caches) and prints one row: tasks, verified pairs, rejections by verdict, wall time, and pairs per minute.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from training import data  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--sizes", default="small")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tritonize-data-bench-") as out:
        flags = ["--output-dir", out, "--synthetic", str(args.synthetic), "--seed", str(args.seed)]
        flags += ["--sizes", args.sizes, "--device", args.device, "--workers", str(args.workers), "--no-rl"]
        started = time.perf_counter()
        data.main(flags)
        seconds = time.perf_counter() - started
        sheet = json.loads((Path(out) / "datasheet.json").read_text())
    pairs = sheet["sft"]["tasks_converted"]
    rejected = sheet["sft"]["rejected_by_verdict"]
    print(f"{'tasks':>6} {'pairs':>6} {'seconds':>8} {'pairs/min':>10}  rejected")
    rate = pairs / seconds * 60
    print(f"{sheet['tasks']['kept']:>6} {pairs:>6} {seconds:>8.1f} {rate:>10.1f}  {json.dumps(rejected)}")


if __name__ == "__main__":
    main()
