"""Audit findings (1-based lines, character columns, exclusive ends) as LSP diagnostics in the client's units."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from verifier.findings import Finding

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}
RULES_URL = "https://github.com/tritonize/tritonize/blob/main/docs/RULES.md"
SOURCE = "tritonize"


def to_range(codec: PositionCodec, lines: Sequence[str], line: int, column: int, end_line: int, end_column: int):
    """An LSP range for a finding-style span, converted from characters to the client's position units."""
    start = types.Position(line=max(line - 1, 0), character=max(column - 1, 0))
    end = types.Position(line=max(end_line - 1, 0), character=max(end_column - 1, 0))
    return codec.range_to_client_units(lines, types.Range(start=start, end=end))


def to_diagnostic(codec: PositionCodec, lines: Sequence[str], finding: Finding) -> types.Diagnostic:
    end_line = finding.end_line or finding.line
    end_column = finding.end_column or finding.column + 1
    return types.Diagnostic(
        range=to_range(codec, lines, finding.line, finding.column, end_line, end_column),
        message=finding.message,
        severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.rule,
        code_description=types.CodeDescription(href=f"{RULES_URL}#{finding.rule.lower()}"),
        source=SOURCE,
        data={"fix": finding.fix} if finding.fix else None,
    )
