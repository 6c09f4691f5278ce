"""Audit speed and noise: static-rule throughput, a 2,000-line file, compile-check cost, findings per 1,000 lines.

    python benchmarks/audit_speed.py [PATH ...]     # default: CORPUS, the hand-written kernels of this repo

Point it at Triton code nobody here wrote (an unpacked liger-kernel wheel, triton's tutorials) to measure the
false-positive side: the table counts findings by rule and severity per 1,000 lines.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import tempfile
import time
from pathlib import Path

from verifier.audit import AuditConfig, CompileChecker, SourceIndex, audit_source, plan, python_files

ROOT = Path(__file__).resolve().parent.parent
# Hand-written tasks and kernels (not the generated Inductor goldens), so figures stay comparable across runs.
CORPUS = [str(ROOT / "examples")] + [
    str(ROOT / "tests" / "fixtures" / name) for name in ("candidates", "gpu", "sandbox", "tasks", "zoo")
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=CORPUS)
    parser.add_argument("--compile-files", type=int, default=3, help="files to time compile checks on (default 3)")
    args = parser.parse_args()
    config = AuditConfig()
    files = python_files(args.paths, config)
    sources = {path: path.read_bytes() for path in files}
    lines = sum(source.count(b"\n") + 1 for source in sources.values())

    started = time.perf_counter()
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    slowest = (0.0, "")
    for path, source in sources.items():
        tick = time.perf_counter()
        for finding in audit_source(source, str(path), config):
            counts[(finding.rule, finding.severity)] += 1
        slowest = max(slowest, (time.perf_counter() - tick, str(path.relative_to(path.anchor))))
    elapsed = time.perf_counter() - started

    big = two_thousand_lines(sources)
    big_times = []
    for _ in range(20):
        tick = time.perf_counter()
        audit_source(big, "big.py", config)
        big_times.append(time.perf_counter() - tick)

    print(f"{'measure':<44} {'value':>14}")
    print(f"{'files / lines':<44} {len(files):>6} / {lines:<7}")
    print(f"{'static rules, all files (s)':<44} {elapsed:>14.3f}")
    print(f"{'static rules, lines/s':<44} {lines / elapsed:>14,.0f}")
    print(f"{'2,000-line file, median of 20 (ms)':<44} {statistics.median(big_times) * 1000:>14.1f}")
    print(f"{'slowest file (ms)':<44} {slowest[0] * 1000:>14.1f}  {slowest[1]}")
    _compile_costs(sources, args.compile_files)
    print()
    print(f"{'rule':<8} {'severity':<8} {'count':>6} {'per 1,000 lines':>16}")
    for (rule, severity), count in sorted(counts.items()):
        print(f"{rule:<8} {severity:<8} {count:>6} {count * 1000 / lines:>16.2f}")
    for severity in ("error", "warning", "info"):
        total = sum(n for (_, s), n in counts.items() if s == severity)
        print(f"{'all':<8} {severity:<8} {total:>6} {total * 1000 / lines:>16.2f}")


def two_thousand_lines(sources: dict[Path, bytes]) -> str:
    """Real kernel files concatenated until the text has 2,000 lines."""
    texts = [s.decode("utf-8", "replace") for s in sources.values() if b"triton.jit" in s]
    chunks, total = [], 0
    while total < 2000 and texts:
        for text in texts:
            chunks.append(text)
            total += text.count("\n")
            if total >= 2000:
                break
    return "\n".join("\n".join(chunks).splitlines()[:2000])


def _compile_costs(sources: dict[Path, bytes], limit: int) -> None:
    """Cold (sandboxed compile) and warm (cache hit) cost per kernel for the first files with plannable kernels."""
    if limit <= 0:
        return
    picked = []
    for path, raw in sources.items():
        text = raw.decode("utf-8", "replace")
        try:
            jobs = plan(SourceIndex(__import__("ast").parse(text), text))
        except SyntaxError:
            continue
        if jobs:
            picked.append((path, text, len(jobs)))
        if len(picked) == limit:
            break
    if not picked:
        print(f"{'compile checks':<44} {'no plannable kernels':>14}")
        return
    with tempfile.TemporaryDirectory() as cache:
        checker = CompileChecker(AuditConfig(), cache_dir=Path(cache))
        cold, warm, kernels = 0.0, 0.0, 0
        for path, text, jobs in picked:
            tick = time.perf_counter()
            checker.findings(str(path), text)
            cold += time.perf_counter() - tick
            tick = time.perf_counter()
            checker.findings(str(path), text)
            warm += time.perf_counter() - tick
            kernels += jobs
    print(f"{'compile checks: files / kernel configs':<44} {len(picked):>6} / {kernels:<7}")
    print(f"{'compile, cold, per kernel config (s)':<44} {cold / kernels:>14.2f}")
    print(f"{'compile, cached, per file (ms)':<44} {warm / len(picked) * 1000:>14.1f}")


if __name__ == "__main__":
    main()
