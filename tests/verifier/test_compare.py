"""Output comparison: tolerances by dtype, NaN/Inf placement, the constant-output and scale guards, and the
float64 second opinion on near misses."""

from __future__ import annotations

import re

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.sandbox.compare import (
    Comparison,
    LeafCheck,
    Noise,
    against_exact,
    compare_devices,
    compare_outputs,
    compare_structure,
    tolerance_for,
)


def test_default_tolerances_follow_dtype_and_overrides_win():
    assert tolerance_for(torch.float32, None, None) == (1e-4, 1e-4)
    assert tolerance_for(torch.float16, None, None) == (1e-2, 1e-2)
    assert tolerance_for(torch.bfloat16, None, None) == (1e-2, 1e-2)
    assert tolerance_for(torch.float32, 0.5, None) == (0.5, 1e-4)


def test_fp32_error_within_tolerance_passes_and_reports_errors():
    ref = torch.linspace(-2, 2, 100)
    result = compare_outputs([ref], [ref + 5e-5], "trial 1")
    assert result.passed, result.problems
    assert abs(result.max_abs_error - 5e-5) < 1e-6
    assert abs(result.max_rel_error - 5e-5 / 2) < 1e-6


def test_fp32_error_outside_tolerance_fails_with_counts():
    ref = torch.linspace(-2, 2, 100)
    cand = ref.clone()
    cand[:3] += 1e-2
    result = compare_outputs([ref], [cand], "trial 1")
    assert not result.passed
    assert "3 of 100 values outside atol=0.0001" in result.problems[0]


def test_fp16_uses_the_looser_tolerance():
    ref = torch.linspace(-2, 2, 100, dtype=torch.float16)
    assert compare_outputs([ref], [ref + 5e-3], "t").passed
    assert not compare_outputs([ref], [ref + 5e-2], "t").passed


def test_zeros_for_a_tiny_magnitude_reference_fail():
    """Softmax over wide rows: every value is below atol, so allclose alone would accept all zeros."""
    ref = torch.softmax(torch.randn(4, 100_000), dim=1)
    result = compare_outputs([ref], [torch.zeros_like(ref)], "trial 1")
    assert not result.passed
    assert any("constant" in p for p in result.problems)


def test_small_noise_on_a_tiny_magnitude_reference_fails_on_scale():
    ref = torch.softmax(torch.randn(4, 100_000), dim=1)
    noisy = ref + 1e-5 * torch.rand_like(ref)
    result = compare_outputs([ref], [noisy], "trial 1")
    assert not result.passed
    assert "of the reference's scale" in result.problems[0]


def test_nan_and_inf_must_sit_where_the_reference_has_them():
    ref = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    assert compare_outputs([ref], [ref.clone()], "t").passed
    moved = torch.tensor([float("nan"), 1.0, float("inf"), -float("inf")])
    problems = compare_outputs([ref], [moved], "t").problems
    assert any("NaN" in p for p in problems)
    flipped = torch.tensor([1.0, float("nan"), -float("inf"), -float("inf")])
    assert not compare_outputs([ref], [flipped], "t").passed


def test_dtype_shape_and_type_mismatches_are_named():
    ref = torch.zeros(2, 3)
    assert "dtype torch.float16" in compare_outputs([ref], [ref.half()], "t").problems[0]
    assert "shape (3, 2)" in compare_outputs([ref], [ref.t().contiguous()], "t").problems[0]
    assert "expected a torch.Tensor" in compare_outputs([ref], [None], "t").problems[0]


def test_integer_outputs_must_match_exactly():
    ref = torch.arange(10)
    off = ref.clone()
    off[4] += 1
    assert compare_outputs([ref], [ref.clone()], "t").passed
    assert "1 of 10 values differ" in compare_outputs([ref], [off], "t").problems[0]


def test_structure_mismatch_is_reported():
    single = {"kind": "leaf", "index": 0}
    pair = {"kind": "tuple", "items": [single, {"kind": "leaf", "index": 1}]}
    assert compare_structure(single, single, "forward") == []
    assert "expected a single value, got tuple of 2" in compare_structure(single, pair, "forward")[0]


def test_outputs_must_live_on_the_reference_device():
    cuda = {"type": "Tensor", "dtype": "torch.float32", "shape": [4], "device": "cuda"}
    assert compare_devices([cuda], [cuda]) == []
    assert compare_devices([cuda], [{**cuda, "device": "cpu"}]) == ["output 0 is on cpu, expected cuda"]


def test_outputs_whose_shape_or_dtype_differ_report_no_error_value():
    """An error of 0 beside a shape mismatch would read as a near miss; nothing was compared."""
    reference = [torch.ones(4, 3)]
    result = compare_outputs(reference, [torch.ones(3, 4)], "trial 1")
    assert not result.passed and result.max_abs_error is None and result.max_rel_error is None
    result = compare_outputs(reference, [torch.ones(4, 3, dtype=torch.float64)], "trial 1")
    assert not result.passed and result.max_abs_error is None
    assert compare_outputs([torch.arange(4)], [torch.arange(4)], "trial 1").max_abs_error == 0.0


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=1, max_value=300),
    st.integers(min_value=1, max_value=64),
    st.sampled_from([torch.float32, torch.float16, torch.int64]),
    st.integers(min_value=0, max_value=2**31),
)
def test_a_leaf_compared_chunk_by_chunk_gives_what_the_whole_tensor_gives(size, chunk, dtype, seed):
    """The comparer sees a GB-sized output as ring-sized chunks: the verdict, errors and messages must not depend
    on where the chunks fall (NaN, Inf, a constant stretch and outliers included)."""
    generator = torch.Generator().manual_seed(seed)
    ref = (torch.randn(size, generator=generator) * 10).to(dtype)
    cand = ref.clone()
    noise = torch.randint(0, 4, (size,), generator=generator)
    cand[noise == 0] += 1
    if dtype.is_floating_point:
        ref[noise == 1] = float("nan")
        cand[(noise == 1) | (noise == 2)] = float("nan")
        cand[noise == 3] = float("inf")
    whole = LeafCheck(ref, "trial 1")
    assert whole.admits(str(cand.dtype), list(cand.shape))
    whole.add(0, cand.reshape(-1))
    chunked = LeafCheck(ref, "trial 1")
    assert chunked.admits(str(cand.dtype), list(cand.shape))
    for start in range(0, size, chunk):
        chunked.add(start, cand.reshape(-1)[start : start + chunk])
    expected, got = whole.finish(), chunked.finish()
    assert (got.problems, got.max_abs_error, got.max_rel_error) == (
        expected.problems,
        expected.max_abs_error,
        expected.max_rel_error,
    )


def test_a_leaf_whose_values_did_not_all_arrive_fails():
    check = LeafCheck(torch.ones(10), "trial 1")
    check.add(0, torch.ones(6))
    assert check.finish().problems == ["trial 1: 6 of 10 values arrived"]


def _near_miss(ref: torch.Tensor, cand: torch.Tensor) -> tuple[LeafCheck, Comparison]:
    check = LeafCheck(ref, "out")
    check.add(0, cand.reshape(-1))
    missed = check.finish()
    assert check.near_miss and missed.problems, "the fp32 comparison must miss for the second opinion to matter"
    return check, missed


def test_a_candidate_as_far_from_the_exact_answer_as_the_reference_passes_the_second_opinion():
    gen = torch.Generator().manual_seed(0)
    exact = torch.randn(1 << 18, generator=gen, dtype=torch.float64) * 64
    ref = (exact + 1e-3 * torch.randn(exact.shape, generator=gen, dtype=torch.float64)).float()
    cand = (exact + 1e-3 * torch.randn(exact.shape, generator=gen, dtype=torch.float64)).float()
    check, missed = _near_miss(ref, cand)
    judged = against_exact(missed, check, cand, exact)
    assert judged.passed and judged.max_abs_error == missed.max_abs_error
    assert "as accurate as fp32 allows" in judged.notes[0] and judged.tolerance["exact_allowance"] == 4.0


def test_a_candidate_ten_times_less_accurate_than_the_reference_fails_the_second_opinion():
    gen = torch.Generator().manual_seed(1)
    exact = torch.randn(1 << 18, generator=gen, dtype=torch.float64) * 64
    ref = (exact + 1e-3 * torch.randn(exact.shape, generator=gen, dtype=torch.float64)).float()
    cand = (exact + 1e-2 * torch.randn(exact.shape, generator=gen, dtype=torch.float64)).float()
    check, missed = _near_miss(ref, cand)
    judged = against_exact(missed, check, cand, exact)
    assert not judged.passed and not judged.notes
    assert "values outside atol" in judged.problems[0] and "at most 4x the larger is allowed" in judged.problems[0]


def test_a_precision_downgrade_of_a_long_dot_product_fails_the_second_opinion():
    gen = torch.Generator().manual_seed(2)
    a, b = torch.randn(64, 4096, generator=gen), torch.randn(4096, 64, generator=gen)
    cand = a.to(torch.bfloat16).float() @ b.to(torch.bfloat16).float()
    check, missed = _near_miss(a @ b, cand)
    assert not against_exact(missed, check, cand, a.double() @ b.double()).passed


def test_an_error_within_fp32_rounding_noise_passes_where_pytorch_s_own_result_was_lucky():
    """PyTorch's order can land on the exact answer (a mean that cancels to zero); another order's rounding
    error is then infinitely more than PyTorch's, and only the rounding noise says it is fine."""
    gen = torch.Generator().manual_seed(3)
    exact = 1e-9 * torch.randn(64, generator=gen, dtype=torch.float64)
    ref = exact.float()
    cand = (exact + 2e-7 * torch.randn(64, generator=gen, dtype=torch.float64)).float()
    check, missed = _near_miss(ref, cand)
    lucky = against_exact(missed, check, cand, exact)
    assert not lucky.passed, "without the noise, PyTorch's luck sets the bar"
    judged = against_exact(missed, check, cand, exact, Noise(largest=3e-7))
    assert judged.passed, judged.problems
    assert "where fp32 rounding explains up to 3e-07" in judged.notes[0]
    assert judged.tolerance["rounding_noise"] == 3e-7


def test_an_error_far_beyond_the_rounding_noise_says_how_far_and_names_the_likely_cause():
    gen = torch.Generator().manual_seed(4)
    a, b = torch.randn(64, 4096, generator=gen), torch.randn(4096, 64, generator=gen)
    exact = a.double() @ b.double()
    cand = a.to(torch.bfloat16).float() @ b.to(torch.bfloat16).float()
    check, missed = _near_miss(a @ b, cand)
    judged = against_exact(missed, check, cand, exact, Noise(largest=1e-3, products=True))
    assert not judged.passed
    problem = judged.problems[0]
    assert "where fp32 rounding explains up to 0.001" in problem, problem
    assert re.search(r"this is [\d,]+x; TF32 or a lower precision in a matmul or convolution would do this", problem)


def test_the_second_opinion_stands_aside_where_the_exact_answer_cannot_judge():
    ref = torch.tensor([1.0, 2.0, 3.0, 4.0])
    cand = ref + 0.5
    check, missed = _near_miss(ref, cand)
    for exact in (torch.zeros(3, dtype=torch.float64), torch.tensor([1.0, float("inf"), 3.0, 4.0]).double(), None):
        assert against_exact(missed, check, cand, exact) is missed


def test_the_allclose_tolerance_is_where_torch_allclose_starts_to_pass():
    """The benchmarks judge with torch.allclose(rtol=t, atol=t); the comparison reports the smallest such t."""
    generator = torch.Generator().manual_seed(7)
    ref = torch.randn(1000, generator=generator) * 5
    cand = ref + torch.randn(1000, generator=generator) * 0.01
    t = compare_outputs([ref], [cand], "trial 1").allclose_tolerance
    assert 0 < t < 1
    assert torch.allclose(cand, ref, rtol=t * 1.0001, atol=t * 1.0001)
    assert not torch.allclose(cand, ref, rtol=t * 0.999, atol=t * 0.999)
    with_nan = ref.clone()
    with_nan[3] = float("nan")
    general = compare_outputs([with_nan], [torch.where(with_nan.isnan(), with_nan, cand)], "trial 1")
    assert general.allclose_tolerance == t  # the chunk path that handles non-finite values agrees


def test_no_allclose_tolerance_admits_a_misplaced_nan_another_shape_or_a_missing_output():
    ref = torch.ones(4)
    misplaced = torch.tensor([1.0, float("nan"), 1.0, 1.0])
    assert compare_outputs([ref], [misplaced], "t").allclose_tolerance == float("inf")
    assert compare_outputs([ref], [torch.ones(5)], "t").allclose_tolerance == float("inf")
    assert compare_outputs([ref, ref], [ref], "t").allclose_tolerance == float("inf")
    assert compare_outputs([3], [3], "t").allclose_tolerance == 0.0
    assert compare_outputs([3], [4], "t").allclose_tolerance == float("inf")
    assert compare_outputs([torch.arange(4)], [torch.arange(4) + 1], "t").allclose_tolerance == 1.0
