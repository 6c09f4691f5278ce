"""Hover on a finding: its rule explained (what it finds, why it matters, the fix), as `tritonize rule` prints
it. The finding's own message is not repeated: the editor already shows it (VS Code in the same hover, Neovim in
its diagnostic float)."""

from __future__ import annotations

from lsprotocol import types

from lsp_server.diagnostics import finding_range
from lsp_server.snapshot import Snapshot
from verifier import UnknownRule, explain_rule


def hover(snapshot: Snapshot, position: types.Position) -> types.Hover | None:
    """The explanation of each rule found at `position` (None where there is none)."""
    explained: dict[str, str] = {}
    first: types.Range | None = None
    for finding in snapshot.findings:
        span = finding_range(snapshot, finding)
        if not _holds(span, position) or finding.rule in explained:
            continue
        try:
            explained[finding.rule] = explain_rule(finding.rule).markdown()
        except UnknownRule:
            continue
        first = first or span
    if not explained:
        return None
    content = types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(explained.values()))
    return types.Hover(contents=content, range=first)


def _holds(span: types.Range, position: types.Position) -> bool:
    start, end = (span.start.line, span.start.character), (span.end.line, span.end.character)
    return start <= (position.line, position.character) <= end
