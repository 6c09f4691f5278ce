"""Client-side helpers for tests: apply LSP text edits the way an editor would, in any position encoding."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient


def edits_for(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    """The text edits for `uri`, from `documentChanges` or `changes`."""
    if edit.document_changes:
        return [
            e
            for change in edit.document_changes
            if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri
            for e in change.edits
        ]
    return list(edit.changes[uri])


def column(line: str, units: int, encoding: str) -> int:
    """The character index of a client-unit column (LSP counts UTF-16 units unless told otherwise)."""
    if encoding == types.PositionEncodingKind.Utf32:
        return units
    size = 1 if encoding == types.PositionEncodingKind.Utf8 else 2
    codec = "utf-8" if size == 1 else "utf-16-le"
    seen = 0
    for index, char in enumerate(line):
        if seen >= units:
            return index
        seen += len(char.encode(codec)) // size
    return len(line)


def apply_text_edits(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    """`text` after `edits` (non-overlapping, positions in the original text), applied back to front."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        return starts[position.line] + column(lines[position.line].rstrip("\r\n"), position.character, encoding)

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


async def replace_text(client: LanguageClient, uri: str, version: int, text: str) -> None:
    """Send the whole new text as a didChange and wait for the diagnostics that follow."""
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
