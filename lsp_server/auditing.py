"""When documents are audited and compiled, and how their diagnostics are published.

Diagnostics are pushed (`textDocument/publishDiagnostics`, never pulled) on open, on save, and on change: the
first edit after a quiet spell is audited at once, edits that follow within `MIN_AUDIT_INTERVAL` are folded
into one audit at the end of the interval (typing stays responsive, and the final text is always audited).
Compile findings follow in the background after a save, and are dropped when the text changes first.
"""

from __future__ import annotations

import asyncio

from lsprotocol import types

from lsp_server.diagnostics import diagnostics
from lsp_server.session import Session
from verifier.audit.engine import audit

MIN_AUDIT_INTERVAL = 0.15


def audit_now(session: Session, uri: str) -> None:
    """On the loop: audit the document's current text and publish the result (replacing the previous one)."""
    state = session.state(uri)
    state.pending_audit = None
    document = session.server.workspace.get_text_document(uri)
    result = audit(document.source, document.path or uri, session.audit_config(document.path))
    state.findings, state.kernels, state.audited_version = result.findings, result.kernels, document.version
    publish(session, uri)
    state.audited_at = asyncio.get_event_loop().time()


def audit_soon(session: Session, uri: str) -> None:
    """Audit now if the last audit is older than the interval, else once when the interval ends."""
    state = session.state(uri)
    if state.pending_audit is not None:
        return
    loop = asyncio.get_running_loop()
    wait = state.audited_at + MIN_AUDIT_INTERVAL - loop.time()
    if wait <= 0:
        audit_now(session, uri)
    else:
        state.pending_audit = loop.call_later(wait, audit_now, session, uri)


def audit_pending(session: Session, uri: str) -> None:
    """Run an audit that is waiting out the interval now, so a request sees findings for the current text."""
    if session.state(uri).pending_audit is not None:
        audit_now(session, uri)


def compile_later(session: Session, uri: str) -> None:
    """Compile checks in a background thread; a newer save or edit makes the result stale and it is dropped."""
    if not session.settings.compile_on_save:
        return
    state = session.state(uri)
    if state.compiling is not None:
        state.compiling.cancel()
    state.compiling = asyncio.get_running_loop().create_task(_compile(session, uri))


async def _compile(session: Session, uri: str) -> None:
    document = session.server.workspace.get_text_document(uri)
    version, source, path = document.version, document.source, document.path or uri
    config = session.audit_config(document.path)
    if not config.compile or "triton" not in source:
        return
    findings = await asyncio.to_thread(session.compile_checker(config).findings, path, source)
    if uri not in session.documents or session.version(uri) != version:
        return
    state = session.state(uri)
    state.compiled, state.compiled_version = findings, version
    publish(session, uri)


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
