"""Honest kernels that differ from PyTorch only by the order of their fp32 roundings verify `correct`: a mean of
values that cancel, a blocked cumsum, a split-K sum, Welford's variance, an online softmax (issue 34's
cases), on the CPU and on a GPU, where PyTorch's own orders differ again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.sources import pair
from tests.test_project import ROOT
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


PUBLISHED = ROOT / "benchmarks" / "tasks" / "published"
MATMUL_4096 = PUBLISHED / "matmul_4096.py"  # and its Triton candidate, triton/matmul_4096.py (IEEE tl.dot)


@pytest.fixture(scope="module")
def cuda_pool():
    with VerifierPool(size=1, device="cuda") as pool:
        yield pool


def _matmul_in(precision: str, folder: Path) -> Path:
    """The 4096 matmul's candidate with its `tl.dot` in `precision` ("ieee", "tf32x3", "tf32")."""
    source = (PUBLISHED / "triton" / "matmul_4096.py").read_text()
    assert source.count('input_precision="ieee"') == 1
    path = folder / f"matmul_{precision}.py"
    path.write_text(source.replace('input_precision="ieee"', f'input_precision="{precision}"'))
    return path


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["ieee", "tf32x3"])
def test_a_4096_matmul_in_another_order_or_in_three_tf32_products_is_correct(cuda_pool, tmp_path, precision):
    """Both add 4096 products in another order than cuBLAS (and tf32x3 splits each fp32 product in three): a few
    of 16.7M values miss `atol` where the dot product cancels, and the rounding noise explains them."""
    task, candidate = pair(MATMUL_4096, _matmul_in(precision, tmp_path))
    report = cuda_pool.verify(task, candidate, trials=3, seed=1, timeout=300, timing=False)
    assert report.verdict == "correct", report.message


@pytest.mark.gpu
def test_a_4096_matmul_in_tf32_is_refused_by_how_far_beyond_the_noise_it_is(cuda_pool, tmp_path):
    task, candidate = pair(MATMUL_4096, _matmul_in("tf32", tmp_path))
    report = cuda_pool.verify(task, candidate, trials=3, seed=1, timeout=300, timing=False)
    assert report.verdict == "incorrect", report.message
    assert "where fp32 rounding explains up to" in report.message
    assert "TF32 or a lower precision in a matmul or convolution would do this" in report.message


def test_the_rounding_noise_is_no_cover_for_an_error_well_beyond_it(tmp_path):
    """The attack on the wider bar: the centred scan's noise is large (its partial sums reach the hundreds), so a
    kernel that adds a constant to every output, 20x what fp32 rounding explains there, tries to hide under it."""
    folder = FIXTURES / "rounding" / "centred_scan"
    source = (folder / "candidate.py").read_text()
    assert source.count("tl.cumsum(x, axis=0) + carry") == 1
    biased = tmp_path / "centred_scan_biased.py"
    biased.write_text(source.replace("tl.cumsum(x, axis=0) + carry", "tl.cumsum(x, axis=0) + carry + 2.0"))
    with VerifierPool(size=1, device="cpu") as pool:
        honest = pool.verify(*pair(folder / "task.py", folder / "candidate.py"), trials=3, seed=1, timeout=300)
        report = pool.verify(*pair(folder / "task.py", biased), trials=3, seed=1, timeout=300)
    assert honest.verdict == "correct", honest.message
    assert report.verdict == "incorrect", report.message
    noise = re.search(r"where fp32 rounding explains up to ([\d.e+-]+)", report.message)
    assert noise is not None, "judged against the rounding noise, not PyTorch's error alone"
    assert 10 * float(noise.group(1)) <= 2.0, "the bias is well beyond the noise, as the attack needs"
