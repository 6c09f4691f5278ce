"""The language server's handlers: one function per LSP method, each saying where its work runs.

"On the loop" handlers finish quickly on pygls's event loop; "background" work runs in a thread (audits,
compile checks) or as a task that the loop only awaits. State lives in `session.py`,
features are functions of a document snapshot, and pygls's gaps are patched in `protocol.py`. Nothing here
imports torch: the server is up in well under a second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from lsprotocol import types

from lsp_server import actions, auditing, commands, quick_fixes
from lsp_server import code_lens as lenses
from lsp_server import hover as hovering
from lsp_server.errors import CommandError, ModelServerError
from lsp_server.protocol import PatchedLanguageServer
from lsp_server.session import Session
from lsp_server.snapshot import ClientFeatures
from lsp_server.task_source import TaskSourceError

Command = Callable[[Session, dict[str, Any]], Awaitable[dict[str, Any]]]
CODE_ACTION_WAIT = 1.5  # seconds a code action waits for the audit of the current text


class TritonizeServer(PatchedLanguageServer):
    def __init__(self) -> None:
        super().__init__("tritonize", "0.1.0")
        self.session = Session(self)


server = TritonizeServer()


@server.feature(types.INITIALIZE)
def initialize(ls: TritonizeServer, params: types.InitializeParams) -> None:
    """On the loop: keep what pygls drops (initializationOptions), resolve the client's features once, and
    start the audit worker (it imports while the client finishes the handshake, not on the first audit)."""
    ls.session.initialization_options = params.initialization_options
    ls.session.client = ClientFeatures.of(params.capabilities)
    ls.session.auditor.start()


@server.feature(types.INITIALIZED)
async def initialized(ls: TritonizeServer, params: types.InitializedParams) -> None:
    """Background task: ask the client for the settings."""
    await ls.session.load_settings()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: TritonizeServer, params: types.DidChangeConfigurationParams) -> None:
    """Background task: reload the settings, then re-audit every open document (in the background)."""
    await ls.session.load_settings()
    for uri in list(ls.session.documents):
        auditing.audit_soon(ls.session, uri, at_once=True)


@server.feature(types.SHUTDOWN)
async def shutdown(ls: TritonizeServer, params: None) -> None:
    """On the loop: stop the model server this session started, if any, and the audit worker."""
    ls.session.local.stop()
    await ls.session.auditor.close()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: TritonizeServer, params: types.DidOpenTextDocumentParams) -> None:
    """On the loop: start an audit in the background (it publishes when done)."""
    auditing.audit_soon(ls.session, params.text_document.uri, at_once=True)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: TritonizeServer, params: types.DidChangeTextDocumentParams) -> None:
    """On the loop (as a task, after pygls has applied the change): start an audit now or when the interval
    ends."""
    auditing.audit_soon(ls.session, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: TritonizeServer, params: types.DidSaveTextDocumentParams) -> None:
    """On the loop: start an audit and the compile checks, both in the background."""
    auditing.audit_soon(ls.session, params.text_document.uri, at_once=True)
    auditing.compile_later(ls.session, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TritonizeServer, params: types.DidCloseTextDocumentParams) -> None:
    """On the loop: drop the document's state and clear its diagnostics."""
    uri = params.text_document.uri
    ls.session.forget(uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=actions.KINDS, resolve_provider=False),
)
async def code_action(ls: TritonizeServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """Background task: waits (briefly) for the audit of the current text, then answers from the snapshot:
    quick fixes from its findings (none if they are for older text), editor actions from its syntax tree."""
    uri = params.text_document.uri
    if not ls.session.is_open(uri):
        return []
    current = await auditing.settled(ls.session, uri, CODE_ACTION_WAIT)
    snapshot = ls.session.snapshot(uri)
    if not current:
        snapshot = replace(snapshot, findings=[])
    found = quick_fixes.code_actions(snapshot, params.range)
    found += actions.editor_actions(snapshot, params.range.start.line)
    return [action for action in found if actions.wanted(action, params.context.only)]


@server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
def code_lens(ls: TritonizeServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    """On the loop: "Convert to Triton" above each convertible definition (from the syntax tree alone)."""
    uri = params.text_document.uri
    if not ls.session.is_open(uri) or not ls.session.settings.code_lens:
        return []
    return lenses.code_lenses(ls.session.snapshot(uri))


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: TritonizeServer, params: types.HoverParams) -> types.Hover | None:
    """On the loop: the rule of each finding under the cursor, explained (from the current findings)."""
    uri = params.text_document.uri
    if not ls.session.is_open(uri):
        return None
    return hovering.hover(ls.session.snapshot(uri), params.position)


@server.command(commands.CONVERT)
async def convert_command(ls: TritonizeServer, *args: Any) -> dict[str, Any]:
    """Background task: stream a conversion from the model server, then place the kernel."""
    return await _run(ls, commands.convert, args)


@server.command(commands.APPLY)
async def apply_command(ls: TritonizeServer, *args: Any) -> dict[str, Any]:
    """Background task: apply a proposal made by a `preview` conversion."""
    return await _run(ls, commands.apply_proposal, args)


@server.command(commands.VERIFY)
async def verify_command(ls: TritonizeServer, *args: Any) -> dict[str, Any]:
    """Background task: verify a kernel file against its task on the model server."""
    return await _run(ls, commands.verify, args)


async def _run(ls: TritonizeServer, command: Command, args: tuple[Any, ...]) -> dict[str, Any]:
    """One argument object in; errors become one message and a result, cancellation a `cancelled` result."""
    task = asyncio.current_task()
    with ls.protocol.cancellable():
        try:
            argument = args[0] if args else {}
            return await command(ls.session, argument if isinstance(argument, dict) else {})
        except (CommandError, TaskSourceError, ModelServerError, ValueError) as exc:
            ls.session.tell(f"tritonize: {exc}", types.MessageType.Error, again=True)
            return {"status": "error", "message": str(exc)}
        except asyncio.CancelledError:
            if hasattr(task, "uncancel"):
                task.uncancel()
            return {"status": "cancelled"}


def serve(tcp: str | None = None) -> int:
    """Speak LSP on stdio, or on TCP at `HOST:PORT`, until the client says exit."""
    try:
        if tcp:
            host, _, port = tcp.rpartition(":")
            server.start_tcp(host or "127.0.0.1", int(port))
        else:
            server.start_io()
    finally:
        server.session.local.stop()
    return 0
