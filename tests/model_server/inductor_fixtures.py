"""Captured Inductor outputs for golden tests of `model_server/inductor/rewrite.py`, and how to refresh them.

    python -m tests.model_server.inductor_fixtures capture [--device cpu|cuda]
                                                           [--templates | --tuned | --looped | --as-backend]
                                                           [--jobs N] [TASK.py ...]
    python -m tests.model_server.inductor_fixtures update

`capture` runs the real capture (`model_server.inductor.capture`, a subprocess per task, with the flags the
inductor backend passes; `--looped` on the CPU untuned, since nothing there times a configuration) and stores its
output in tests/fixtures/inductor/NAME.DEVICE[-templates|-tuned|-looped].json,
with the task's source beside it; a task of benchmarks/tasks/published/ is stored as published_NAME.
`--as-backend` captures what the backend would on that device: the default compile, and on a GPU the templates
compile too where the default one calls a library, the tuned one where it does not. Inductor's helper module is
stored once per torch version under helpers/. `update` rewrites every expected output (NAME...py, or
NAME...refused.txt when the rewrite refuses) with the current rewrite, and for each default capture that hands a
convolution or a matmul to the library, the variant with the project's own kernel in its place
(NAME.DEVICE.own-conv.py or .own-conv.refused.txt; .own-matmul likewise). Re-capture when torch changes; update only
after reading the diff of the expected files.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from model_server.backends.inductor import OWN_CONV_TILES, OWN_MATMUL_TILES, _capture_flags, _describe_own
from model_server.inductor.rewrite import (
    RewriteError,
    Variant,
    rewrite,
    uses_library,
    uses_library_convolution,
    uses_library_matmul,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "inductor"
HELPERS = FIXTURES / "helpers"
DEFAULT_TASKS = [ROOT / "examples" / "layernorm_gelu.py", *sorted((ROOT / "benchmarks" / "tasks").glob("*.py"))]
PUBLISHED = ROOT / "benchmarks" / "tasks" / "published"


def fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.json"))


def load(path: Path) -> tuple[dict, str, str]:
    """(capture, task source, task name) of a stored fixture, with Inductor's helpers put back."""
    stored = json.loads(path.read_text())
    capture = {**stored["capture"], "helpers": (HELPERS / stored["helpers"]).read_text()}
    return capture, stored["task"], stored["task_name"]


def expected_path(path: Path, refused: bool, variant: str = "") -> Path:
    """Where a fixture's expected rewrite is kept: NAME.DEVICE[.VARIANT].py, or .refused.txt for a refusal."""
    infix = f".{variant}" if variant else ""
    return path.with_suffix(f"{infix}.refused.txt" if refused else f"{infix}.py")


def rewritten(path: Path, variant: Variant | None = None) -> tuple[str, bool]:
    """The current rewrite of a fixture: (source, False), or (the refusal's message, True)."""
    capture, task, name = load(path)
    try:
        return rewrite(capture, task, name, variant), False
    except RewriteError as exc:
        return str(exc) + "\n", True


# the own-convolution and own-matmul variants at the backend's first tile, whose rewrites are kept as
# NAME.DEVICE.own-conv.py and NAME.DEVICE.own-matmul.py
OWN_CONV = Variant(_describe_own(OWN_CONV_TILES[0]), conv=OWN_CONV_TILES[0])
OWN_MATMUL = Variant(_describe_own(None, OWN_MATMUL_TILES[0]), matmul=OWN_MATMUL_TILES[0])


def own_conv_fixtures() -> list[Path]:
    """The default captures that hand a convolution to the library: the own-convolution variant applies."""
    return [path for path in fixtures() if "-" not in path.stem and uses_library_convolution(load(path)[0])]


def own_matmul_fixtures() -> list[Path]:
    """The default captures that hand a matmul to the library: the own-matmul variant applies."""
    return [path for path in fixtures() if "-" not in path.stem and uses_library_matmul(load(path)[0])]


def fixture_name(task: Path) -> str:
    return f"published_{task.stem}" if task.parent == PUBLISHED else task.stem


def capture(task: Path, device: str, mode: str) -> Path:
    """Capture `task` as the backend's `mode` capture does ("default", "templates", "tuned" or "looped")."""
    flags, pooled = _capture_flags(mode, task.read_text())
    if device == "cpu" and mode == "looped":
        flags = [flag for flag in flags if flag != "--tuned"]
    command = [sys.executable, "-m", "model_server.inductor.capture", str(task), "--device", device, *flags]
    env = os.environ if pooled else {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900, env=env)
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {"error": done.stderr.strip()[-500:]}
    if "error" in result:
        raise ValueError(f"{task.name}: {result['error']}")
    helpers = f"torch-{result['torch']}.py"
    HELPERS.mkdir(parents=True, exist_ok=True)
    (HELPERS / helpers).write_text(result.pop("helpers"))
    name = fixture_name(task)
    stored = {"task": task.read_text(), "task_name": task.stem, "helpers": helpers, "capture": result}
    out = FIXTURES / f"{name}.{device}{'' if mode == 'default' else '-' + mode}.json"
    out.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
    return out


def capture_as_backend(task: Path, device: str) -> list[Path]:
    """The captures the inductor backend makes of `task` on `device`."""
    default = capture(task, device, "default")
    if device != "cuda":
        return [default]
    return [default, capture(task, device, "templates" if uses_library(load(default)[0]) else "tuned")]


def update() -> None:
    runs = [(path, None, "") for path in fixtures()]
    runs += [(path, OWN_CONV, "own-conv") for path in own_conv_fixtures()]
    runs += [(path, OWN_MATMUL, "own-matmul") for path in own_matmul_fixtures()]
    for path, variant, infix in runs:
        text, refused = rewritten(path, variant)
        expected_path(path, not refused, infix).unlink(missing_ok=True)
        expected_path(path, refused, infix).write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    take = commands.add_parser("capture")
    take.add_argument("tasks", nargs="*", type=Path)
    take.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    how = take.add_mutually_exclusive_group()
    how.add_argument("--templates", action="store_true")
    how.add_argument("--tuned", action="store_true")
    how.add_argument("--looped", action="store_true", help="looped reductions (tuned on a GPU)")
    how.add_argument("--as-backend", action="store_true", help="the captures the inductor backend makes")
    take.add_argument("--jobs", type=int, default=1, help="captures at once (each task's run one after another)")
    commands.add_parser("update")
    args = parser.parse_args()
    if args.command == "capture":
        FIXTURES.mkdir(parents=True, exist_ok=True)

        def one(task: Path) -> str:
            try:
                if args.as_backend:
                    return "\n".join(map(str, capture_as_backend(task.resolve(), args.device)))
                modes = {"templates": args.templates, "tuned": args.tuned, "looped": args.looped}
                mode = next((name for name, chosen in modes.items() if chosen), "default")
                return str(capture(task.resolve(), args.device, mode))
            except (ValueError, subprocess.TimeoutExpired) as exc:
                return f"not captured: {task.name}: {exc}"

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for line in pool.map(one, args.tasks or DEFAULT_TASKS):
                print(line, flush=True)
    update()


if __name__ == "__main__":
    main()
