"""What runs inside a sandboxed child: the job's handler, and its result written to the zygote's pipe.

A `reference` or `time_reference` job runs the task (`reference.py`); a `candidate`, `time_candidate`,
`sanitize` or `sanitized_candidate` job runs the candidate (`candidate.py`). Every job computes fp32 in full fp32
(`task_code.full_precision`). Results are JSON (typed in `wire/messages.py`), judged by the trusted parent.
"""

from __future__ import annotations

import json
import os
import time

from verifier.sandbox import audit_hook, candidate, reference
from verifier.sandbox.task_code import StageError, autotune_without_timing, full_precision
from verifier.wire.messages import Job


def run_job(job: Job) -> None:
    """Entry point in the forked child; the working directory is the job directory."""
    handlers = {
        "reference": reference.run_reference,
        "candidate": candidate.run_candidate,
        "time_reference": reference.time_reference,
        "time_candidate": candidate.time_candidate,
        "sanitize": candidate.sanitize,
        "sanitized_candidate": candidate.sanitized_candidate,
    }
    started = time.perf_counter()
    full_precision()
    if job["device"] == "cpu":
        autotune_without_timing()
    try:
        result = handlers[job["kind"]](job)
    except StageError as exc:
        with audit_hook.suspended():  # saying where it failed reads the traceback's frames
            result = exc.as_result()
    except Exception as exc:  # e.g. a CUDA fault that surfaces only when the harness synchronises
        with audit_hook.suspended():
            result = StageError("run", exc, job["source"]).as_result()
    result["seconds"] = time.perf_counter() - started
    _write_result(job["result_fd"], result)


def warm_up_candidate_side() -> None:
    """In the zygote, once: what every candidate job would otherwise import on its first call (a dispatch mode's
    first use imports some 800 modules, 1.5 s on the CPU), so forked children start with it done."""
    candidate.warm_up()


def _write_result(fd: int, result: dict) -> None:
    """The job's result, as JSON, to the pipe the zygote reads (never a file the host would open)."""
    view = memoryview(json.dumps(result).encode())
    while view:
        view = view[os.write(fd, view) :]
    os.close(fd)
