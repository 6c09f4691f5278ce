"""The project's matmul kernel, rendered for real matmuls and run in Triton's interpreter against PyTorch's matmul
in float64: shapes that are not multiples of the tile, split K with a tail, a batch, a bias, a transposed view."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from model_server.inductor.matmul_gemm import (
    MAX_WORKSPACE_BYTES,
    MatmulShapeError,
    MatmulSpec,
    aligned,
    copy_grid,
    copy_source,
    grid,
    kernel_source,
    padded_stride,
    reduce_grid,
    reduce_source,
    split_of,
)
from tests.model_server.interpreted import load_kernel, run_cases

TILE = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 4}
CASES = {
    # name: (batch, M, N, K, split, bias, alpha, beta, A transposed)
    "irregular M, N and K, no split": (1, 50, 70, 45, 1, None, 1.0, 1.0, False),
    "split K with a tail": (1, 33, 17, 1000, 3, None, 1.0, 1.0, False),
    "batched, split K": (3, 40, 24, 96, 2, None, 1.0, 1.0, False),
    "addmm: row bias, alpha and beta": (1, 40, 30, 300, 1, (1, 30), 0.5, 2.0, False),
    "addmm split: full bias, transposed A": (1, 40, 30, 300, 4, (40, 30), 1.0, 0.25, True),
    "one column (a matvec)": (1, 65, 1, 257, 2, None, 1.0, 1.0, False),
    "a split that starts past K": (1, 20, 20, 40, 4, None, 1.0, 1.0, False),
}
ALIGNED_CASE = "rows of 147 and 93 floats copied into aligned rows first"


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict[str, float]:
    """Every case run in a process of its own with Triton's interpreter switched on before Triton is imported."""
    return run_cases("tests.model_server.test_matmul_gemm", tmp_path_factory.mktemp("matmul_gemm"))


@pytest.mark.parametrize("case", CASES, ids=CASES.keys())
def test_the_kernel_computes_the_matmul(case, interpreted):
    """The largest error over PyTorch's float64 result, in units of 1e-5 absolute plus 1e-5 relative to the
    products' magnitude (|A| @ |B|), the scale fp32 summation errs at."""
    assert interpreted[case] <= 1.0


def test_operands_whose_rows_start_off_16_byte_boundaries_are_copied_into_padded_rows_first(interpreted):
    """A 67 x 147 by 147 x 93 product (KernelBench's irregular shapes, small): both operands are copied, then
    multiplied from the copies, B's columns wrapping at its padded width. The padding holds NaN: a read of it that
    reached a column the product keeps, or a K step past K unmasked, would show."""
    assert interpreted[ALIGNED_CASE] <= 1.0


@pytest.mark.parametrize(
    ("size", "stride", "expected"),
    [
        ((1, 4099, 3001), (0, 3001, 1), False),
        ((1, 4096, 4096), (0, 4096, 1), True),
        ((1, 3001, 4099), (0, 1, 3001), False),
        ((1, 3000, 4099), (0, 1, 3000), True),
        ((1, 1048576, 1), (0, 1, 1), True),
        ((8, 64, 64), (4098, 64, 1), False),
        ((1, 64, 64), (4098, 64, 1), True),
        ((1, 64, 64), (0, 2, 128), False),
    ],
    ids=["rows of 3001", "square 4096", "transposed, columns of 3001", "transposed, columns of 3000",
         "a column vector", "batch stride of 4098", "one matrix, any batch stride", "no contiguous dim"],
)  # fmt: skip
def test_an_operand_is_aligned_where_one_dim_is_contiguous_and_every_step_a_multiple_of_four(size, stride, expected):
    assert aligned(size, stride) is expected


def test_k_is_split_only_where_the_output_has_too_few_tiles_and_the_splits_stay_long():
    """A 256 x 256 output with K = 524288 (KernelBench's large-K matmul) has 4 tiles of 128 x 128: K is split in
    64, two waves of an H100's SMs; a 4096 x 4096 output fills the GPU unsplit; a short K is not split."""
    tile = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}
    assert split_of(_spec(1, 256, 256, 524288), tile) == 64
    assert split_of(_spec(1, 4096, 4096, 4096), tile) == 1
    assert split_of(_spec(1, 256, 256, 1500), tile) == 1
    wide = _spec(1, 4096, 256, 524288)  # 64 tiles: two splits would make 128, four 256
    assert split_of(wide, tile) == 4
    assert split_of(wide, tile) * 4096 * 256 * 4 <= MAX_WORKSPACE_BYTES


def test_offsets_past_two_billion_are_indexed_in_64_bits():
    big, fits = _spec(1, 65536, 65536, 64), _spec(1, 4096, 4096, 64)
    assert "INDEX: tl.constexpr = tl.int64" in kernel_source("k", big, TILE, "ieee", 1)
    assert "INDEX: tl.constexpr = tl.int32" in kernel_source("k", fits, TILE, "ieee", 1)


def test_an_empty_matmul_is_refused():
    with pytest.raises(MatmulShapeError, match=r"an empty matmul \(1 x 0 x 8 x 8\)"):
        kernel_source("k", _spec(1, 0, 8, 8), TILE, "ieee", 1)


def _spec(batch: int, m: int, n: int, k: int) -> MatmulSpec:
    return MatmulSpec(batch, m, n, k, (m * k, k, 1), (k * n, n, 1), (m * n, n, 1))


def _run_cases(folder: Path) -> dict[str, float]:
    """What the tests above check, computed in this (interpreting) process."""
    results = {name: _matmul_error(name, case, folder) for name, case in CASES.items()}
    results[ALIGNED_CASE] = _aligned_error(folder)
    return results


def _aligned_error(folder: Path) -> float:
    torch.manual_seed(0)
    a, b = torch.randn(1, 67, 147), torch.randn(1, 147, 93)
    exact, scale = a.double() @ b.double(), a.double().abs() @ b.double().abs()
    copies = []
    for index, x in enumerate((a, b)):
        size = tuple(x.shape)
        if aligned(size, x.stride()):
            return float("inf")  # the case must exercise the copy
        copy = load_kernel(copy_source(f"copy_{index}", size, x.stride()), f"copy_{index}", folder)
        stride = padded_stride(size)
        padded = torch.full((size[0] * stride[0],), float("nan")).as_strided(size, stride)
        copy[copy_grid(size)](x, padded)
        copies.append(padded)
    out = torch.empty(1, 67, 93)
    spec = MatmulSpec(1, 67, 93, 147, copies[0].stride(), copies[1].stride(), out.stride(), b_padded=True)
    if "WRAP_N: tl.constexpr = 96" not in kernel_source("mm_aligned", spec, TILE, "ieee", 1):
        return float("inf")  # the case must wrap at the padded width
    kernel = load_kernel(kernel_source("mm_aligned", spec, TILE, "ieee", 1), "mm_aligned", folder)
    kernel[grid(spec, TILE, 1)](copies[0], copies[1], out)
    return ((out.double() - exact).abs() / (1e-5 + 1e-5 * scale)).max().item()


def _matmul_error(name: str, case: tuple, folder: Path) -> float:
    batch, m, n, k, split, bias_size, alpha, beta, transposed = case
    torch.manual_seed(0)
    a = torch.randn(batch, k, m).transpose(1, 2) if transposed else torch.randn(batch, m, k)
    b = torch.randn(batch, k, n)
    bias = torch.randn(bias_size).expand(m, n) if bias_size else None
    exact = alpha * (a.double() @ b.double()) + (beta * bias.double() if bias is not None else 0)
    scale = abs(alpha) * (a.double().abs() @ b.double().abs()) + (abs(beta) * bias.double().abs() if bias_size else 0)
    out = torch.empty(batch, m, n)
    bias_stride = (0, *bias.stride()) if bias is not None else None
    spec = MatmulSpec(batch, m, n, k, a.stride(), b.stride(), out.stride(), bias_stride, alpha, beta)
    index = len(list(folder.iterdir()))
    kernel = load_kernel(kernel_source(f"mm_{index}", spec, TILE, "ieee", split), f"mm_{index}", folder)
    extra = [bias] if bias is not None else []
    if split == 1:
        kernel[grid(spec, TILE, split)](a, b, *extra, out)
    else:
        work = torch.empty(split, batch, m, n)
        kernel[grid(spec, TILE, split)](a, b, work)
        reduce = load_kernel(reduce_source(f"add_{index}", spec, split), f"add_{index}", folder)
        reduce[(reduce_grid(spec),)](work, *extra, out)
    return ((out.double() - exact).abs() / (1e-5 + 1e-5 * scale)).max().item()


if __name__ == "__main__":
    print(json.dumps(_run_cases(Path(sys.argv[1]))))
