"""`# noqa` and `# noqa: TRI201, TRI202` comments, read the way ruff reads them."""

from __future__ import annotations

import re

from verifier.findings import Finding

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+\d+(?:[\s,]+[A-Z]+\d+)*))?", re.IGNORECASE)


def suppressions(lines: list[str]) -> dict[int, set[str] | None]:
    """Line number -> the codes suppressed there (None: every code)."""
    found: dict[int, set[str] | None] = {}
    for number, line in enumerate(lines, start=1):
        if "#" not in line:
            continue
        match = NOQA.search(line)
        if match is not None:
            found[number] = named_codes(match)
    return found


def named_codes(match: re.Match) -> set[str] | None:
    """The codes a `# noqa` comment names, upper-case (None: every code)."""
    codes = match.group("codes")
    return None if codes is None else {c.upper() for c in re.split(r"[\s,]+", codes) if c}


def is_suppressed(finding: Finding, noqa: dict[int, set[str] | None]) -> bool:
    for line in {finding.line, finding.end_line or finding.line}:
        if line in noqa and (noqa[line] is None or finding.rule in noqa[line]):
            return True
    return False
