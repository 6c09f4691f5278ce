"""Warm, sandboxed workers, watched from the trusted parent, and a pool that shares them between requests.

Each `Worker` is one zygote process (see `worker.py`) in its own namespaces with its own scratch directory.
The parent enforces the deadline and the resident-memory limit of every job by watching the job's process
tree from outside, and kills the whole sandbox when either is exceeded; a dead worker is restarted on its
next job. A `VerifierPool` owns `size` slots (a reference worker and a candidate worker each), runs that
many verifications at once, and serialises the GPU timing phase so measurements never overlap.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from verifier import procs, sandbox
from verifier.options import VerifyOptions

WORKER_START_TIMEOUT = 180.0
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


class WorkerStartError(RuntimeError):
    """The worker process itself could not start (not a candidate's fault)."""


class Cancelled(Exception):
    """The caller withdrew the verification; its sandbox was killed."""


class Worker:
    """A sandboxed zygote with its own scratch dir; runs one job at a time."""

    def __init__(self, name: str, base: Path, device: str, isolate: bool, writable: Iterable[str] = ()):
        self.name = name
        self.base = base
        self.device = device
        self.isolate = isolate
        self.writable = [str(p) for p in writable]
        self.scratch = base / name
        self.process: subprocess.Popen | None = None
        self.zygote_pid: int | None = None
        self.isolation: dict = {}
        self._job_counter = 0

    def ensure_started(self) -> float:
        """Start the worker if it is not running; return the seconds that took (0 if it was warm)."""
        return start_workers([self])

    def _launch(self) -> None:
        self.stop()
        self.scratch.mkdir(parents=True, exist_ok=True)
        prefix, self.isolation = sandbox.launch_prefix(self.isolate)
        command = [*prefix, sys.executable, "-m", "verifier.worker", "--scratch", str(self.scratch)]
        cover = self.base.parent if self.base.parent != Path("/") else self.base
        command += ["--cover", str(cover)]
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
        )
        log.close()

    def _await_ready(self) -> None:
        line = self._read_line(time.monotonic() + WORKER_START_TIMEOUT)
        if not line:
            detail = self._log_tail()
            self.stop()
            raise WorkerStartError(f"verifier worker {self.name} failed to start: {detail}")
        self.zygote_pid = self._find_zygote()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def new_job_dir(self) -> tuple[str, Path]:
        """A fresh job directory: (name relative to the scratch, host path)."""
        self._job_counter += 1
        name = f"job-{self._job_counter}"
        path = self.scratch / name
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return name, path

    def run(
        self, job: dict, timeout: float, memory_limit: int, cancelled: Callable[[], bool] | None = None
    ) -> JobOutcome:
        """Send one job and watch it; kill the sandbox on timeout, when memory exceeds the limit, or when
        `cancelled()` turns true (then raise Cancelled)."""
        assert self.process is not None and self.process.stdin is not None
        job = {**job, "id": job["dir"]}
        started = time.perf_counter()
        deadline = time.monotonic() + timeout
        try:
            self.process.stdin.write((json.dumps(job) + "\n").encode())
            self.process.stdin.flush()
        except OSError as exc:
            self.stop()
            return JobOutcome("died", detail=f"worker pipe closed: {exc}")
        peak = 0
        while True:
            line = self._read_line(min(deadline, time.monotonic() + POLL_SECONDS))
            if line:
                reply = json.loads(line)
                return JobOutcome(
                    "ok", reply.get("exit_code"), reply.get("signal"), time.perf_counter() - started, peak
                )
            if self.process.poll() is not None:
                detail = self._log_tail()
                self.stop()
                return JobOutcome("died", seconds=time.perf_counter() - started, peak_rss=peak, detail=detail)
            rss = procs.resident_bytes(procs.descendants(self.zygote_pid)) if self.zygote_pid else 0
            peak = max(peak, rss)
            if rss > memory_limit:
                self.stop()
                return JobOutcome("memory", seconds=time.perf_counter() - started, peak_rss=rss)
            if time.monotonic() >= deadline:
                self.stop()
                return JobOutcome("timeout", seconds=time.perf_counter() - started, peak_rss=peak)
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
        """Kill the worker and everything it started."""
        if self.process is None:
            return
        procs.kill_tree(self.process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.process = None
        self.zygote_pid = None

    def _environment(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_INTERPRET")}
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else root
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("TRITON_CACHE_DIR", None)
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        for path in self.writable:
            env["TORCHINDUCTOR_CACHE_DIR"] = path
        return env

    def _find_zygote(self) -> int | None:
        assert self.process is not None
        if self.isolation.get("method") != "namespaces":
            return self.process.pid
        children = procs.descendants(self.process.pid)
        return children[0] if children else None

    def _read_line(self, deadline: float) -> bytes:
        assert self.process is not None and self.process.stdout is not None
        stream = self.process.stdout
        remaining = deadline - time.monotonic()
        while remaining > 0:
            ready, _, _ = select.select([stream], [], [], min(remaining, 0.5))
            if ready:
                return stream.readline()
            if self.process.poll() is not None:
                return b""
            remaining = deadline - time.monotonic()
        return b""

    def _log_tail(self) -> str:
        try:
            text = (self.base / f"{self.name}.log").read_text(errors="replace").strip()
        except OSError:
            return "no log"
        return text.splitlines()[-1] if text else "no output"


def start_workers(workers: Iterable[Worker]) -> float:
    """Start every worker that is not running, all at once; return the seconds until all were ready."""
    cold = [w for w in workers if not w.running]
    if not cold:
        return 0.0
    started = time.perf_counter()
    for worker in cold:
        worker._launch()
    for worker in cold:
        worker._await_ready()
    return time.perf_counter() - started


class Slot:
    """A reference worker and a candidate worker that verify one pair at a time."""

    def __init__(self, index: int, base: Path, device: str, isolate: bool, cache_dir: Path):
        self.reference = Worker(f"ref-{index}", base, device, isolate, writable=[str(cache_dir)])
        self.candidate = Worker(f"cand-{index}", base, device, isolate)

    def stop(self) -> None:
        self.reference.stop()
        self.candidate.stop()


class VerifierPool:
    """Verify many candidates with bounded concurrency, reusing warm sandboxed workers.

    Use as a context manager, or call `close()`; `verify()` is thread-safe and blocks for a free slot.
    """

    def __init__(self, size: int = 1, device: str = "auto", isolate: bool = True):
        from verifier.device import resolve_device

        self.device = resolve_device(device)
        self.isolate = isolate
        self._base = Path(tempfile.mkdtemp(prefix="tritonize-"))
        os.chmod(self._base, 0o700)
        cache_dir = Path(os.environ.get("TRITONIZE_CACHE", Path.home() / ".cache" / "tritonize")) / "inductor"
        cache_dir.mkdir(parents=True, exist_ok=True)
        self._slots = [Slot(i, self._base, self.device, isolate, cache_dir) for i in range(max(1, size))]
        self._free: queue.Queue[Slot] = queue.Queue()
        for slot in self._slots:
            self._free.put(slot)
        self.timing_lock = threading.Lock()
        self.baseline_cache: dict[tuple, dict] = {}
        self._closed = False

    @property
    def size(self) -> int:
        """How many verifications can run at once."""
        return len(self._slots)

    def verify(
        self,
        task: str | os.PathLike,
        candidate: str | os.PathLike,
        cancelled: Callable[[], bool] | None = None,
        **options,
    ):
        """Verify one candidate file against one task file; see `VerifyOptions` for the options.

        `cancelled` is polled while jobs run: once it returns true the sandboxes are killed and Cancelled raised."""
        from verifier.verification import run_verification

        if self._closed:
            raise RuntimeError("the pool is closed")
        opts = options.pop("options", None) or VerifyOptions(**options)
        slot = self._free.get()
        try:
            if cancelled is not None and cancelled():
                raise Cancelled
            return run_verification(slot, self, Path(task), Path(candidate), opts, cancelled)
        finally:
            self._free.put(slot)

    def verify_many(self, pairs: Iterable[tuple[str, str]], **options) -> list:
        """Verify (task, candidate) pairs concurrently, one per slot; results in input order."""
        with ThreadPoolExecutor(max_workers=len(self._slots)) as executor:
            return list(executor.map(lambda pair: self.verify(*pair, **options), pairs))

    def close(self) -> None:
        """Stop every worker and delete all scratch data."""
        self._closed = True
        for slot in self._slots:
            slot.stop()
        shutil.rmtree(self._base, ignore_errors=True)

    def __enter__(self) -> VerifierPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()
