"""Library convolutions in Inductor's launcher replaced by the project's kernel: what is replaced, and what is
refused with a reason (the golden captures in test_inductor_rewrite.py cover real launchers end to end)."""

from __future__ import annotations

import ast

import pytest

from model_server.backends.inductor import OWN_CONV_TILES
from model_server.inductor.conv_calls import ConvCallError, replace_convolutions

EXAMPLES = {
    "arg0_1": ("(8, 32, 3, 3)", "(288, 9, 3, 1)", "torch.float32"),
    "arg1_1": ("(2, 32, 10, 10)", "(3200, 100, 10, 1)", "torch.float32"),
    "arg2_1": ("(2, 32, 10, 10)", "(3200, 100, 10, 1)", "torch.float16"),
    "arg3_1": ("(8,)", "(1,)", "torch.float32"),
}
CALL = "buf0 = extern_kernels.convolution({x}, arg0_1, {bias}, stride=(1, 1), padding=(1, 1), dilation=(1, 1), " \
    "transposed={transposed}, output_padding=(0, 0), groups={groups})"  # fmt: skip
RESULT = "assert_size_stride(buf0, (2, 8, 10, 10), (800, 100, 10, 1), 'torch.ops.aten.convolution.default')"


def _launcher(x="arg1_1", bias="None", transposed="False", groups="1", result=RESULT) -> list[ast.stmt]:
    lines = [CALL.format(x=x, bias=bias, transposed=transposed, groups=groups), result]
    return [ast.parse(line).body[0] for line in lines if line]


def test_a_channels_first_convolution_is_copied_channels_last_then_launched_into_the_asserted_layout():
    statements, kernels = replace_convolutions(_launcher(bias="arg3_1"), EXAMPLES, OWN_CONV_TILES[0], 5)
    assert [k.name for k in kernels] == [
        "channels_last_kernel_5",
        "channels_last_kernel_6",
        "convolution_gemm_kernel_7",
    ]
    text = [ast.unparse(s) for s in statements]
    assert "buf0_x = empty_strided_cuda((2, 32, 10, 10), (3200, 1, 320, 32), torch.float32)" in text
    assert "buf0 = empty_strided_cuda((2, 8, 10, 10), (800, 100, 10, 1), torch.float32)" in text
    launch = next(line for line in text if line.startswith("convolution_gemm_kernel_7.run"))
    assert launch == "convolution_gemm_kernel_7.run(buf0_x, buf0_w, arg3_1, buf0, 2, 1, 1)"
    assert "extern_kernels" not in "\n".join(text)


@pytest.mark.parametrize(
    ("launcher", "reason"),
    [
        (_launcher(transposed="1"), "the convolution's transposed is 1, not True or False"),
        (_launcher(transposed="True"), "32 input channels, weight of 8 input channels, 1 groups"),
        (_launcher(groups="g"), "the convolution's groups is not a constant: g"),
        (_launcher(x="arg2_1"), "the convolution's x is torch.float16; the kernel takes fp32"),
        (_launcher(x="buf9"), "the layout of the convolution's x `buf9` is not known"),
        (_launcher(result=""), "Inductor does not say the size and strides of the convolution's result `buf0`"),
        (_launcher(groups="4"), "32 input channels, weight of 32 per group, 4 groups"),
    ],
    ids=[
        "transposed not a bool",
        "transposed with a forward one's weight",
        "groups not a constant",
        "fp16",
        "unknown input",
        "result not asserted",
        "wrong groups",
    ],
)
def test_a_convolution_the_kernel_cannot_take_is_refused_with_the_reason(launcher, reason):
    with pytest.raises(ConvCallError, match=reason):
        replace_convolutions(launcher, EXAMPLES, OWN_CONV_TILES[0], 0)


def test_a_transposed_convolution_is_launched_by_output_phase_into_the_asserted_layout():
    """A stride-2 transposed convolution: its kernel is the transposed one, its grid covers each of the four
    output phases' row blocks, and its channels-first input and weight are copied with the channels innermost."""
    examples = {**EXAMPLES, "arg0_1": ("(32, 8, 3, 3)", "(72, 9, 3, 1)", "torch.float32")}
    call = CALL.replace("stride=(1, 1)", "stride=(2, 2)").replace("output_padding=(0, 0)", "output_padding=(1, 1)")
    result = "assert_size_stride(buf0, (2, 8, 20, 20), (3200, 400, 20, 1), 'conv')"
    launcher = [ast.parse(call.format(x="arg1_1", bias="arg3_1", transposed="True", groups=1)).body[0]]
    statements, kernels = replace_convolutions([*launcher, ast.parse(result).body[0]], examples, OWN_CONV_TILES[0], 0)
    conv = kernels[-1]
    assert [k.name for k in kernels] == ["channels_last_kernel_0", "channels_last_kernel_1", conv.name]
    assert "Transposed convolution as an implicit GEMM" in conv.source and "PHASES: tl.constexpr = 4" in conv.source
    launch = next(ast.unparse(s) for s in statements if ast.unparse(s).startswith(f"{conv.name}.run"))
    assert launch == f"{conv.name}.run(buf0_x, buf0_w, arg3_1, buf0, 8, 1, 1)"  # 4 phases x ceil(2 * 10 * 10 / 128)


def test_an_ungrouped_convolution_of_few_channels_is_left_to_the_templates_capture():
    examples = {
        **EXAMPLES,
        "arg0_1": ("(8, 3, 3, 3)", "(27, 9, 3, 1)", "torch.float32"),
        "arg1_1": ("(2, 3, 10, 10)", "(300, 100, 10, 1)", "torch.float32"),
    }
    with pytest.raises(ConvCallError, match="an ungrouped convolution of 3 input channels"):
        replace_convolutions(_launcher(), examples, OWN_CONV_TILES[0], 0)


def test_a_depthwise_convolution_is_left_to_the_templates_capture():
    examples = {**EXAMPLES, "arg0_1": ("(32, 1, 3, 3)", "(9, 9, 3, 1)", "torch.float32")}
    result = "assert_size_stride(buf0, (2, 32, 10, 10), (3200, 100, 10, 1), 'conv')"
    with pytest.raises(ConvCallError, match="1 input and 1 output channels per group is too thin"):
        replace_convolutions(_launcher(groups="32", result=result), examples, OWN_CONV_TILES[0], 0)


def test_more_groups_than_a_launch_grid_holds_are_refused():
    groups = 70000
    examples = {
        **EXAMPLES,
        "arg0_1": (f"({groups * 8}, 16, 1, 1)", "(16, 1, 1, 1)", "torch.float32"),
        "arg1_1": (f"(1, {groups * 16}, 1, 1)", f"({groups * 16}, 1, 1, 1)", "torch.float32"),
    }
    result = f"assert_size_stride(buf0, (1, {groups * 8}, 1, 1), ({groups * 8}, 1, 1, 1), 'conv')"
    call = CALL.replace("padding=(1, 1)", "padding=(0, 0)")
    launcher = [ast.parse(call.format(x="arg1_1", bias="None", transposed="False", groups=groups)).body[0]]
    launcher.append(ast.parse(result).body[0])
    with pytest.raises(ConvCallError, match="70000 groups, more than a launch grid's 65535"):
        replace_convolutions(launcher, examples, OWN_CONV_TILES[0], 0)
