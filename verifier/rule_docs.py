"""Each rule explained: its row of docs/RULES.md (what it finds, why it matters, the fix), as `tritonize rule`
prints it and the editor's hover shows it.

The table in docs/RULES.md is the one home of these texts (the tests hold it to `rules.RULES`). It is read from the
checkout the package runs from (the README installs it editable); where the package was installed without its
docs, the explanation falls back to the rule's one-line summary and the link.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from verifier.rules import RULES, Rule, docs_url

RULES_DOC = Path(__file__).resolve().parent.parent / "docs" / "RULES.md"
ROW = re.compile(r"^\| (?:<a id=\"tri\d{3}\"></a>)?(TRI\d{3}) \|(.*)\|\s*$")
CELL_SEPARATOR = re.compile(r"(?<!\\)\|")


class UnknownRule(KeyError):
    """A rule id the catalog does not know; the message suggests the closest ones."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class RuleText:
    """One rule's explanation: the catalog's entry and its documentation row."""

    rule: Rule
    severity: str
    what: str
    why: str
    fix: str

    @property
    def url(self) -> str:
        return docs_url(self.rule.id)

    def markdown(self) -> str:
        """Markdown for a hover or a terminal: the rule, what it finds, why it matters, the fix, the link."""
        severity = self.severity.replace(" (rejects)", ", refuses the candidate")
        lines = [f"**{self.rule.id} {self.rule.name}** ({severity})", "", _sentence(self.what)]
        if self.why:
            lines += ["", f"Why it matters: {self.why}"]
        if self.fix and self.fix != "—":
            lines += ["", f"Fix: {self.fix}"]
        if self.rule.rejects and self.rule.stage == "static":
            lines += ["", f"`# noqa: {self.rule.id}` hides it from the audit on one line, never from the verifier."]
        elif self.rule.stage != "runtime":
            lines += ["", f"Suppress it on one line with `# noqa: {self.rule.id}`."]
        lines += ["", f"More: {self.url}"]
        return "\n".join(lines)


def explain_rule(rule_id: str) -> RuleText:
    """The explanation of `rule_id` (any case); UnknownRule for an id the catalog does not have."""
    key = rule_id.strip().upper()
    if key not in RULES:
        near = difflib.get_close_matches(key, RULES, n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else "; the rules are listed in docs/RULES.md"
        raise UnknownRule(f"unknown rule {rule_id!r}{hint}")
    rule = RULES[key]
    cells = _rows().get(key)
    if cells is None or len(cells) < 5:
        return RuleText(rule, rule.severity + (" (rejects)" if rule.rejects else ""), rule.summary, "", "")
    _, severity, what, why, fix = cells[:5]
    return RuleText(rule, severity, what, why, fix)


@functools.cache
def _rows() -> dict[str, list[str]]:
    """Each rule's table cells after its id (name, severity, what, why, fix), `\\|` unescaped; empty where the
    docs are not installed."""
    try:
        text = RULES_DOC.read_text(encoding="utf-8")
    except OSError:
        return {}
    rows = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            cells = [cell.strip().replace("\\|", "|") for cell in CELL_SEPARATOR.split(match.group(2))]
            rows[match.group(1)] = cells
    return rows


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].isalpha() else text
