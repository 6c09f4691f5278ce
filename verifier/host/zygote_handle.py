"""The trusted parent's handle on one sandboxed zygote: start it, send it jobs, watch each job from outside.

A zygote (`zygote.py`) runs in its own namespaces with its own scratch directory and forks one child per job.
The handle sends a `Job`, then waits for the zygote's `ZygoteReply` while a `sandbox.Meter` measures the job's
process tree; when a limit is passed, or the caller cancels, it kills the whole sandbox. A zygote that died
is started again on its next job.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from verifier import procs
from verifier.errors import Cancelled, SandboxStartError
from verifier.host import isolation as sandbox
from verifier.wire.messages import Job, ZygoteReply

START_TIMEOUT = 180.0
POLL_SECONDS = 0.02


@dataclass
class JobOutcome:
    """How a job ended, seen from outside: `ok`, `timeout`, `memory` or `died`."""

    status: str
    exit_code: int | None = None
    signal: int | None = None
    seconds: float = 0.0
    peak_rss: int = 0
    detail: str = ""


class ZygoteHandle:
    """A sandboxed zygote with its own scratch dir; runs one job at a time. `pass_fds` stay open in the zygote
    and its jobs (the slot's output channel)."""

    def __init__(
        self,
        name: str,
        base: Path,
        device: str,
        isolate: bool,
        writable: Iterable[str] = (),
        pass_fds: Iterable[int] = (),
        gpu: str | None = None,
    ):
        self.name = name
        self.gpu = gpu
        self.pass_fds = tuple(pass_fds)
        self.base = base
        self.device = device
        self.isolate = isolate
        self.writable = [str(p) for p in writable]
        self.scratch = base / name
        self.process: subprocess.Popen | None = None
        self.zygote_pid: int | None = None
        self.isolation: dict = {}
        self._job_counter = 0
        self._stopping = threading.Lock()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ensure_started(self) -> float:
        """Start the zygote if it is not running; return the seconds that took (0 if it was warm)."""
        return start_all([self])

    def new_job_dir(self) -> tuple[str, Path]:
        """A fresh job directory: (name relative to the scratch, host path)."""
        self._job_counter += 1
        name = f"job-{self._job_counter}"
        path = self.scratch / name
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return name, path

    def run(self, job: Job, limits: sandbox.Limits, cancelled: Callable[[], bool] | None = None) -> JobOutcome:
        """Send one job and watch it; kill the sandbox when it passes a limit, or when `cancelled()` turns
        true (then raise Cancelled)."""
        process = self.process  # `stop()` from another thread (a pool closing) clears the attribute
        assert process is not None and process.stdin is not None
        started = time.perf_counter()
        meter = sandbox.Meter(self.zygote_pid, limits)
        try:
            process.stdin.write((json.dumps(job) + "\n").encode())
            process.stdin.flush()
        except (OSError, ValueError) as exc:
            self.stop()
            return JobOutcome("died", detail=f"zygote pipe closed: {exc}")
        while True:
            line = self._read_line(process, min(meter.deadline, time.monotonic() + POLL_SECONDS))
            if line:
                reply: ZygoteReply = json.loads(line)
                seconds = time.perf_counter() - started
                return JobOutcome("ok", reply.get("exit_code"), reply.get("signal"), seconds, meter.peak_rss)
            if process.poll() is not None:
                detail = self._log_tail()
                self.stop()
                return JobOutcome("died", seconds=time.perf_counter() - started, peak_rss=meter.peak_rss, detail=detail)
            exceeded = meter.exceeded()
            if exceeded is not None:
                self.stop()
                return JobOutcome(exceeded, seconds=time.perf_counter() - started, peak_rss=meter.peak_rss)
            if cancelled is not None and cancelled():
                self.stop()
                raise Cancelled

    def wipe(self, keep: Iterable[str] = ()) -> None:
        """Delete the scratch dir's contents but `keep` (between candidates, so none leaves files for the next)."""
        if self.scratch.exists():
            for child in self.scratch.iterdir():
                if child.name in keep:
                    continue
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)

    def stop(self) -> None:
        """Kill the zygote and everything it started (safe to call from several threads at once: the job's
        watcher and a pool closing on shutdown)."""
        with self._stopping:
            process, self.process, self.zygote_pid = self.process, None, None
        if process is None:
            return
        procs.kill_tree(process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def _launch(self) -> None:
        self.stop()
        self.scratch.mkdir(parents=True, exist_ok=True)
        prefix, self.isolation = sandbox.launch_prefix(self.isolate)
        command = [*prefix, sys.executable, "-m", "verifier.sandbox.zygote", "--scratch", str(self.scratch)]
        cover = self.base.parent if self.base.parent != Path("/") else self.base
        command += ["--cover", str(cover), "--device", self.device]
        command += [arg for path in self.writable for arg in ("--writable", path)]
        if prefix:
            command.append("--lockdown")
        log = open(self.base / f"{self.name}.log", "ab")  # noqa: SIM115 (handed to the child)
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=self._environment(),
            start_new_session=True,
            cwd=self.scratch,
            pass_fds=self.pass_fds,
        )
        log.close()

    def _await_ready(self) -> None:
        assert self.process is not None
        line = self._read_line(self.process, time.monotonic() + START_TIMEOUT)
        if not line:
            detail = self._log_tail()
            self.stop()
            raise SandboxStartError(f"verifier sandbox {self.name} failed to start: {detail}")
        self.zygote_pid = self._find_zygote()

    def _environment(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_INTERPRET")}
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else root
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("TRITON_CACHE_DIR", None)
        # Inductor writes its cache dir into the environment of any process that asks for it (trl's imports do):
        # inherited, it would name a directory the sandbox cannot create. Each sandbox gets its own (zygote.py).
        env.pop("TORCHINDUCTOR_CACHE_DIR", None)
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        elif self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpu
        # Guarded buffers are a little larger than the plain ones they replace: in fixed-size segments the two
        # sizes fragment a GB-sized task's memory until two verifications no longer fit side by side.
        env.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
        for path in self.writable:
            env["TORCHINDUCTOR_CACHE_DIR"] = path
        return env

    def _find_zygote(self) -> int | None:
        assert self.process is not None
        if self.isolation.get("method") != "namespaces":
            return self.process.pid
        children = procs.descendants(self.process.pid)
        return children[0] if children else None

    def _read_line(self, process: subprocess.Popen, deadline: float) -> bytes:
        stream = process.stdout
        assert stream is not None
        remaining = deadline - time.monotonic()
        while remaining > 0:
            try:
                ready, _, _ = select.select([stream], [], [], min(remaining, 0.5))
                if ready:
                    return stream.readline()
            except (OSError, ValueError):  # the pipe was closed: the zygote was stopped
                return b""
            if process.poll() is not None:
                return b""
            remaining = deadline - time.monotonic()
        return b""

    def _log_tail(self) -> str:
        try:
            text = (self.base / f"{self.name}.log").read_text(errors="replace").strip()
        except OSError:
            return "no log"
        return text.splitlines()[-1] if text else "no output"


def start_all(zygotes: Iterable[ZygoteHandle]) -> float:
    """Start every zygote that is not running, all at once; return the seconds until all were ready."""
    cold = [z for z in zygotes if not z.running]
    if not cold:
        return 0.0
    started = time.perf_counter()
    for zygote in cold:
        zygote._launch()
    for zygote in cold:
        zygote._await_ready()
    return time.perf_counter() - started
