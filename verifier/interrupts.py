"""Stopping a command: SIGTERM (what `timeout`, CI runners and `kill` send) ends it the way Ctrl-C does.

Both raise `Stopped` (a KeyboardInterrupt) in the main thread, so every `with VerifierPool` and `finally` on
the way out runs: the sandboxes are killed and their scratch directories removed. Work running in other
threads sees `requested()` turn true and kills its sandboxes at once instead of finishing.
"""

from __future__ import annotations

import signal
import threading

_requested = threading.Event()


class Stopped(KeyboardInterrupt):
    """The command was asked to stop by a signal; `signal_number` says which."""

    def __init__(self, signal_number: int):
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number


def install() -> None:
    """Handle SIGINT and SIGTERM in this (the main) thread."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, _stop)


def requested() -> bool:
    """Whether a stop was asked for (polled by work in other threads)."""
    return _requested.is_set()


def exit_code(interrupt: KeyboardInterrupt) -> int:
    """128 + the signal number, as shells report a command a signal stopped."""
    return 128 + getattr(interrupt, "signal_number", signal.SIGINT)


def _stop(signal_number: int, frame: object) -> None:
    _requested.set()
    raise Stopped(signal_number)
