"""The one record every rule produces, shared by the verifier's anti-hacking checks and the audit."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Finding:
    """One problem at one source range (1-based lines and columns)."""

    rule: str
    severity: str
    message: str
    line: int
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None
    fix: dict | None = field(default=None, compare=False)

    def as_violation(self) -> dict:
        """The `{rule, severity, message, line, column}` shape of a verification report (docs/ARCHITECTURE.md,
        "The report")."""
        return {
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "line": self.line,
            "column": self.column,
        }
