"""The pooling decomposition of the templates capture: every pool it rewrites computes what PyTorch's does (the
same sums in the same order, the same maxima and indices), in eager and through Inductor; a pool Inductor
lowers itself is left to it."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch._inductor.compile_fx import compile_fx
from torch._inductor.decomposition import select_decomp_table
from torch._inductor.utils import run_and_get_code

from model_server.inductor import pooling
from model_server.inductor.decompositions import templates_table

aten = torch.ops.aten

# (input size, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVERAGE = [
    ((9, 10, 11), (3, 3, 3), (2, 2, 2), (1, 1, 1), False, True, None),  # KernelBench 46's window
    ((9, 10, 11), (3, 3, 3), (2, 2, 2), (1, 1, 1), True, False, None),
    ((9, 10, 11), (3, 4, 3), (1, 2, 3), (1, 2, 0), True, True, None),  # a last window past the padding
    ((9, 10, 11), (3, 3, 3), (2, 2, 2), (1, 1, 1), False, True, 5),
    ((13, 14), (6, 5), (2, 3), (3, 2), False, False, None),
    ((1, 100), (1, 30), (1, 7), (0, 5), True, False, None),  # 1-D, as PyTorch hands it over
]


def _pooled(size, kernel):
    torch.manual_seed(0)
    x = torch.randn(2, 3, *size, dtype=torch.float64)
    return x, len(kernel)


@pytest.mark.parametrize("case", AVERAGE, ids=str)
def test_a_large_overlapping_average_pool_is_the_sum_of_its_windows_slices(case):
    size, kernel, stride, padding, ceil_mode, count_include_pad, divisor = case
    x, dims = _pooled(size, kernel)
    expected = {2: F.avg_pool2d, 3: F.avg_pool3d}[dims](
        x, kernel, stride, padding, ceil_mode, count_include_pad, divisor
    )
    got = pooling.avg_pool(dims, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
    assert got.shape == expected.shape
    assert torch.equal(got, expected)  # the same additions in the same order


@pytest.mark.parametrize(
    ("size", "output"),
    [
        ((8, 12, 10), (2, 3, 5)),  # equal blocks: a fixed-window pool
        ((9, 10, 12), (4, 5, 6)),  # uneven windows of 3, then equal blocks of 2 and 2, gathered
        ((33, 21), (4, 10)),  # 2-D, uneven windows of up to 9 x 3
        ((1, 203), (1, 8)),  # 1-D, as PyTorch hands it over
    ],
    ids=str,
)
def test_an_adaptive_average_pool_is_its_windows_sums_over_their_sizes(size, output):
    x, _ = _pooled(size, output)
    expected = F.adaptive_avg_pool3d(x, output) if len(output) == 3 else F.adaptive_avg_pool2d(x, output)
    torch.testing.assert_close(pooling.adaptive_avg_pool(x, output), expected, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(
    "call",
    [
        lambda x: pooling.avg_pool(2, x, (5, 5), (2, 2), (2, 2)),  # 25 elements: Inductor's own
        lambda x: pooling.avg_pool(2, x, (6, 6), (6, 6), (0, 0)),  # non-overlapping: Inductor's reduction
        lambda x: pooling.avg_pool(2, x, (23, 23), (1, 1), (0, 0)),  # past MAX_UNROLLED
        lambda x: pooling.avg_pool(2, x.to(torch.int32), (6, 6), (2, 2), (0, 0)),
        lambda x: pooling.adaptive_avg_pool(x, (5, 4)),  # equal blocks: Inductor's average pool
        lambda x: pooling.adaptive_avg_pool(x, (7, 9)),  # uneven, at most 6 x 4: Inductor's own
        lambda x: pooling.adaptive_avg_pool(x, (4, 3)),  # 9 x 10 taps: past MAX_GATHERED
    ],
    ids=["small window", "tiling", "huge window", "integer", "equal blocks 2-D", "small uneven", "huge uneven"],
)
def test_a_pool_inductor_lowers_itself_or_too_large_to_unroll_is_left_as_it_was(call):
    x = torch.randn(1, 2, 30, 28)
    assert call(x) is NotImplemented


POOLS = [
    lambda x: F.avg_pool3d(x, 3, 2, 1, count_include_pad=False),
    lambda x: F.avg_pool2d(x.flatten(1, 2), 6, 2, 1, ceil_mode=True),
    lambda x: F.adaptive_avg_pool3d(x, (3, 5, 4)),
    lambda x: F.adaptive_avg_pool3d(x, (4, 5, 6)),
]
POOL_NAMES = ["average 3-D", "average 2-D", "adaptive 3-D, equal blocks", "adaptive 3-D, uneven"]


def _compiled(pool, x, table):
    """The pool through torch.compile with `table`, and whether Inductor's code calls ATen's pooling."""
    torch._dynamo.reset()
    compiled = torch.compile(pool, backend=lambda gm, inputs: compile_fx(gm, inputs, decompositions=table))
    result, codes = run_and_get_code(compiled, x)
    calls = [line for code in codes for line in code.splitlines() if not line.lstrip().startswith("#")]
    return result, any(re.search(r"aten\.\w*pool", line) for line in calls)


@pytest.mark.parametrize("pool", POOLS, ids=POOL_NAMES)
def test_inductor_compiles_the_rewritten_pools_to_the_same_result_with_no_aten_call(pool):
    """Through torch.compile with the table, as the templates capture does: the rewrite traces, Inductor's code
    computes what eager does, and no pool reaches ATen, where Inductor's own table hands each to it."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 9, 10, 12, dtype=torch.float64)
    expected = pool(x)
    got, calls_aten = _compiled(pool, x, templates_table())
    for g, e in zip(got if isinstance(got, tuple) else [got], expected if isinstance(expected, tuple) else [expected]):
        torch.testing.assert_close(g, e, rtol=1e-12, atol=1e-12)
    assert not calls_aten
    assert _compiled(pool, x, select_decomp_table())[1]


def test_the_pool_entries_replace_none_of_inductors_own():
    """The table lays these entries over Inductor's; were a torch to decompose one of these ops itself, the entry
    would silently drop that decomposition."""
    assert not set(pooling.decompositions()) & set(select_decomp_table())
