"""Audit time on generated worst cases, at growing sizes: each row should grow about as fast as its line count.

    python benchmarks/audit_worst_cases.py [--sizes 250,500,1000,2000]

The kernels come from tests/verifier/audit/worst_cases.py: names reassigned in branches inside loops around
`tl.dot`, long `tl.where` chains, names built from the two before them, deep nesting, many masked loads, many
kernels. The time budget is lifted so every file is analysed to the end; each time is the best of three.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.verifier.audit.worst_cases import WORST_CASES  # noqa: E402
from verifier.audit import AuditConfig, audit_source  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="250,500,1000,2000", help="comma-separated sizes (default 250..2000)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    config = AuditConfig(time_budget=3600.0)
    print(f"{'case':<24} {'size':>6} {'lines':>7} {'seconds':>8} {'lines/s':>9} {'x time / x lines':>17}")
    for name, generate in WORST_CASES.items():
        previous = None
        for size in sizes:
            source = generate(size)
            lines = len(source.splitlines())
            seconds = min(_timed(source, name, config) for _ in range(3))
            growth = "" if previous is None else f"{(seconds / previous[1]) / (lines / previous[0]):.2f}"
            print(f"{name:<24} {size:>6} {lines:>7} {seconds:>8.3f} {lines / seconds:>9,.0f} {growth:>17}")
            previous = (lines, seconds)


def _timed(source: str, name: str, config: AuditConfig) -> float:
    started = time.perf_counter()
    audit_source(source, f"{name}.py", config)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
