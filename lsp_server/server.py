"""The language server: glue between LSP messages and the audit, the code actions and the commands.

Diagnostics are pushed (`textDocument/publishDiagnostics`, never pulled) on open, on save, and on change: the
first edit after a quiet spell is audited at once, edits that follow within `MIN_AUDIT_INTERVAL` are folded
into one audit at the end of the interval (typing stays responsive, and the final text is always audited).
Compile findings follow in the background after a save. The latest findings per
document are kept so code actions answer without re-auditing. Nothing here imports torch: the server is up
well under a second.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from lsp_server import actions, commands, task_source
from lsp_server.diagnostics import kernel_spans, to_diagnostic
from lsp_server.errors import ModelServerError
from lsp_server.local_server import LocalServer
from lsp_server.placement import Proposal
from lsp_server.quick_fixes import code_actions, supports_document_changes
from lsp_server.settings import Settings, parse_settings
from lsp_server.task_source import TaskSourceError
from verifier.audit.compile_check import CompileChecker
from verifier.audit.config import AuditConfig, ConfigError, load_config
from verifier.audit.engine import audit_source
from verifier.findings import Finding

if TYPE_CHECKING:
    from lsp_server.model_client import ModelClient

MIN_AUDIT_INTERVAL = 0.15


class _Answered(Exception):
    """A request whose params did not fit its method; the error response has been sent already."""


class TritonizeProtocol(LanguageServerProtocol):
    """Two gaps in pygls closed: `$/cancelRequest` for a running command cancels the command's task (pygls
    only answers it), and a request with malformed params gets an error response (pygls drops it)."""

    def _handle_cancel_notification(self, msg_id):
        super()._handle_cancel_notification(msg_id)
        task = self._server.running.get(msg_id)
        if task is not None:
            task.cancel()

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "id" in data and "method" in data:
                error = types.ResponseError(code=exc.code, message=f"{exc.message}: bad params for {data['method']}")
                self._send_response(data["id"], error=error)
                raise _Answered(data["method"]) from exc
            raise


class TritonizeServer(LanguageServer):
    """Per-document findings and pending audits, the settings, and the model server connection."""

    def __init__(self) -> None:
        super().__init__("tritonize", "0.1.0", protocol_cls=TritonizeProtocol)
        self.findings: dict[str, tuple[int | None, list[Finding]]] = {}
        self.compiled: dict[str, tuple[int | None, list[Finding]]] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.audited_at: dict[str, float] = {}
        self.trees: dict[str, tuple[int | None, ast.Module | None]] = {}
        self.compiling: dict[str, asyncio.Task] = {}
        self.running: dict[Any, asyncio.Task] = {}
        self.proposals: dict[str, Proposal] = {}
        self.settings = Settings()
        self.initialization_options: Any = None
        self.told: set[str] = set()
        self.local = LocalServer()
        self.checkers: dict[AuditConfig, CompileChecker] = {}

    def report_server_error(self, error: Exception, source) -> None:
        """Malformed input is answered on the wire (JSON-RPC errors), never as a pop-up in the editor."""
        if isinstance(error, _Answered):
            return
        if isinstance(error, json.JSONDecodeError):
            self.protocol._send_response(None, error=types.ResponseError(code=-32700, message=f"Parse error: {error}"))
            return
        super().report_server_error(error, source)

    def audit(self, uri: str) -> None:
        """Audit the document's current text and publish the result (replacing the previous one)."""
        self.pending.pop(uri, None)
        document = self.workspace.get_text_document(uri)
        findings = audit_source(document.source, document.path or uri, self.audit_config(document.path))
        self.findings[uri] = (document.version, findings)
        self.publish(uri)
        self.audited_at[uri] = asyncio.get_event_loop().time()

    def publish(self, uri: str) -> None:
        """Static findings plus compile findings of the same version: one list, so nothing shows twice."""
        document = self.workspace.get_text_document(uri)
        version, findings = self.findings.get(uri, (None, []))
        compiled_version, compiled = self.compiled.get(uri, (None, []))
        if compiled_version == version:
            findings = findings + compiled
        codec, lines = self.workspace.position_codec, document.lines
        kernels = kernel_spans(self.tree(uri)) if findings else []
        diagnostics = [to_diagnostic(codec, lines, f, uri, kernels) for f in findings]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=document.version, diagnostics=diagnostics)
        )

    def audit_soon(self, uri: str) -> None:
        """Audit now if the last audit is older than the interval, else once when the interval ends."""
        if uri in self.pending:
            return
        loop = asyncio.get_running_loop()
        wait = self.audited_at.get(uri, float("-inf")) + MIN_AUDIT_INTERVAL - loop.time()
        if wait <= 0:
            self.audit(uri)
        else:
            self.pending[uri] = loop.call_later(wait, self.audit, uri)

    def compile_later(self, uri: str) -> None:
        """Compile checks in a worker thread; a newer save or edit makes the result stale and it is dropped."""
        if not self.settings.compile_on_save:
            return
        previous = self.compiling.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self.compiling[uri] = asyncio.get_running_loop().create_task(self._compile(uri))

    async def _compile(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        version, source, path = document.version, document.source, document.path or uri
        config = self.audit_config(document.path)
        if not config.compile or "triton" not in source:
            return
        checker = self.checkers.setdefault(config, CompileChecker(config))
        findings = await asyncio.to_thread(checker.findings, path, source)
        if self.workspace.get_text_document(uri).version != version or uri not in self.findings:
            return
        self.compiled[uri] = (version, findings)
        self.publish(uri)

    def forget(self, uri: str) -> None:
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        task = self.compiling.pop(uri, None)
        if task is not None:
            task.cancel()
        self.findings.pop(uri, None)
        self.compiled.pop(uri, None)
        self.audited_at.pop(uri, None)
        self.trees.pop(uri, None)

    def tree(self, uri: str) -> ast.Module | None:
        """The document's syntax tree, parsed once per version (None while it does not parse)."""
        document = self.workspace.get_text_document(uri)
        cached = self.trees.get(uri)
        if cached is None or cached[0] != document.version:
            cached = (document.version, task_source.parse(document.source))
            self.trees[uri] = cached
        return cached[1]

    def audit_config(self, path: str | None) -> AuditConfig:
        """The nearest pyproject.toml's audit settings, overridden by the editor's select/ignore/target."""
        config = AuditConfig()
        if path:
            try:
                config = load_config(Path(path).parent)
            except (ConfigError, OSError) as exc:
                self.tell(f"tritonize: {exc}; using the default audit settings", types.MessageType.Warning)
        overrides = {
            key: getattr(self.settings, key) for key in ("select", "ignore", "target") if getattr(self.settings, key)
        }
        return replace(config, **overrides) if overrides else config

    async def load_settings(self, scope_uri: str | None = None) -> Settings:
        """The client's `tritonize` section (initializationOptions when it has no workspace/configuration)."""
        raw: Any = None
        workspace = self.client_capabilities.workspace
        if workspace and workspace.configuration:
            item = types.ConfigurationItem(scope_uri=scope_uri, section="tritonize")
            with contextlib.suppress(Exception):
                [raw] = await self.workspace_configuration_async(types.ConfigurationParams(items=[item]))
        if raw is None:
            options = self.initialization_options
            raw = options.get("tritonize", options) if isinstance(options, dict) else None
        settings, problems = parse_settings(raw)
        for problem in problems:
            self.tell(f"tritonize: {problem}", types.MessageType.Warning)
        return settings

    async def settings_for(self, uri: str) -> Settings:
        self.settings = await self.load_settings(uri)
        return self.settings

    async def model_client(self, settings: Settings, report) -> ModelClient:
        """A client for a server that answers /health, starting a local one when allowed."""
        from lsp_server.model_client import ModelClient  # httpx loads on first use, not at start-up

        client = ModelClient(settings.server_url, settings.token)
        if await client.healthy():
            return client
        if not settings.auto_start:
            await client.close()
            raise ModelServerError(
                f"the model server at {settings.server_url} is not reachable; start it with `tritonize serve` "
                "or set tritonize.autoStart to true"
            )
        report(f"starting the model server (tritonize serve, {settings.backend} backend)", None)
        try:
            await self.local.start(settings, client.healthy)
        except ModelServerError:
            await client.close()
            raise
        return client

    def text_of(self, path: str) -> str:
        """An open buffer's text, else the file on disk."""
        for document in self.workspace.text_documents.values():
            if document.path and Path(document.path) == Path(path):
                return document.source
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise commands.CommandError(f"cannot read the task {path}: {exc.strerror}") from exc

    def tell(self, message: str, kind: types.MessageType) -> None:
        """Show `message` once per distinct text for warnings and errors (a broken setting is not repeated)."""
        if kind in (types.MessageType.Warning, types.MessageType.Error):
            if message in self.told:
                return
            self.told.add(message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    async def show(self, uri: str) -> None:
        window = self.client_capabilities.window
        if window and window.show_document and window.show_document.support:
            await self.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True))

    async def run_command(self, work, args: list[Any]) -> dict[str, Any]:
        """Run a command coroutine: one argument object, errors as one message, cancellation as a result."""
        task = asyncio.current_task()
        msg_id = self.protocol.msg_id
        self.running[msg_id] = task
        try:
            argument = args[0] if args else {}
            return await work(self, argument if isinstance(argument, dict) else {})
        except (commands.CommandError, TaskSourceError, ModelServerError, ValueError) as exc:
            self.told.discard(f"tritonize: {exc}")
            self.tell(f"tritonize: {exc}", types.MessageType.Error)
            return {"status": "error", "message": str(exc)}
        except asyncio.CancelledError:
            if hasattr(task, "uncancel"):
                task.uncancel()
            return {"status": "cancelled"}
        finally:
            self.running.pop(msg_id, None)


server = TritonizeServer()


@server.feature(types.INITIALIZE)
def initialize(ls: TritonizeServer, params: types.InitializeParams) -> None:
    ls.initialization_options = params.initialization_options


@server.feature(types.INITIALIZED)
async def initialized(ls: TritonizeServer, params: types.InitializedParams) -> None:
    ls.settings = await ls.load_settings()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: TritonizeServer, params: types.DidChangeConfigurationParams) -> None:
    ls.settings = await ls.load_settings()
    for uri in list(ls.findings):
        ls.audit(uri)


@server.feature(types.SHUTDOWN)
def shutdown(ls: TritonizeServer, params: None) -> None:
    ls.local.stop()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: TritonizeServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.audit(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: TritonizeServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.audit_soon(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: TritonizeServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.audit(params.text_document.uri)
    ls.compile_later(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TritonizeServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.forget(uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=actions.KINDS, resolve_provider=False),
)
def code_action(ls: TritonizeServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    if uri in ls.pending:
        ls.audit(uri)
    version, findings = ls.findings.get(uri, (None, []))
    document = ls.workspace.get_text_document(uri)
    document_changes = supports_document_changes(ls.client_capabilities)
    codec = ls.workspace.position_codec
    found = code_actions(uri, version, codec, document.lines, findings, params.range, document_changes)
    found += actions.editor_actions(
        uri,
        to_fs_path(uri) or "",
        document.version,
        document.source,
        ls.tree(uri),
        document.lines,
        codec,
        params.range.start.line,
        document_changes,
    )
    return [action for action in found if actions.wanted(action, params.context.only)]


@server.command(commands.CONVERT)
async def convert_command(ls: TritonizeServer, *args: Any) -> dict[str, Any]:
    return await ls.run_command(commands.convert, list(args))


@server.command(commands.APPLY)
async def apply_command(ls: TritonizeServer, *args: Any) -> dict[str, Any]:
    return await ls.run_command(commands.apply_proposal, list(args))


@server.command(commands.VERIFY)
async def verify_command(ls: TritonizeServer, *args: Any) -> dict[str, Any]:
    return await ls.run_command(commands.verify, list(args))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tritonize lsp", description="Run the tritonize language server.")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    args = parser.parse_args(argv)
    try:
        if args.tcp:
            host, _, port = args.tcp.rpartition(":")
            server.start_tcp(host or "127.0.0.1", int(port))
        else:
            server.start_io()
    finally:
        server.local.stop()
    return 0
