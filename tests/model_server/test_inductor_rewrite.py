"""Golden tests of the rewrite from Inductor's generated module to a standalone `ModelNew`, without Inductor.

The inputs are real captures (CPU ones from this machine, CUDA ones from a GPU, with and without Inductor's
Triton templates) stored in tests/fixtures/inductor; `python -m tests.model_server.inductor_fixtures` says how
to refresh them. The slow tests in test_inductor_backend.py run the real Inductor end to end.
"""

from __future__ import annotations

import ast

import pytest

from tests.model_server.inductor_fixtures import expected_path, fixtures, rewritten
from verifier.audit.engine import audit_source
from verifier.rules import RULES

CASES = fixtures()


def test_there_are_captures_from_both_devices_and_refusals():
    names = [path.stem for path in CASES]
    assert any(name.endswith(".cpu") for name in names)
    assert any(".cuda" in name for name in names)
    assert any(expected_path(path, refused=True).exists() for path in CASES)


@pytest.mark.parametrize("path", CASES, ids=lambda path: path.stem)
def test_the_rewrite_of_a_capture_matches_its_expected_output(path):
    text, refused = rewritten(path)
    expected = expected_path(path, refused)
    assert expected.exists(), f"the rewrite {'refused' if refused else 'accepted'} {path.name}, which it did not before"
    assert text == expected.read_text()


@pytest.mark.parametrize("path", [p for p in CASES if expected_path(p, refused=False).exists()], ids=lambda p: p.stem)
def test_every_expected_candidate_parses_and_passes_the_anti_hacking_rules(path):
    source = expected_path(path, refused=False).read_text()
    ast.parse(source)
    rejected = [f for f in audit_source(source, path.name) if RULES[f.rule].rejects or f.rule.startswith("TRI1")]
    assert rejected == []
