"""Shared helpers for the audit tests: run the static rules on a snippet, apply a finding's fix."""

from __future__ import annotations

import textwrap

from verifier.audit.config import AuditConfig
from verifier.audit.engine import audit_source
from verifier.findings import Finding

HEADER = "import triton\nimport triton.language as tl\n\n\n"


def audit(body: str, **config) -> list[Finding]:
    """Static findings for a snippet (the triton imports are prepended; line numbers include them)."""
    return audit_source(HEADER + textwrap.dedent(body), "snippet.py", AuditConfig(**config))


def rules(body: str) -> list[str]:
    return [f.rule for f in audit(body)]


def apply_fix(source: str, fix: dict) -> str:
    """Apply a fix's edits (1-based lines and columns, end exclusive), last edit first."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def position(line: int, column: int) -> int:
        return offsets[line - 1] + column - 1

    for item in sorted(fix["edits"], key=lambda e: (e["line"], e["column"]), reverse=True):
        start, end = position(item["line"], item["column"]), position(item["end_line"], item["end_column"])
        source = source[:start] + item["text"] + source[end:]
    return source


def fixed(body: str, rule: str) -> str:
    """The snippet after applying the fix of its first `rule` finding."""
    source = HEADER + textwrap.dedent(body)
    finding = next(f for f in audit_source(source, "snippet.py") if f.rule == rule)
    assert finding.fix is not None, f"{rule} has no fix"
    return apply_fix(source, finding.fix)
