"""How untrusted code is contained: Linux namespaces from the outside, read-only mounts from the inside.

A worker is started as `unshare --user --net --pid --mount --fork --kill-child --mount-proc python -m
verifier.worker ...`: it becomes PID 1 of a fresh PID namespace (so every process it leaves behind dies
with it), has no network, and before any untrusted code runs it remounts every filesystem read-only except
its own scratch directory, which it mounts over /tmp so that nothing else of the verifier's is visible.
Where namespaces are unavailable the worker still runs in its own session, with a warning in the report.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import sys

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


def launch_prefix(isolate: bool) -> tuple[list[str], dict]:
    """The command prefix that starts a worker, and the `isolation` description for the report."""
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


def lockdown(scratch: str, hide: str, writable: list[str]) -> None:
    """Inside a fresh mount namespace: scratch over /tmp, `hide` made invisible, everything else read-only.

    `writable` paths (e.g. a persistent compile cache for the trusted reference) stay writable.
    """
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    for path in writable:
        _mount(path, path, None, MS_BIND | MS_REC)
    _mount(scratch, "/tmp", None, MS_BIND | MS_REC)
    if os.path.exists(hide):
        _mount("tmpfs", hide, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=000")
    keep = {"/tmp", *writable}
    for mount_point, options in _mounts():
        if mount_point in keep or mount_point.startswith("/proc") or _is_device_dir(mount_point):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in options:
            flags |= LOCKED_FLAGS.get(option, 0)
        try:
            _mount(None, mount_point, None, flags)
        except OSError:
            if mount_point in {"/", "/root", "/home", "/usr", "/etc", "/dev/shm"}:
                raise
    become_subreaper()


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
