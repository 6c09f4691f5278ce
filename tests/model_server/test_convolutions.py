"""The convolution decomposition of the templates capture: every transposed, dilated, 1-D, depthwise or
few-channel convolution it rewrites computes what PyTorch's does (the same sums, the inserted zeros adding
nothing), in eager and through Inductor; a convolution the templates take already is left to Inductor."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch._inductor.compile_fx import compile_fx
from torch.fx.experimental.proxy_tensor import make_fx

from model_server.inductor.convolutions import convolution
from model_server.inductor.decompositions import templates_table

# (spatial input size, in, out, kernel, stride, padding, output_padding, dilation, groups)
TRANSPOSED = [
    ((9,), 4, 6, (3,), (1,), (0,), (0,), (1,), 1),
    ((11,), 4, 6, (3,), (2,), (1,), (1,), (2,), 2),
    ((7, 9), 4, 6, (3, 5), (1, 1), (1, 2), (0, 0), (1, 1), 1),
    ((6, 8), 8, 4, (3, 5), (2, 3), (1, 2), (1, 2), (2, 1), 4),
    ((5, 7), 3, 5, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), 1),
    ((6, 7), 2, 2, (2, 2), (1, 1), (2, 2), (0, 0), (1, 1), 1),  # padding past the kernel's reach: a crop
    ((3, 4, 5), 8, 8, (3, 5, 7), (2, 2, 2), (1, 2, 3), (1, 1, 1), (1, 1, 1), 4),
    ((4, 4, 4), 4, 6, (3, 3, 3), (2, 2, 2), (1, 1, 1), (0, 0, 0), (2, 2, 2), 1),
    ((10,), 3, 3, (4,), (3,), (2,), (2,), (2,), 1),  # stride and dilation coprime: every phase has taps
    ((5, 6), 4, 4, (2, 3), (4, 1), (0, 1), (3, 0), (1, 1), 2),  # stride past the kernel: phases with no tap
    ((20,), 4, 6, (5,), (1,), (0,), (0,), (3,), 2),  # stride 1, dilated: forward phases
]
FORWARD = [  # dilated or 1-D, with enough input channels for the conv template
    ((17,), 16, 6, (3,), (1,), (0,), (1,), 1),
    ((33,), 4, 8, (3,), (3,), (2,), (4,), 2),  # dilated and strided: the kernel spread with zeros
    ((12, 14), 16, 6, (3, 5), (1, 2), (2, 4), (2, 3), 1),
    ((12, 14), 4, 6, (3, 5), (2, 1), (2, 4), (1, 3), 2),  # strided along one axis, dilated along the other
    ((16, 19), 16, 6, (5, 9), (1, 1), (2, 4), (2, 3), 1),  # KernelBench 80's kernel, smaller
    ((9, 10), 16, 2, (3, 2), (1, 1), (0, 5), (4, 3), 1),  # padding past the kernel's reach, an odd phase count
    ((7, 8, 9), 4, 4, (3, 3, 3), (1, 1, 1), (1, 1, 1), (2, 1, 2), 2),
]

DEPTHWISE = [  # one group per input channel
    ((9, 11), 4, 4, (3, 5), (1, 1), (1, 2), (1, 1)),
    ((9, 11), 4, 8, (3, 3), (2, 1), (1, 1), (2, 1)),  # two output channels per input channel, strided, dilated
    ((5, 6, 7), 4, 4, (3, 3, 3), (1, 2, 1), (1, 1, 1), (1, 1, 1)),
    ((20,), 4, 4, (5,), (3,), (2,), (2,)),
]
FEW_CHANNELS = [  # ungrouped, fewer input channels than the conv template's K block
    ((9, 10), 3, 5, (3, 2), (1, 2), (1, 0), (1, 2)),
    ((6, 7, 8), 3, 4, (3, 3, 3), (1, 1, 1), (0, 0, 0), (1, 1, 1)),
    ((12,), 2, 3, (3,), (2,), (1,), (2,)),
    ((23, 21), 3, 4, (11, 11), (4, 4), (2, 2), (1, 1)),  # KernelBench 50's first AlexNet layer, smaller
]


def _transposed(size, c_in, c_out, kernel, stride, padding, output_padding, dilation, groups):
    torch.manual_seed(0)
    x = torch.randn(2, c_in, *size, dtype=torch.float64)
    weight = torch.randn(c_in, c_out // groups, *kernel, dtype=torch.float64)
    bias = torch.randn(c_out, dtype=torch.float64)
    conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[len(size)]
    expected = conv(x, weight, bias, stride, padding, output_padding, groups, dilation)
    args = (x, weight, bias, stride, padding, dilation, True, output_padding, groups)
    return args, expected


def _forward(size, c_in, c_out, kernel, stride, padding, dilation, groups):
    torch.manual_seed(0)
    x = torch.randn(2, c_in, *size, dtype=torch.float64)
    weight = torch.randn(c_out, c_in // groups, *kernel, dtype=torch.float64)
    bias = torch.randn(c_out, dtype=torch.float64)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[len(size)]
    expected = conv(x, weight, bias, stride, padding, dilation, groups)
    args = (x, weight, bias, stride, padding, dilation, False, [0] * len(size), groups)
    return args, expected


@pytest.mark.parametrize("case", TRANSPOSED, ids=str)
def test_a_transposed_convolution_is_forward_ones_of_the_padded_input(case):
    args, expected = _transposed(*case)
    got = convolution(*args)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", FORWARD, ids=str)
def test_a_dilated_or_1d_convolution_is_an_undilated_2d_or_3d_one(case):
    args, expected = _forward(*case)
    torch.testing.assert_close(convolution(*args), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", DEPTHWISE, ids=str)
def test_a_depthwise_convolution_is_a_sum_over_its_taps(case):
    size, c_in, c_out, kernel, stride, padding, dilation = case
    args, expected = _forward(size, c_in, c_out, kernel, stride, padding, dilation, c_in)
    traced = make_fx(lambda *a: aten_convolution(*a, *args[3:]), decomposition_table=templates_table())(*args[:3])
    assert not [node for node in traced.graph.nodes if "convolution" in str(node.target)]
    got = traced(*args[:3])
    assert got.is_contiguous()
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", FEW_CHANNELS, ids=str)
def test_a_convolution_of_few_channels_is_a_product_of_the_inputs_patches(case):
    args, expected = _forward(*case, 1)
    traced = make_fx(lambda *a: aten_convolution(*a, *args[3:]), decomposition_table=templates_table())(*args[:3])
    ops = {node.target for node in traced.graph.nodes if node.op == "call_function"}
    assert torch.ops.aten.mm.default in ops and not [op for op in ops if "convolution" in str(op)]
    got = traced(*args[:3])
    assert got.shape == expected.shape and got.is_contiguous()
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def test_a_convolution_the_templates_take_is_left_to_inductor():
    x, weight, _, *rest = _forward((8, 8), 4, 6, (3, 3), (2, 2), (1, 1), (1, 1), 2)[0]
    assert convolution(x, weight, None, *rest) is NotImplemented


def test_on_the_cpu_no_convolution_reaches_inductor_with_a_bias():
    """Inductor's conv template has no bias input, and on the CPU Inductor does not peel the bias off: traced with
    the table, every convolution is bias-free and the bias is an add after it."""
    args, expected = _forward((8, 8), 16, 6, (3, 3), (1, 1), (1, 1), (1, 1), 1)
    x, weight, bias, *rest = args
    traced = make_fx(lambda x, w, b: aten_convolution(x, w, b, *rest), decomposition_table=templates_table())(
        x, weight, bias
    )
    convolutions = [node for node in traced.graph.nodes if node.target == torch.ops.aten.convolution.default]
    assert convolutions and all(node.args[2] is None for node in convolutions)
    torch.testing.assert_close(traced(x, weight, bias), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "made",
    [
        lambda: _transposed(*TRANSPOSED[2]),
        lambda: _transposed(*TRANSPOSED[3]),
        lambda: _transposed(*TRANSPOSED[6]),
        lambda: _forward(*FORWARD[1]),
        lambda: _forward(*FORWARD[4]),
        lambda: _forward(*DEPTHWISE[1], DEPTHWISE[1][1]),
        lambda: _forward(*FEW_CHANNELS[1], 1),
    ],
    ids=[
        "transposed, stride 1",
        "transposed 2-D, strided, grouped",
        "transposed 3-D, strided",
        "1-D, dilated",
        "2-D, dilated by phase",
        "depthwise 2-D, two outputs per channel",
        "3-D, three input channels",
    ],
)
def test_inductor_compiles_the_rewritten_convolutions_to_the_same_result(made):
    """Through torch.compile with the table, as the templates capture does: the rewrite traces (static shapes,
    no data-dependent op) and Inductor's code computes what eager does."""
    (x, weight, bias, *rest), expected = made()
    table = templates_table()

    def conv(x, weight, bias):
        return aten_convolution(x, weight, bias, *rest)

    torch._dynamo.reset()
    compiled = torch.compile(conv, backend=lambda gm, inputs: compile_fx(gm, inputs, decompositions=table))
    torch.testing.assert_close(compiled(x, weight, bias), expected, rtol=1e-10, atol=1e-10)


def test_a_view_after_a_rewritten_convolution_compiles():
    """PyTorch's convolution output is contiguous and user code views it so (a flatten before a linear layer); the
    patches product came out channels last, and the view failed inside torch.compile."""
    torch.manual_seed(0)
    weight = torch.randn(8, 3, 3, 3)

    def features(x):
        y = F.conv2d(x, weight, padding=1)
        return y.view(y.shape[0], -1) * 2

    x = torch.randn(2, 3, 8, 8)
    table = templates_table()
    torch._dynamo.reset()
    compiled = torch.compile(features, backend=lambda gm, inputs: compile_fx(gm, inputs, decompositions=table))
    torch.testing.assert_close(compiled(x), features(x), rtol=1e-5, atol=1e-5)


def aten_convolution(*args):
    return torch.ops.aten.convolution.default(*args)
