"""Audit findings (1-based lines, character columns, exclusive ends) as LSP diagnostics in the client's units."""

from __future__ import annotations

import ast
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


def kernel_spans(tree: ast.Module | None) -> list[tuple[str, int, int, int]]:
    """(name, def line, name column, last line) of each top-level `@jit` function, 1-based."""
    if tree is None:
        return []
    spans = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(_is_jit(d) for d in node.decorator_list):
            spans.append((node.name, node.lineno, node.col_offset + len("def ") + 1, node.end_lineno or node.lineno))
    return spans


def to_diagnostic(
    codec: PositionCodec,
    lines: Sequence[str],
    finding: Finding,
    uri: str = "",
    kernels: Sequence[tuple[str, int, int, int]] = (),
) -> types.Diagnostic:
    """The finding as a diagnostic; inside a kernel, related information points at that kernel's `def`."""
    end_line = finding.end_line or finding.line
    end_column = finding.end_column or finding.column + 1
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=to_range(codec, lines, line, column, line, column + len(name))),
            message=f"in kernel `{name}`",
        )
        for name, line, column, last in kernels
        if line <= finding.line <= last and finding.line != line
    ]
    return types.Diagnostic(
        range=to_range(codec, lines, finding.line, finding.column, end_line, end_column),
        message=finding.message,
        severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.rule,
        code_description=types.CodeDescription(href=f"{RULES_URL}#{finding.rule.lower()}"),
        source=SOURCE,
        data={"fix": finding.fix} if finding.fix else None,
        related_information=related or None,
    )


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name in ("jit", "autotune", "heuristics")
