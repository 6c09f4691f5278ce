"""The `sanitize` job's command line: the candidate's run under compute-sanitizer memcheck, inside the sandbox
(the host side finds the tool and reads its log: `verifier/host/sanitizer.py`)."""

from __future__ import annotations

import os

ERROR_LIMIT = 20  # memcheck stops printing after this many errors (it still counts them)


def command(executable: str, log_file: str, target: list[str]) -> list[str]:
    """memcheck over `target` and every process it starts, its report written to `log_file`."""
    return [
        executable,
        "--tool",
        "memcheck",
        "--log-file",
        log_file,
        "--print-limit",
        str(ERROR_LIMIT),
        "--target-processes",
        "all",
        *target,
    ]


def environment() -> dict[str, str]:
    """The sanitized run's environment: the sandbox's own, with each tensor its own device allocation (the
    caching allocator would hide an overrun inside a larger cached block)."""
    return {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
