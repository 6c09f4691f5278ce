"""The candidate's process refuses, from before the candidate's module loads, the operations that reach past
Python's object model into the process itself: calling native code through ctypes, walking the garbage
collector's object lists, taking frames from generators and tracebacks or every thread's stack, tracing, setting
a function's code, starting processes (but those Triton's and torch's own code starts: ptxas, the C compiler for
Triton's launchers, ldconfig), and opening another process's memory or descriptors through /proc.

This is CPython's audit hook (PEP 578): once added it cannot be removed from Python, and it sees these operations
however the code reached them. The static allowlist (`audit/anti_hacking.py`) refuses the names that lead
there; this hook holds where a route was missed. Each refusal raises in the candidate's code and is recorded
(rule TRI361), so catching the error does not hide it. The harness suspends the hook for its own work after a
call (formatting a traceback reads frames).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator

from verifier.sandbox.torch_work import TORCH_DIRS, TRITON_DIRS

REFUSED = frozenset(
    {
        "ctypes.addressof", "ctypes.call_function", "ctypes.cdata", "ctypes.cdata/buffer", "ctypes.dlopen",
        "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.string_at", "ctypes.wstring_at", "ctypes.set_errno",
        "gc.get_objects", "gc.get_referrers", "gc.get_referents",
        "sys._current_frames", "sys._current_exceptions", "sys.addaudithook", "sys.setprofile", "sys.settrace",
        "sys.monitoring.register_callback",
        "function.__new__", "code.__new__",
        "os.fork", "os.forkpty", "os.system", "os.exec", "os.spawn", "pty.spawn",
    }
)  # fmt: skip
FRAME_ATTRIBUTES = frozenset({"gi_frame", "cr_frame", "ag_frame", "tb_frame", "f_back"})
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn"})
# whose code may start processes and read traceback frames: Triton's and torch's own (ptxas, the C compiler for
# launchers, ldconfig, `file`; a compile error's traceback)
LIBRARY_DIRS = TRITON_DIRS + TORCH_DIRS
STANDARD_LIBRARY = os.path.dirname(os.__file__) + os.sep
SET_EVENTS = frozenset({"object.__setattr__", "object.__delattr__"})
SWAPPED = frozenset({"__code__"})  # a function made to run other code (lazy imports in torch set __class__, __bases__)
PROC_FILE = re.compile(r"^/proc/(self|thread-self|\d+)/(task/\d+/)?(mem|fd|fdinfo|map_files|environ|root|cwd)\b")


class AuditHook:
    """The installed hook's state: what it refused, and whether the harness has suspended it."""

    def __init__(self, record: Callable[[str], None]):
        self.record = record
        self.suspended_depth = 0

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """For the harness's own work between calls (it reads tracebacks to say where a failure was)."""
        self.suspended_depth += 1
        try:
            yield
        finally:
            self.suspended_depth -= 1


def install(record: Callable[[str], None]) -> AuditHook:
    """Add the hook to this process (for good); `record` is told, once per refusal, what was refused."""
    state = AuditHook(record)
    refused, frame_attributes, process_events = REFUSED, FRAME_ATTRIBUTES, PROCESS_EVENTS
    library, standard, frame_of = LIBRARY_DIRS, STANDARD_LIBRARY, sys._getframe
    set_events, swapped, proc_file = SET_EVENTS, SWAPPED, PROC_FILE
    fsdecode, exception = os.fsdecode, PermissionError

    def by_library() -> bool:
        """Whether the nearest caller outside the standard library is Triton's or torch's own code: Triton runs
        its compilers and formats the traceback of a kernel that failed to compile. (The candidate's own call,
        even through `platform`, `subprocess` or `traceback`, is not.)"""
        frame = frame_of(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(library):
                return True
            if not filename.startswith(standard) and filename.startswith("/"):
                return False
            frame = frame.f_back
        return False

    def hook(event: str, args: tuple) -> None:
        if state.suspended_depth:
            return
        what = None
        if event in refused:
            what = event
        elif event == "object.__getattr__" and len(args) > 1 and args[1] in frame_attributes and not by_library():
            what = f"`.{args[1]}` (a frame)"
        elif event in set_events and len(args) > 1 and args[1] in swapped:
            what = f"setting `.{args[1]}`"
        elif event in process_events and not by_library():
            program = args[0] if args and args[0] else (args[1][0] if len(args) > 1 and args[1] else "")
            what = f"starting the process {program!r}"[:200]
        elif event == "open" and args and isinstance(args[0], str | bytes) and proc_file.match(fsdecode(args[0])):
            what = f"opening {fsdecode(args[0])}"[:200]
        if what is not None:
            state.record(what)
            raise exception(f"the verifier's sandbox refused {what}")

    sys.addaudithook(hook)
    global _installed
    _installed = state
    return state


_installed: AuditHook | None = None


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Suspend this process's hook, if one is installed, for the harness's own work."""
    if _installed is None:
        yield
        return
    with _installed.suspended():
        yield
