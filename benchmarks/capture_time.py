"""Where a cold Inductor capture spends its time, and what Inductor's compile settings change about it.

    python benchmarks/capture_time.py [TASK ...] [--device cuda] [--setting NAME=ENV,ENV ...]

For each task and setting, both capture modes run at once (as the inductor backend runs them), each with empty
Inductor and Triton caches, and the table gives each mode's wall time and the capture's own split of it
(imports; the task's model and inputs and an eager call; torch.compile to the first result). Settings
are sets of environment variables, e.g. `--setting serial=TORCHINDUCTOR_COMPILE_THREADS=1`; `default` (no
variables) is always measured first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TASKS = Path(__file__).resolve().parent / "tasks" / "published"
ROOT = Path(__file__).resolve().parent.parent
MODES = {"default": [], "templates": ["--templates"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", default=["relu_6gib", "layernorm", "gemm_relu_divide"])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME=VAR=VALUE,...")
    args = parser.parse_args()
    settings = {"default": {}} | dict(_setting(text) for text in args.setting)
    modes = MODES if args.device == "cuda" else {"default": []}
    print(
        f"{'task':<44} {'setting':<10} {'mode':<10} {'wall s':>7} {'imports s':>9} {'task s':>7} {'compile s':>9}"
        "  result"
    )
    for task in args.tasks:
        path = Path(task) if task.endswith(".py") else TASKS / f"{task}.py"
        for name, env in settings.items():
            with ThreadPoolExecutor(len(modes)) as pool:
                runs = [pool.submit(_capture, path, args.device, flags, env) for flags in modes.values()]
                for mode, (wall, result) in zip(modes, (run.result() for run in runs)):
                    seconds = result.get("seconds", {})
                    outcome = result.get("error", "ok")[:60]
                    print(
                        f"{path.stem:<44} {name:<10} {mode:<10} {wall:>7.1f} {seconds.get('imports', 0):>9.1f} "
                        f"{seconds.get('task', 0):>7.1f} {seconds.get('compile', 0):>9.1f}  {outcome}",
                        flush=True,
                    )


def _setting(text: str) -> tuple[str, dict]:
    name, _, assignments = text.partition("=")
    return name, dict(item.split("=", 1) for item in assignments.split(",") if item)


def _capture(task: Path, device: str, flags: list[str], env: dict) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as cold:
        environment = {
            **os.environ,
            **env,
            "TORCHINDUCTOR_CACHE_DIR": f"{cold}/inductor",
            "TRITON_CACHE_DIR": f"{cold}/triton",
            "PYTHONPATH": str(ROOT),
        }
        command = [sys.executable, "-m", "model_server.inductor.capture", str(task), "--device", device, *flags]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
        wall = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    try:
        return wall, json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return wall, {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}


if __name__ == "__main__":
    main()
