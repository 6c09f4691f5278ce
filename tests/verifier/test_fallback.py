"""Honest kernels with a CPU fallback (`if not x.is_cuda: return torch.relu(x)`), as third-party KernelBench
kernels often carry: what ran decides under the strict policy, not that PyTorch appears in the source.

On a GPU the fallback never runs and the candidate is correct under strict; on the CPU it is what runs, so strict
refuses it (TRI360); hybrid allows PyTorch's work but still wants some of it in Triton. With the fallback's
condition turned off, the same file runs its Triton kernels in the interpreter and is correct under strict: the
kernels themselves are right.
"""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.sources import pair, read_pairs
from verifier import VerifierPool

CASES = sorted(p.name for p in (FIXTURES / "fallback").iterdir() if p.is_dir())
FALLBACK = "if not x.is_cuda:"
OPTIONS = {"trials": 2, "timeout": 120}


def test_the_corpus_covers_the_ops_third_party_kernels_fall_back_on():
    expected = {"relu", "sigmoid", "gelu", "selu", "elu", "hardtanh", "instancenorm", "maxpool2d", "avgpool1d"}
    expected.add("argmin")
    assert set(CASES) == expected
    assert all(FALLBACK in (FIXTURES / "fallback" / c / "candidate.py").read_text() for c in CASES)


@pytest.fixture(scope="module")
def cpu_reports(tmp_path_factory):
    """Each case as it is under both policies, and with its fallback turned off under strict, in one pool."""
    folder = tmp_path_factory.mktemp("no_fallback")
    pairs, keys = [], []
    for case in CASES:
        task, candidate = FIXTURES / "fallback" / case / "task.py", FIXTURES / "fallback" / case / "candidate.py"
        without = folder / f"{case}.py"
        without.write_text(candidate.read_text().replace(FALLBACK, "if False:"))
        pairs += [(task, candidate), (task, without)]
        keys += [(case, "as is"), (case, "without fallback")]
    with VerifierPool(size=2, device="cpu") as pool:
        reports = dict(zip(keys, pool.verify_many(read_pairs(pairs), **OPTIONS)))
        for case in CASES[:3]:
            task, candidate = FIXTURES / "fallback" / case / "task.py", FIXTURES / "fallback" / case / "candidate.py"
            reports[(case, "hybrid")] = pool.verify(*pair(task, candidate), policy="hybrid", **OPTIONS)
    return reports


@pytest.mark.parametrize("case", CASES)
def test_on_the_cpu_the_fallback_runs_and_strict_refuses_it(cpu_reports, case):
    report = cpu_reports[(case, "as is")]
    assert report.verdict == "rejected" and report.reward == 0, report.message
    assert "ran in PyTorch during the compared calls" in report.message
    assert "TRI360" in {v["rule"] for v in report.violations}


@pytest.mark.parametrize("case", CASES)
def test_the_triton_path_is_correct_under_strict(cpu_reports, case):
    report = cpu_reports[(case, "without fallback")]
    assert report.verdict == "correct" and report.reward == 1.0, report.message
    assert [v["rule"] for v in report.violations if v["severity"] == "error"] == []


def test_under_hybrid_pytorch_is_allowed_but_some_triton_must_still_run(cpu_reports):
    """Hybrid lets PyTorch do the work Triton does not; a fallback that does all of it launches nothing."""
    for case in CASES[:3]:
        report = cpu_reports[(case, "hybrid")]
        assert report.verdict == "rejected" and report.message.startswith("TRI351"), report.message
        assert "TRI360" in {v["rule"] for v in report.violations}


@pytest.mark.gpu
def test_on_a_gpu_the_fallback_never_runs_and_strict_accepts_the_kernel():
    pairs = [(FIXTURES / "fallback" / c / "task.py", FIXTURES / "fallback" / c / "candidate.py") for c in CASES]
    with VerifierPool(size=2, device="cuda") as pool:
        reports = pool.verify_many(read_pairs(pairs), timing=False, **OPTIONS)
    for case, report in zip(CASES, reports):
        assert report.verdict == "correct" and report.reward == 1.0, f"{case}: {report.message}"
        assert "TRI360" not in {v["rule"] for v in report.violations}, case
