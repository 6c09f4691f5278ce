"""When documents are audited and compiled, and how their diagnostics are published.

Audits run in a worker process (`audit_process.py`), never on the event loop nor in one of its threads, so
the server answers every request while one runs (the audit's own time budget and the worker's memory limit
bound it). Diagnostics are pushed (`textDocument/publishDiagnostics`,
never pulled) on open, on save, and on change: the first edit after a quiet spell is audited at once, edits
that follow within `MIN_AUDIT_INTERVAL` are folded into one audit at the end of the interval, and edits that
arrive while an audit runs are audited when it ends. An audit whose text changed while it ran is dropped.
Compile findings follow in the background after a save, and are dropped when the text changes first.

Only files that import Triton are audited: any other Python file gets no diagnostics at all, so a syntax error
there is left to the Python language server that already reports it.
"""

from __future__ import annotations

import asyncio
import re

from lsprotocol import types

from lsp_server.audit_process import AuditError
from lsp_server.diagnostics import diagnostics
from lsp_server.session import Session

MIN_AUDIT_INTERVAL = 0.15
IMPORTS_TRITON = re.compile(r"^[ \t]*(?:import|from)[ \t]+triton\b", re.MULTILINE)


def uses_triton(source: str) -> bool:
    """Whether the text imports Triton (read as text, so a file that does not parse yet still counts)."""
    return IMPORTS_TRITON.search(source) is not None


def audit_soon(session: Session, uri: str, at_once: bool = False) -> None:
    """On the loop: start an audit now (`at_once`, or the last one is older than the interval) or when the
    interval ends; while one runs, the next starts after it."""
    state = session.state(uri)
    if state.pending_audit is not None:
        return
    if state.auditing is not None and not state.auditing.done():
        state.audit_again = True
        return
    loop = asyncio.get_running_loop()
    wait = 0.0 if at_once else state.audited_at + MIN_AUDIT_INTERVAL - loop.time()
    if wait <= 0:
        _start(session, uri)
    else:
        state.pending_audit = loop.call_later(wait, _start, session, uri)


async def settled(session: Session, uri: str, timeout: float) -> bool:
    """Wait (at most `timeout` seconds) until the findings are those of the current text; a pending audit
    starts at once. False if they are not by then (the caller must not use them for edits)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while uri in session.documents:
        state = session.state(uri)
        running = state.auditing is not None and not state.auditing.done()
        if not running and state.pending_audit is None and state.audited_version == session.version(uri):
            return True
        if state.pending_audit is not None:
            state.pending_audit.cancel()
            _start(session, uri)
        elif not running:
            audit_soon(session, uri, at_once=True)
        try:
            await asyncio.wait_for(asyncio.shield(state.auditing), max(deadline - loop.time(), 0.0))
        except asyncio.TimeoutError:
            return False
    return False


def compile_later(session: Session, uri: str) -> None:
    """Compile checks in a background thread; a newer save or edit makes the result stale and it is dropped."""
    if not session.settings.compile_on_save:
        return
    state = session.state(uri)
    if state.compiling is not None:
        state.compiling.cancel()
    state.compiling = asyncio.get_running_loop().create_task(_compile(session, uri))


def publish(session: Session, uri: str) -> None:
    """Static findings plus compile findings of the same version: one list, so nothing shows twice."""
    state = session.state(uri)
    findings = state.findings
    if state.compiled_version == state.audited_version:
        findings = findings + state.compiled
    snapshot = session.snapshot(uri)
    session.server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, version=snapshot.version, diagnostics=diagnostics(snapshot, findings))
    )


def _start(session: Session, uri: str) -> None:
    state = session.state(uri)
    state.pending_audit = None
    state.auditing = asyncio.get_running_loop().create_task(_audit(session, uri))


async def _audit(session: Session, uri: str) -> None:
    """Background: audit the text as it is now in the worker; publish unless the text changed meanwhile."""
    document = session.server.workspace.get_text_document(uri)
    version, source, path = document.version, document.source, document.path or uri
    if not uses_triton(source):
        state = session.state(uri)
        state.findings, state.kernels, state.audited_version = [], [], version
        publish(session, uri)
        return
    config = session.audit_config(document.path)
    try:
        result = await session.auditor.audit(source, path, config)
    except AuditError as exc:
        session.tell(f"tritonize: {exc}", types.MessageType.Warning)
        return
    if uri not in session.documents:
        return
    state = session.state(uri)
    state.audited_at = asyncio.get_running_loop().time()
    if session.version(uri) == version:
        state.findings, state.kernels, state.audited_version = result.findings, result.kernels, version
        publish(session, uri)
    if state.audit_again or session.version(uri) != version:
        state.auditing, state.audit_again = None, False  # this audit is over: the next may start
        audit_soon(session, uri)


async def _compile(session: Session, uri: str) -> None:
    document = session.server.workspace.get_text_document(uri)
    version, source, path = document.version, document.source, document.path or uri
    config = session.audit_config(document.path)
    if not config.compile or not uses_triton(source):
        return
    findings = await asyncio.to_thread(session.compile_checker(config).findings, path, source)
    if uri not in session.documents or session.version(uri) != version:
        return
    state = session.state(uri)
    state.compiled, state.compiled_version = findings, version
    if state.audited_version == version:  # else the audit of this version publishes both when it ends
        publish(session, uri)
