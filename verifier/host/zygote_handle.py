"""The trusted parent's handle on one sandboxed zygote: start it, send it jobs, watch each job from outside.

A zygote (`sandbox/zygote.py`) runs in its own sandbox (`isolation.py`) with its own scratch and forks one child
per job. The handle sends a `Job` (with the files the job needs), then waits for the zygote's `ZygoteReply` while
a `limits.Meter` measures the job from outside; when a limit is passed, or the caller cancels, it kills the
whole sandbox. Everything the handle reads from the zygote is untrusted: one reply line at most REPLY_LIMIT
bytes, each field checked for its type, the log's last bytes only. A zygote that died is started again on its
next job.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from verifier import procs
from verifier.errors import Cancelled, SandboxStartError
from verifier.host import cgroups, isolation
from verifier.host.cgroups import MemoryGroup
from verifier.host.limits import Limits, Meter
from verifier.wire.messages import OUTPUT_LIMIT, REPLY_LIMIT, SANITIZER_LOG_LIMIT, Job, Wipe

START_TIMEOUT = 180.0
WIPE_TIMEOUT = 60.0
POLL_SECONDS = 0.02
LOG_TAIL_BYTES = 64 * 1024
READY_LIMIT = 4096


@dataclass
class JobOutcome:
    """How a job ended, seen from outside (`ok`, `timeout`, `memory` or `died`), and what its sandbox sent
    back: the child's result (None when there was none), its captured output and memcheck's log."""

    status: str
    exit_code: int | None = None
    signal: int | None = None
    seconds: float = 0.0
    peak_rss: int = 0
    detail: str = ""
    result: dict | None = None
    stdout: str = ""
    stderr: str = ""
    sanitizer_log: str = ""

    @property
    def harness_error(self) -> str:
        """The harness's own failure, when the child reported one instead of a result."""
        error = (self.result or {}).get("harness_error")
        return error[:2000] if isinstance(error, str) else ""


class ZygoteHandle:
    """A sandboxed zygote with its own scratch; runs one job at a time. `pass_fds` stay open in the zygote and
    its jobs (the slot's output channel); `writable` host directories are bound into its sandbox read-write;
    `role` (reference or candidate) says whose jobs it runs, and so what it warms up."""

    def __init__(
        self,
        name: str,
        base: Path,
        device: str,
        isolate: bool,
        writable: Iterable[str] = (),
        pass_fds: Iterable[int] = (),
        gpu: str | None = None,
        role: str = "reference",
    ):
        self.name = name
        self.role = role
        self.gpu = gpu
        self.pass_fds = tuple(pass_fds)
        self.base = base
        self.device = device
        self.isolate = isolate
        self.writable = [str(p) for p in writable]
        self.host_scratch = base / name  # the scratch where no sandbox gives one of its own
        self.process: subprocess.Popen | None = None
        self.zygote_pid: int | None = None
        self.isolation: dict = {}
        self.group: MemoryGroup | None = None
        self._job_counter = 0
        self._stopping = threading.Lock()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ensure_started(self) -> float:
        """Start the zygote if it is not running; return the seconds that took (0 if it was warm)."""
        return start_all([self])

    def new_job_name(self) -> str:
        """A fresh job directory's name (the zygote makes the directory in its scratch)."""
        self._job_counter += 1
        return f"job-{self._job_counter}"

    def run(self, job: Job, limits: Limits, cancelled: Callable[[], bool] | None = None) -> JobOutcome:
        """Send one job and watch it; kill the sandbox when it passes a limit, or when `cancelled()` turns
        true (then raise Cancelled)."""
        process = self.process  # `stop()` from another thread (a pool closing) clears the attribute
        assert process is not None and process.stdin is not None
        started = time.perf_counter()
        meter = Meter(self.zygote_pid, limits, group=self.group)
        try:
            process.stdin.write((json.dumps(job) + "\n").encode())
            process.stdin.flush()
        except (OSError, ValueError) as exc:
            self.stop()
            return JobOutcome("died", detail=f"zygote pipe closed: {exc}")
        while True:
            line = self._read_line(process, min(meter.deadline, time.monotonic() + POLL_SECONDS), REPLY_LIMIT)
            seconds = time.perf_counter() - started
            if line:
                outcome = _outcome(line, seconds, meter.peak_rss)
                if outcome.status != "ok":
                    self.stop()
                if meter.killed_for_memory():
                    outcome.status = "memory"
                return outcome
            if process.poll() is not None:
                detail = f"{_exit_words(process.returncode)}; {self._log_tail()}"
                self.stop()
                status = "memory" if meter.killed_for_memory() else "died"
                return JobOutcome(status, seconds=seconds, peak_rss=meter.peak_rss, detail=detail)
            exceeded = meter.exceeded()
            if exceeded is not None:
                self.stop()
                return JobOutcome(exceeded, seconds=seconds, peak_rss=meter.peak_rss)
            if cancelled is not None and cancelled():
                self.stop()
                raise Cancelled

    def wipe(self, keep: Iterable[str] = ()) -> None:
        """Delete the scratch's contents but `keep` (between candidates, so none leaves files for the next). A
        zygote that does not answer is stopped: its sandbox, scratch and all, goes with it."""
        process = self.process
        if process is None or process.poll() is not None or process.stdin is None:
            return
        request: Wipe = {"wipe": True, "keep": list(keep)}
        try:
            process.stdin.write((json.dumps(request) + "\n").encode())
            process.stdin.flush()
        except (OSError, ValueError):
            self.stop()
            return
        if not self._read_line(process, time.monotonic() + WIPE_TIMEOUT, READY_LIMIT).endswith(b"\n"):
            self.stop()

    def stop(self) -> None:
        """Kill the zygote and everything it started (safe to call from several threads at once: the job's
        watcher and a pool closing on shutdown)."""
        with self._stopping:
            process, self.process, self.zygote_pid = self.process, None, None
        if process is None:
            return
        procs.kill_tree(process.pid)
        if self.group is not None:
            self.group.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def close(self) -> None:
        """Stop the zygote for good and remove its memory group."""
        self.stop()
        if self.group is not None:
            self.group.remove()
            self.group = None

    def _launch(self) -> None:
        self.stop()
        self.host_scratch.mkdir(parents=True, exist_ok=True)
        if self.group is None and self.isolate:
            self.group = cgroups.new_group(self.name)
        if self.group is not None:
            self.group.set_limit(None)
        scratch = isolation.scratch_for(self.isolate, self.host_scratch)
        program = [sys.executable, "-m", "verifier.sandbox.zygote", "--scratch", scratch, "--device", self.device]
        program += ["--role", self.role]
        launch = isolation.prepare(
            program,
            device=self.device,
            isolate=self.isolate,
            host_scratch=self.host_scratch,
            gpu=self.gpu,
            group=self.group,
            writable=self.writable,
            env=self._environment(),
            pass_fds=self.pass_fds,
        )
        self.isolation = launch.isolation
        with open(self.base / f"{self.name}.log", "ab") as log:
            self.process = isolation.spawn(
                launch, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=self.host_scratch
            )

    def _await_ready(self) -> None:
        assert self.process is not None
        line = self._read_line(self.process, time.monotonic() + START_TIMEOUT, READY_LIMIT)
        if not line.endswith(b"\n"):
            detail = self._log_tail()
            self.stop()
            raise SandboxStartError(f"verifier sandbox {self.name} failed to start: {detail}")
        self.zygote_pid = self._find_zygote()

    def _environment(self) -> dict[str, str]:
        """What the zygote's environment adds to the sandbox's allowlist."""
        env = {
            # Guarded buffers are a little larger than the plain ones they replace: in fixed-size segments the two
            # sizes fragment a GB-sized task's memory until two verifications no longer fit side by side.
            "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
        }
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"  # kernels run in Triton's interpreter
        for path in self.writable:
            env["TORCHINDUCTOR_CACHE_DIR"] = path
        if self.role == "reference":
            # the baseline's compile, in one job: a pool of compile workers (one per core, each importing torch)
            # costs more than it saves on the few kernels of a task, most of them already in Inductor's cache
            env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        return env

    def _find_zygote(self) -> int | None:
        """The zygote's pid as this side sees it: the launched process itself, or inside bubblewrap, below its
        init process (the launched bwrap -> the namespace's init -> the zygote)."""
        assert self.process is not None
        if self.isolation.get("method") != "bubblewrap":
            return self.process.pid
        pid = self.process.pid
        for _ in range(2):
            children = procs.children(pid)
            if not children:
                return None
            pid = children[0]
        return pid

    def _read_line(self, process: subprocess.Popen, deadline: float, limit: int) -> bytes:
        """One line from the zygote, at most `limit` bytes (a longer one comes back without its newline, which
        the callers treat as a broken sandbox); b"" when nothing came before the deadline."""
        stream = process.stdout
        assert stream is not None
        remaining = deadline - time.monotonic()
        while remaining > 0:
            try:
                ready, _, _ = select.select([stream], [], [], min(remaining, 0.5))
                if ready:
                    return stream.readline(limit)
            except (OSError, ValueError):  # the pipe was closed: the zygote was stopped
                return b""
            if process.poll() is not None:
                return b""
            remaining = deadline - time.monotonic()
        return b""

    def _log_tail(self) -> str:
        try:
            with open(self.base / f"{self.name}.log", "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - LOG_TAIL_BYTES))
                text = f.read(LOG_TAIL_BYTES).decode(errors="replace").strip()
        except OSError:
            return "no log"
        return text.splitlines()[-1] if text else "no output"


def _outcome(line: bytes, seconds: float, peak_rss: int) -> JobOutcome:
    """A reply line as a JobOutcome; anything malformed (cut at its limit, not JSON, fields of the wrong type)
    is a sandbox that broke the protocol, whoever broke it."""
    if not line.endswith(b"\n"):
        return JobOutcome(
            "died", seconds=seconds, peak_rss=peak_rss, detail="the sandbox sent a reply that is too long"
        )
    try:
        reply = json.loads(line)
    except (ValueError, RecursionError):
        reply = None
    if not isinstance(reply, dict):
        return JobOutcome("died", seconds=seconds, peak_rss=peak_rss, detail="the sandbox sent a malformed reply")
    result = reply.get("result")
    outcome = JobOutcome(
        "ok",
        _integer(reply.get("exit_code")),
        _integer(reply.get("signal")),
        seconds,
        peak_rss,
        result=result if isinstance(result, dict) else None,
        stdout=_text(reply.get("stdout"), OUTPUT_LIMIT),
        stderr=_text(reply.get("stderr"), OUTPUT_LIMIT),
        sanitizer_log=_text(reply.get("sanitizer_log"), SANITIZER_LOG_LIMIT),
    )
    outcome.detail = _text(reply.get("result_problem"), 300)
    return outcome


def _exit_words(returncode: int | None) -> str:
    """How the sandbox's own process ended: `exit status 1`, `killed by signal 9`."""
    if returncode is not None and returncode < 0:
        return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


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
