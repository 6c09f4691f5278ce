"""Every rule explained from its row of docs/RULES.md, as `tritonize rule` prints it (the editor's hover shows the
same text)."""

from __future__ import annotations

import pytest

from verifier import UnknownRule, explain_rule, rule_docs
from verifier.cli import main
from verifier.rules import RULES


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_every_rule_has_what_it_finds_and_why_it_matters(rule_id):
    text = explain_rule(rule_id)
    assert text.rule is RULES[rule_id]
    assert text.what and text.why and text.fix, "a row of docs/RULES.md with all its cells"
    assert text.severity.split(" ")[0] == RULES[rule_id].severity
    assert text.markdown().endswith(f"docs/RULES.md#{rule_id.lower()}")


def test_tritonize_rule_prints_the_explanation(capsys):
    assert main(["rule", "tri202"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("**TRI202 masked-load-no-other** (error / warning)\n\nA masked `tl.load` without `other=`")
    assert "Why it matters: the language leaves masked-off lanes undefined" in out
    assert "Fix: `other=` with the reduction's neutral value" in out
    assert "Suppress it on one line with `# noqa: TRI202`." in out


def test_noqa_is_offered_only_where_it_works():
    refusing = explain_rule("TRI303").markdown()
    assert "(error, refuses the candidate)" in refusing
    assert "hides it from the audit on one line, never from the verifier" in refusing
    assert "noqa" not in explain_rule("TRI351").markdown(), "a runtime finding has no line to suppress"


def test_an_unknown_rule_is_a_usage_error_that_suggests_the_closest(capsys):
    assert main(["rule", "TRI202", "TRI209"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "unknown rule 'TRI209'; did you mean TRI309, TRI204, TRI203?" in captured.err
    with pytest.raises(UnknownRule, match=r"the rules are listed in docs/RULES\.md"):
        explain_rule("nothing")


def test_without_the_docs_the_explanation_is_the_rule_s_summary(monkeypatch, tmp_path):
    monkeypatch.setattr(rule_docs, "RULES_DOC", tmp_path / "missing.md")
    rule_docs._rows.cache_clear()
    try:
        text = explain_rule("TRI202")
    finally:
        rule_docs._rows.cache_clear()
    assert text.what == RULES["TRI202"].summary and text.why == ""
    assert "Why it matters" not in text.markdown() and text.markdown().endswith("docs/RULES.md#tri202")
