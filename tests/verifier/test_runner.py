"""`run_isolated`: other code (the Inductor capture) in the same sandbox as a verification, its files read-only."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from verifier import run_isolated
from verifier.host import isolation

PROGRAM = """
import pathlib, sys
folder = pathlib.Path(sys.argv[1])
print(folder.joinpath("task.py").read_text().strip())
try:
    folder.joinpath("task.py").write_text("changed")
    print("written")
except OSError as exc:
    print("refused", type(exc).__name__)
"""


@pytest.mark.skipif(
    isolation.layers()["namespaces"] is not None, reason=f"no sandbox here: {isolation.layers()['namespaces']}"
)
def test_the_program_reads_its_files_and_cannot_change_them():
    files = {"task.py": "the task\n", "probe.py": PROGRAM}
    done = run_isolated(
        lambda folder: [sys.executable, f"{folder}/probe.py", folder], device="cpu", seconds=60, files=files
    )
    assert done.returncode == 0 and done.exceeded is None, done.stderr
    assert done.stdout.splitlines() == ["the task", "refused OSError"]


def test_stop_and_the_time_limit_end_it():
    spin = {"spin.py": "while True:\n    pass\n"}
    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()
    started = time.monotonic()
    stopped = run_isolated(lambda f: [sys.executable, f"{f}/spin.py"], device="cpu", seconds=60, files=spin, stop=stop)
    assert stopped.exceeded == "stopped" and time.monotonic() - started < 30
    late = run_isolated(lambda f: [sys.executable, f"{f}/spin.py"], device="cpu", seconds=2, files=spin)
    assert late.exceeded == "timeout"


def test_a_file_name_with_a_folder_is_refused():
    with pytest.raises(ValueError, match="must be a bare name"):
        run_isolated(lambda f: ["true"], device="cpu", seconds=5, files={"../escape.py": ""})
