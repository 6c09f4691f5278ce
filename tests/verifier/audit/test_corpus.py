"""Real Triton idioms (tests/fixtures/audit_corpus: flash attention, Welford and two-pass layer norm,
block-sparse attention, multinomial sampling, MoE routing), written the way library code writes them, audit with
no error; the bug each file names in its first line (`# seeded bug: OLD => NEW`) is found as an error."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from verifier.audit.engine import audit_source

CORPUS = sorted((FIXTURES / "audit_corpus").glob("*.py"))
SEED = "# seeded bug: "


def _errors(source: str, path: str) -> list[str]:
    return [f"{f.line}: {f.rule} {f.message}" for f in audit_source(source, path) if f.severity == "error"]


def test_the_corpus_covers_the_idioms():
    assert {p.stem for p in CORPUS} >= {
        "flash_attention",
        "welford_layernorm",
        "block_sparse_attention",
        "multinomial_sampling",
        "moe_routing",
    }


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_a_right_kernel_gets_no_error(path):
    assert _errors(path.read_text(), str(path)) == []


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_the_seeded_bug_is_an_error(path):
    source = path.read_text()
    first = source.splitlines()[0]
    assert first.startswith(SEED), f"{path.name} names no seeded bug"
    old, new = first[len(SEED) :].split(" => ")
    body = source.split("\n", 1)[1]
    assert body.count(old) == 1, f"{path.name}: {old!r} must occur once"
    errors = _errors(body.replace(old, new), str(path))
    assert any("TRI202" in e for e in errors), errors


GOLDEN = sorted((FIXTURES / "inductor").glob("*.py"))


def test_every_golden_inductor_rewrite_is_audit_clean():
    """The project's own conversions (the Inductor backend's golden outputs) get no warning or error: what
    `convert` writes into the editor must not light up there."""
    assert len(GOLDEN) >= 40
    loud = {
        f"{path.name}:{f.line}: {f.rule} {f.message}"
        for path in GOLDEN
        for f in audit_source(path.read_text(), str(path))
        if f.severity in {"error", "warning"}
    }
    assert loud == set()
