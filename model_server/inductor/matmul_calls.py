"""Inductor's library matmuls (`extern_kernels.mm`, `addmm`, `bmm`) as launches of the project's own Triton kernel.

The launcher's statement `extern_kernels.mm(a, b, out=bufN)` becomes a launch of the kernel of `matmul_gemm.py`
writing `bufN`, which Inductor allocated with the size and strides its later kernels read; where K is split, a
workspace is allocated first and a second kernel adds the splits into `bufN`. An operand whose rows do not start on
16-byte boundaries is first copied into padded rows by a Triton kernel.
"""

from __future__ import annotations

import ast

from model_server.inductor.launcher import (
    FP32,
    Layout,
    OwnKernel,
    UnknownLayout,
    follow_alias,
    fp32_operand,
    known_layouts,
    named,
    parse,
)
from model_server.inductor.matmul_gemm import (
    ALIGNMENT,
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
    with_padded_copy,
)

SIGNATURES = {
    "extern_kernels.mm": ("a", "b"),
    "extern_kernels.bmm": ("a", "b"),
    "extern_kernels.addmm": ("bias", "a", "b"),
}


class MatmulCallError(ValueError):
    """A library matmul the project's kernel does not take; the message says which and why."""


def replace_matmuls(
    statements: list[ast.stmt], examples: dict[str, tuple[str, str, str]], matmul: dict, first_index: int
) -> tuple[list[ast.stmt], list[OwnKernel]]:
    """The launcher's statements with every library matmul replaced, and the kernels they launch.

    `examples` are the graph inputs' (size, stride, dtype) texts; `matmul` holds the tile (BLOCK_M/N/K, GROUP_M,
    num_warps, num_stages) and the dots' `precision`; kernels are numbered from `first_index`."""
    layouts = known_layouts(statements, examples)
    out: list[ast.stmt] = []
    kernels: list[OwnKernel] = []
    for stmt in statements:
        call = _matmul_call(stmt)
        if call is None:
            follow_alias(stmt, layouts)
            out.append(stmt)
            continue
        replacement, made = _replacement(call, layouts, matmul, first_index + len(kernels))
        out += replacement
        kernels += made
    return out, kernels


def _matmul_call(stmt: ast.stmt) -> ast.Call | None:
    call = stmt.value if isinstance(stmt, ast.Expr | ast.Assign) else None
    if not isinstance(call, ast.Call) or ast.unparse(call.func) not in SIGNATURES:
        return None
    if isinstance(stmt, ast.Expr):
        return call
    raise MatmulCallError(f"a library matmul whose result is not written `out=`: {ast.unparse(stmt)[:120]}")


def _replacement(
    call: ast.Call, layouts: dict[str, Layout], matmul: dict, index: int
) -> tuple[list[ast.stmt], list[OwnKernel]]:
    """The statements that compute the call's `out` with the project's kernels."""
    arguments = _arguments(call)
    spec = _matmul(call, arguments, layouts)
    tile = {key: matmul[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    split = split_of(spec, tile)
    statements: list[ast.stmt] = []
    kernels: list[OwnKernel] = []
    stem = arguments["out"].id if isinstance(arguments["out"], ast.Name) else f"matmul_{index}"
    texts = {key: named(arguments[key], f"{stem}_{key}_view", statements) for key in ("a", "b")}
    for key, size in (("a", (spec.batch, spec.m, spec.k)), ("b", (spec.batch, spec.k, spec.n))):
        stride = getattr(spec, f"{key}_stride")
        if aligned(size, stride) and _offset_aligned(arguments[key]):
            continue
        copy, padded = f"matmul_align_kernel_{index + len(kernels)}", f"{stem}_{key}_aligned"
        kernels.append(OwnKernel(copy, copy_source(copy, size, stride), 4, 1, 2))
        statements += parse(
            f"{padded} = empty_strided_cuda({size}, {padded_stride(size)}, {FP32})",
            f"{copy}.run({texts[key]}, {padded}, {', '.join(map(str, copy_grid(size)))})",
        )
        spec = with_padded_copy(spec, key)
        texts[key] = padded
    target = named(arguments["out"], f"{stem}_out_view", statements)
    bias = [named(arguments["bias"], f"{stem}_bias_view", statements)] if spec.bias_stride else []
    name = f"matmul_gemm_kernel_{index + len(kernels)}"
    source = kernel_source(name, spec, tile, matmul["precision"], split)
    kernels.append(OwnKernel(name, source, matmul["num_warps"], matmul["num_stages"], 3))
    launch = ", ".join(map(str, grid(spec, tile, split)))
    if split == 1:
        statements += parse(f"{name}.run({texts['a']}, {texts['b']}, {', '.join([*bias, target])}, {launch})")
        return statements, kernels
    work, reduce = f"{stem}_splits", f"matmul_splits_kernel_{index + len(kernels)}"
    kernels.append(OwnKernel(reduce, reduce_source(reduce, spec, split), 4, 1, 1))
    size = (split, spec.batch, spec.m, spec.n)
    strides = (spec.batch * spec.m * spec.n, spec.m * spec.n, spec.n, 1)
    statements += parse(
        f"{work} = empty_strided_cuda({size}, {strides}, {FP32})",
        f"{name}.run({texts['a']}, {texts['b']}, {work}, {launch})",
        f"{reduce}.run({', '.join([work, *bias, target])}, {reduce_grid(spec)})",
        f"del {work}",
    )
    return statements, kernels


def _offset_aligned(node: ast.expr) -> bool:
    """Whether the operand starts on a 16-byte boundary: a name (its own allocation), or a view whose element offset
    is a constant multiple of ALIGNMENT."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "reinterpret_tensor" and len(node.args) == 4:
        offset = node.args[3]
        return isinstance(offset, ast.Constant) and isinstance(offset.value, int) and offset.value % ALIGNMENT == 0
    return False


def _arguments(call: ast.Call) -> dict[str, ast.expr]:
    function = ast.unparse(call.func)
    names = SIGNATURES[function]
    arguments = dict(zip(names, call.args))
    arguments.update({k.arg: k.value for k in call.keywords if k.arg})
    if len(call.args) > len(names) or set(arguments) - {*names, "out", "alpha", "beta"} or "out" not in arguments:
        raise MatmulCallError(f"an `{function}` call of an unexpected form: {ast.unparse(call)[:160]}")
    return arguments


def _matmul(call: ast.Call, arguments: dict[str, ast.expr], layouts: dict[str, Layout]) -> MatmulSpec:
    """The matmul the call computes, checked: fp32 operands of sizes that agree."""
    batched = ast.unparse(call.func) == "extern_kernels.bmm"
    a, b, out = (_operand(arguments, key, layouts, 3 if batched else 2) for key in ("a", "b", "out"))
    a_size, b_size, out_size = (_batched(layout.size) for layout in (a, b, out))
    batch, m, k = a_size
    n = b_size[2]
    if b_size != (batch, k, n) or out_size != (batch, m, n):
        raise MatmulCallError(f"operands of sizes {a.size}, {b.size} and a result of {out.size} do not agree")
    bias_stride = None
    if "bias" in arguments:
        bias = _operand(arguments, "bias", layouts, None)
        bias_stride = _broadcast_stride(bias, (m, n))
    spec = MatmulSpec(
        batch,
        m,
        n,
        k,
        _batched(a.stride, 0),
        _batched(b.stride, 0),
        _batched(out.stride, 0),
        bias_stride,
        _scalar(arguments, "alpha"),
        _scalar(arguments, "beta"),
    )
    try:
        spec.check()
    except MatmulShapeError as exc:
        raise MatmulCallError(str(exc)) from exc
    return spec


def _operand(arguments: dict[str, ast.expr], key: str, layouts: dict[str, Layout], dims: int | None) -> Layout:
    try:
        layout = fp32_operand(arguments[key], layouts, f"matmul's {key}")
    except UnknownLayout as exc:
        raise MatmulCallError(str(exc)) from exc
    if dims is not None and len(layout.size) != dims:
        raise MatmulCallError(f"the matmul's {key} has {len(layout.size)} dims, not {dims}")
    return layout


def _batched(values: tuple[int, ...], fill: int = 1) -> tuple[int, int, int]:
    """A 2-D size or stride as a batch of one (size 1, stride 0); a 3-D one as it is."""
    return (fill, *values) if len(values) == 2 else (values[0], values[1], values[2])


def _broadcast_stride(bias: Layout, shape: tuple[int, int]) -> tuple[int, int, int]:
    """The bias's strides over (batch, M, N) as it broadcasts against an (M, N) result: 0 along every dim it
    repeats. A bias that does not broadcast to the result is refused."""
    if len(bias.size) > 2:
        raise MatmulCallError(f"an addmm bias of {len(bias.size)} dims")
    size = (1,) * (2 - len(bias.size)) + bias.size
    stride = (0,) * (2 - len(bias.stride)) + bias.stride
    if any(s not in (1, full) for s, full in zip(size, shape)):
        raise MatmulCallError(f"an addmm bias of size {bias.size} for a result of size {shape}")
    return (0, *(0 if s == 1 and full > 1 else st for s, st, full in zip(size, stride, shape)))


def _scalar(arguments: dict[str, ast.expr], key: str) -> float:
    if key not in arguments:
        return 1.0
    try:
        value = ast.literal_eval(arguments[key])
    except (ValueError, TypeError, SyntaxError) as exc:
        raise MatmulCallError(f"the matmul's {key} is not a constant: {ast.unparse(arguments[key])[:80]}") from exc
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MatmulCallError(f"the matmul's {key} is {value!r}, not a number")
    return float(value)
