"""A memory cgroup per sandbox, where the host lets this process make one: the layer that makes a memory limit
count everything the kernel charges to the sandbox (tmpfs and shared memory, memfds written and never mapped,
page cache), not only resident pages.

cgroup v2 is used where this process can write to an ancestor of its own cgroup whose subtree has the memory
controller (root on a plain v2 host; a user with a delegated systemd subtree); cgroup v1's memory hierarchy where
this process can write to its own cgroup there (root on a hybrid host). A process joins its group before it
becomes the sandbox (`isolation.py` starts it through `/bin/sh`, which writes its own pid into the group's
`cgroup.procs` and then execs the sandbox), so nothing it forks is ever outside.

Each verifier process keeps its groups under one directory of its own, `tritonize-<pid>`, removed at exit (and
by the next process, if this one was killed first).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PIDS_MAX = 4096  # tasks (threads count) in one sandbox: torch and CUDA start dozens; a fork bomb stops here
ROOT_PREFIX = "tritonize-"


@dataclass(frozen=True)
class MemoryGroup:
    """One sandbox's cgroup: its limit, what it holds, how often the kernel killed in it, and how to end it."""

    path: Path
    version: str  # "v2" or "v1"

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def set_limit(self, limit: int | None) -> None:
        """Everything charged to the group (swap included where the host has swap) stays under `limit` bytes;
        None lifts the limit (while a sandbox starts: importing torch is no job's memory)."""
        if self.version == "v2":
            _write(self.path / "memory.max", "max" if limit is None else str(limit))
            with contextlib.suppress(OSError):
                _write(self.path / "memory.swap.max", "0")
            return
        value = "-1" if limit is None else str(limit)
        for name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.limit_in_bytes"):
            with contextlib.suppress(OSError):  # memsw must stay >= the plain limit: one order always works
                _write(self.path / name, value)

    def usage(self) -> int:
        """Bytes charged to the group now."""
        name = "memory.current" if self.version == "v2" else "memory.usage_in_bytes"
        try:
            return int((self.path / name).read_text())
        except (OSError, ValueError):
            return 0

    def oom_kills(self) -> int:
        """How many processes the kernel has killed in the group for passing its limit."""
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def kill(self) -> None:
        """SIGKILL every process in the group, wherever it moved in the process tree."""
        if self.version == "v2":
            with contextlib.suppress(OSError):
                _write(self.path / "cgroup.kill", "1")
        for _ in range(50):
            pids = self._pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left in the group and delete it."""
        self.kill()
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:  # processes still exiting
                time.sleep(0.02)

    def _pids(self) -> list[int]:
        try:
            return [int(p) for p in Path(self.procs_file).read_text().split()]
        except (OSError, ValueError):
            return []


def new_group(name: str) -> MemoryGroup | None:
    """A fresh memory group for one sandbox, or None where the host gives this process none (`unavailable()`)."""
    if unavailable() is not None:
        return None
    return _make_group(name)


@functools.cache
def unavailable() -> str | None:
    """None if this process can put sandboxes in memory cgroups, else why not (tried once: a real group, a real
    process moved into it)."""
    root = _root()
    if isinstance(root, str):
        return root
    group = _make_group("probe")
    if group is None:
        return f"cannot create a cgroup under {root[0]}"
    try:
        joined = subprocess.run(
            ["/bin/sh", "-c", 'echo $$ > "$0"', group.procs_file], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot start a process in a cgroup: {exc}"
    finally:
        group.remove()
    if joined.returncode != 0:
        return f"cannot move a process into a cgroup under {root[0]}: {joined.stderr.strip()[:200]}"
    return None


_counter = itertools.count()
_lock = threading.Lock()


def _make_group(name: str) -> MemoryGroup | None:
    root = _root()
    if isinstance(root, str):
        return None
    base, version = root
    path = base / f"{name}-{next(_counter)}"
    try:
        path.mkdir()
    except OSError:
        return None
    group = MemoryGroup(path, version)
    if version == "v2":
        with contextlib.suppress(OSError):
            _write(path / "memory.oom.group", "1")
        with contextlib.suppress(OSError):
            _write(path / "pids.max", str(PIDS_MAX))
    return group


@functools.cache
def _root() -> tuple[Path, str] | str:
    """This process's own directory of groups (made on first use, removed at exit), or why there is none."""
    with _lock:
        for parent, version in _parents():
            own = parent / f"{ROOT_PREFIX}{os.getpid()}"
            _remove_stale(parent)
            try:
                own.mkdir(exist_ok=True)
                if version == "v2":
                    _write(own / "cgroup.subtree_control", "+memory")
                    with contextlib.suppress(OSError):
                        _write(own / "cgroup.subtree_control", "+pids")
            except OSError:
                with contextlib.suppress(OSError):
                    own.rmdir()
                continue
            atexit.register(_remove_tree, own)
            return own, version
    return "no memory cgroup this process may create (cgroup v2 with a writable memory subtree, or v1 as root)"


def _parents() -> list[tuple[Path, str]]:
    """Where a group directory could go, best first: ancestors of this process's cgroup v2 that hand the memory
    controller to their children and that this process may write, then its own cgroup in v1's memory hierarchy."""
    mounts = _mounts()
    found: list[tuple[Path, str]] = []
    v2_mount, own_v2 = mounts.get("v2"), _own_path("")
    if v2_mount and own_v2 is not None:
        parts = [p for p in own_v2.split("/") if p]
        for depth in range(max(len(parts) - 1, 0), -1, -1):  # the root cgroup may hold processes itself
            directory = Path(v2_mount, *parts[:depth])
            if "memory" in _read(directory / "cgroup.subtree_control").split() and os.access(directory, os.W_OK):
                found.append((directory, "v2"))
    v1_mount, own_v1 = mounts.get("v1"), _own_path("memory")
    if v1_mount and own_v1 is not None:
        directory = Path(v1_mount, *[p for p in own_v1.split("/") if p])
        if os.access(directory, os.W_OK):
            found.append((directory, "v1"))
    return found


def _mounts() -> dict[str, str]:
    """The cgroup v2 mount point and the v1 memory hierarchy's, from /proc/self/mountinfo."""
    found: dict[str, str] = {}
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or not tail:
            continue
        if tail[0] == "cgroup2":
            found.setdefault("v2", fields[4])
        elif tail[0] == "cgroup" and len(tail) > 2 and "memory" in tail[2].split(","):
            found.setdefault("v1", fields[4])
    return found


def _own_path(controller: str) -> str | None:
    """This process's cgroup path in the v2 hierarchy (`controller` "") or in v1's hierarchy of `controller`."""
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if (controller == "" and parts[0] == "0" and parts[1] == "") or controller in parts[1].split(","):
            return parts[2]
    return None


def _remove_stale(parent: Path) -> None:
    """Group directories left by verifier processes that no longer exist (killed before their exit handler)."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            if entry.name.startswith(ROOT_PREFIX) and entry.name[len(ROOT_PREFIX) :].isdigit():
                pid = int(entry.name[len(ROOT_PREFIX) :])
                if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
                    _remove_tree(entry)


def _remove_tree(directory: Path) -> None:
    with contextlib.suppress(OSError):
        for child in directory.iterdir():
            if child.is_dir():
                MemoryGroup(child, "v2" if (child / "memory.max").exists() else "v1").remove()
    with contextlib.suppress(OSError):
        directory.rmdir()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)
