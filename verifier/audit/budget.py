"""The time budget of one file's static analysis, checked cooperatively by the rules.

`engine.audit` opens a budget for each file; the rules and the data flow call `check()` in their loops and
recursions. Once the budget is spent, `check()` raises `OutOfTime`; the engine keeps the findings it has and
reports the rule that was running (TRI003). Outside an open budget, `check()` does nothing.

The budget counts the CPU time of the analysing thread, not the wall clock: the same file gets the same findings
on an idle machine and on one busy with other work (a build, the test suite, other audits sharing the GIL), so a
TRI003 never comes and goes with the load. The editor's wall-clock guard (`lsp_server.audit_process`) still
bounds a starved run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

DEFAULT_SECONDS = 1.0
CHECK_EVERY = 256  # calls between clock reads, so a check is cheap enough for inner loops


class OutOfTime(Exception):
    """The file's static analysis used up its time budget."""


@dataclass
class _Budget:
    deadline: float
    calls: int = 0


_open: ContextVar[_Budget | None] = ContextVar("audit_budget", default=None)


@contextlib.contextmanager
def limit(seconds: float) -> Iterator[None]:
    """Allow `seconds` of this thread's CPU time for analysis from now."""
    token = _open.set(_Budget(time.thread_time() + seconds))
    try:
        yield
    finally:
        _open.reset(token)


def check() -> None:
    """Raise OutOfTime once the open budget is spent (the clock is read every CHECK_EVERY calls): for the
    recursions and fixed points inside rules."""
    budget = _open.get()
    if budget is None:
        return
    budget.calls += 1
    if budget.calls % CHECK_EVERY == 0 and time.thread_time() > budget.deadline:
        raise OutOfTime


def check_now() -> None:
    """Raise OutOfTime if the open budget is spent: between rules, where a clock read costs nothing."""
    budget = _open.get()
    if budget is not None and time.thread_time() > budget.deadline:
        raise OutOfTime
