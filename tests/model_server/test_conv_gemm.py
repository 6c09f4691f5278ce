"""The project's implicit-GEMM convolution kernel, rendered for real convolutions and run in Triton's interpreter
against PyTorch's convolution in float64."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from model_server.inductor.conv_gemm import (
    ConvShapeError,
    ConvSpec,
    channels_last,
    grid,
    kernel_source,
    relayout_grid,
    relayout_source,
)
from tests.model_server.interpreted import load_kernel, run_cases

TILE = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}
CASES = {
    # name: (input size, weight size, stride, padding, dilation, groups, input channels last)
    "2-D, channels last, block of channels per tap": ((2, 32, 9, 11), (24, 32, 3, 3), 1, 0, 1, 1, True),
    "2-D, channels first, strided, padded, dilated": ((2, 16, 12, 13), (8, 16, 3, 3), 2, 1, 2, 1, False),
    "2-D, an RGB image: K over channel and tap": ((2, 3, 12, 13), (8, 3, 5, 5), 2, 2, 1, 1, False),
    "2-D, two groups of 16 channels": ((2, 32, 9, 10), (32, 16, 3, 3), 1, 1, 1, 2, True),
    "1-D, dilated, strided": ((2, 20, 17), (9, 20, 4), 3, 1, 2, 1, False),
    "3-D, padded, channels last": ((1, 16, 5, 6, 7), (12, 16, 3, 3, 3), 1, 1, 1, 1, True),
    "3-D, groups of 4 channels": ((1, 8, 5, 6, 7), (16, 4, 2, 3, 1), 1, 0, 1, 2, False),
}
RELAYOUT = "relayout of a transposed view"


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict[str, float]:
    """Every case run once in a process of its own with Triton's interpreter switched on before Triton is
    imported (a process that imported it first keeps compiled versions of `tl.zeros` and friends)."""
    return run_cases("tests.model_server.test_conv_gemm", tmp_path_factory.mktemp("conv_gemm"))


@pytest.mark.parametrize("bias", [False, True], ids=["no bias", "bias"])
@pytest.mark.parametrize("case", CASES, ids=CASES.keys())
def test_the_kernel_computes_the_convolution(case, bias, interpreted):
    """The largest error over PyTorch's float64 convolution, in units of 1e-5 absolute plus 1e-5 relative."""
    assert interpreted[f"{case}, bias {bias}"] <= 1.0


def test_the_relayout_kernel_copies_any_strides_into_channels_last(interpreted):
    """A transposed view (neither channels first nor last) of a 3-D activation, copied channels last exactly."""
    assert interpreted[RELAYOUT] == 0.0


def test_a_tensor_past_two_billion_elements_is_indexed_in_64_bits():
    x_size, w_size, out_size = (4, 16, 4096, 8192), (64, 16, 1, 1), (4, 64, 4096, 8192)
    small = (1, 16, 64, 64), (1, 64, 64, 64)
    contiguous = lambda size: torch.empty(size, device="meta").stride()  # noqa: E731
    big = ConvSpec(
        x_size, contiguous(x_size), w_size, contiguous(w_size), out_size, contiguous(out_size),
        (1, 1), (0, 0), (1, 1), 1, False,
    )  # fmt: skip
    fits = ConvSpec(
        small[0], contiguous(small[0]), w_size, contiguous(w_size), small[1], contiguous(small[1]),
        (1, 1), (0, 0), (1, 1), 1, False,
    )  # fmt: skip
    assert "INDEX: tl.constexpr = tl.int64" in kernel_source("k", big, TILE, "ieee")
    assert "INDEX: tl.constexpr = tl.int32" in kernel_source("k", fits, TILE, "ieee")


def test_sizes_that_are_not_a_convolution_are_refused_with_what_disagrees():
    size, stride = (1, 8, 10, 10), (800, 100, 10, 1)
    wrong_out = ConvSpec(size, stride, (4, 8, 3, 3), (72, 9, 3, 1), (1, 4, 9, 9), (324, 81, 9, 1), (1, 1), (0, 0),
                         (1, 1), 1, False)  # fmt: skip
    with pytest.raises(
        ConvShapeError, match=r"output of size \(1, 4, 9, 9\), where the convolution gives \(1, 4, 8, 8\)"
    ):
        kernel_source("k", wrong_out, TILE, "ieee")
    wrong_groups = ConvSpec(size, stride, (4, 3, 3, 3), (27, 9, 3, 1), (1, 4, 8, 8), (256, 64, 8, 1), (1, 1), (0, 0),
                            (1, 1), 2, False)  # fmt: skip
    with pytest.raises(ConvShapeError, match="8 input channels, weight of 3 per group, 2 groups"):
        kernel_source("k", wrong_groups, TILE, "ieee")


def _run_cases(folder: Path) -> dict[str, float]:
    """What the tests above check, computed in this (interpreting) process."""
    results = {}
    for name, case in CASES.items():
        for bias in (False, True):
            results[f"{name}, bias {bias}"] = _convolution_error(case, bias, folder)
    x = torch.randn(2, 7, 5, 3, 33).transpose(1, 4)
    y = torch.empty_strided(x.shape, channels_last(tuple(x.shape)))
    kernel = load_kernel(relayout_source("copy", tuple(x.shape), x.stride()), "copy", folder)
    kernel[relayout_grid(tuple(x.shape))](x, y)
    results[RELAYOUT] = (y - x).abs().max().item() if y.stride()[1] == 1 else float("inf")
    return results


def _convolution_error(case: tuple, bias: bool, folder: Path) -> float:
    x_size, w_size, stride, padding, dilation, groups, last = case
    torch.manual_seed(0)
    x, w = torch.randn(x_size), torch.randn(w_size)
    b = torch.randn(w_size[0]) if bias else None
    conv = getattr(F, f"conv{len(x_size) - 2}d")
    exact = conv(x.double(), w.double(), None if b is None else b.double(), stride, padding, dilation, groups)
    if last:
        x = torch.empty_strided(x.shape, channels_last(tuple(x.shape))).copy_(x)
    out = torch.empty_like(exact, dtype=torch.float32)
    dims = x.dim() - 2
    spec = ConvSpec(
        tuple(x.shape), x.stride(), tuple(w.shape), w.stride(), tuple(out.shape), out.stride(),
        (stride,) * dims, (padding,) * dims, (dilation,) * dims, groups, bias,
    )  # fmt: skip
    name = f"conv_{len(list(folder.iterdir()))}"
    kernel = load_kernel(kernel_source(name, spec, TILE, "ieee"), name, folder)
    kernel[grid(spec, TILE)](x, w, *([b] if bias else []), out)
    return ((out.double() - exact).abs() / (1e-5 + 1e-5 * exact.abs())).max().item()


if __name__ == "__main__":
    print(json.dumps(_run_cases(Path(sys.argv[1]))))
