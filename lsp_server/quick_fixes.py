"""Code actions from the audit's machine-applicable fixes: one per finding, and "fix all" per rule."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from lsp_server.diagnostics import to_range
from verifier.findings import Finding


def code_actions(
    uri: str,
    version: int | None,
    codec: PositionCodec,
    lines: Sequence[str],
    findings: list[Finding],
    wanted: types.Range,
    document_changes: bool,
) -> list[types.CodeAction]:
    """Quick fixes for the fixable findings that touch `wanted`, plus one "fix all" per rule with several."""
    fixable = [f for f in findings if f.fix and f.fix.get("edits")]
    actions = []
    for finding in fixable:
        if not _touches(finding, wanted):
            continue
        edits = [_text_edit(codec, lines, edit) for edit in finding.fix["edits"]]
        actions.append(
            types.CodeAction(
                title=f"{finding.fix['message']} ({finding.rule})",
                kind=types.CodeActionKind.QuickFix,
                edit=workspace_edit(uri, version, edits, document_changes),
                is_preferred=True,
            )
        )
    for rule in sorted({f.rule for f in fixable if _touches(f, wanted)}):
        same = [f for f in fixable if f.rule == rule]
        if len(same) < 2:
            continue
        edits = _without_overlaps([_text_edit(codec, lines, e) for f in same for e in f.fix["edits"]])
        actions.append(
            types.CodeAction(
                title=f"Fix all {rule} in this file ({len(same)} findings)",
                kind=types.CodeActionKind.QuickFix,
                edit=workspace_edit(uri, version, edits, document_changes),
            )
        )
    return actions


def _touches(finding: Finding, wanted: types.Range) -> bool:
    first, last = finding.line - 1, (finding.end_line or finding.line) - 1
    return first <= wanted.end.line and last >= wanted.start.line


def _text_edit(codec: PositionCodec, lines: Sequence[str], edit: dict) -> types.TextEdit:
    span = to_range(codec, lines, edit["line"], edit["column"], edit["end_line"], edit["end_column"])
    return types.TextEdit(range=span, new_text=edit["text"])


def _without_overlaps(edits: list[types.TextEdit]) -> list[types.TextEdit]:
    """Edits in document order, dropping any that overlaps one already kept (LSP forbids overlapping edits)."""
    kept: list[types.TextEdit] = []
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character)):
        if kept and _before(edit.range.start, kept[-1].range.end):
            continue
        kept.append(edit)
    return kept


def _before(a: types.Position, b: types.Position) -> bool:
    return (a.line, a.character) < (b.line, b.character)


def edit_capabilities(capabilities: types.ClientCapabilities) -> types.WorkspaceEditClientCapabilities | None:
    return capabilities.workspace.workspace_edit if capabilities.workspace else None


def supports_document_changes(capabilities: types.ClientCapabilities) -> bool:
    edit_caps = edit_capabilities(capabilities)
    return bool(edit_caps and edit_caps.document_changes)


def workspace_edit(
    uri: str, version: int | None, edits: list[types.TextEdit], document_changes: bool
) -> types.WorkspaceEdit:
    """`documentChanges` with the version when the client supports it, else plain `changes` (Neovim)."""
    if document_changes:
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})
