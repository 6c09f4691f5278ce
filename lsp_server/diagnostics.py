"""Audit findings (1-based lines, character columns, exclusive ends) as LSP diagnostics in the client's units."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from lsp_server.snapshot import Snapshot
from verifier import Finding, docs_url

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}
SOURCE = "tritonize"


def to_range(codec: PositionCodec, lines: Sequence[str], line: int, column: int, end_line: int, end_column: int):
    """An LSP range for a finding-style span, converted from characters to the client's position units."""
    start = types.Position(line=max(line - 1, 0), character=max(column - 1, 0))
    end = types.Position(line=max(end_line - 1, 0), character=max(end_column - 1, 0))
    return codec.range_to_client_units(lines, types.Range(start=start, end=end))


def finding_range(snapshot: Snapshot, finding: Finding) -> types.Range:
    """Where a finding is, in the client's units (one character wide where it names no end)."""
    end_line = finding.end_line or finding.line
    end_column = finding.end_column or finding.column + 1
    return to_range(snapshot.codec, snapshot.lines, finding.line, finding.column, end_line, end_column)


def diagnostics(snapshot: Snapshot, findings: list[Finding]) -> list[types.Diagnostic]:
    """`findings` of the snapshot's document as diagnostics."""
    return [to_diagnostic(snapshot, finding) for finding in findings]


def to_diagnostic(snapshot: Snapshot, finding: Finding) -> types.Diagnostic:
    """The finding as a diagnostic; inside a kernel, related information points at that kernel's `def`."""
    codec, lines = snapshot.codec, snapshot.lines
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=snapshot.uri,
                range=to_range(codec, lines, k.line, k.name_column, k.line, k.name_column + len(k.name)),
            ),
            message=f"in kernel `{k.name}`",
        )
        for k in snapshot.kernels
        if k.line <= finding.line <= k.end_line and finding.line != k.line
    ]
    return types.Diagnostic(
        range=finding_range(snapshot, finding),
        message=finding.message,
        severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.rule,
        code_description=types.CodeDescription(href=docs_url(finding.rule)),
        source=SOURCE,
        data={"fix": finding.fix} if finding.fix else None,
        related_information=related or None,
    )
