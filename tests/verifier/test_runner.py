"""`run_isolated`: other code (the Inductor capture) in the same sandbox as a verification, its files read-only."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from verifier import Spare, run_isolated
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
    stopped = run_isolated(lambda f: [sys.executable, f"{f}/spin.py"], device="cpu", seconds=60, files=spin, stop=stop)
    assert stopped.exceeded == "stopped"  # "time" had the 60 s limit ended it
    late = run_isolated(lambda f: [sys.executable, f"{f}/spin.py"], device="cpu", seconds=2, files=spin)
    assert late.exceeded == "timeout"


def test_a_file_name_with_a_folder_is_refused():
    with pytest.raises(ValueError, match="must be a bare name"):
        run_isolated(lambda f: ["true"], device="cpu", seconds=5, files={"../escape.py": ""})


WAITER = """
import json, pathlib, sys, time
folder = pathlib.Path(sys.argv[1])
names = json.loads(sys.stdin.readline())
print(*[folder.joinpath(name).read_text().strip() for name in names])
try:
    folder.joinpath(names[0]).write_text("changed")
    print("written")
except OSError as exc:
    print("refused", type(exc).__name__)
if len(sys.argv) > 2:
    while True:
        pass
"""


def _spare(*arguments: str) -> Spare:
    """A spare whose program waits for its files' names, then reads them (and spins, given an argument)."""
    return Spare(lambda folder: [sys.executable, "-c", WAITER, folder, *arguments], device="cpu")


@pytest.mark.skipif(
    isolation.layers()["namespaces"] is not None, reason=f"no sandbox here: {isolation.layers()['namespaces']}"
)
def test_a_spare_reads_the_files_handed_over_after_it_started_and_cannot_change_them():
    spare = _spare()
    time.sleep(1.0)  # it is up and waiting before the files exist
    assert spare.alive()
    done = spare.run({"task.py": "the task\n", "other.py": "more\n"}, seconds=60)
    assert done.returncode == 0 and done.exceeded is None, done.stderr
    assert done.stdout.splitlines() == ["the task more", "refused OSError"]
    assert not spare.alive()


def test_a_spare_s_time_limit_counts_from_its_run_and_stop_ends_it():
    """Waiting for its files costs no time from the limit; once handed them, a program that spins is ended by
    the limit, or by `stop`."""
    waited = _spare()
    time.sleep(2.0)
    quick = waited.run({"task.py": "x\n"}, seconds=1.5)
    assert quick.exceeded is None and quick.returncode == 0, quick.stderr
    assert _spare("spin").run({"task.py": "x\n"}, seconds=1.5).exceeded == "timeout"
    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()
    assert _spare("spin").run({"task.py": "x\n"}, seconds=60, stop=stop).exceeded == "stopped"


def test_closing_an_unused_spare_ends_it_and_a_dead_one_reports_its_exit():
    spare = _spare()
    assert spare.alive()
    spare.close()
    assert not spare.alive()
    broken = Spare(lambda folder: [sys.executable, "-c", "raise SystemExit(3)"], device="cpu")
    deadline = time.monotonic() + 30
    while broken.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    done = broken.run({"task.py": "x\n"}, seconds=10)
    assert done.returncode == 3 and done.exceeded is None
    with pytest.raises(ValueError, match="must be a bare name"):
        _spare().run({"../escape.py": ""}, seconds=5)
