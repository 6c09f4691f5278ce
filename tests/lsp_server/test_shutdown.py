"""A language server that goes away mid-conversion leaves nothing behind: not the model server it started, not
Inductor's compile in that server's sandbox, not a scratch directory. The editor either says shutdown and exit,
or dies and takes the language server with it (SIGKILL: no handler runs)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities
from pytest_lsp.client import make_test_lsp_client

from tests.model_server import serving

ROOT = Path(__file__).resolve().parents[2]
TASK = (ROOT / "examples" / "layernorm_gelu.py").read_text()


async def _start(tmp_path: Path, scratch: Path):
    client = make_test_lsp_client()
    client.set_configuration(
        {
            "serverUrl": f"http://127.0.0.1:{serving.free_port()}",
            "autoStart": True,
            "device": "cpu",
            "samples": 1,
            "rounds": 1,
            "trials": 2,
        },
        section="tritonize",
    )
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}
    await client.start_io(sys.executable, "-m", "lsp_server", env=env, cwd=str(tmp_path))
    await client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual_studio_code")))
    return client


async def _converting(client, tmp_path: Path) -> asyncio.Task:
    """Open the task and start converting its Model; returns when Inductor's capture is running."""
    path = tmp_path / "layernorm_gelu.py"
    text = TASK + f"\n\nSHUTDOWN_TEST = {time.time_ns()}\n"  # nothing cached anywhere
    path.write_text(text)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(path.as_uri(), "python", 1, text))
    )
    line = text.splitlines().index("class Model(nn.Module):")
    arguments = [{"uri": path.as_uri(), "line": line, "preview": True}]
    conversion = asyncio.ensure_future(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="tritonize.convert", arguments=arguments)
        )
    )
    deadline = time.monotonic() + 120
    while not any("compiling the task" in m for m in _progress(client)):
        if time.monotonic() > deadline or conversion.done():
            ended = conversion.result() if conversion.done() else "still running"
            pytest.fail(f"the conversion never reached Inductor's compile: {_progress(client)}, {ended}")
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # the capture's sandbox is up
    return conversion


def _progress(client) -> list[str]:
    return [getattr(r, "message", "") or "" for updates in client.progress_reports.values() for r in updates]


def _parents() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process, from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            found[int(entry.name)] = (int(fields[1]), fields[0])
    return found


def _descendants(pid: int) -> set[int]:
    parents = _parents()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, (parent, _) in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _gone_within(pids: set[int], seconds: float) -> set[int]:
    """The processes of `pids` still running (not zombies) after up to `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        parents = _parents()
        alive = {pid for pid in pids if pid in parents and parents[pid][1] != "Z"}
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.asyncio
@pytest.mark.parametrize("how", ["shutdown", "killed"])
async def test_a_language_server_gone_mid_conversion_leaves_no_process_and_no_scratch(tmp_path, how):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    client = await _start(tmp_path, scratch)
    conversion = await _converting(client, tmp_path)
    server = client._server.pid
    descendants = _descendants(server)
    assert len(descendants) >= 2, "the model server and Inductor's capture should be running"
    if how == "shutdown":
        await client.shutdown_session()
    else:
        os.kill(server, signal.SIGKILL)
        await client.stop()
    conversion.cancel()
    assert _gone_within(descendants, 10.0) == set()
    deadline = time.monotonic() + 10
    while list(scratch.iterdir()) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert sorted(p.name for p in scratch.iterdir()) == []
