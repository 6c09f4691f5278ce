"""Inductor's library convolutions (`extern_kernels.convolution`) as launches of the project's own Triton kernel.

The launcher's statement `bufN = extern_kernels.convolution(x, w, ...)` becomes an allocation of `bufN` with the
size and strides Inductor asserts for the library's result (so its later kernels read it as they would have), and
a launch of the implicit-GEMM kernel of `conv_gemm.py` (of `conv_transpose_gemm.py` for a transposed one). An
input or weight of at least `MIN_CHANNEL_BLOCK` channels whose channels are not innermost is first copied channels
last by a Triton kernel: the tiles load a block of channels per position, contiguous only in that layout (read
channels first, the kernel's best tile ran at 0.66-0.92x of cuDNN's fp32; channels last, at 2.0-2.2x:
`benchmarks/conv_gemm.py`).
"""

from __future__ import annotations

import ast
import math
from dataclasses import replace

from model_server.inductor import conv_gemm, conv_transpose_gemm
from model_server.inductor.conv_gemm import (
    MIN_CHANNEL_BLOCK,
    ConvShapeError,
    ConvSpec,
    channels_last,
    relayout_grid,
    relayout_source,
)
from model_server.inductor.launcher import (
    FP32,
    Layout,
    OwnKernel,
    UnknownLayout,
    follow_alias,
    fp32_operand,
    known_layouts,
    literal,
    named,
    parse,
)

SIGNATURE = ("x", "weight", "bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups")
CALL = "extern_kernels.convolution"
MIN_GROUP_OUT = 8  # fewer output channels per group would leave most of a tile's columns idle
MAX_GRID_Z = 65535  # CUDA's limit on a launch grid's z size, which counts the groups


class ConvCallError(ValueError):
    """A library convolution the project's kernel does not take; the message says which and why."""


def replace_convolutions(
    statements: list[ast.stmt], examples: dict[str, tuple[str, str, str]], conv: dict, first_index: int
) -> tuple[list[ast.stmt], list[OwnKernel]]:
    """The launcher's statements with every library convolution replaced, and the kernels they launch.

    `examples` are the graph inputs' (size, stride, dtype) texts; `conv` holds the tile (BLOCK_M/N/K, num_warps,
    num_stages) and the dots' `precision`; kernels are numbered from `first_index`."""
    layouts = known_layouts(statements, examples)
    out: list[ast.stmt] = []
    kernels: list[OwnKernel] = []
    for stmt in statements:
        call = _convolution_call(stmt)
        if call is None:
            follow_alias(stmt, layouts)
            out.append(stmt)
            continue
        target = ast.unparse(stmt.targets[0])
        replacement, made = _replacement(target, call, layouts, conv, first_index + len(kernels))
        layouts[target] = Layout(layouts[target].size, layouts[target].stride, FP32)
        out += replacement
        kernels += made
    return out, kernels


def _convolution_call(stmt: ast.stmt) -> ast.Call | None:
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Call)
        and ast.unparse(stmt.value.func) == CALL
    ):
        return stmt.value
    return None


def _replacement(
    target: str, call: ast.Call, layouts: dict[str, Layout], conv: dict, index: int
) -> tuple[list[ast.stmt], list[OwnKernel]]:
    """The statements that compute `target = extern_kernels.convolution(...)` with the project's kernels."""
    arguments = _arguments(call)
    spec = _convolution(target, arguments, layouts)
    statements, kernels = [], []
    texts = {key: named(arguments[key], f"{target}_{key}_view", statements) for key in ("x", "weight")}
    if spec.group_in >= MIN_CHANNEL_BLOCK:  # the tiles read a block of channels: copy them innermost
        for key, suffix, size, stride in (
            ("x", "x", spec.x_size, spec.x_stride),
            ("weight", "w", spec.w_size, spec.w_stride),
        ):
            if stride[1] == 1:
                continue
            name, copy = f"{target}_{suffix}", f"channels_last_kernel_{index + len(kernels)}"
            kernels.append(OwnKernel(copy, relayout_source(copy, size, stride), 4, 1, 2))
            statements += parse(
                f"{name} = empty_strided_cuda({size}, {channels_last(size)}, {FP32})",
                f"{copy}.run({texts[key]}, {name}, {', '.join(map(str, relayout_grid(size)))})",
            )
            spec = replace(spec, **{f"{suffix}_stride": channels_last(size)})
            texts[key] = name
    name = f"convolution_gemm_kernel_{index + len(kernels)}"
    tile = {key: conv[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    renderer = conv_transpose_gemm if spec.transposed else conv_gemm
    source = renderer.kernel_source(name, spec, tile, conv["precision"])
    kernels.append(OwnKernel(name, source, conv["num_warps"], conv["num_stages"], 3))
    operands = [texts["x"], texts["weight"], *([ast.unparse(arguments["bias"])] if spec.bias else []), target]
    statements += parse(
        f"{target} = empty_strided_cuda({spec.out_size}, {spec.out_stride}, {FP32})",
        f"{name}.run({', '.join(operands)}, {', '.join(map(str, renderer.grid(spec, tile)))})",
    )
    return statements, kernels


def _convolution(target: str, arguments: dict[str, ast.expr], layouts: dict[str, Layout]) -> ConvSpec:
    """The convolution the call computes, checked: of consistent sizes, in fp32, thick enough."""
    transposed = _constant(arguments, "transposed", False)
    if not isinstance(transposed, bool):
        raise ConvCallError(f"the convolution's transposed is {transposed!r}, not True or False")
    x, weight = (_operand(arguments, key, layouts) for key in ("x", "weight"))
    result = layouts.get(target)
    if result is None:
        raise ConvCallError(f"Inductor does not say the size and strides of the convolution's result `{target}`")
    bias = arguments.get("bias")
    has_bias = bias is not None and not (isinstance(bias, ast.Constant) and bias.value is None)
    if has_bias and _operand(arguments, "bias", layouts).stride != (1,):
        raise ConvCallError("the convolution's bias is not contiguous")
    groups = _constant(arguments, "groups", 1)
    if not isinstance(groups, int):
        raise ConvCallError(f"the convolution's groups is {groups!r}, not a number")
    geometry = [_ints(arguments, key) for key in ("stride", "padding", "dilation")]
    sizes = (x.size, x.stride, weight.size, weight.stride, result.size, result.stride)
    spec = ConvSpec(*sizes, *geometry, groups, has_bias, transposed)
    try:
        spec.check()
    except ConvShapeError as exc:
        raise ConvCallError(str(exc)) from exc
    _check_thickness(spec)
    return spec


def _arguments(call: ast.Call) -> dict[str, ast.expr]:
    named = dict(zip(SIGNATURE, call.args))
    named.update({k.arg: k.value for k in call.keywords if k.arg})
    unknown = set(named) - set(SIGNATURE)
    if unknown or "x" not in named or "weight" not in named:
        raise ConvCallError(f"an `{CALL}` call of an unexpected form: {ast.unparse(call)[:160]}")
    return named


def _operand(arguments: dict[str, ast.expr], key: str, layouts: dict[str, Layout]) -> Layout:
    try:
        return fp32_operand(arguments[key], layouts, f"convolution's {key}")
    except UnknownLayout as exc:
        raise ConvCallError(str(exc)) from exc


def _constant(arguments: dict[str, ast.expr], key: str, default: object) -> object:
    if key not in arguments:
        return default
    try:
        return ast.literal_eval(arguments[key])
    except (ValueError, TypeError, SyntaxError) as exc:
        raise ConvCallError(f"the convolution's {key} is not a constant: {ast.unparse(arguments[key])[:80]}") from exc


def _ints(arguments: dict[str, ast.expr], key: str) -> tuple[int, ...]:
    value = literal(arguments[key]) if key in arguments else None
    if value is None:
        raise ConvCallError(f"the convolution's {key} is not a tuple of numbers")
    return value


def _check_thickness(spec: ConvSpec) -> None:
    """Refuse a convolution whose channels are too few to fill the tiles, where the templates capture has a better
    rewrite: a depthwise-thin grouped one (a sum over taps), an ungrouped one of few input channels (a product
    of patches, 1.3-3.1x faster than this kernel on KernelBench's, `benchmarks/results/2026-11-28-own-conv`)."""
    group_in, group_out = spec.group_in, spec.group_out
    taps = math.prod(spec.w_size[2:])
    if spec.groups > 1 and (group_out < MIN_GROUP_OUT or group_in * taps < MIN_CHANNEL_BLOCK):
        raise ConvCallError(
            f"a grouped convolution of {group_in} input and {group_out} output channels per group is too thin for "
            "the kernel's tiles (the templates capture rewrites a depthwise one as a sum over taps)"
        )
    if spec.transposed and group_in < MIN_CHANNEL_BLOCK:
        raise ConvCallError(
            f"a transposed convolution of {group_in} input channels per group (the templates capture rewrites it by "
            "phase; K over channel and tap together ran at 0.22-0.45x of cuDNN on KernelBench L1 73, where the "
            "templates ran at 1.94x)"
        )
    if spec.groups == 1 and group_in < MIN_CHANNEL_BLOCK:
        raise ConvCallError(
            f"an ungrouped convolution of {group_in} input channels (the templates capture's product of patches "
            "takes it)"
        )
    if spec.groups > MAX_GRID_Z:
        raise ConvCallError(f"{spec.groups} groups, more than a launch grid's {MAX_GRID_Z} (one program per group)")
