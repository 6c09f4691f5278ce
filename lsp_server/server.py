"""The language server: glue between LSP messages and the audit (one function per LSP method).

Diagnostics are pushed (`textDocument/publishDiagnostics`) on open, on save, and after typing pauses
(`DEBOUNCE_SECONDS`); the latest findings per document are kept so code actions answer without re-auditing.
Nothing here imports torch: the server is up well under a second.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from lsp_server.diagnostics import to_diagnostic
from lsp_server.quick_fixes import code_actions
from verifier.audit.config import AuditConfig, ConfigError, load_config
from verifier.audit.engine import audit_source
from verifier.findings import Finding

DEBOUNCE_SECONDS = 0.15


class TritonizeServer(LanguageServer):
    """Keeps each open document's latest findings and its pending (debounced) audit."""

    def __init__(self) -> None:
        super().__init__("tritonize", "0.1.0")
        self.findings: dict[str, tuple[int | None, list[Finding]]] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}

    def audit(self, uri: str) -> None:
        """Audit the document's current text and publish the result (replacing the previous one)."""
        self.pending.pop(uri, None)
        document = self.workspace.get_text_document(uri)
        findings = audit_source(document.source, document.path or uri, _config_for(document.path))
        self.findings[uri] = (document.version, findings)
        codec = self.workspace.position_codec
        lines = document.lines
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, version=document.version, diagnostics=[to_diagnostic(codec, lines, f) for f in findings]
            )
        )

    def audit_later(self, uri: str) -> None:
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        self.pending[uri] = asyncio.get_running_loop().call_later(DEBOUNCE_SECONDS, self.audit, uri)


server = TritonizeServer()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: TritonizeServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.audit(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: TritonizeServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.audit_later(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: TritonizeServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.audit(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TritonizeServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    handle = ls.pending.pop(uri, None)
    if handle is not None:
        handle.cancel()
    ls.findings.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False),
)
def code_action(ls: TritonizeServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    if uri in ls.pending:
        ls.audit(uri)
    version, findings = ls.findings.get(uri, (None, []))
    document = ls.workspace.get_text_document(uri)
    capabilities = ls.client_capabilities.workspace
    edit_capabilities = capabilities.workspace_edit if capabilities else None
    document_changes = bool(edit_capabilities and edit_capabilities.document_changes)
    return code_actions(
        uri, version, ls.workspace.position_codec, document.lines, findings, params.range, document_changes
    )


def _config_for(path: str | None) -> AuditConfig:
    """The audit settings from the nearest pyproject.toml (defaults when there is none or it is broken)."""
    if not path:
        return AuditConfig()
    try:
        return load_config(Path(path).parent)
    except (ConfigError, OSError):
        return AuditConfig()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tritonize lsp", description="Run the tritonize language server.")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    args = parser.parse_args(argv)
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0
