"""Run a one-off program in a sandbox: for code outside the verifier that must run isolated (the Inductor
capture of a task), with the same layers, limits and GPU discipline as a verification."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
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
        _write(folder, files or {})
        launch = _prepare(program, Path(base), device, writable, packages, env)
        with _gpu(device, gpu_alone) as waited:
            done = isolation.run_limited(launch, Limits(seconds, default_memory_limit()), stop)
        return dataclasses.replace(done, waited_s=waited)


class Spare:
    """A sandboxed program started before its files exist, so that its start (a Python that imports torch and
    Inductor: about 10 s on the GPU machine) is paid while nothing waits for it.

    It is started as `run_isolated` starts `program(folder)`, with its stdin a pipe; the program prepares, then
    reads one line. `run` writes the files into `folder` (read-only to the program), sends their names on that
    line (a JSON list), and from then on holds the program to the limits, the GPU lock and `stop` exactly as
    `run_isolated` does: its time limit counts from `run`. One use; `close` ends one that was never used."""

    def __init__(
        self,
        program: Callable[[str], list[str]],
        *,
        device: str,
        writable: Iterable[str] = (),
        packages: Iterable[str] = ("verifier",),
        env: dict[str, str] | None = None,
    ):
        self.device = device
        self._base = Path(tempfile.mkdtemp(prefix="tritonize-spare-"))
        self._folder = self._base / "files"
        self._folder.mkdir()
        self._launch = _prepare(program, self._base, device, writable, packages, env)
        # they outlive this call: `close` closes them
        self._out, self._err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115
        self._process = isolation.spawn(
            self._launch,
            stdout=self._out,
            stderr=self._err,
            stdin=subprocess.PIPE,
            cwd=isolation.working_dir(self._launch),
        )

    def alive(self) -> bool:
        """Whether it still waits for its files (a spare that died while it prepared is of no use)."""
        return self._process.poll() is None

    def run(
        self,
        files: Mapping[str, str],
        seconds: float,
        stop: isolation.Stop | None = None,
        gpu_alone: bool = False,
    ) -> Finished:
        """Hand over the files and wait for the program's end, as `run_isolated` would."""
        try:
            _write(self._folder, files)
            with _gpu(self.device, gpu_alone) as waited:
                with contextlib.suppress(OSError):  # it died while it prepared: its exit says why
                    self._process.stdin.write((json.dumps(list(files)) + "\n").encode())
                    self._process.stdin.close()
                limits = Limits(seconds, default_memory_limit())
                done = isolation.supervise(self._process, self._launch, limits, stop, self._out, self._err)
            return dataclasses.replace(done, waited_s=waited)
        finally:
            self.close()

    def close(self) -> None:
        """Kill it if it still runs, and delete its files."""
        isolation.end(self._process, self._launch)
        for stream in (self._process.stdin, self._out, self._err):
            with contextlib.suppress(OSError):
                stream.close()
        shutil.rmtree(self._base, ignore_errors=True)


def _write(folder: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        if Path(name).name != name:
            raise ValueError(f"file name {name!r} must be a bare name")
        folder.joinpath(name).write_text(text)


def _prepare(
    program: Callable[[str], list[str]],
    base: Path,
    device: str,
    writable: Iterable[str],
    packages: Iterable[str],
    env: dict[str, str] | None,
) -> isolation.Launch:
    scratch = base / "scratch"
    scratch.mkdir(mode=0o700)
    folder = str(base / "files")
    return isolation.prepare(
        program(folder),
        device=device,
        host_scratch=scratch,
        readonly=[folder],
        writable=list(writable),
        packages=packages,
        env=env,
    )


@contextlib.contextmanager
def _gpu(device: str, alone: bool) -> Iterator[float]:
    """The GPU lock a sandboxed program holds (none on a CPU); yields the seconds it waited for it."""
    asked = time.monotonic()
    lock = contextlib.nullcontext() if device != "cuda" else gpu_lock.measuring() if alone else gpu_lock.sharing()
    with lock:
        yield time.monotonic() - asked
