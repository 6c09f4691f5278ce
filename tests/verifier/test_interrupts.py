"""SIGTERM (what `timeout`, CI runners and `kill` send) stops `verify`, `convert` and `serve` the way Ctrl-C does:
every sandboxed process they started is gone and no scratch directory is left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.model_server.serving import free_port
from verifier import procs


def start(args: list[str], tmp_path: Path) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.Popen([sys.executable, "-m", "model_server", *args], env=env, stderr=subprocess.PIPE, text=True)


def sandboxes_running(process: subprocess.Popen, timeout: float = 120) -> list[int]:
    """The command's descendants once its sandboxed processes are up (a zygote and its child, at least)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = procs.descendants(process.pid)
        if len(found) >= 3:
            return found
        assert process.poll() is None, process.stderr.read()
        time.sleep(0.2)
    raise AssertionError("the command never started its sandboxes")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def assert_stopped_cleanly(process: subprocess.Popen, started: list[int], tmp_path: Path) -> None:
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in started if alive(pid)] == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("tritonize-")) == []
    assert code in (0, 128 + signal.SIGTERM), process.stderr.read()


@pytest.mark.slow
def test_sigterm_stops_verify_and_its_sandboxes(tmp_path):
    task, hang = FIXTURES / "tasks/add.py", FIXTURES / "zoo/hang_in_kernel.py"
    process = start(["verify", str(task), str(hang), "--device", "cpu", "--timeout", "300"], tmp_path)
    started = sandboxes_running(process)
    assert_stopped_cleanly(process, started, tmp_path)
    assert "stopped (SIGTERM)" in process.stderr.read()


@pytest.mark.slow
def test_sigterm_stops_convert_and_its_sandboxes(tmp_path):
    task = tmp_path / "relu.py"
    task.write_text((FIXTURES / "tasks/relu.py").read_text())
    process = start(["convert", str(task), "--device", "cpu", "--samples", "1", "--rounds", "1"], tmp_path)
    started = sandboxes_running(process)
    assert_stopped_cleanly(process, started, tmp_path)
    assert not (tmp_path / "relu_triton.py").exists()


@pytest.mark.slow
def test_sigterm_stops_serve_and_its_sandboxes(tmp_path):
    import httpx

    port = free_port()
    process = start(["serve", "--device", "cpu", "--port", str(port)], tmp_path)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.3)
    task, hang = FIXTURES / "tasks/add.py", FIXTURES / "zoo/hang_in_kernel.py"
    body = {"task": task.read_text(), "candidate": hang.read_text()}
    with contextlib.suppress(httpx.ReadTimeout):  # the verification of a hanging kernel is under way
        httpx.post(f"{base}/v1/verify", json=body, timeout=2)
    started = sandboxes_running(process)
    assert_stopped_cleanly(process, started, tmp_path)
