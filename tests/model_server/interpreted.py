"""Rendered Triton kernels run in Triton's interpreter, as the kernel tests run them: a kernel's source loaded as
a module, and a test module's cases computed in a process of its own with the interpreter switched on before Triton
is imported (a process that imported Triton first keeps compiled versions of `tl.zeros` and friends)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_cases(module: str, folder: Path) -> dict[str, float]:
    """`python -m module folder` under the interpreter, on no GPU: the JSON object its last line prints."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-m", module, str(folder)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def load_kernel(source: str, name: str, folder: Path):
    """The kernel `name` of a rendered `source`, written to `folder` and imported with Triton's imports."""
    path = folder / f"{name}.py"
    path.write_text("import triton\nimport triton.language as tl\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(f"rendered_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)
