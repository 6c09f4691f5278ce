"""The zygote: a warm process inside the sandbox that imports torch and Triton once, then forks one fresh child
per job (`python -m verifier.sandbox.zygote`, started by `host/zygote_handle.py` inside bubblewrap).

Protocol (JSON lines, typed in `wire/messages.py`): the parent writes a `Job` on the zygote's stdin; the zygote
writes the job's files into a new directory of its own scratch, forks, and the child runs `harness.run_job`
with its stdout/stderr captured to files the zygote opened and its result written to a pipe the zygote reads.
Once the child is gone (and whatever it left behind is killed) the zygote answers one `ZygoteReply` line with the
result and the captured output, each cut at its limit. The zygote never initialises CUDA itself, so every child
gets a clean CUDA context and a fault in one cannot reach the next. The candidate never sees the protocol pipes
(the child closes them before any untrusted code runs) and cannot reach into the zygote: the zygote is not
dumpable, so its memory and descriptors are closed to the processes it forks, and the sandbox's seccomp filter
refuses ptrace.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import json
import os
import select
import signal
import stat
import sys
import time
from collections.abc import Callable
from typing import NoReturn

from verifier.wire.messages import (
    OUTPUT_LIMIT,
    RESULT_LIMIT,
    SANITIZER_LOG_FILE,
    SANITIZER_LOG_LIMIT,
    STDERR_FILE,
    STDOUT_FILE,
    Job,
    Ready,
    ZygoteReply,
)

GPU_WARM_IMPORTS = ("torch.profiler", "torch._dynamo", "torch._higher_order_ops.triton_kernel_wrap")
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
FULL_SCRATCH = 0.5  # a scratch of its own this full after a wipe: the kept caches go too


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    if args.run_job:
        _run_in_place(args.run_job)
    protocol_in = os.fdopen(os.dup(0), "r")
    protocol_out = os.fdopen(os.dup(1), "w")
    _redirect(0, os.devnull, os.O_RDONLY)
    _redirect(1, os.devnull, os.O_WRONLY)
    scratch = os.path.realpath(args.scratch)
    os.makedirs(scratch, exist_ok=True)
    _confine_self(scratch)
    os.chdir(scratch)
    import torch  # noqa: F401  (warm import, shared with every forked child)
    import triton  # noqa: F401

    from verifier.sandbox import harness

    if args.device.startswith("cuda"):
        _warm_gpu_imports(GPU_WARM_IMPORTS)
    if args.role == "candidate":
        harness.warm_up_candidate_side()

    ready: Ready = {"ready": True, "pid": os.getpid()}
    protocol_out.write(json.dumps(ready) + "\n")
    protocol_out.flush()
    protocol_fds = [protocol_in.fileno(), protocol_out.fileno()]
    for line in protocol_in:
        request = json.loads(line)
        if request.get("wipe"):
            _wipe(scratch, set(request.get("keep", [])))
            reply: ZygoteReply = {"wiped": True}
        else:
            reply = _run_forked(request, scratch, protocol_fds)
        protocol_out.write(json.dumps(reply) + "\n")
        protocol_out.flush()


def _confine_self(scratch: str) -> None:
    """Before anything else runs here: orphans of this process's children come back to it (so none slips out
    of its tree), it is not dumpable (its children cannot read its memory or descriptors through /proc), and
    nothing the candidate can write to can be imported."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    here = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if p and _safe_to_import_from(os.path.realpath(p), here, scratch)]


def _safe_to_import_from(path: str, here: str, scratch: str) -> bool:
    """Whether a `sys.path` entry is out of the candidate's reach. Inside bubblewrap the scratch tmpfs is /tmp,
    and a checkout or virtual environment under /tmp is bound read-only into it: such an entry stays, but the
    writable directories around those binds, and anything missing (which a job could create), do not."""
    if path == here:
        return False
    if path != scratch and not path.startswith(scratch + os.sep):
        return True
    return os.path.isdir(path) and not os.access(path, os.W_OK)


def _warm_gpu_imports(names: tuple[str, ...]) -> None:
    """Import here, once, what every GPU job would otherwise import itself: the profiler that measures coverage,
    and TorchDynamo, which Triton launches under torch and the torch.compile baseline pull in (and, on the task's
    side, Inductor's compiler). Jobs run with PYTHONDONTWRITEBYTECODE, so each would compile those ~900 modules
    from source again (about 5 s a job on the H100 box). None of these imports starts a thread or touches the
    GPU, so forking stays safe (Inductor's pool of compile workers starts at a compile, never at an import)."""
    for name in names:
        importlib.import_module(name)


def _run_forked(job: Job, scratch: str, protocol_fds: list[int]) -> ZygoteReply:
    job_dir = os.path.join(scratch, os.path.basename(job["dir"]))
    _remove(job_dir, os.stat(scratch).st_dev)
    os.mkdir(job_dir, 0o700)
    for name, text in job.pop("files", {}).items():
        _write_new(os.path.join(job_dir, os.path.basename(name)), text)
    for key in ("source", "inputs_source"):
        if key in job:
            job[key] = os.path.join(job_dir, os.path.basename(job[key]))
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    out = os.open(os.path.join(job_dir, STDOUT_FILE), flags, 0o600)
    err = os.open(os.path.join(job_dir, STDERR_FILE), flags, 0o600)
    result_read, result_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        _child(job, job_dir, [*protocol_fds, result_read], out, err, result_write)
    os.close(result_write)
    result, status = _collect(result_read, pid)
    os.close(result_read)
    _kill_leftovers()
    reply: ZygoteReply = {"id": job["id"]}
    if os.WIFSIGNALED(status):
        reply["signal"] = os.WTERMSIG(status)
    else:
        reply["exit_code"] = os.WEXITSTATUS(status)
    reply.update(_parse_result(result))
    reply["stdout"] = _read_start(out, OUTPUT_LIMIT)
    reply["stderr"] = _read_start(err, OUTPUT_LIMIT)
    os.close(out)
    os.close(err)
    if job["kind"] == "sanitize":
        reply["sanitizer_log"] = _read_file(os.path.join(job_dir, SANITIZER_LOG_FILE), SANITIZER_LOG_LIMIT)
    return reply


def _child(job: Job, job_dir: str, close_fds: list[int], out: int, err: int, result_fd: int) -> NoReturn:
    """Never returns: runs one job and exits with 0 (ran) or 70 (the harness itself failed)."""

    def setup() -> None:
        for fd in close_fds:
            os.close(fd)
        os.chdir(job_dir)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.close(out)
        os.close(err)
        os.setpgid(0, 0)

    job["result_fd"] = result_fd
    _run_and_exit(job, setup)


def _collect(result_fd: int, pid: int) -> tuple[bytes | None, int]:
    """The child's result (None if it passed RESULT_LIMIT) and its wait status. The pipe is read while the child
    runs, so a result larger than the pipe's buffer cannot block it; once the child has exited, what is already
    in the pipe is read and no more is waited for (a process it left behind may still hold the pipe open)."""
    chunks: list[bytes] = []
    size, status, ended = 0, None, False
    os.set_blocking(result_fd, False)
    while status is None or not ended:
        readable = select.select([result_fd], [], [], 0.05)[0] if not ended else []
        if readable:
            try:
                data = os.read(result_fd, 1 << 16)
            except BlockingIOError:
                data = None
            if data == b"":
                ended = True
            elif data:
                size += len(data)
                if size <= RESULT_LIMIT:
                    chunks.append(data)
        if status is None:
            done, wait_status = os.waitpid(pid, 0 if ended else os.WNOHANG)
            if done:
                status = wait_status
        if status is not None and not readable:
            break
    return (b"".join(chunks) if size <= RESULT_LIMIT else None), status


def _parse_result(data: bytes | None) -> ZygoteReply:
    if data is None:
        return {"result": None, "result_problem": f"the child wrote more than {RESULT_LIMIT} bytes as its result"}
    if not data:
        return {"result": None}
    try:
        result = json.loads(data)
    except (ValueError, RecursionError):
        return {"result": None, "result_problem": "the child's result is not JSON"}
    if not isinstance(result, dict):
        return {"result": None, "result_problem": "the child's result is not a JSON object"}
    return {"result": result}


def _run_in_place(job_file: str) -> NoReturn:
    """`--run-job`: one job in this process, no zygote around it (what compute-sanitizer starts for a
    sanitize job, inside the sandbox the job's child was already in, its output and result pipe still open)."""
    with open(job_file) as f:
        job: Job = json.load(f)
    job_dir = os.path.dirname(os.path.abspath(job_file))
    _run_and_exit(job, lambda: os.chdir(job_dir))


def _run_and_exit(job: Job, setup: Callable[[], None]) -> NoReturn:
    code = 70
    try:
        setup()
        from verifier.sandbox import harness

        harness.run_job(job)
        code = 0
    except BaseException as exc:  # the harness must report, whatever happened
        with contextlib.suppress(OSError):
            _write_all(job["result_fd"], json.dumps({"harness_error": f"{type(exc).__name__}: {exc}"[:2000]}).encode())
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


def _wipe(scratch: str, keep: set[str]) -> None:
    """Delete everything in the scratch but `keep` (never crossing into a directory mounted there, such as a
    writable cache the host bound in); where the scratch is a tmpfs of its own and still more than half full,
    the kept entries go too."""
    device = os.stat(scratch).st_dev
    for entry in os.listdir(scratch):
        if entry not in keep:
            _remove(os.path.join(scratch, entry), device)
    if keep and os.path.ismount(scratch):
        usage = os.statvfs(scratch)
        if usage.f_blocks and 1 - usage.f_bavail / usage.f_blocks > FULL_SCRATCH:
            _wipe(scratch, set())


def _remove(path: str, device: int) -> None:
    """Remove `path` and what it holds, without following links or leaving the filesystem `device`."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if info.st_dev != device:
        return
    if not os.path.isdir(path) or os.path.islink(path):
        with contextlib.suppress(OSError):
            os.unlink(path)
        return
    with contextlib.suppress(OSError):
        for entry in os.listdir(path):
            _remove(os.path.join(path, entry), device)
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _write_new(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        _write_all(fd, text.encode())
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_start(fd: int, limit: int) -> str:
    """The first `limit` bytes of what a descriptor's file holds, as text (from offset 0, whatever the child
    did with the file's position)."""
    return os.pread(fd, limit, 0).decode(errors="replace")


def _read_file(path: str, limit: int) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        return _read_start(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else ""
    except OSError:
        return ""
    finally:
        os.close(fd)


def _redirect(fd: int, path: str, flags: int) -> None:
    target = os.open(path, flags, 0o600)
    os.dup2(target, fd)
    os.close(target)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m verifier.sandbox.zygote")
    parser.add_argument("--scratch")
    parser.add_argument("--device", default="cpu", help="the device the jobs use (cuda warms GPU-only imports)")
    parser.add_argument(
        "--role", choices=["reference", "candidate"], default="reference", help="whose jobs this zygote runs"
    )
    parser.add_argument("--run-job", metavar="JOB_FILE", help="run this one job here and exit (no zygote)")
    args = parser.parse_args(argv)
    if not args.run_job and not args.scratch:
        parser.error("--scratch is required (or --run-job)")
    return args


if __name__ == "__main__":
    main()
