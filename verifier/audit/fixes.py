"""`tritonize audit --fix`: apply the findings' machine-applicable fixes to the source text.

A fix is a list of edits in 1-based (line, character column) coordinates, end exclusive, over the lines the
audit saw (`str.splitlines`). Fixes are applied last-first so earlier positions stay valid; a fix that overlaps
one already applied is left for the next round (the caller re-audits and tries again).
"""

from __future__ import annotations

from verifier.findings import Finding


def apply_fixes(source: str, findings: list[Finding]) -> tuple[str, int]:
    """The source with every non-overlapping fix applied, and how many fixes were applied."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int | None:
        if not 1 <= line <= len(lines):
            return None
        text = lines[line - 1].rstrip("\r\n")
        return starts[line - 1] + column - 1 if 1 <= column <= len(text) + 1 else None

    planned: list[tuple[int, int, list[tuple[int, int, str]]]] = []
    for finding in findings:
        if not finding.fix:
            continue
        edits = []
        for e in finding.fix["edits"]:
            start, end = offset(e["line"], e["column"]), offset(e["end_line"], e["end_column"])
            if start is None or end is None or end < start:
                break
            edits.append((start, end, e["text"]))
        else:
            if edits:
                planned.append((min(s for s, _, _ in edits), max(e for _, e, _ in edits), edits))
    applied, taken = 0, []
    for low, high, edits in sorted(planned, key=lambda p: (p[0], p[1]), reverse=True):
        if any(low <= t_high and t_low <= high for t_low, t_high in taken):  # touching counts: next round
            continue
        for start, end, text in sorted(edits, reverse=True):
            source = source[:start] + text + source[end:]
        taken.append((low, high))
        applied += 1
    return source, applied
