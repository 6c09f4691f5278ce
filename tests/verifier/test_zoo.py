"""Every correct kernel passes and every hack or fault in the zoo gets its verdict, on CPU (interpreter)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.sources import read_pairs
from tests.verifier.zoo_cases import zoo_cases
from verifier import VerifierPool, procs

CASES = zoo_cases()
ZOO_OPTIONS = {"timeout": 60, "memory_limit": 2 * 1024**3, "trials": 3}  # the interpreter is slow on a busy machine
HANG_OPTIONS = {**ZOO_OPTIONS, "timeout": 4}  # a hang times out at any limit: no need to spin for 15 s


@pytest.fixture(scope="module")
def cpu_reports():
    """Run the whole zoo once through a two-slot pool; the pool is closed before the assertions."""
    pairs = read_pairs([(c.task, c.candidate) for c in CASES])
    options = [HANG_OPTIONS if c.verdict == "timeout" else ZOO_OPTIONS for c in CASES]
    with VerifierPool(size=2, device="cpu") as pool, ThreadPoolExecutor(max_workers=pool.size) as executor:
        reports = list(executor.map(lambda pair, opts: pool.verify(*pair, **opts), pairs, options))
    return dict(zip([c.id for c in CASES], reports))


def test_zoo_is_large_enough():
    hostile = [c for c in CASES if c.verdict != "correct"]
    assert len(hostile) >= 20
    assert {c.verdict for c in CASES} >= {"correct", "incorrect", "rejected", "compile_error", "runtime_error",
                                          "timeout", "crashed"}  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_zoo_verdict(case, cpu_reports):
    report = cpu_reports[case.id]
    rules = {v["rule"] for v in report.violations}
    assert report.verdict == case.verdict, report.message
    assert set(case.rules) <= rules, report.violations
    assert report.passed == (case.verdict == "correct")
    assert report.reward == (1.0 if case.verdict == "correct" else 0.0)
    assert report.timing is None
    assert report.interpreter is True


def test_no_process_left_after_zoo(cpu_reports):
    assert procs.descendants(os.getpid()) == []
