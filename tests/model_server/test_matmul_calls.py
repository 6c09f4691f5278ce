"""Library matmuls in Inductor's launcher replaced by the project's kernel: what is replaced, and what is refused
with a reason (the golden captures in test_inductor_rewrite.py cover real launchers end to end)."""

from __future__ import annotations

import ast

import pytest

from model_server.backends.inductor import OWN_MATMUL_TILES
from model_server.inductor.matmul_calls import MatmulCallError, replace_matmuls

EXAMPLES = {
    "arg0_1": ("(256, 524288)", "(524288, 1)", "torch.float32"),
    "arg1_1": ("(524288, 256)", "(256, 1)", "torch.float32"),
    "arg2_1": ("(256, 524288)", "(524288, 1)", "torch.float16"),
    "arg3_1": ("(256,)", "(1,)", "torch.float32"),
    "arg4_1": ("(4, 64, 32)", "(2048, 32, 1)", "torch.float32"),
    "arg5_1": ("(4, 32, 48)", "(1536, 48, 1)", "torch.float32"),
}
OUT = "buf0 = empty_strided_cuda((256, 256), (256, 1), torch.float32)"


def _launcher(*lines: str) -> list[ast.stmt]:
    return [ast.parse(line).body[0] for line in lines]


def test_a_large_k_matmul_is_split_into_a_workspace_and_added_into_inductor_s_buffer():
    launcher = _launcher(OUT, "extern_kernels.mm(arg0_1, arg1_1, out=buf0)", "buf1 = buf0")
    statements, kernels = replace_matmuls(launcher, EXAMPLES, OWN_MATMUL_TILES[0], 3)
    assert [k.name for k in kernels] == ["matmul_gemm_kernel_3", "matmul_splits_kernel_4"]
    assert [k.grid_args for k in kernels] == [3, 1]
    assert [ast.unparse(s) for s in statements] == [
        OUT,
        "buf0_splits = empty_strided_cuda((32, 1, 256, 256), (65536, 65536, 256, 1), torch.float32)",
        "matmul_gemm_kernel_3.run(arg0_1, arg1_1, buf0_splits, 8, 32, 1)",
        "matmul_splits_kernel_4.run(buf0_splits, buf0, 64)",
        "del buf0_splits",
        "buf1 = buf0",
    ]
    assert "input_precision='tf32x3'" in kernels[0].source.replace('"', "'")


def test_an_addmm_with_a_broadcast_bias_and_a_view_launches_one_kernel_with_the_bias():
    launcher = _launcher(
        "buf2 = empty_strided_cuda((64, 48), (48, 1), torch.float32)",
        "extern_kernels.addmm(arg3_1, reinterpret_tensor(arg4_1, (64, 32), (32, 1), 0), "
        "reinterpret_tensor(arg5_1, (32, 48), (48, 1), 0), alpha=1, beta=0.5, out=buf2)",
    )
    examples = {**EXAMPLES, "arg3_1": ("(48,)", "(1,)", "torch.float32")}
    statements, [kernel] = replace_matmuls(launcher, examples, OWN_MATMUL_TILES[1], 0)
    text = [ast.unparse(s) for s in statements]
    assert text[1] == "buf2_a_view = reinterpret_tensor(arg4_1, (64, 32), (32, 1), 0)"
    assert text[-1] == "matmul_gemm_kernel_0.run(buf2_a_view, buf2_b_view, arg3_1, buf2, 1, 1, 1)"
    assert "SC_M: tl.constexpr = 0" in kernel.source and "0.5 * tl.load(bias_ptr" in kernel.source


def test_a_batched_matmul_launches_one_program_column_per_batch():
    launcher = _launcher(
        "buf0 = empty_strided_cuda((4, 64, 48), (3072, 48, 1), torch.float32)",
        "extern_kernels.bmm(arg4_1, arg5_1, out=buf0)",
    )
    statements, [kernel] = replace_matmuls(launcher, EXAMPLES, OWN_MATMUL_TILES[0], 0)
    assert ast.unparse(statements[-1]) == "matmul_gemm_kernel_0.run(arg4_1, arg5_1, buf0, 1, 1, 4)"
    assert "SA_B: tl.constexpr = 2048" in kernel.source


def test_a_buffer_reused_as_a_view_has_the_view_s_layout_as_operand_and_as_output():
    """Inductor reuses a dead buffer as a view (`buf9 = reinterpret_tensor(buf5, ...); del buf5`) and passes it to
    the matmul, or has the matmul write into it: as an attention block's projections do."""
    launcher = _launcher(
        "buf5 = empty_strided_cuda((4, 64, 32), (2048, 32, 1), torch.float32)",
        "buf9 = reinterpret_tensor(buf5, (256, 32), (32, 1), 0)",
        "del buf5",
        "buf10 = reinterpret_tensor(arg4_1, (256, 48), (48, 1), 0)",
        "extern_kernels.mm(buf9, reinterpret_tensor(arg5_1, (32, 48), (48, 1), 0), out=buf10)",
    )
    statements, [kernel] = replace_matmuls(launcher, EXAMPLES, OWN_MATMUL_TILES[0], 0)
    assert ast.unparse(statements[-1]) == "matmul_gemm_kernel_0.run(buf9, buf10_b_view, buf10, 2, 1, 1)"
    assert "SA_M: tl.constexpr = 32" in kernel.source


def test_operands_whose_rows_start_off_16_byte_boundaries_are_copied_into_padded_rows_first():
    examples = {
        "arg0_1": ("(67, 147)", "(147, 1)", "torch.float32"),
        "arg1_1": ("(147, 96)", "(96, 1)", "torch.float32"),
        "arg2_1": ("(600,)", "(1,)", "torch.float32"),
    }
    launcher = _launcher(
        "buf0 = empty_strided_cuda((67, 96), (96, 1), torch.float32)",
        "extern_kernels.mm(arg0_1, reinterpret_tensor(arg2_1, (147, 96), (96, 1), 2), out=buf0)",
    )
    statements, kernels = replace_matmuls(launcher, examples, OWN_MATMUL_TILES[0], 0)
    assert [k.name for k in kernels] == ["matmul_align_kernel_0", "matmul_align_kernel_1", "matmul_gemm_kernel_2"]
    text = [ast.unparse(s) for s in statements]
    assert text[2:] == [
        "buf0_a_aligned = empty_strided_cuda((1, 67, 147), (9916, 148, 1), torch.float32)",
        "matmul_align_kernel_0.run(arg0_1, buf0_a_aligned, 3, 2)",
        "buf0_b_aligned = empty_strided_cuda((1, 147, 96), (14112, 96, 1), torch.float32)",
        "matmul_align_kernel_1.run(buf0_b_view, buf0_b_aligned, 5, 1)",
        "matmul_gemm_kernel_2.run(buf0_a_aligned, buf0_b_aligned, buf0, 2, 1, 1)",
    ]
    assert "SA_M: tl.constexpr = 148" in kernels[2].source and "SB_K: tl.constexpr = 96" in kernels[2].source


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        ("extern_kernels.mm(arg2_1, arg1_1, out=buf0)", "the matmul's a is torch.float16; the kernel takes fp32"),
        ("extern_kernels.mm(buf9, arg1_1, out=buf0)", "the layout of the matmul's a `buf9` is not known"),
        ("extern_kernels.mm(arg1_1, arg1_1, out=buf0)", r"operands of sizes \(524288, 256\), \(524288, 256\)"),
        ("buf0 = extern_kernels.mm(arg0_1, arg1_1)", "a library matmul whose result is not written `out=`"),
        ("extern_kernels.mm(arg0_1, arg1_1, out=buf0, alpha=a)", "the matmul's alpha is not a constant"),
        ("extern_kernels.addmm(arg4_1, arg0_1, arg1_1, out=buf0)", "an addmm bias of 3 dims"),
        ("extern_kernels.bmm(arg0_1, arg1_1, out=buf0)", "the matmul's a has 2 dims, not 3"),
        ("extern_kernels.mm(arg0_1, arg1_1, buf0)", "an `extern_kernels.mm` call of an unexpected form"),
    ],
    ids=[
        "fp16",
        "unknown operand",
        "sizes disagree",
        "assigned",
        "alpha not constant",
        "bias dims",
        "bmm of 2-D",
        "positional out",
    ],
)
def test_a_matmul_the_kernel_cannot_take_is_refused_with_the_reason(call, reason):
    with pytest.raises(MatmulCallError, match=reason):
        replace_matmuls(_launcher(OUT, call), EXAMPLES, OWN_MATMUL_TILES[0], 0)
