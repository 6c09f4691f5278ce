"""What the rewrites that swap a library call for the project's own kernel read from Inductor's launcher: the size,
stride and dtype of each tensor it names, and the kernels a replacement launches."""

from __future__ import annotations

import ast
from dataclasses import dataclass

FP32 = "torch.float32"


class UnknownLayout(ValueError):
    """An operand whose size, stride or dtype the launcher does not say, or not fp32; the message names it."""


@dataclass(frozen=True)
class OwnKernel:
    """A kernel the replacement launches: its name, source and launch configuration."""

    name: str
    source: str
    num_warps: int
    num_stages: int
    grid_args: int


@dataclass(frozen=True)
class Layout:
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str | None


def known_layouts(statements: list[ast.stmt], examples: dict[str, tuple[str, str, str]]) -> dict[str, Layout]:
    """Size, stride and dtype of every tensor the launcher names: graph inputs, allocations, asserted results."""
    layouts = {}
    for name, (size, stride, dtype) in examples.items():
        size, stride = literal(ast.parse(size, mode="eval").body), literal(ast.parse(stride, mode="eval").body)
        if size is not None and stride is not None:  # not a symbolic size
            layouts[name] = Layout(size, stride, dtype)
    for stmt in statements:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and isinstance(stmt.targets[0], ast.Name):
            name, call = stmt.targets[0].id, stmt.value
            if ast.unparse(call.func).startswith("empty_strided") and len(call.args) == 3:
                size, stride = literal(call.args[0]), literal(call.args[1])
                if size is not None and stride is not None:
                    layouts[name] = Layout(size, stride, ast.unparse(call.args[2]))
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if ast.unparse(call.func) == "assert_size_stride" and len(call.args) >= 3:
                name = ast.unparse(call.args[0])
                size, stride = literal(call.args[1]), literal(call.args[2])
                if size is not None and stride is not None:
                    known = layouts.get(name)
                    layouts[name] = Layout(size, stride, known.dtype if known else None)
    return layouts


def follow_alias(stmt: ast.stmt, layouts: dict[str, Layout]) -> None:
    """`buf7 = buf6` or `buf9 = reinterpret_tensor(buf5, size, stride, offset)` (Inductor reusing a buffer, as
    itself or as a view of it): the new name has the old one's layout, or the view's."""
    if not isinstance(stmt, ast.Assign):
        return
    try:
        layout = operand_layout(stmt.value, layouts, "reused buffer")
    except UnknownLayout:
        return
    for target in stmt.targets:
        if isinstance(target, ast.Name):
            layouts[target.id] = layout


def operand_layout(node: ast.expr, layouts: dict[str, Layout], what: str) -> Layout:
    """The layout of the tensor `node`: a name the launcher knows, or Inductor's view of one
    (`reinterpret_tensor(base, size, stride, offset)`, passed as a tensor, so its offset is in its pointer). `what`
    names it in the error."""
    if isinstance(node, ast.Name) and node.id in layouts:
        return layouts[node.id]
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "reinterpret_tensor" and len(node.args) == 4:
        base = layouts.get(ast.unparse(node.args[0]))
        size, stride = literal(node.args[1]), literal(node.args[2])
        if base is not None and size is not None and stride is not None:
            return Layout(size, stride, base.dtype)
    raise UnknownLayout(f"the layout of the {what} `{ast.unparse(node)[:80]}` is not known")


def fp32_operand(node: ast.expr, layouts: dict[str, Layout], what: str) -> Layout:
    """`operand_layout`, for a kernel that takes fp32 only: another dtype, or none known, is refused too."""
    layout = operand_layout(node, layouts, what)
    if layout.dtype != FP32:
        raise UnknownLayout(f"the {what} is {layout.dtype or 'of unknown dtype'}; the kernel takes fp32")
    return layout


def literal(node: ast.expr) -> tuple[int, ...] | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return None
    return tuple(value) if isinstance(value, tuple) and all(isinstance(v, int) for v in value) else None


def named(node: ast.expr, name: str, statements: list[ast.stmt]) -> str:
    """A name for the operand: its own, or `name` bound to it (a launch passes names, not Inductor's views)."""
    if isinstance(node, ast.Name):
        return node.id
    statements.append(ast.Assign([ast.Name(name, ast.Store())], node, lineno=0))
    return name


def parse(*lines: str) -> list[ast.stmt]:
    return [ast.parse(line).body[0] for line in lines]


def extent(size: tuple[int, ...], stride: tuple[int, ...]) -> int:
    """One past the largest element offset a tensor of this size and stride reaches."""
    return 1 + sum((s - 1) * abs(st) for s, st in zip(size, stride))
