"""Captured Inductor outputs for golden tests of `model_server/inductor/rewrite.py`, and how to refresh them.

    python -m tests.model_server.inductor_fixtures capture [--device cpu|cuda] [--templates] [TASK.py ...]
    python -m tests.model_server.inductor_fixtures update

`capture` runs the real capture (`model_server.inductor.capture`, a subprocess per task) and stores its output
in tests/fixtures/inductor/NAME.DEVICE[-templates].json, with the task's source beside it; Inductor's helper
module is stored once per torch version under helpers/. `update` rewrites every expected output
(NAME...py, or NAME...refused.txt when the rewrite refuses) with the current rewrite. Re-capture when torch
changes; update only after reading the diff of the expected files.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from model_server.inductor.rewrite import RewriteError, rewrite

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "inductor"
HELPERS = FIXTURES / "helpers"
DEFAULT_TASKS = [ROOT / "examples" / "layernorm_gelu.py", *sorted((ROOT / "benchmarks" / "tasks").glob("*.py"))]


def fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.json"))


def load(path: Path) -> tuple[dict, str, str]:
    """(capture, task source, task name) of a stored fixture, with Inductor's helpers put back."""
    stored = json.loads(path.read_text())
    capture = {**stored["capture"], "helpers": (HELPERS / stored["helpers"]).read_text()}
    return capture, stored["task"], stored["task_name"]


def expected_path(path: Path, refused: bool) -> Path:
    return path.with_suffix(".refused.txt" if refused else ".py")


def rewritten(path: Path) -> tuple[str, bool]:
    """The current rewrite of a fixture: (source, False), or (the refusal's message, True)."""
    capture, task, name = load(path)
    try:
        return rewrite(capture, task, name), False
    except RewriteError as exc:
        return str(exc) + "\n", True


def capture(task: Path, device: str, templates: bool) -> Path:
    command = [sys.executable, "-m", "model_server.inductor.capture", str(task), "--device", device]
    if templates:
        command.append("--templates")
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900)
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {"error": done.stderr.strip()[-500:]}
    if "error" in result:
        raise ValueError(f"{task.name}: {result['error']}")
    helpers = f"torch-{result['torch']}.py"
    HELPERS.mkdir(parents=True, exist_ok=True)
    (HELPERS / helpers).write_text(result.pop("helpers"))
    name = task.stem
    stored = {"task": task.read_text(), "task_name": name, "helpers": helpers, "capture": result}
    out = FIXTURES / f"{name}.{device}{'-templates' if templates else ''}.json"
    out.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
    return out


def update() -> None:
    for path in fixtures():
        text, refused = rewritten(path)
        expected_path(path, not refused).unlink(missing_ok=True)
        expected_path(path, refused).write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    take = commands.add_parser("capture")
    take.add_argument("tasks", nargs="*", type=Path)
    take.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    take.add_argument("--templates", action="store_true")
    commands.add_parser("update")
    args = parser.parse_args()
    if args.command == "capture":
        FIXTURES.mkdir(parents=True, exist_ok=True)
        for task in args.tasks or DEFAULT_TASKS:
            try:
                print(capture(task.resolve(), args.device, args.templates), flush=True)
            except ValueError as exc:
                print(f"not captured: {exc}", flush=True)
    update()


if __name__ == "__main__":
    main()
