"""Run a one-off program in a sandbox: for code outside the verifier that must run isolated (the Inductor
capture of a task), with the same layers, limits and GPU discipline as a verification."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from verifier.host import gpu_lock, isolation
from verifier.host.isolation import Finished
from verifier.host.limits import Limits, default_memory_limit


def run_isolated(
    program: Callable[[str], list[str]],
    *,
    device: str,
    seconds: float,
    files: Mapping[str, str] | None = None,
    writable: Iterable[str] = (),
    packages: Iterable[str] = ("verifier",),
    env: dict[str, str] | None = None,
    stop: isolation.Stop | None = None,
    gpu_alone: bool = False,
) -> Finished:
    """Run `program(folder)`, an argv, in a sandbox under a time limit of `seconds` and the default memory limit;
    `files` (name: text) are in `folder`, read-only. `packages` are importable, `writable` host directories
    (a cache) bound read-write. On a GPU it shares the device with correctness runs and no timing runs
    meanwhile; `gpu_alone` waits until it has the GPU to itself. `stop` (an Event, or anything with `is_set()`)
    kills it once set ("stopped")."""
    with tempfile.TemporaryDirectory(prefix="tritonize-run-") as base:
        folder = Path(base, "files")
        folder.mkdir()
        for name, text in (files or {}).items():
            if Path(name).name != name:
                raise ValueError(f"file name {name!r} must be a bare name")
            folder.joinpath(name).write_text(text)
        scratch = Path(base, "scratch")
        scratch.mkdir(mode=0o700)
        launch = isolation.prepare(
            program(str(folder)),
            device=device,
            host_scratch=scratch,
            readonly=[str(folder)],
            writable=list(writable),
            packages=packages,
            env=env,
        )
        lock = gpu_lock.measuring() if gpu_alone else gpu_lock.sharing()
        with lock if device == "cuda" else contextlib.nullcontext():
            return isolation.run_limited(launch, Limits(seconds, default_memory_limit()), stop)
