"""Honest kernels, written the way people and LLMs write Triton (launchers, autograd Functions, autotune with
several configurations, asserts, device moves, `.item()` of a parameter, shape arithmetic, a parameter named
`input`, nn's own initialisation helpers), are accepted: no rule refuses them and each verifies correct with
every check on. The hack-and-fault zoo staying refused is tests/verifier/test_zoo.py."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.sources import read_pairs
from verifier import VerifierPool
from verifier.audit.engine import audit_source
from verifier.rules import RULES

CASES = sorted(p for p in (FIXTURES / "honest").iterdir() if p.is_dir())
STYLES = (
    "@triton.autotune",
    "@triton.heuristics",
    "torch.autograd.Function",
    "lambda meta",
    "assert ",
    ".item()",
    ".int()",
    "bit_length()",
    "def forward(self, input",
    "_calculate_fan_in_and_fan_out",
)


def test_the_corpus_is_large_and_written_in_many_styles():
    sources = [(case / "candidate.py").read_text() for case in CASES]
    assert len(CASES) >= 40
    for style in STYLES:
        assert any(style in source for source in sources), style
    assert any(source.count("triton.Config(") > 1 for source in sources), "an autotune with several configs"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_no_rule_refuses_an_honest_kernel(case):
    findings = audit_source((case / "candidate.py").read_text(), str(case / "candidate.py"))
    assert [f for f in findings if f.severity == "error" or RULES[f.rule].rejects] == []


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_every_honest_kernel_verifies_correct_with_every_check(device):
    """On a GPU too, where PyTorch's own summation orders differ from the CPU's: no refusal for rounding alone. The
    GPU's timing is short and against eager only (42 torch.compile baselines would take minutes and prove nothing
    about the verdict)."""
    quick = {} if device == "cpu" else {"compile_baseline": False, "timing_trials": 10}
    with VerifierPool(size=2 if device == "cpu" else 4, device=device) as pool:
        pairs = read_pairs([(case / "task.py", case / "candidate.py") for case in CASES])
        reports = pool.verify_many(pairs, trials=5, **quick)
    failed = {case.name: f"{r.verdict}: {r.message}" for case, r in zip(CASES, reports) if not r.passed}
    assert failed == {}
