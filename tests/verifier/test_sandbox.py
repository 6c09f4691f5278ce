"""The sandbox holds on its own: hostile candidates run with the static checks switched off.

Each test gives the candidate a real chance (real files, a real server on 127.0.0.1, real processes) and
checks from outside that it achieved nothing, and that the verdict is the right one.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import socket
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from tests.sources import pair
from tests.verifier.zoo_cases import sandbox_case
from verifier import VerifierPool, procs
from verifier.host import isolation
from verifier.host.limits import Limits

pytestmark = pytest.mark.skipif(
    isolation.layers()["namespaces"] is not None, reason=f"no sandbox here: {isolation.layers()['namespaces']}"
)
UNCHECKED = {"static_checks": False, "timeout": 30, "trials": 2, "memory_limit": 2 * 1024**3}


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=1, device="cpu") as pool:
        yield pool


def _customised(name: str, tmp_path: Path, **replacements: str) -> tuple[Path, Path]:
    case = sandbox_case(name)
    text = case.candidate.read_text()
    for key, value in replacements.items():
        text = text.replace(key, value)
    candidate = tmp_path / f"{name}.py"
    candidate.write_text(text)
    return case.task, candidate


def test_segfault_is_a_crash(pool):
    case = sandbox_case("segfault")
    report = pool.verify(*pair(case.task, case.candidate), **UNCHECKED)
    assert report.verdict == "crashed"
    assert "SIGSEGV" in report.message


def test_exit_zero_before_reporting_is_a_crash(pool):
    case = sandbox_case("os_exit_zero")
    report = pool.verify(*pair(case.task, case.candidate), **UNCHECKED)
    assert report.verdict == "crashed"
    assert "exited with code 0 before reporting" in report.message


def test_fake_report_is_captured_not_believed(pool):
    case = sandbox_case("fake_report_stdout")
    report = pool.verify(*pair(case.task, case.candidate), **UNCHECKED)
    assert report.verdict == "incorrect"
    calls = UNCHECKED["trials"] + 2  # every trial, the enable_grad call, then the call coverage is measured on
    assert report.candidate_output["stdout"].count('"verdict": "correct"') == 4 * calls
    assert '"verdict": "correct"' in report.candidate_output["stderr"]


def test_cannot_write_outside_scratch(pool, tmp_path):
    outside = [Path.home() / f"tritonize-escape-{uuid.uuid4().hex}", Path("/var/tmp") / f"escape-{uuid.uuid4().hex}"]
    task, candidate = _customised("write_outside", tmp_path, TARGETS=repr([str(p) for p in outside]))
    report = pool.verify(*pair(task, candidate), **UNCHECKED)
    assert report.verdict == "correct"
    assert not any(p.exists() for p in outside)
    assert report.isolation["filesystem"].startswith("read-only")


def test_cannot_reach_the_network(pool, tmp_path):
    """A connection the candidate made would wait in the listener's backlog (the kernel completes it without an
    accept), so one accept that does not block, after the run, would find it."""
    accepted: list[socket.socket] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        task, candidate = _customised("network", tmp_path, PORT=str(server.getsockname()[1]))
        report = pool.verify(*pair(task, candidate), **UNCHECKED)
        server.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            accepted.append(server.accept()[0])
    assert report.verdict == "correct"
    assert accepted == []
    assert report.isolation["network"] == "none"


def test_leaves_no_process_behind(pool, tmp_path):
    marker = str(900000 + uuid.uuid4().int % 99999)
    task, candidate = _customised("leave_process", tmp_path, MARKER=marker)
    report = pool.verify(*pair(task, candidate), **UNCHECKED)
    assert report.verdict == "rejected" and "TRI361" in {v["rule"] for v in report.violations}, report.message
    assert _processes_with_argument(marker) == []


def test_native_code_through_ctypes_is_refused_at_run_time(pool):
    case = sandbox_case("ctypes_null")
    report = pool.verify(*pair(case.task, case.candidate), **UNCHECKED)
    assert report.verdict == "rejected"
    assert "the sandbox refused ctypes" in report.message


def test_cannot_read_the_reference_outputs(pool, tmp_path):
    task, candidate = _customised("steal_reference", tmp_path, PARENT_TMP=tempfile.gettempdir())
    report = pool.verify(*pair(task, candidate), **UNCHECKED)
    assert report.verdict == "incorrect"


@pytest.mark.parametrize(("name", "rule"), [("thread_runtime", "TRI353"), ("patch_timer_runtime", "TRI356")])
def test_runtime_watch_sees_what_static_checks_missed(pool, name, rule):
    case = sandbox_case(name)
    report = pool.verify(*pair(case.task, case.candidate), **UNCHECKED)
    assert report.verdict == "rejected"
    assert rule in {v["rule"] for v in report.violations}


def test_pool_closes_every_process():
    case = sandbox_case("segfault")
    before = set(procs.descendants(os.getpid()))
    with VerifierPool(size=1, device="cpu") as pool:
        pool.verify(*pair(case.task, case.candidate), **UNCHECKED)
        assert set(procs.descendants(os.getpid())) - before
    assert set(procs.descendants(os.getpid())) <= before


def _processes_with_argument(argument: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argument.encode() in cmdline:
                found.append(int(entry))
    return found


def test_a_one_shot_command_is_stopped_with_its_children_when_asked(tmp_path):
    """`run_limited` (what the inductor backend's captures run under) ends a whole tree on request, at once."""
    stop = threading.Event()
    marker = f"{60 + uuid.uuid4().int % 1000 / 1000:.3f}"  # a sleep no other process runs
    script = (
        f"import subprocess, time; subprocess.Popen(['sleep', '{marker}']); print('started', flush=True); "
        "time.sleep(60)"
    )
    launch = isolation.prepare([sys.executable, "-c", script], device="cpu", host_scratch=tmp_path)
    threading.Timer(1.0, stop.set).start()
    done = isolation.run_limited(launch, Limits(30, 2 * 1024**3), stop)
    assert done.exceeded == "stopped" and done.returncode is None  # "time" had the 30 s limit ended it
    assert done.stdout.strip() == "started"
    assert not [p for p in Path("/proc").glob("[0-9]*") if marker in _cmdline(p)]


def _cmdline(proc: Path) -> str:
    with contextlib.suppress(OSError):
        return proc.joinpath("cmdline").read_bytes().decode(errors="replace")
    return ""


def test_a_one_shot_command_past_its_time_is_killed(tmp_path):
    launch = isolation.prepare(["sleep", "60"], device="cpu", host_scratch=tmp_path)
    done = isolation.run_limited(launch, Limits(0.5, 2 * 1024**3))
    assert done.exceeded == "timeout" and done.returncode is None


SECRETS = {"TRITONIZE_TOKEN": "tok-", "OPENAI_API_KEY": "sk-", "HF_TOKEN": "hf_"}


def test_no_secret_of_the_parent_reaches_the_candidate_or_its_report(monkeypatch):
    secrets = {name: f"{prefix}{uuid.uuid4().hex}" for name, prefix in SECRETS.items()}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    case = sandbox_case("env_leak")
    with VerifierPool(size=1, device="cpu") as fresh:  # its sandboxes start with the secrets in this environment
        report = fresh.verify(*pair(case.task, case.candidate), **UNCHECKED)
    assert report.verdict == "rejected" and "refused opening /proc/" in report.message, report.message
    assert "'HOME': '/tmp'" in report.candidate_output["stdout"]  # it did print what it could see
    assert not any(value in report.to_json() for value in secrets.values())
    assert report.candidate_output["trust"].startswith("untrusted")


def test_output_pointed_at_dev_zero_and_a_flood_reach_the_parent_bounded(pool, tmp_path):
    task, candidate = _customised("output_flood", tmp_path, FLOOD_MB="64")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    report = pool.verify(*pair(task, candidate), **UNCHECKED)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert report.verdict == "correct", report.message
    for stream in ("stdout", "stderr"):
        assert len(report.candidate_output[stream]) <= 4100
        assert report.candidate_output[stream].endswith("[truncated]")
    assert grown < 200 * 2**20


def test_a_forged_result_is_not_believed_without_the_outputs(pool):
    """The candidate's process can write whatever it likes where its own result goes; what the comparer (which
    it never touches) received decides correctness."""
    case = sandbox_case("forge_result")
    report = pool.verify(*pair(case.task, case.candidate), **UNCHECKED)
    assert report.verdict in {"incorrect", "crashed"} and report.reward == 0, report.message


def test_a_forged_failure_without_its_fields_is_a_crash_not_a_crashed_parent(pool):
    """A failure result is read field by field too: one the candidate wrote without a stage or an error (and with
    fields of the wrong types) ends as its own crash, never as an exception in the trusted parent."""
    case = sandbox_case("forge_failure")
    report = pool.verify(*pair(case.task, case.candidate), **UNCHECKED)
    assert report.verdict == case.verdict and report.reward == 0, report.message
    assert "without its stage and error" in report.message


def test_the_scratch_directory_is_bounded_and_the_host_disk_untouched(pool):
    case = sandbox_case("disk_fill")
    before = shutil.disk_usage(tempfile.gettempdir()).used
    report = pool.verify(*pair(case.task, case.candidate), **UNCHECKED)
    assert shutil.disk_usage(tempfile.gettempdir()).used - before < 256 * 2**20
    if report.verdict == "correct":  # stopped by the scratch's size or the file-size limit
        written = int(report.candidate_output["stdout"].split()[-1])
        assert written <= 2 * 2**30
    else:  # or by the memory group, which counts what a tmpfs holds
        assert report.verdict == "crashed" and "memory limit" in report.message, report.message


def test_memory_held_where_a_resident_set_does_not_show_is_still_counted(pool):
    case = sandbox_case("hidden_memory")
    report = pool.verify(*pair(case.task, case.candidate), **{**UNCHECKED, "memory_limit": 2**30})
    assert report.verdict == "crashed" and "memory limit" in report.message, report.message
    assert "memfd created" not in report.candidate_output["stdout"]
