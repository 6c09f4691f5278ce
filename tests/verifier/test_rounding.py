"""Honest kernels that differ from PyTorch only by the order of their fp32 roundings verify `correct`: a mean of
values that cancel, a blocked cumsum, a split-K sum, Welford's variance, an online softmax (issue 34's
cases), on the CPU and on a GPU, where PyTorch's own orders differ again."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.sources import pair
from verifier import VerifierPool

CASES = sorted(path.name for path in (FIXTURES / "rounding").iterdir())


@pytest.fixture(scope="module", params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def pool(request):
    with VerifierPool(size=1, device=request.param) as pool:
        yield pool


def test_every_case_has_a_task_and_a_candidate():
    assert len(CASES) >= 5
    for case in CASES:
        assert {p.name for p in (FIXTURES / "rounding" / case).iterdir()} >= {"task.py", "candidate.py"}


@pytest.mark.parametrize("case", CASES)
def test_a_kernel_that_only_rounds_differently_is_correct(pool, case):
    folder = FIXTURES / "rounding" / case
    report = pool.verify(*pair(folder / "task.py", folder / "candidate.py"), trials=3, seed=1, timeout=300)
    assert report.verdict == "correct", report.message
    assert report.max_abs_error > 0, "the orders of the sums differ, so the results should too"
