"""The verifier's exceptions: whose fault a failure is decides the exit code and the message."""

from __future__ import annotations


class UsageError(Exception):
    """Bad command-line usage or an unreadable file (CLI exit 2)."""


class TaskError(Exception):
    """The task itself is broken: the user's error, not the candidate's (CLI exit 2)."""


class SandboxStartError(RuntimeError):
    """A sandboxed zygote could not start (not a candidate's fault)."""


class Cancelled(Exception):
    """The caller withdrew the verification; its sandbox was killed."""


class IsolationError(UsageError):
    """Isolation was required and this host cannot give one of its layers, or a sandbox could not be set up."""
