"""`tritonize serve` keeps spare capture processes for the inductor backend, and ends them when it stops."""

from __future__ import annotations

import os
import subprocess
import time

from tests.model_server import serving
from verifier import procs


def _spares() -> list[str]:
    """The pids of capture processes waiting for a task (a server's spares) that this test's process started, or
    that lost their parent (the servers of other tests, in a parallel run, are neither)."""
    pattern = r"^\S*python\S* -m model_server\.inductor\.capture .* --wait"  # the capture, not its bwrap
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    ours = {str(pid) for pid in [*procs.descendants(os.getpid()), *procs.children(1)]}
    return [pid for pid in found.stdout.split() if pid in ours]


def test_the_server_keeps_spare_capture_processes_and_ends_them_when_it_stops():
    assert _spares() == [], "spares of an earlier server of this process outlived it"
    server = serving.start_server([])
    next(server)
    try:
        deadline = time.monotonic() + 30
        while len(_spares()) < 2 and time.monotonic() < deadline:  # default and templates, on a CPU
            time.sleep(0.2)
        assert len(_spares()) == 2
    finally:
        next(server, None)  # the fixture generator's end: it stops the server
    deadline = time.monotonic() + 30
    while _spares() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _spares() == []
