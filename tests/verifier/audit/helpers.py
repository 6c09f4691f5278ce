"""Shared helpers for the audit tests: run the static rules on a snippet, apply a finding's fix."""

from __future__ import annotations

import textwrap

from verifier.audit.config import AuditConfig
from verifier.audit.engine import audit_source
from verifier.audit.fixes import apply_fixes
from verifier.findings import Finding

HEADER = "import triton\nimport triton.language as tl\n\n\n"


def audit(body: str, **config) -> list[Finding]:
    """Static findings for a snippet (the triton imports are prepended; line numbers include them)."""
    return audit_source(HEADER + textwrap.dedent(body), "snippet.py", AuditConfig(**config))


def rules(body: str) -> list[str]:
    return [f.rule for f in audit(body)]


def fixed(body: str, rule: str) -> str:
    """The snippet after applying the fix of its first `rule` finding."""
    source = HEADER + textwrap.dedent(body)
    finding = next(f for f in audit_source(source, "snippet.py") if f.rule == rule)
    assert finding.fix is not None, f"{rule} has no fix"
    repaired, applied = apply_fixes(source, [finding])
    assert applied == 1
    return repaired
