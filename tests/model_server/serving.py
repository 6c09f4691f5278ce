"""Start a real `tritonize serve` process on a free loopback port for tests (built-in backend, CPU)."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(options: list[str], token: str | None = None) -> Iterator[str]:
    """A generator for fixtures: yields the base URL once /health answers, then stops the server."""
    port = free_port()
    command = [sys.executable, "-m", "model_server", "serve"]
    command += ["--device", "cpu", "--port", str(port), *options, *(["--token", token] if token else [])]
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        else:
            process.kill()
            log.seek(0)
            pytest.fail(f"the server did not come up:\n{log.read()}")
        yield base
        process.terminate()
        process.wait(timeout=30)
