"""`--sanitize`: finding compute-sanitizer, reading memcheck's log, refusing where it cannot run, and the
sandboxed job that replaces itself with the sanitizer. The sanitizer itself needs an NVIDIA GPU; its real runs
are in test_gpu.py. Here a stand-in script takes its place in the exec chain and says so."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES
from tests.sources import pair
from verifier import verify
from verifier.errors import UsageError
from verifier.host import sanitizer
from verifier.wire.messages import SANITIZED_JOB_FILE, SANITIZER_LOG_FILE

REPO = FIXTURES.parent.parent

# memcheck's log for one bad read and one bad write, in the two wordings compute-sanitizer versions use for the
# address line ("Access at", "Address"); the layout is the one seen on the H100 box, the addresses made up
LOG = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at _relu_kernel+0x1d0 in /tmp/job/candidate.py:13
=========     by thread (64,0,0) in block (6,0,0)
=========     Access at 0x7f3a2c001900 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a2c000000 of size 6,400 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f1a6b] in libcuda.so.1
=========
========= Invalid __global__ write of size 4 bytes
=========     at _relu_kernel+0x2a0 in /tmp/job/candidate.py:14
=========     by thread (64,0,0) in block (6,0,0)
=========     Address 0x7f3a2c002c80 is out of bounds
=========
========= ERROR SUMMARY: 2 errors
"""

# Stands in for compute-sanitizer (which needs an NVIDIA GPU): records where it was asked to log and whether the
# caching allocator was off, then runs the target as the real tool does.
STAND_IN = """#!/bin/sh
while [ "$1" != "--target-processes" ]; do
    case "$1" in --log-file) log="$2";; --tool) tool="$2";; esac
    shift
done
shift 2
echo "tool=$tool caching_off=$PYTORCH_NO_CUDA_MEMORY_CACHING" > "$log"
exec "$@"
"""


def test_memcheck_errors_are_read_one_line_each():
    count, errors = sanitizer.read_log(LOG)
    assert count == 2
    assert errors == [
        "Invalid __global__ read of size 4 bytes at _relu_kernel+0x1d0 in /tmp/job/candidate.py:13 by thread "
        "(64,0,0) in block (6,0,0): Access at 0x7f3a2c001900 is out of bounds and is 1 bytes after the nearest "
        "allocation at 0x7f3a2c000000 of size 6,400 bytes",
        "Invalid __global__ write of size 4 bytes at _relu_kernel+0x2a0 in /tmp/job/candidate.py:14 by thread "
        "(64,0,0) in block (6,0,0): Address 0x7f3a2c002c80 is out of bounds",
    ]


def test_a_clean_log_has_no_errors_and_a_missing_one_reads_as_nothing():
    assert sanitizer.read_log("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n") == (0, [])
    assert sanitizer.read_log("") == (0, [])


def test_errors_past_the_print_limit_still_count():
    count, errors = sanitizer.read_log(LOG.replace("ERROR SUMMARY: 2 errors", "ERROR SUMMARY: 57 errors"))
    assert count == 57 and len(errors) == 2


def test_the_tool_is_found_on_path_then_under_cuda_home(tmp_path, monkeypatch):
    tool = tmp_path / "bin" / "compute-sanitizer"
    tool.parent.mkdir()
    tool.write_text(STAND_IN)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tool.parent))
    assert sanitizer.find() == str(tool)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert sanitizer.find() == str(tool)


def test_sanitize_on_the_cpu_is_refused_with_the_reason():
    with pytest.raises(UsageError, match="--sanitize needs a CUDA GPU"):
        verify(*pair(FIXTURES / "tasks/relu.py", FIXTURES / "candidates/relu_ok.py"), device="cpu", sanitize=True)


def test_the_sanitize_job_execs_the_sanitizer_on_a_fresh_interpreter_that_runs_the_candidate(tmp_path):
    """The whole chain a GPU run takes, on the CPU: the job's process replaces itself with the (stand-in)
    sanitizer, which starts `python -m verifier.sandbox.zygote --run-job`, which calls the candidate once."""
    tool = tmp_path / "compute-sanitizer"
    tool.write_text(STAND_IN)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "candidate.py").write_text((FIXTURES / "candidates/relu_ok.py").read_text())
    (job_dir / "task_inputs.py").write_text((FIXTURES / "tasks/relu.py").read_text())
    job = {
        "id": "job",
        "kind": "sanitize",
        "dir": "job",
        "device": "cpu",
        "init_seed": 1,
        "source": str(job_dir / "candidate.py"),
        "module_name": "candidate",
        "timing_trials": 1,
        "calls": [{"seed": 7, "grad": False, "label": "sanitized call"}],
        "channel_fd": -1,
        "inputs_source": str(job_dir / "task_inputs.py"),
        "sanitizer": str(tool),
    }
    result_read, result_write = os.pipe()
    job["result_fd"] = result_write
    (job_dir / "outer.json").write_text(json.dumps(job))
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    run = subprocess.run(
        [sys.executable, "-m", "verifier.sandbox.zygote", "--run-job", str(job_dir / "outer.json")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=job_dir,
        pass_fds=(result_write,),
    )
    os.close(result_write)
    with os.fdopen(result_read) as pipe:
        written = pipe.read()
    assert run.returncode == 0, run.stderr[-2000:]
    assert (job_dir / SANITIZER_LOG_FILE).read_text() == "tool=memcheck caching_off=1\n"
    assert json.loads((job_dir / SANITIZED_JOB_FILE).read_text())["kind"] == "sanitized_candidate"
    result = json.loads(written)
    assert result["ok"] is True, result
