"""What one sandboxed job may use, and the meter that holds it to that from outside.

`Limits` are wall-clock seconds and bytes of memory. The `Meter` measures a job's process tree from the trusted
side (so the limits hold for CUDA, for double-forked children, and for anything inside that tries to lift
them): the resident memory of every process below the job's root and, where the sandbox has a memory cgroup,
every page the kernel charged to it (shared memory, tmpfs files and page cache included) through the cgroup's
own limit and OOM count.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from verifier import procs
from verifier.host.cgroups import MemoryGroup

MIN_MEMORY_LIMIT = 256 * 1024**2


def default_memory_limit() -> int:
    """A quarter of physical memory, at least 2 GiB: room for torch plus a real workload."""
    return max(2 * 1024**3, procs.total_memory_bytes() // 4)


@dataclass(frozen=True)
class Limits:
    """What one job may use before its sandbox is killed: wall-clock seconds, bytes of memory."""

    seconds: float
    memory: int


class Meter:
    """Measures one job (everything below `root`, and `root` too when it is the job) against its limits.

    With a memory `group`, the kernel enforces the memory limit itself (the group's limit is set to what the
    sandbox held when the job started plus `limits.memory`), and a job the kernel killed for memory is seen by
    the group's OOM count."""

    def __init__(self, root: int | None, limits: Limits, include_root: bool = False, group: MemoryGroup | None = None):
        self.root = root
        self.limits = limits
        self.include_root = include_root
        self.group = group
        self.deadline = time.monotonic() + limits.seconds
        self.peak_rss = 0
        self.oom_kills = group.oom_kills() if group is not None else 0
        if group is not None:
            group.set_limit(group.usage() + limits.memory)

    def exceeded(self) -> str | None:
        """`memory` or `timeout` once a limit is passed, else None."""
        if self.killed_for_memory():
            return "memory"
        tree = procs.descendants(self.root) + ([self.root] if self.include_root else []) if self.root else []
        rss = procs.resident_bytes(tree)
        self.peak_rss = max(self.peak_rss, rss)
        if rss > self.limits.memory:
            return "memory"
        if time.monotonic() >= self.deadline:
            return "timeout"
        return None

    def killed_for_memory(self) -> bool:
        """Whether the kernel killed something in the sandbox's memory group since the job started."""
        return self.group is not None and self.group.oom_kills() > self.oom_kills
