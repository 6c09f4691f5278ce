"""How untrusted code is contained: Linux namespaces from the outside, read-only mounts from the inside, and
limits on time and memory enforced from the trusted parent.

A zygote is started as `unshare --user --net --pid --mount --fork --kill-child --mount-proc python -m
verifier.sandbox.zygote ...`: it becomes PID 1 of a fresh PID namespace (so every process it leaves behind dies
with it), has no network, and before any untrusted code runs it remounts every filesystem read-only except
its own scratch directory, and hides the temp dir (where the verifier keeps references) under an empty tmpfs.
Where namespaces are unavailable the zygote still runs in its own session, with a warning in the report.

Each job has `Limits`: wall-clock seconds and the resident memory of every process it started. A `Meter`
watches the job's process tree from outside (so the limits hold for CUDA and for double-forked children, and
nothing inside the sandbox can lift them); the parent kills the whole sandbox when one is exceeded.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from verifier import procs

NAMESPACE_FLAGS = ["--user", "--map-root-user", "--net", "--pid", "--mount", "--fork", "--kill-child", "--mount-proc"]

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24
LOCKED_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
PR_SET_CHILD_SUBREAPER = 36
MIN_MEMORY_LIMIT = 256 * 1024**2
POLL_SECONDS = 0.05


def default_memory_limit() -> int:
    """A quarter of physical memory, at least 2 GiB: room for torch plus a real workload."""
    return max(2 * 1024**3, procs.total_memory_bytes() // 4)


@dataclass(frozen=True)
class Limits:
    """What one job may use before its sandbox is killed: wall-clock seconds, resident bytes of its tree."""

    seconds: float
    memory: int


class Meter:
    """Measures one job's process tree (everything below `root`, and `root` too when it is the job) against
    its limits, from outside."""

    def __init__(self, root: int | None, limits: Limits, include_root: bool = False):
        self.root = root
        self.limits = limits
        self.include_root = include_root
        self.deadline = time.monotonic() + limits.seconds
        self.peak_rss = 0

    def exceeded(self) -> str | None:
        """`memory` or `timeout` once a limit is passed, else None."""
        tree = procs.descendants(self.root) + ([self.root] if self.include_root else []) if self.root else []
        rss = procs.resident_bytes(tree)
        self.peak_rss = max(self.peak_rss, rss)
        if rss > self.limits.memory:
            return "memory"
        if time.monotonic() >= self.deadline:
            return "timeout"
        return None


@functools.cache
def namespaces_available() -> str | None:
    """None if user/net/pid/mount namespaces work here, else the reason they do not."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "the `unshare` command (util-linux) is not installed"
    try:
        probe = subprocess.run(
            [unshare, *NAMESPACE_FLAGS, sys.executable, "-c", "pass"], capture_output=True, timeout=30, text=True
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare failed: {exc}"
    if probe.returncode != 0:
        return f"unshare failed: {probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else probe.returncode}"
    return None


@dataclass(frozen=True)
class Finished:
    """How a one-shot sandboxed command ended: its exit code, output, and the limit it passed (if any)."""

    returncode: int | None
    stdout: str
    stderr: str
    exceeded: str | None = None


def run_limited(command: list[str], limits: Limits, stop: threading.Event | None = None, **popen: object) -> Finished:
    """Run a one-shot command (already prefixed with `launch_prefix`) under `limits`: its whole process tree is
    measured from outside and killed when it runs out of time or memory, or when `stop` is set (`exceeded` is
    then "stopped")."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, **popen)
        meter, exceeded = Meter(process.pid, limits, include_root=True), None
        try:
            while process.poll() is None:
                exceeded = "stopped" if stop is not None and stop.is_set() else meter.exceeded()
                if exceeded is not None:
                    break
                time.sleep(POLL_SECONDS)
        finally:
            if process.poll() is None:
                procs.kill_tree(process.pid)
                process.wait()
        out.seek(0)
        err.seek(0)
        return Finished(
            None if exceeded else process.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            exceeded,
        )


def launch_prefix(isolate: bool) -> tuple[list[str], dict]:
    """The command prefix that starts a sandboxed process, and the `isolation` description for the report."""
    if not isolate:
        return [], describe(None, "isolation was turned off (--no-isolation)")
    reason = namespaces_available()
    if reason is not None:
        return [], describe(None, f"namespaces unavailable ({reason}); candidates run unconfined")
    return [shutil.which("unshare") or "unshare", *NAMESPACE_FLAGS], describe("namespaces", None)


def describe(method: str | None, warning: str | None) -> dict:
    """The report's `isolation` object."""
    confined = method is not None
    return {
        "method": method or "process",
        "user_namespace": confined,
        "network": "none" if confined else "host",
        "pid_namespace": confined,
        "filesystem": "read-only except a private scratch dir" if confined else "host (unrestricted)",
        "separate_processes": True,
        "killable_tree": True,
        "warnings": [warning] if warning else [],
    }


def lockdown(scratch: str, cover: str, writable: list[str]) -> None:
    """Inside a fresh mount namespace: hide `cover` (the temp dir holding every verifier's private files)
    under an empty tmpfs, bring back only this process's scratch (writable) and the interpreter's own files
    that live there (read-only), and make every other filesystem read-only.

    `writable` paths (e.g. the trusted reference's persistent compile cache) stay writable.
    """
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = _visible_code_paths(cover)
    handles = {path: os.open(path, os.O_PATH) for path in [scratch, *keep, *writable]}
    _mount("tmpfs", cover, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    for path, fd in handles.items():
        if path.startswith(cover + os.sep) or path == cover:
            os.makedirs(path, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)
    stay_writable = {scratch, *writable}
    for mount_point, options in _mounts():
        if mount_point in stay_writable or mount_point.startswith("/proc") or _is_device_dir(mount_point):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in options:
            flags |= LOCKED_FLAGS.get(option, 0)
        try:
            _mount(None, mount_point, None, flags)
        except OSError:
            if mount_point in {"/", "/root", "/home", "/usr", "/etc", "/dev/shm", cover}:
                raise
    become_subreaper()


def _visible_code_paths(cover: str) -> list[str]:
    """Directories under `cover` that this interpreter imports from (a venv or checkout inside /tmp)."""
    candidates = {sys.prefix, sys.base_prefix, os.path.dirname(sys.executable), *sys.path}
    candidates |= {os.path.realpath(p) for p in list(candidates) if p}
    inside = sorted(p for p in candidates if p and os.path.isdir(p) and p.startswith(cover + os.sep))
    return [p for i, p in enumerate(inside) if not any(p.startswith(q + os.sep) for q in inside[:i])]


def become_subreaper() -> None:
    """Orphans of this process's children are re-parented to it, so none can slip out of its tree."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _is_device_dir(mount_point: str) -> bool:
    return mount_point == "/dev" or (mount_point.startswith("/dev/") and mount_point != "/dev/shm")


def _mounts() -> list[tuple[str, list[str]]]:
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            mount_point = parts[4].replace("\\040", " ")
            mounts.append((mount_point, parts[5].split(",")))
    return mounts


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.mount(
        source.encode() if source else None,
        target.encode(),
        fstype.encode() if fstype else None,
        flags,
        data.encode() if data else None,
    )
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} -> {target} failed: {os.strerror(errno)}")
