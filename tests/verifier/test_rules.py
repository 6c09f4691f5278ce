"""The rule catalog decides which findings refuse a candidate; the verifier reads nothing else."""

from __future__ import annotations

from verifier.host.verification import _rejecting
from verifier.rules import AUDIT_RULES, RULES, docs_url


def violation(rule: str) -> dict:
    return {"rule": rule, "severity": "error", "message": "seen at run time", "line": 0}


def test_runtime_findings_refuse_exactly_when_the_catalog_says_so():
    runtime = sorted(rule.id for rule in RULES.values() if rule.stage == "runtime")
    refused = [v["rule"] for v in _rejecting([violation(rule) for rule in runtime], "strict")]
    assert refused == [rule for rule in runtime if RULES[rule].rejects]
    assert "TRI351" in refused and "TRI354" not in refused  # no Triton launch refuses; a mutated input is wrong
    assert "TRI360" in refused and "TRI361" in refused  # PyTorch did the work; the sandbox refused something


def test_under_hybrid_pytorch_doing_the_work_is_not_a_refusal_but_honesty_still_is():
    refused = [v["rule"] for v in _rejecting([violation(r) for r in ("TRI360", "TRI361", "TRI356")], "hybrid")]
    assert refused == ["TRI361", "TRI356"]


def test_a_rule_id_the_catalog_does_not_know_refuses_the_candidate():
    """Only the harness writes runtime violations; an unknown id means the child's result was tampered with."""
    assert _rejecting([violation("TRI354"), violation("TRI999")], "strict") == [violation("TRI999")]


def test_the_audit_selects_among_rules_it_can_report():
    assert all(rule.stage == "runtime" for rule_id, rule in RULES.items() if rule_id not in AUDIT_RULES)
    assert not any(rule.stage == "runtime" for rule in AUDIT_RULES.values())
    assert docs_url("TRI201").endswith("docs/RULES.md#tri201")
