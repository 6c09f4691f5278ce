"""Code actions from the audit's machine-applicable fixes: one per finding, and "fix all" per rule."""

from __future__ import annotations

from lsprotocol import types

from lsp_server.diagnostics import to_range
from lsp_server.snapshot import ClientFeatures, Snapshot
from verifier import Finding


def code_actions(snapshot: Snapshot, wanted: types.Range) -> list[types.CodeAction]:
    """Quick fixes for the fixable findings that touch `wanted`, plus one "fix all" per rule with several."""
    fixable = [f for f in snapshot.findings if f.fix and f.fix.get("edits")]
    actions = []
    for finding in fixable:
        if not _touches(finding, wanted):
            continue
        edits = [_text_edit(snapshot, edit) for edit in finding.fix["edits"]]
        actions.append(
            types.CodeAction(
                title=f"{finding.fix['message']} ({finding.rule})",
                kind=types.CodeActionKind.QuickFix,
                edit=document_edit(snapshot.uri, snapshot.version, snapshot.client, edits),
                is_preferred=True,
            )
        )
    for rule in sorted({f.rule for f in fixable if _touches(f, wanted)}):
        same = [f for f in fixable if f.rule == rule]
        if len(same) < 2:
            continue
        edits = _without_overlaps([_text_edit(snapshot, e) for f in same for e in f.fix["edits"]])
        actions.append(
            types.CodeAction(
                title=f"Fix all {rule} in this file ({len(same)} findings)",
                kind=types.CodeActionKind.QuickFix,
                edit=document_edit(snapshot.uri, snapshot.version, snapshot.client, edits),
            )
        )
    return actions


def _touches(finding: Finding, wanted: types.Range) -> bool:
    first, last = finding.line - 1, (finding.end_line or finding.line) - 1
    return first <= wanted.end.line and last >= wanted.start.line


def _text_edit(snapshot: Snapshot, edit: dict) -> types.TextEdit:
    span = to_range(snapshot.codec, snapshot.lines, edit["line"], edit["column"], edit["end_line"], edit["end_column"])
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


def document_edit(
    uri: str, version: int | None, client: ClientFeatures, edits: list[types.TextEdit]
) -> types.WorkspaceEdit:
    """Edits of one document: `documentChanges` with its version when the client supports them, plain
    `changes` otherwise (Neovim)."""
    if client.document_changes:
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})
