"""The inductor backend on a set of task types: correctness and speed of the converted kernels.

    python benchmarks/convert_inductor.py [TASK ...] [--device cuda] [--workers 2]   # default: benchmarks/tasks/*

For each task the backend generates its candidates (Inductor's default code, plus its Triton matmul templates
on a GPU); each is verified and timed by the verifier (median ms, speedup vs eager and vs torch.compile).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from model_server.backends import BackendConfig, BackendError, GenerationRequest, create_backend
from verifier.pool import VerifierPool

TASKS = Path(__file__).resolve().parent / "tasks"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task names in benchmarks/tasks or paths (default: all)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    paths = [_task_path(t) for t in args.tasks] or sorted(TASKS.glob("*.py"))
    backend = create_backend(BackendConfig("inductor"))
    with ThreadPoolExecutor(max_workers=4) as captures:
        generated = list(captures.map(lambda path: _generate(backend, path, args.device), paths))
    print(
        f"{'task':<20} {'cand':>4} {'verdict':<14} {'max err':>9} {'ms':>8} {'eager ms':>9} {'vs eager':>9} "
        f"{'vs compile':>10} {'gen s':>6}"
    )
    scratch = Path(tempfile.mkdtemp(prefix="tritonize-bench-"))
    with VerifierPool(size=args.workers, device=args.device) as pool:
        for path, (sources, error, seconds) in zip(paths, generated):
            if error:
                print(f"{path.stem:<20} {'-':>4} {'not converted':<14} {error[:90]}")
                continue
            for index, source in enumerate(sources, start=1):
                candidate = scratch / f"{path.stem}_{index}.py"
                candidate.write_text(source)
                report = pool.verify(path, candidate, trials=args.trials)
                timing = report.timing or {}
                print(
                    f"{path.stem:<20} {index:>4} {report.verdict:<14} {_fmt(report.max_abs_error, '.1e'):>9} "
                    f"{_fmt(timing.get('candidate_ms'), '.4f'):>8} {_fmt(timing.get('eager_ms'), '.4f'):>9} "
                    f"{_fmt(timing.get('speedup_vs_eager'), '.2f') + 'x':>9} "
                    f"{_fmt(timing.get('speedup_vs_compile'), '.2f') + 'x':>10} {seconds:>6.1f}",
                    flush=True,
                )
                if not report.passed:
                    print(f"{'':<20} {report.message[:200]}")


def _task_path(name: str) -> Path:
    path = Path(name)
    return path if path.suffix == ".py" else TASKS / f"{name}.py"


def _generate(backend, path: Path, device: str) -> tuple[list[str], str, float]:
    started = time.perf_counter()
    try:
        sources = backend.generate(GenerationRequest(path, 2, device))
        return sources, "", time.perf_counter() - started
    except BackendError as exc:
        return [], str(exc), time.perf_counter() - started


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else f"{value:{spec}}"


if __name__ == "__main__":
    main()
