"""What the language server knows between messages: the client's features, the settings, and one
`DocumentState` per open document. Features read a frozen `Snapshot` of one document, never the session.

The session also holds the services commands need: the user's messages (each warning once), the model
server connection (starting a local one when allowed) and converted kernels waiting to be applied.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from lsp_server import task_source
from lsp_server.audit_process import AuditProcess
from lsp_server.errors import CommandError, ModelServerError
from lsp_server.local_server import LocalServer
from lsp_server.placement import Proposal
from lsp_server.settings import Settings, parse_settings
from lsp_server.snapshot import ClientFeatures, Snapshot
from verifier import Finding
from verifier.audit import AuditConfig, CompileChecker, ConfigError, KernelSpan, load_config

if TYPE_CHECKING:
    from lsp_server.model_client import ModelClient  # imported on first use: httpx is slow to load

MAX_PROPOSALS = 8

OnProgress = Callable[[str, int | None], None]  # a progress line, and a percentage where known


@dataclass
class DocumentState:
    """Everything kept for one open document, dropped in one go when it closes."""

    findings: list[Finding] = field(default_factory=list)
    kernels: list[KernelSpan] = field(default_factory=list)
    audited_version: int | None = None
    audited_at: float = float("-inf")
    pending_audit: asyncio.TimerHandle | None = None
    auditing: asyncio.Task | None = None
    audit_again: bool = False
    compiled: list[Finding] = field(default_factory=list)
    compiled_version: int | None = None
    compiling: asyncio.Task | None = None
    tree: ast.Module | None = None
    tree_version: int | None = None
    parsed: bool = False

    def cancel_work(self) -> None:
        for work in (self.pending_audit, self.auditing, self.compiling):
            if work is not None:
                work.cancel()
        self.pending_audit = self.auditing = self.compiling = None


class Session:
    """The server's state and services; handlers in `server.py` and the commands use it."""

    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        self.client = ClientFeatures()
        self.initialization_options: Any = None
        self.settings = Settings()
        self.documents: dict[str, DocumentState] = {}
        self.proposals: dict[str, Proposal] = {}
        self.local = LocalServer()
        self.auditor = AuditProcess()
        self.checkers: dict[AuditConfig, CompileChecker] = {}
        self._told: set[str] = set()

    # ------------------------------------------------------------ documents

    def state(self, uri: str) -> DocumentState:
        return self.documents.setdefault(uri, DocumentState())

    def tree(self, uri: str, version: int | None, source: str) -> ast.Module | None:
        """The syntax tree of one version of a document, parsed once (None while it does not parse)."""
        state = self.state(uri)
        if not state.parsed or state.tree_version != version:
            state.tree, state.tree_version, state.parsed = task_source.parse(source), version, True
        return state.tree

    def is_open(self, uri: str) -> bool:
        return uri in self.server.workspace.text_documents

    def snapshot(self, uri: str) -> Snapshot:
        """The open document `uri` as it is now; CommandError for one the editor has not opened (the server never
        reads such a file from disk behind the editor's back)."""
        if not self.is_open(uri):
            raise CommandError(f"{to_fs_path(uri) or uri} is not open in the editor; open it, then try again")
        document = self.server.workspace.get_text_document(uri)
        state = self.state(uri)
        return Snapshot(
            uri=uri,
            path=to_fs_path(uri) or "",
            version=document.version,
            source=document.source,
            lines=document.lines,
            findings=state.findings,
            kernels=state.kernels,
            codec=self.server.workspace.position_codec,
            client=self.client,
            parse=functools.partial(self.tree, uri, document.version, document.source),
        )

    def version(self, uri: str) -> int | None:
        return self.server.workspace.get_text_document(uri).version

    def forget(self, uri: str) -> None:
        state = self.documents.pop(uri, None)
        if state is not None:
            state.cancel_work()

    def text_of(self, path: str) -> str:
        """An open buffer's text, else the file on disk."""
        for document in self.server.workspace.text_documents.values():
            if document.path and Path(document.path) == Path(path):
                return document.source
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read the task {path}: {exc.strerror}") from exc

    def keep_proposal(self, key: str, proposal: Proposal) -> None:
        """Remember a previewed kernel until it is applied; the oldest go once there are too many."""
        self.proposals[key] = proposal
        while len(self.proposals) > MAX_PROPOSALS:  # previews that were discarded without a word
            self.proposals.pop(next(iter(self.proposals)))

    # ------------------------------------------------------------ settings

    async def load_settings(self, scope_uri: str | None = None) -> Settings:
        """The client's `tritonize` section (initializationOptions when it has no workspace/configuration)."""
        raw: Any = None
        if self.client.configuration:
            item = types.ConfigurationItem(scope_uri=scope_uri, section="tritonize")
            with contextlib.suppress(Exception):
                [raw] = await self.server.workspace_configuration_async(types.ConfigurationParams(items=[item]))
        if raw is None:
            options = self.initialization_options
            raw = options.get("tritonize", options) if isinstance(options, dict) else None
        settings, problems = parse_settings(raw)
        for problem in problems:
            self.tell(f"tritonize: {problem}", types.MessageType.Warning)
        self.settings = settings
        return settings

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

    def compile_checker(self, config: AuditConfig) -> CompileChecker:
        return self.checkers.setdefault(config, CompileChecker(config))

    # ------------------------------------------------------------ the user and the editor

    def tell(self, message: str, kind: types.MessageType, again: bool = False) -> None:
        """Show `message`; a warning or error with the same text is shown once unless `again`."""
        if kind in (types.MessageType.Warning, types.MessageType.Error):
            if message in self._told and not again:
                return
            self._told.add(message)
        self.server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    async def show(self, uri: str) -> None:
        if self.client.show_document:
            await self.server.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True))

    async def apply_edit(self, edit: types.WorkspaceEdit, label: str) -> types.ApplyWorkspaceEditResult:
        return await self.server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))

    # ------------------------------------------------------------ the model server

    async def model_client(self, settings: Settings, on_progress: OnProgress) -> ModelClient:
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
        on_progress(f"starting the model server (tritonize serve, {settings.backend} backend)", None)
        try:
            await self.local.start(settings, client.healthy)
        except ModelServerError:
            await client.close()
            raise
        return client
