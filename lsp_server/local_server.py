"""A `tritonize serve` child process the language server starts when the configured model server is not up.

Only loopback URLs are started (a remote URL that does not answer is the user's to fix); the child's output
goes to a log file whose tail is quoted if it dies, and the child dies with the language server.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

from lsp_server.errors import ModelServerError
from lsp_server.settings import Settings
from model_server.api import LOOPBACK_HOSTS
from verifier import cache_dir

START_TIMEOUT = 180.0
STOP_TIMEOUT = 10.0  # the server cancels what runs (1 s), then closes its verifier pool and scratch


class LocalServer:
    """At most one child model server, restarted when the settings it was started with change."""

    def __init__(self, log_dir: Path | None = None) -> None:
        self.log_dir = log_dir or cache_dir()
        self.process: subprocess.Popen | None = None
        self.command: list[str] = []
        self.log_path: Path | None = None

    def command_for(self, settings: Settings) -> list[str]:
        url = urlsplit(settings.server_url)
        if url.hostname not in LOOPBACK_HOSTS:
            raise ModelServerError(
                f"the model server at {settings.server_url} is not reachable, and only a loopback URL "
                "is started automatically; start `tritonize serve` there or fix tritonize.serverUrl"
            )
        command = [sys.executable, "-m", "model_server", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(url.port or 80), "--backend", settings.backend, "--device", settings.device]
        if settings.model:
            command += ["--model", settings.model]
        return command

    async def start(self, settings: Settings, healthy: Callable[[], Awaitable[bool]]) -> None:
        """Start the child (unless the same one runs) and wait until `healthy()`; errors quote its log."""
        command = self.command_for(settings)
        if self.process is not None and self.process.poll() is None and command == self.command:
            await self._wait(healthy)
            return
        self.stop()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.log_dir / f"serve-{urlsplit(settings.server_url).port}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        self.command = command
        await self._wait(healthy)

    async def _wait(self, healthy: Callable[[], Awaitable[bool]]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if await healthy():
                return
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                self.process = None
                raise ModelServerError(f"`tritonize serve` exited with code {code} while starting: {self._tail()}")
            await asyncio.sleep(0.25)
        self.stop()
        raise ModelServerError(f"`tritonize serve` did not answer within {START_TIMEOUT:.0f} s: {self._tail()}")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _tail(self) -> str:
        if self.log_path is None:
            return "(no log)"
        with contextlib.suppress(OSError):
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
            return " | ".join(lines[-3:]) + f" (log: {self.log_path})"
        return f"(log: {self.log_path})"


def _die_with_parent() -> None:
    """Linux: the child gets SIGTERM if the language server dies without stopping it (editor killed)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
