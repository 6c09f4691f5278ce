"""Who may use the GPU while a measurement runs, across threads and processes: a timing run has the GPU to
itself; correctness runs and Inductor's compiles share it with each other.

One `flock` on a file in tritonize's cache per GPU (`gpu` names it as CUDA_VISIBLE_DEVICES does; None: the
default GPU): `measuring()` holds it exclusively, `sharing()` shared. Each use opens its own descriptor, so two
threads of one process exclude each other just as two processes do (a verifier pool's slots, the inductor
backend's capture subprocesses, another `tritonize` on the machine). A machine whose cache cannot hold the file
goes without (the pool's own timing lock still orders its slots).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from verifier.cache import cache_dir

LOCK_FILE = "gpu.lock"


def measuring(gpu: str | None = None) -> contextlib.AbstractContextManager[None]:
    """Hold the GPU alone (wait for every sharer to finish first): for timing runs."""
    return _held(fcntl.LOCK_EX, gpu)


def sharing(gpu: str | None = None) -> contextlib.AbstractContextManager[None]:
    """Use the GPU beside other sharers, never during a timing run: for correctness runs and compiles."""
    return _held(fcntl.LOCK_SH, gpu)


@contextlib.contextmanager
def _held(kind: int, gpu: str | None) -> Iterator[None]:
    path = cache_dir() / (LOCK_FILE if gpu is None else f"gpu-{gpu}.lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(descriptor, kind)
        yield
    finally:
        os.close(descriptor)  # closing the descriptor releases its lock
