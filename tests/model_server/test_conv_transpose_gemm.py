"""The project's transposed convolution kernel (by output phase), rendered for real transposed convolutions and run
in Triton's interpreter against PyTorch's in float64."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from model_server.inductor import conv_transpose_gemm
from model_server.inductor.conv_gemm import ConvShapeError, ConvSpec, channels_last, kernel_source
from tests.model_server.interpreted import load_kernel, run_cases

TILE = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}
CASES = {
    # name: (input size, weight size, stride, padding, dilation, output padding, groups, input channels last)
    "2-D, stride 1": ((2, 16, 5, 6), (16, 8, 3, 3), 1, 0, 1, 0, 1, True),
    "2-D, stride 2, padded, output padding": ((2, 16, 5, 6), (16, 12, 3, 3), 2, 1, 1, 1, 1, True),
    "1-D, channels first, stride 3, dilation 2 (taps k with 2k = phase mod 3)": (
        (1, 16, 7), (16, 5, 4), 3, 1, 2, 2, 1, False
    ),
    "3-D, stride 2, two groups of 16 channels": ((1, 32, 3, 4, 5), (32, 4, 3, 3, 3), 2, 1, 1, 0, 2, True),
    "2-D, stride (2, 3), dilation 2: half the phases of the first axis reached by no tap": (
        (2, 32, 5, 4), (32, 5, 3, 2), (2, 3), (1, 0), (2, 2), (1, 0), 2, False
    ),
    "2-D, stride 4 past a kernel of 2: phases no tap reaches": ((1, 16, 4, 4), (16, 16, 2, 2), 4, 0, 1, 0, 1, False),
    "3-D, 24 channels (a block and a masked part), stride (1, 2, 2)": (
        (1, 24, 3, 5, 4), (24, 8, 2, 3, 3), (1, 2, 2), (0, 1, 1), 1, (0, 1, 0), 1, True
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict[str, float]:
    """Every case run once in a process of its own with Triton's interpreter switched on before Triton is
    imported."""
    return run_cases("tests.model_server.test_conv_transpose_gemm", tmp_path_factory.mktemp("conv_transpose_gemm"))


@pytest.mark.parametrize("bias", [False, True], ids=["no bias", "bias"])
@pytest.mark.parametrize("case", CASES, ids=CASES.keys())
def test_the_kernel_computes_the_transposed_convolution_and_writes_every_output(case, bias, interpreted):
    """The largest error over PyTorch's float64 transposed convolution, in units of 1e-5 absolute plus 1e-5
    relative; the output starts as NaN, so an output no program writes shows as an infinite error."""
    assert interpreted[f"{case}, bias {bias}"] <= 1.0


def test_an_output_padding_past_the_stride_and_dilation_and_a_negative_padding_are_refused():
    size, stride = (1, 16, 5, 5), (400, 25, 5, 1)
    longer = ConvSpec(size, stride, (16, 4, 3, 3), (36, 9, 3, 1), (1, 4, 13, 11), (572, 143, 11, 1), (2, 2), (0, 0),
                      (1, 1), 1, False, True)  # fmt: skip
    said = r"output of size \(1, 4, 13, 11\), where the convolution gives \(1, 4, 11, 11\)"
    with pytest.raises(ConvShapeError, match=said):
        conv_transpose_gemm.kernel_source("k", longer, TILE, "ieee")
    fits = ConvSpec(size, stride, (16, 4, 3, 3), (36, 9, 3, 1), (1, 4, 12, 11), (528, 132, 11, 1), (2, 2), (0, 0),
                    (1, 1), 1, False, True)  # fmt: skip
    assert "PHASES: tl.constexpr = 4" in conv_transpose_gemm.kernel_source("k", fits, TILE, "ieee")
    with pytest.raises(ConvShapeError, match="a transposed convolution"):
        kernel_source("k", fits, TILE, "ieee")
    negative = ConvSpec(size, stride, (16, 4, 3, 3), (36, 9, 3, 1), (1, 4, 13, 13), (676, 169, 13, 1), (2, 2),
                        (-1, -1), (1, 1), 1, False, True)  # fmt: skip
    with pytest.raises(ConvShapeError, match=r"padding \(-1, -1\): strides and dilations start at 1, paddings at 0"):
        conv_transpose_gemm.kernel_source("k", negative, TILE, "ieee")


def test_fewer_than_a_block_of_input_channels_per_group_is_refused():
    spec = ConvSpec((1, 32, 4, 4), (512, 16, 4, 1), (32, 2, 3, 3), (18, 9, 3, 1), (1, 8, 6, 6), (288, 36, 6, 1),
                    (1, 1), (0, 0), (1, 1), 4, False, True)  # fmt: skip
    with pytest.raises(ConvShapeError, match="8 input channels per group, fewer than the 16 a tap's block reads"):
        conv_transpose_gemm.kernel_source("k", spec, TILE, "ieee")


def test_the_grid_covers_the_longest_phase_of_every_phase():
    """Output 2 x 8 x 7: along the last axis, stride 2 and padding 1 leave phases of 4 and 3 outputs."""
    spec = ConvSpec((2, 16, 4, 4), (64, 16, 1, 1), (16, 8, 3, 3), (72, 9, 3, 1), (2, 8, 7, 7), (392, 49, 7, 1),
                    (2, 2), (1, 1), (1, 1), 1, False, True)  # fmt: skip
    assert conv_transpose_gemm.grid(spec, {**TILE, "BLOCK_M": 16}) == (4 * 2, 1, 1)  # 2 x 4 x 4 rows: 2 blocks


def _run_cases(folder: Path) -> dict[str, float]:
    return {
        f"{name}, bias {bias}": _error(case, bias, folder) for name, case in CASES.items() for bias in (False, True)
    }


def _error(case: tuple, bias: bool, folder: Path) -> float:
    x_size, w_size, stride, padding, dilation, output_padding, groups, last = case
    dims = len(x_size) - 2
    spread = lambda value: value if isinstance(value, tuple) else (value,) * dims  # noqa: E731
    torch.manual_seed(0)
    x, w = torch.randn(x_size), torch.randn(w_size)
    b = torch.randn(w_size[1] * groups) if bias else None
    conv = getattr(F, f"conv_transpose{dims}d")
    double = None if b is None else b.double()
    exact = conv(x.double(), w.double(), double, stride, padding, output_padding, groups, dilation)
    if last:
        x = torch.empty_strided(x.shape, channels_last(tuple(x.shape))).copy_(x)
    out = torch.full(exact.shape, float("nan"))
    spec = ConvSpec(
        tuple(x.shape), x.stride(), tuple(w.shape), w.stride(), tuple(out.shape), out.stride(),
        spread(stride), spread(padding), spread(dilation), groups, bias, True,
    )  # fmt: skip
    name = f"conv_transpose_{len(list(folder.iterdir()))}"
    kernel = load_kernel(conv_transpose_gemm.kernel_source(name, spec, TILE, "ieee"), name, folder)
    kernel[conv_transpose_gemm.grid(spec, TILE)](x, w, *([b] if bias else []), out)
    error = ((out.double() - exact).abs() / (1e-5 + 1e-5 * exact.abs())).max().item()
    return error if error == error else float("inf")


if __name__ == "__main__":
    print(json.dumps(_run_cases(Path(sys.argv[1]))))
