"""Audit output: ruff-like text, the JSON array of docs/ARCHITECTURE.md ("Findings"), and SARIF 2.1.0 for GitHub
code scanning."""

from __future__ import annotations

import json
from pathlib import Path

from verifier.findings import Finding
from verifier.rules import RULES, docs_url

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}
Located = tuple[str, Finding]


def as_json(results: list[Located]) -> str:
    """One array of `{path, rule, severity, line, column, end_line, end_column, message, fix?}`."""
    records = []
    for path, finding in results:
        record = {
            "path": path,
            "rule": finding.rule,
            "severity": finding.severity,
            "line": finding.line,
            "column": finding.column,
            "end_line": finding.end_line or finding.line,
            "end_column": finding.end_column or finding.column,
            "message": finding.message,
        }
        if finding.fix is not None:
            record["fix"] = finding.fix
        records.append(record)
    return json.dumps(records, indent=2)


def as_text(results: list[Located], files: int) -> str:
    """`path:line:col: TRI201 [warning] message` lines, then a one-line summary."""
    lines = []
    for path, finding in results:
        fixable = " [*]" if finding.fix is not None else ""
        lines.append(
            f"{path}:{finding.line}:{finding.column}: {finding.rule}{fixable} [{finding.severity}] {finding.message}"
        )
    counts = {s: sum(1 for _, f in results if f.severity == s) for s in ("error", "warning", "info")}
    audited = f"{files} file{'s' if files != 1 else ''}"
    if not results:
        lines.append(f"All checks passed ({audited}).")
    else:
        fixable = sum(1 for _, f in results if f.fix is not None)
        summary = ", ".join(f"{n} {s}{'s' if n != 1 and s != 'info' else ''}" for s, n in counts.items())
        lines.append(
            f"Found {summary} in {audited}." + (f" [*] {fixable} with a fix (see --format json)." if fixable else "")
        )
    return "\n".join(lines)


def as_sarif(results: list[Located], version: str) -> str:
    """A SARIF 2.1.0 log with one run; paths are relative URIs against %SRCROOT% where possible."""
    used = sorted({f.rule for _, f in results})
    rules = [_sarif_rule(rule_id) for rule_id in used]
    index = {rule_id: i for i, rule_id in enumerate(used)}
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "tritonize",
                        "version": version,
                        "informationUri": "https://github.com/tritonize/tritonize",
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "results": [_sarif_result(path, f, index[f.rule]) for path, f in results],
            }
        ],
    }
    return json.dumps(log, indent=2)


def _sarif_rule(rule_id: str) -> dict:
    rule = RULES[rule_id]
    return {
        "id": rule.id,
        "name": "".join(part.capitalize() for part in rule.name.split("-")),
        "shortDescription": {"text": rule.summary},
        "helpUri": docs_url(rule.id),
        "defaultConfiguration": {"level": SARIF_LEVELS[rule.severity]},
    }


def _sarif_result(path: str, finding: Finding, rule_index: int) -> dict:
    region = {
        "startLine": finding.line,
        "startColumn": finding.column,
        "endLine": finding.end_line or finding.line,
        "endColumn": finding.end_column or finding.column,
    }
    location = {"physicalLocation": {"artifactLocation": _artifact(path), "region": region}}
    result = {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": SARIF_LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [location],
    }
    if finding.fix is not None:
        result["fixes"] = [
            {
                "description": {"text": finding.fix["message"]},
                "artifactChanges": [
                    {
                        "artifactLocation": _artifact(path),
                        "replacements": [
                            {
                                "deletedRegion": {
                                    "startLine": e["line"],
                                    "startColumn": e["column"],
                                    "endLine": e["end_line"],
                                    "endColumn": e["end_column"],
                                },
                                "insertedContent": {"text": e["text"]},
                            }
                            for e in finding.fix["edits"]
                        ],
                    }
                ],
            }
        ]
    return result


def _artifact(path: str) -> dict:
    resolved = Path(path).resolve()
    try:
        return {"uri": resolved.relative_to(Path.cwd()).as_posix(), "uriBaseId": "%SRCROOT%"}
    except ValueError:
        return {"uri": resolved.as_uri()}
