"""Hover on a finding: its message, then its rule explained (what it finds, why it matters, the fix), as
`tritonize rule` prints it."""

from __future__ import annotations

from lsprotocol import types

from lsp_server.diagnostics import finding_range
from lsp_server.snapshot import Snapshot
from verifier import UnknownRule, explain_rule


def hover(snapshot: Snapshot, position: types.Position) -> types.Hover | None:
    """The explanation of each finding whose range holds `position` (None where there is none)."""
    parts: list[str] = []
    first: types.Range | None = None
    for finding in snapshot.findings:
        span = finding_range(snapshot, finding)
        if not _holds(span, position):
            continue
        first = first or span
        try:
            explanation = explain_rule(finding.rule).markdown()
        except UnknownRule:
            explanation = ""
        parts.append(f"{finding.message}\n\n{explanation}".strip())
    if not parts:
        return None
    content = types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts))
    return types.Hover(contents=content, range=first)


def _holds(span: types.Range, position: types.Position) -> bool:
    start, end = (span.start.line, span.start.character), (span.end.line, span.end.character)
    return start <= (position.line, position.character) <= end
