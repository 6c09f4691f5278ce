"""Inductor's library convolutions (`extern_kernels.convolution`) as launches of the project's own Triton kernel.

The launcher's statement `bufN = extern_kernels.convolution(x, w, ...)` becomes an allocation of `bufN` with the
size and strides Inductor asserts for the library's result (so its later kernels read it as they would have), and
a launch of the implicit-GEMM kernel of `conv_gemm.py`. An input or weight of at least `MIN_CHANNEL_BLOCK`
channels whose channels are not innermost is first copied channels last by a Triton kernel: the tiles load a
block of channels per position, contiguous only in that layout (read channels first, the kernel's best tile ran
at 0.66-0.92x of cuDNN's fp32; channels last, at 2.0-2.2x: `benchmarks/conv_gemm.py`).
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, replace

from model_server.inductor.conv_gemm import (
    MIN_CHANNEL_BLOCK,
    ConvShapeError,
    ConvSpec,
    channels_last,
    grid,
    kernel_source,
    relayout_grid,
    relayout_source,
)

SIGNATURE = ("x", "weight", "bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups")
CALL = "extern_kernels.convolution"
FP32 = "torch.float32"
MIN_GROUP_OUT = 8  # fewer output channels per group would leave most of a tile's columns idle
MAX_GRID_Z = 65535  # CUDA's limit on a launch grid's z size, which counts the groups


class ConvCallError(ValueError):
    """A library convolution the project's kernel does not take; the message says which and why."""


@dataclass(frozen=True)
class OwnKernel:
    """A kernel the replacement launches: its name, source and launch configuration."""

    name: str
    source: str
    num_warps: int
    num_stages: int
    grid_args: int


@dataclass(frozen=True)
class _Layout:
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str | None


def replace_convolutions(
    statements: list[ast.stmt], examples: dict[str, tuple[str, str, str]], conv: dict, first_index: int
) -> tuple[list[ast.stmt], list[OwnKernel]]:
    """The launcher's statements with every library convolution replaced, and the kernels they launch.

    `examples` are the graph inputs' (size, stride, dtype) texts; `conv` holds the tile (BLOCK_M/N/K, num_warps,
    num_stages) and the dots' `precision`; kernels are numbered from `first_index`."""
    layouts = _known_layouts(statements, examples)
    out: list[ast.stmt] = []
    kernels: list[OwnKernel] = []
    for stmt in statements:
        call = _convolution_call(stmt)
        if call is None:
            _follow_alias(stmt, layouts)
            out.append(stmt)
            continue
        target = ast.unparse(stmt.targets[0])
        replacement, made = _replacement(target, call, layouts, conv, first_index + len(kernels))
        layouts[target] = _Layout(layouts[target].size, layouts[target].stride, FP32)
        out += replacement
        kernels += made
    return out, kernels


def _follow_alias(stmt: ast.stmt, layouts: dict[str, _Layout]) -> None:
    """`buf7 = buf6` (Inductor reusing a buffer): the new name has the old one's layout."""
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id in layouts:
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                layouts[target.id] = layouts[stmt.value.id]


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


def _known_layouts(statements: list[ast.stmt], examples: dict[str, tuple[str, str, str]]) -> dict[str, _Layout]:
    """Size, stride and dtype of every tensor the launcher names: graph inputs, allocations, asserted results."""
    layouts = {}
    for name, (size, stride, dtype) in examples.items():
        size, stride = _literal(ast.parse(size, mode="eval").body), _literal(ast.parse(stride, mode="eval").body)
        if size is not None and stride is not None:  # not a symbolic size
            layouts[name] = _Layout(size, stride, dtype)
    for stmt in statements:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and isinstance(stmt.targets[0], ast.Name):
            name, call = stmt.targets[0].id, stmt.value
            if ast.unparse(call.func).startswith("empty_strided") and len(call.args) == 3:
                size, stride = _literal(call.args[0]), _literal(call.args[1])
                if size is not None and stride is not None:
                    layouts[name] = _Layout(size, stride, ast.unparse(call.args[2]))
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if ast.unparse(call.func) == "assert_size_stride" and len(call.args) >= 3:
                name = ast.unparse(call.args[0])
                size, stride = _literal(call.args[1]), _literal(call.args[2])
                if size is not None and stride is not None:
                    known = layouts.get(name)
                    layouts[name] = _Layout(size, stride, known.dtype if known else None)
    return layouts


def _literal(node: ast.expr) -> tuple[int, ...] | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return None
    return tuple(value) if isinstance(value, tuple) and all(isinstance(v, int) for v in value) else None


def _replacement(
    target: str, call: ast.Call, layouts: dict[str, _Layout], conv: dict, index: int
) -> tuple[list[ast.stmt], list[OwnKernel]]:
    """The statements that compute `target = extern_kernels.convolution(...)` with the project's kernels."""
    arguments = _arguments(call)
    spec = _convolution(target, arguments, layouts)
    statements, kernels = [], []
    texts = {key: _named(arguments[key], f"{target}_{key}_view", statements) for key in ("x", "weight")}
    if spec.w_size[1] >= MIN_CHANNEL_BLOCK:  # the tiles read a block of channels: copy them innermost
        for key, suffix, size, stride in (
            ("x", "x", spec.x_size, spec.x_stride),
            ("weight", "w", spec.w_size, spec.w_stride),
        ):
            if stride[1] == 1:
                continue
            name, copy = f"{target}_{suffix}", f"channels_last_kernel_{index + len(kernels)}"
            kernels.append(OwnKernel(copy, relayout_source(copy, size, stride), 4, 1, 2))
            statements += _parse(
                f"{name} = empty_strided_cuda({size}, {channels_last(size)}, {FP32})",
                f"{copy}.run({texts[key]}, {name}, {', '.join(map(str, relayout_grid(size)))})",
            )
            spec = replace(spec, **{f"{suffix}_stride": channels_last(size)})
            texts[key] = name
    name = f"convolution_gemm_kernel_{index + len(kernels)}"
    tile = {key: conv[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    source = kernel_source(name, spec, tile, conv["precision"])
    kernels.append(OwnKernel(name, source, conv["num_warps"], conv["num_stages"], 3))
    operands = [texts["x"], texts["weight"], *([ast.unparse(arguments["bias"])] if spec.bias else []), target]
    statements += _parse(
        f"{target} = empty_strided_cuda({spec.out_size}, {spec.out_stride}, {FP32})",
        f"{name}.run({', '.join(operands)}, {', '.join(map(str, grid(spec, tile)))})",
    )
    return statements, kernels


def _convolution(target: str, arguments: dict[str, ast.expr], layouts: dict[str, _Layout]) -> ConvSpec:
    """The convolution the call computes, checked: a forward one of consistent sizes, in fp32, thick enough."""
    if _constant(arguments, "transposed", False) is not False:
        raise ConvCallError("a transposed convolution (the templates capture rewrites those as forward ones)")
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
    spec = ConvSpec(
        x.size, x.stride, weight.size, weight.stride, result.size, result.stride, *geometry, groups, has_bias
    )
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


def _operand(arguments: dict[str, ast.expr], key: str, layouts: dict[str, _Layout]) -> _Layout:
    """The layout of the tensor passed as `key`: a name the launcher knows, or Inductor's view of one."""
    node = arguments[key]
    if isinstance(node, ast.Name) and node.id in layouts:
        layout = layouts[node.id]
    elif isinstance(node, ast.Call) and ast.unparse(node.func) == "reinterpret_tensor" and len(node.args) == 4:
        base = layouts.get(ast.unparse(node.args[0]))
        size, stride = _literal(node.args[1]), _literal(node.args[2])
        if base is None or size is None or stride is None:
            raise ConvCallError(f"the layout of the convolution's {key} `{ast.unparse(node)[:80]}` is not known")
        layout = _Layout(size, stride, base.dtype)
    else:
        raise ConvCallError(f"the layout of the convolution's {key} `{ast.unparse(node)[:80]}` is not known")
    if layout.dtype != FP32:
        raise ConvCallError(f"the convolution's {key} is {layout.dtype or 'of unknown dtype'}; the kernel takes fp32")
    return layout


def _named(node: ast.expr, name: str, statements: list[ast.stmt]) -> str:
    """A name for the operand: its own, or `name` bound to it (a launch passes names, not Inductor's views)."""
    if isinstance(node, ast.Name):
        return node.id
    statements.append(ast.Assign([ast.Name(name, ast.Store())], node, lineno=0))
    return name


def _constant(arguments: dict[str, ast.expr], key: str, default: object) -> object:
    if key not in arguments:
        return default
    try:
        return ast.literal_eval(arguments[key])
    except (ValueError, TypeError, SyntaxError) as exc:
        raise ConvCallError(f"the convolution's {key} is not a constant: {ast.unparse(arguments[key])[:80]}") from exc


def _ints(arguments: dict[str, ast.expr], key: str) -> tuple[int, ...]:
    value = _literal(arguments[key]) if key in arguments else None
    if value is None:
        raise ConvCallError(f"the convolution's {key} is not a tuple of numbers")
    return value


def _check_thickness(spec: ConvSpec) -> None:
    """Refuse a convolution whose channels are too few to fill the tiles, where the templates capture has a better
    rewrite: a depthwise-thin grouped one (a sum over taps), an ungrouped one of few input channels (a product
    of patches, 1.3-3.1x faster than this kernel on KernelBench's, `benchmarks/results/2026-11-28-own-conv`)."""
    group_in, group_out = spec.w_size[1], spec.w_size[0] // spec.groups
    taps = math.prod(spec.w_size[2:])
    if spec.groups > 1 and (group_out < MIN_GROUP_OUT or group_in * taps < MIN_CHANNEL_BLOCK):
        raise ConvCallError(
            f"a grouped convolution of {group_in} input and {group_out} output channels per group is too thin for "
            "the kernel's tiles (the templates capture rewrites a depthwise one as a sum over taps)"
        )
    if spec.groups == 1 and group_in < MIN_CHANNEL_BLOCK:
        raise ConvCallError(
            f"an ungrouped convolution of {group_in} input channels (the templates capture's product of patches "
            "takes it)"
        )
    if spec.groups > MAX_GRID_Z:
        raise ConvCallError(f"{spec.groups} groups, more than a launch grid's {MAX_GRID_Z} (one program per group)")


def _parse(*lines: str) -> list[ast.stmt]:
    return [ast.parse(line).body[0] for line in lines]
