"""The sandbox grants nothing, checked on its own: a program with native access (ctypes, no audit hook, no static
rules) tries every escalation from inside a real sandbox, and the test checks from outside that none worked.

What it tries is what a candidate that got past the verifier's Python-level checks would try next: regain
capabilities or a namespace, unmount or remount the view, trace a process, hold memory the meter cannot see,
write outside its scratch (a `.pth` into site-packages runs later in the unsandboxed parent), read the host's
files and the parent's secrets, reach the network, fill the disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

import verifier
from verifier.host import cgroups, isolation
from verifier.host.limits import Limits

pytestmark = pytest.mark.skipif(
    isolation.layers()["namespaces"] is not None, reason=f"no sandbox here: {isolation.layers()['namespaces']}"
)
EPERM, EFBIG, ENOSPC = 1, 27, 28
SECRETS = {"TRITONIZE_TOKEN": "tok-", "OPENAI_API_KEY": "sk-", "HF_TOKEN": "hf_", "AWS_SECRET_ACCESS_KEY": "aws-"}

PROBE = r"""
import ctypes, json, os, socket, sys

libc = ctypes.CDLL(None, use_errno=True)
found = {}
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
    found[key] = status[key].strip()


def call(name, *args):
    ctypes.set_errno(0)
    result = getattr(libc, name)(*args)
    return [result, ctypes.get_errno()]


found["mount"] = call("mount", b"none", b"/tmp", b"tmpfs", 0, None)
found["umount2"] = call("umount2", b"/tmp", 2)
found["remount_root_rw"] = call("mount", None, b"/", None, 32 | 4096, None)
found["unshare_user"] = call("unshare", 0x10000000)
found["unshare_mount"] = call("unshare", 0x00020000)
found["setns"] = call("setns", 0, 0)
found["ptrace"] = call("ptrace", 0, 0, None, None)
found["pivot_root"] = call("syscall", 155, b"/tmp", b"/tmp")
try:
    os.memfd_create("hold")
    found["memfd"] = "created"
except OSError as exc:
    found["memfd"] = exc.errno

args = json.loads(sys.argv[1])
found["writes"] = {}
for folder in args["write_into"]:
    try:
        with open(os.path.join(folder, args["name"]), "w") as handle:
            handle.write("import os; os.system('touch /tmp/pwned')\n")
        found["writes"][folder] = "written"
    except OSError as exc:
        found["writes"][folder] = exc.errno
found["reads"] = {}
for path in args["read"]:
    try:
        found["reads"][path] = open(path).read()
    except OSError as exc:
        found["reads"][path] = exc.errno
found["root"] = sorted(os.listdir("/"))
found["environ"] = dict(os.environ)
found["proc_environ"] = [open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
                         for pid in os.listdir("/proc") if pid.isdigit()
                         if os.access(f"/proc/{pid}/environ", os.R_OK)]
try:
    socket.create_connection(("127.0.0.1", args["port"]), timeout=3).close()
    found["network"] = "connected"
except OSError as exc:
    found["network"] = str(exc)
for folder, key in (("/tmp", "scratch"), ("/dev/shm", "shm")):
    written = 0
    try:
        with open(os.path.join(folder, "fill"), "wb") as handle:
            while written < args["fill"]:
                handle.write(b"\0" * (1 << 20))
                handle.flush()
                written += 1 << 20
        found[key] = ["filled", written]
    except OSError as exc:
        found[key] = [exc.errno, written]
print(json.dumps(found))
"""


def _run_probe(tmp_path: Path, args: dict) -> dict:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    launch = isolation.prepare(
        [sys.executable, str(probe), json.dumps(args)],
        device="cpu",
        host_scratch=scratch,
        readonly=[str(probe)],
        scratch_bytes=16 * 2**20,
    )
    done = isolation.run_limited(launch, Limits(120, 2 * 1024**3))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _roots_the_sandbox_binds(tmp_path: Path) -> set[str]:
    """The top-level names a sandbox may show: the system folders and the first part of each code path it binds
    (the checkout and its virtual environment lie wherever the user cloned them, /work here, /check in CI)."""
    bound = [*isolation._code_paths("cpu", [str(tmp_path)]), *isolation.SYSTEM_DIRS, "/usr", "/etc", "/tmp"]
    return {Path(path).parts[1] for path in bound} | {"dev", "proc", "sys"}


@pytest.fixture
def secrets(monkeypatch):
    values = {name: f"{prefix}{uuid.uuid4().hex}" for name, prefix in SECRETS.items()}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def test_a_sandboxed_program_with_native_code_gains_nothing(tmp_path, secrets):
    canary = tmp_path / "host-canary.txt"
    canary.write_text(f"host secret {uuid.uuid4().hex}")
    Path.home().mkdir(parents=True, exist_ok=True)
    home_secret = Path.home() / f".tritonize-canary-{uuid.uuid4().hex}"
    home_secret.write_text("home secret")
    site = sysconfig.get_paths()["purelib"]
    package = os.path.dirname(verifier.__file__)
    name = f"tritonize-escape-{uuid.uuid4().hex}.pth"
    write_into = [site, package, sys.prefix, "/usr/lib", "/etc", str(tmp_path), str(Path.home())]
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    accepted: list[socket.socket] = []
    listening = True

    def accept() -> None:
        while listening:
            with contextlib.suppress(OSError):
                accepted.append(server.accept()[0])

    listener = threading.Thread(target=accept)
    listener.start()
    try:
        args = {"write_into": write_into, "name": name, "read": [str(canary), str(home_secret), "/etc/shadow"]}
        found = _run_probe(tmp_path, {**args, "port": server.getsockname()[1], "fill": 64 * 2**20})
    finally:
        listening = False
        listener.join()
        server.close()
        home_secret.unlink()
    for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        assert int(found[key], 16) == 0, (key, found[key])
    assert found["NoNewPrivs"] == "1" and found["Seccomp"] == "2"
    for call in (
        "mount",
        "umount2",
        "remount_root_rw",
        "unshare_user",
        "unshare_mount",
        "setns",
        "ptrace",
        "pivot_root",
    ):
        assert found[call] == [-1, EPERM], (call, found[call])
    assert found["memfd"] == EPERM
    # the test's own folder lies under /tmp, which inside is the sandbox's scratch: a write there stays inside
    outside = {folder: result for folder, result in found["writes"].items() if folder != str(tmp_path)}
    assert "written" not in outside.values(), found["writes"]
    assert not any(Path(folder, name).exists() for folder in write_into)
    assert all(isinstance(value, int) for value in found["reads"].values()), found["reads"]
    assert set(found["root"]) <= _roots_the_sandbox_binds(tmp_path), found["root"]
    shown = json.dumps(found)
    assert not any(value in shown for value in secrets.values())
    assert set(found["environ"]) <= set(isolation.environment_for("/tmp", "cpu", None, [], {})) | {"PWD"}
    assert found["network"] != "connected" and accepted == []
    # bounded by the tmpfs's size or the file-size limit, whichever comes first
    assert found["scratch"][0] in (EFBIG, ENOSPC) and found["scratch"][1] <= 16 * 2**20
    assert found["shm"][0] in (EFBIG, ENOSPC) and found["shm"][1] <= isolation.SHM_BYTES


def test_sandboxes_do_not_see_each_others_scratch(tmp_path):
    """What one sandbox writes in its scratch (a sibling GRPO sample, the reference's side) another never sees."""
    marker = f"sibling-{uuid.uuid4().hex}"
    writer = tmp_path / "writer.py"
    writer.write_text(
        f"import time; open('/tmp/{marker}', 'w').write('x'); print('written', flush=True); time.sleep(30)"
    )
    first = tmp_path / "first"
    first.mkdir()
    stop = threading.Event()
    launch = isolation.prepare([sys.executable, str(writer)], device="cpu", host_scratch=first, readonly=[str(writer)])
    background = threading.Thread(target=lambda: isolation.run_limited(launch, Limits(60, 2**31), stop))
    background.start()
    try:
        time.sleep(3)  # the writer has written its file by now (it takes about a second to start)
        second = tmp_path / "second"
        second.mkdir()
        looker = isolation.prepare(
            [sys.executable, "-c", "import os, json; print(json.dumps(os.listdir('/tmp')))"],
            device="cpu",
            host_scratch=second,
        )
        seen = isolation.run_limited(looker, Limits(60, 2**31))
    finally:
        stop.set()
        background.join()
    assert seen.returncode == 0, seen.stderr
    assert marker not in seen.stdout
    assert not any(marker in str(p) for p in tmp_path.rglob("*"))  # nor did it land on the host


@pytest.mark.skipif(cgroups.unavailable() is not None, reason=f"no memory cgroup here: {cgroups.unavailable()}")
def test_memory_held_in_tmpfs_counts_against_the_limit(tmp_path):
    """Files in the sandbox's tmpfs are memory that no process's resident set shows: the memory cgroup counts them,
    so writing 400 MiB there under a 128 MiB limit ends the program for memory."""
    group = cgroups.new_group("tmpfs-test")
    assert group is not None
    try:
        filler = "open('/tmp/fill', 'wb').write(b'\\0' * (400 << 20)); print('not stopped')"
        launch = isolation.prepare(
            [sys.executable, "-c", filler], device="cpu", host_scratch=tmp_path, group=group, scratch_bytes=2**30
        )
        done = isolation.run_limited(launch, Limits(120, 128 * 2**20))
    finally:
        group.remove()
    assert done.exceeded == "memory", (done.returncode, done.stdout, done.stderr[-500:])
    assert "not stopped" not in done.stdout


def test_the_environment_is_an_allowlist(secrets):
    env = isolation.environment_for("/tmp", "cpu", None, ["/somewhere"], {"EXTRA": "1"})
    assert not set(secrets) & set(env)
    assert env["HOME"] == env["TMPDIR"] == "/tmp" and env["PYTHONSAFEPATH"] == "1" and env["EXTRA"] == "1"


def test_code_bound_under_tmp_stays_importable_and_nothing_writable_does():
    """Inside the sandbox /tmp is the scratch tmpfs, and a checkout or virtual environment under the host's /tmp is
    bound into it read-only. The zygote keeps such a directory on `sys.path`, but drops the writable directories
    around it and any entry that does not exist yet: a job could plant a module there for a later job to import."""
    root = Path(tempfile.mkdtemp(prefix="tritonize-code-", dir="/tmp"))
    try:
        library = root / "lib"
        library.mkdir()
        (library / "bound_module.py").write_text("VALUE = 'bound'\n")
        missing = f"/tmp/not-made-yet-{uuid.uuid4().hex}"
        script = (
            "import json, sys\n"
            f"sys.path += [{str(library)!r}, {str(root)!r}, {missing!r}]\n"
            "from verifier.sandbox.zygote import _confine_self\n"
            "_confine_self('/tmp')\n"
            "import bound_module\n"
            "print(json.dumps({'path': sys.path, 'value': bound_module.VALUE}))\n"
        )
        launch = isolation.prepare(
            [sys.executable, "-c", script], device="cpu", host_scratch=root / "scratch", readonly=[str(library)]
        )
        done = isolation.run_limited(launch, Limits(120, 2**31))
    finally:
        shutil.rmtree(root)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["value"] == "bound" and str(library) in found["path"]
    assert str(root) not in found["path"] and missing not in found["path"] and "/tmp" not in found["path"]
