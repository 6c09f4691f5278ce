"""Language server latency and memory, over stdio like an editor: start-up, spawn → first diagnostics,
edit → diagnostics, code actions.

    python benchmarks/lsp_latency.py [--edits 40]

The document is the audit benchmark's 2,000-line file (the hand-written kernels of examples/ and tests/fixtures/).
"Single edit" waits out the audit interval between edits (a user's keystroke after a pause); "burst" types
13 to 20 characters 20 ms apart (eight bursts, so the last keystroke falls at different points of the audit
interval) and times the last keystroke to the final diagnostics.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from audit_speed import CORPUS, two_thousand_lines  # the sibling script (run as python benchmarks/lsp_latency.py)
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from verifier.audit import AuditConfig, python_files

ROOT = Path(__file__).resolve().parent.parent
URI = "file:///bench/big_kernels.py"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=40, help="timed single edits and code actions (default 40)")
    args = parser.parse_args()
    files = python_files(CORPUS, AuditConfig())
    text = two_thousand_lines({path: path.read_bytes() for path in files})

    client = LanguageClient("bench", "1")
    published: asyncio.Queue[float] = asyncio.Queue()
    client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda params: published.put_nowait(time.perf_counter()))
    client.feature(types.WORKSPACE_CONFIGURATION)(lambda params: [None] * len(params.items))
    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "lsp_server")
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    startup = time.perf_counter() - started
    client.initialized(types.InitializedParams())

    tick = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=URI, language_id="python", version=1, text=text))
    )
    opened = await published.get()
    first = opened - tick
    from_spawn = opened - started  # what a user waits for: the editor opens a file and starts the server

    lines = text.splitlines()
    version = 1
    single = []
    for index in range(args.edits):
        await asyncio.sleep(0.3)
        version += 1
        tick = _type(client, version, lines, index)
        single.append(await published.get() - tick)
    bursts = []
    for length in range(13, 21):
        await asyncio.sleep(0.3)
        last = 0.0
        for index in range(length):
            version += 1
            last = _type(client, version, lines, index)
            await asyncio.sleep(0.02)
        burst_done = 0.0
        while True:
            try:
                burst_done = await asyncio.wait_for(published.get(), timeout=1.0)
            except asyncio.TimeoutError:
                break
        bursts.append(burst_done - last)

    kernel_line = next(i for i, line in enumerate(lines) if "tl.program_id" in line)
    actions = []
    for _ in range(args.edits):
        here = types.Position(line=kernel_line, character=4)
        tick = time.perf_counter()
        await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=URI),
                range=types.Range(start=here, end=here),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        actions.append(time.perf_counter() - tick)
    await asyncio.sleep(1.0)
    server_rss, worker_rss = _rss_mib(client._server.pid), sum(map(_rss_mib, _children(client._server.pid)))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()

    print(f"{'measure (2,000-line file)':<46} {'median':>9} {'p95':>9}")
    print(f"{'start-up to initialize result (ms)':<46} {startup * 1000:>9.0f}")
    print(f"{'didOpen to diagnostics (ms)':<46} {first * 1000:>9.1f}")
    print(f"{'spawn to first diagnostics (ms)':<46} {from_spawn * 1000:>9.0f}")
    print(f"{'single edit: didChange to diagnostics (ms)':<46} {_ms(single)}")
    print(f"{'burst: last keystroke to diagnostics (ms, max)':<46} {_ms(bursts, max)}")
    print(f"{'code action response (ms)':<46} {_ms(actions)}")
    print(f"{'idle resident memory, server (MiB)':<46} {server_rss:>9.1f}")
    print(f"{'idle resident memory, audit worker (MiB)':<46} {worker_rss:>9.1f}")


def _type(client: LanguageClient, version: int, lines: list[str], index: int) -> float:
    """Insert one character at the end of a line (an incremental change, as editors send)."""
    line = (index * 37) % len(lines)
    at = types.Position(line=line, character=len(lines[line]))
    lines[line] += " "
    change = types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text=" ")
    tick = time.perf_counter()
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=version), content_changes=[change]
        )
    )
    return tick


def _ms(values: list[float], spread=None) -> str:
    """Median and p95 (or `spread(values)`) in milliseconds."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    second = spread(values) if spread else p95
    return f"{statistics.median(values) * 1000:>9.1f} {second * 1000:>9.1f}"


def _children(pid: int) -> list[int]:
    """The server's child processes (its audit worker)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        found += [int(child) for child in children]
    return found


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


if __name__ == "__main__":
    asyncio.run(main())
