"""What every feature reads: one document at one version, and what the client can do (resolved once).

Features (diagnostics, quick fixes, code actions, placement) are plain functions of a `Snapshot`, so they can
be tested without a server and never see state that changes under them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from verifier import Finding
from verifier.audit import KernelSpan


@dataclass(frozen=True)
class ClientFeatures:
    """The client capabilities the server acts on, resolved once at `initialize`."""

    document_changes: bool = False
    change_annotations: bool = False
    create_files: bool = False
    show_document: bool = False
    work_done_progress: bool = False
    configuration: bool = False

    @classmethod
    def of(cls, capabilities: types.ClientCapabilities) -> ClientFeatures:
        workspace, window = capabilities.workspace, capabilities.window
        edits = workspace.workspace_edit if workspace else None
        document_changes = bool(edits and edits.document_changes)
        return cls(
            document_changes=document_changes,
            change_annotations=document_changes and bool(edits.change_annotation_support),
            create_files=document_changes and types.ResourceOperationKind.Create in (edits.resource_operations or []),
            show_document=bool(window and window.show_document and window.show_document.support),
            work_done_progress=bool(window and window.work_done_progress),
            configuration=bool(workspace and workspace.configuration),
        )


@dataclass(frozen=True)
class Snapshot:
    """One document at one version, with what the server computed for it: the input of every feature."""

    uri: str
    path: str
    version: int | None
    source: str
    lines: Sequence[str]
    findings: list[Finding]
    kernels: list[KernelSpan]
    codec: PositionCodec
    client: ClientFeatures
    parse: Callable[[], ast.Module | None] = field(repr=False, compare=False)

    @property
    def tree(self) -> ast.Module | None:
        """The syntax tree of `source` (None if it does not parse), parsed when a feature first needs it.

        Parsed apart from the audit, after the audit's garbage is freed: a tree kept from inside the audit
        pins the memory the audit used (about 10 MiB more resident on a 2,000-line file)."""
        return self.parse()
