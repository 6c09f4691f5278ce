"""Process-tree bookkeeping from /proc: find a sandbox's processes, measure their memory, kill them all."""

from __future__ import annotations

import os
import signal
import time

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def _parent_map() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        parents[int(entry)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int]:
    """All live descendants of `root` (not `root` itself), nearest first."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _parent_map().items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    frontier = [root]
    while frontier:
        nxt = [c for p in frontier for c in children.get(p, [])]
        found.extend(nxt)
        frontier = nxt
    return found


def children(parent: int) -> list[int]:
    """The live processes whose parent is `parent`."""
    return sorted(pid for pid, ppid in _parent_map().items() if ppid == parent)


def resident_bytes(pids: list[int]) -> int:
    """Sum of resident set sizes; processes that vanished meanwhile count zero."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE_SIZE
        except (OSError, IndexError, ValueError):
            continue
    return total


def kill_tree(root: int, include_root: bool = True) -> None:
    """SIGKILL `root` and everything below it; repeats to catch processes forked while killing."""
    for _ in range(5):
        victims = descendants(root)
        if include_root:
            victims.append(root)
        alive = [pid for pid in victims if _signal(pid, signal.SIGKILL)]
        if not alive:
            return
        time.sleep(0.01)


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def total_memory_bytes() -> int:
    """Physical memory of this machine."""
    return os.sysconf("SC_PHYS_PAGES") * PAGE_SIZE
