"""The zygote: a warm process inside the sandbox that imports torch and Triton once, locks itself down, then
forks one fresh child per job (`python -m verifier.sandbox.zygote`, started by `zygote_handle.py`).

Protocol (JSON lines, typed in `messages.py`): the parent writes a `Job` on the zygote's stdin; the zygote
forks, the child runs `harness.run_job` with its stdout/stderr captured to files in the job directory, and
the zygote answers a `ZygoteReply` on its stdout once the child is gone. The zygote never initialises CUDA
itself, so every child gets a clean CUDA context and a fault in one cannot reach the next. The candidate
never sees the protocol pipes: the child closes them before any untrusted code runs.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import NoReturn

from verifier.wire.messages import HARNESS_ERROR_FILE, STDERR_FILE, STDOUT_FILE, Job, Ready, ZygoteReply

GPU_WARM_IMPORTS = ("torch.profiler", "torch._dynamo", "torch._higher_order_ops.triton_kernel_wrap")


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    if args.run_job:
        _run_in_place(args.run_job)
    protocol_in = os.fdopen(os.dup(0), "r")
    protocol_out = os.fdopen(os.dup(1), "w")
    _redirect(0, "/dev/null", os.O_RDONLY)
    _redirect(1, os.devnull, os.O_WRONLY)
    from verifier.host import isolation as sandbox

    if args.lockdown:
        sandbox.lockdown(args.scratch, args.cover, args.writable)
    else:
        sandbox.become_subreaper()
    scratch = args.scratch
    _set_environment(scratch)
    os.chdir(scratch)
    import torch  # noqa: F401  (warm import, shared with every forked child)
    import triton  # noqa: F401

    from verifier.sandbox import harness  # noqa: F401

    if args.device.startswith("cuda"):
        _warm_gpu_imports()

    ready: Ready = {"ready": True, "pid": os.getpid()}
    protocol_out.write(json.dumps(ready) + "\n")
    protocol_out.flush()
    for line in protocol_in:
        job: Job = json.loads(line)
        reply = _run_forked(job, scratch, [protocol_in.fileno(), protocol_out.fileno()])
        protocol_out.write(json.dumps(reply) + "\n")
        protocol_out.flush()


def _warm_gpu_imports() -> None:
    """Import here, once, what every GPU job would otherwise import itself: the profiler that measures coverage,
    and TorchDynamo, which Triton launches under torch and the torch.compile baseline pull in. Jobs run with
    PYTHONDONTWRITEBYTECODE, so each would compile those ~900 modules from source again (about 5 s a job on
    the H100 box). None of these imports starts a thread or touches the GPU, so forking stays safe."""
    for name in GPU_WARM_IMPORTS:
        importlib.import_module(name)


def _run_forked(job: Job, scratch: str, protocol_fds: list[int]) -> ZygoteReply:
    job_dir = os.path.join(scratch, job["dir"])
    pid = os.fork()
    if pid == 0:
        _child(job, job_dir, protocol_fds)
    _, status = os.waitpid(pid, 0)
    _kill_leftovers()
    reply: ZygoteReply = {"id": job["id"]}
    if os.WIFSIGNALED(status):
        reply["signal"] = os.WTERMSIG(status)
    else:
        reply["exit_code"] = os.WEXITSTATUS(status)
    return reply


def _child(job: Job, job_dir: str, protocol_fds: list[int]) -> NoReturn:
    """Never returns: runs one job and exits with 0 (ran) or 70 (the harness itself failed)."""

    def setup() -> None:
        for fd in protocol_fds:
            os.close(fd)
        os.chdir(job_dir)
        _redirect(1, os.path.join(job_dir, STDOUT_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        _redirect(2, os.path.join(job_dir, STDERR_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.setpgid(0, 0)

    _run_and_exit(lambda: job, job_dir, setup)


def _run_in_place(job_file: str) -> NoReturn:
    """`--run-job`: one job in this process, no zygote around it (what compute-sanitizer starts for a
    sanitize job, inside the sandbox the job's child was already in, its output files still open)."""
    job_dir = os.path.dirname(os.path.abspath(job_file))

    def load() -> Job:
        with open(job_file) as f:
            return json.load(f)

    _run_and_exit(load, job_dir, lambda: os.chdir(job_dir))


def _run_and_exit(job: Callable[[], Job], job_dir: str, setup: Callable[[], None]) -> NoReturn:
    code = 70
    try:
        setup()
        from verifier.sandbox import harness

        harness.run_job(job())
        code = 0
    except BaseException as exc:  # the harness must report, whatever happened
        try:
            with open(os.path.join(job_dir, HARNESS_ERROR_FILE), "w") as f:
                f.write(f"{type(exc).__name__}: {exc}")
        except OSError:
            pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _kill_leftovers() -> None:
    """Kill whatever the last child left behind (it was re-parented to this subreaper or namespace init)."""
    from verifier import procs

    for _ in range(3):
        victims = procs.descendants(os.getpid())
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap()
        if not victims:
            return
        time.sleep(0.01)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _set_environment(scratch: str) -> None:
    os.environ["HOME"] = scratch
    os.environ["TMPDIR"] = scratch
    os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, ".triton")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(scratch, ".inductor"))
    os.environ["XDG_CACHE_HOME"] = os.path.join(scratch, ".cache")
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"


def _redirect(fd: int, path: str, flags: int) -> None:
    target = os.open(path, flags, 0o600)
    os.dup2(target, fd)
    os.close(target)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m verifier.sandbox.zygote")
    parser.add_argument("--scratch")
    parser.add_argument("--cover", help="directory to hide (the temp dir)")
    parser.add_argument("--writable", action="append", default=[])
    parser.add_argument("--lockdown", action="store_true")
    parser.add_argument("--device", default="cpu", help="the device the jobs use (cuda warms GPU-only imports)")
    parser.add_argument("--run-job", metavar="JOB_FILE", help="run this one job here and exit (no zygote)")
    args = parser.parse_args(argv)
    if not args.run_job and not (args.scratch and args.cover):
        parser.error("--scratch and --cover are required (or --run-job)")
    return args


if __name__ == "__main__":
    main()
