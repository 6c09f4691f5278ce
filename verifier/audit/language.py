"""TRI1xx: language errors the Triton compiler would raise, found before compiling."""

from __future__ import annotations

import ast

from verifier.audit import budget
from verifier.audit.collector import Collector
from verifier.audit.dataflow import KernelFlow, keyword
from verifier.audit.source_index import (
    WRAPPING_DECORATORS,
    Kernel,
    SourceIndex,
    constexpr_guarded,
    next_power_of_two,
)

SHAPE_ARGUMENTS = {"zeros": (0, "shape"), "full": (0, "shape")}
VARIADIC_SHAPES = {"reshape", "view", "broadcast_to"}
UNSUPPORTED = {
    ast.Try: "try/except",
    ast.With: "`with`",
    ast.AsyncWith: "`async with`",
    ast.Lambda: "lambda",
    ast.Yield: "`yield` (generators)",
    ast.YieldFrom: "`yield from` (generators)",
    ast.Await: "`await`",
    ast.Global: "`global`",
    ast.Nonlocal: "`nonlocal`",
    ast.ClassDef: "a class definition",
    ast.FunctionDef: "a nested function definition",
    ast.AsyncFunctionDef: "a nested function definition",
    ast.Delete: "`del`",
    ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.Raise: "`raise`",
    ast.Set: "a set literal",
    ast.Dict: "a dict literal",
    ast.Break: "`break`",
    ast.Continue: "`continue`",
}
if hasattr(ast, "TryStar"):
    UNSUPPORTED[ast.TryStar] = "try/except*"
if hasattr(ast, "Match"):
    UNSUPPORTED[ast.Match] = "`match`"


def check_kernel(index: SourceIndex, kernel: Kernel, flow: KernelFlow, out: Collector) -> None:
    """Run every TRI1xx rule on one kernel."""
    _unsupported_constructs(index, kernel, out)
    shapes = _Shapes(index, kernel)
    for node in kernel.nodes:
        if not isinstance(node, ast.Call):
            continue
        function = index.tl_function(node)
        if function == "arange":
            _arange(index, kernel, flow, node, out)
        elif function in {"program_id", "num_programs"}:
            _axis(index, node, function, out)
        elif function == "dot":
            _dot_shapes(shapes, flow, node, out)
        if function in SHAPE_ARGUMENTS or function in VARIADIC_SHAPES or function == "make_block_ptr":
            for element in _shape_elements(node, function):
                _shape_parameter(index, kernel, element, function, out)
        if isinstance(node.func, ast.Name):
            _plain_call(index, kernel, node, out)


def check_launches(index: SourceIndex, out: Collector) -> None:
    """TRI108: `f[grid](...)` where `f` is a plain function of this file (and not `f = triton.jit(f)` later)."""
    rebound = {
        target.id
        for stmt in index.tree.body
        if isinstance(stmt, ast.Assign)
        for target in stmt.targets
        if isinstance(target, ast.Name)
    }
    for launch in index.launches:
        function = index.functions.get(launch.kernel)
        if function is None or launch.kernel in index.kernels or launch.kernel in rebound:
            continue
        others = [d for d in function.decorator_list if index.decorator_name(d) not in WRAPPING_DECORATORS]
        if others:
            continue
        anchor = function.decorator_list[0] if function.decorator_list else function
        fix = out.insert(
            "Decorate it with @triton.jit",
            anchor.lineno,
            anchor.col_offset,
            f"@{_jit_spelling(index)}\n" + " " * anchor.col_offset,
        )
        out.add(
            "TRI108",
            launch.call.func,
            f"`{launch.kernel}` is launched with `[grid]` but is not decorated with @triton.jit "
            f"(defined on line {function.lineno}); the launch fails with \"'function' object is not subscriptable\"",
            fix,
        )


def _unsupported_constructs(index: SourceIndex, kernel: Kernel, out: Collector) -> None:
    """TRI105; in a branch chosen by constexpr values, only a warning (Triton compiles just the branch taken),
    and a `raise` there is the usual way to refuse a bad constexpr, so it is fine."""
    guarded = constexpr_guarded(index, kernel)
    for node in kernel.nodes:
        what = UNSUPPORTED.get(type(node))
        if id(node) in guarded and isinstance(node, ast.Raise):
            continue
        if isinstance(node, ast.For | ast.While):
            what = "`else` after a loop" if node.orelse else None
            returns = [n for stmt in node.body for n in index.subtree(stmt) if isinstance(n, ast.Return)]
            if returns:
                out.add(
                    "TRI105",
                    returns[0],
                    f"`return` inside a loop is not supported in a @triton.jit function (`{kernel.name}`); "
                    "keep a flag and return after the loop",
                )
        if what is not None:
            taken = " if the launch's constexpr values select this branch" if id(node) in guarded else ""
            out.add(
                "TRI105",
                _head(node),
                f"{what} is not supported inside a @triton.jit function (`{kernel.name}`); "
                f"the compiler rejects the kernel{taken}",
                severity="warning" if taken else None,
            )


def _head(node: ast.AST) -> ast.AST:
    """For block statements, just the first line (so the whole block is not underlined)."""
    if isinstance(node, ast.stmt) and hasattr(node, "body"):
        head = ast.Pass()
        head.lineno, head.col_offset = node.lineno, node.col_offset
        head.end_lineno, head.end_col_offset = node.lineno, node.col_offset + len(type(node).__name__.lower())
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            head.end_col_offset = node.col_offset + len("def " if not isinstance(node, ast.ClassDef) else "class ")
        return head
    return node


def _arange(index: SourceIndex, kernel: Kernel, flow: KernelFlow, call: ast.Call, out: Collector) -> None:
    start = call.args[0] if call.args else keyword(call, "start")
    end = call.args[1] if len(call.args) > 1 else keyword(call, "end")
    if start is None or end is None:
        return
    low, high = index.const_value(start), index.const_value(end)
    if isinstance(low, int) and isinstance(high, int) and not isinstance(low | high, bool):
        size = high - low
        if size <= 0 or size & (size - 1):
            out.add(
                "TRI101",
                call,
                f"tl.arange({low}, {high}) has {size} elements; Triton needs a power of two. "
                f"Use {next_power_of_two(size)} and mask the extra lanes",
            )
        return
    for bound in (start, end):
        _runtime_bound(index, kernel, flow, bound, out)


def _runtime_bound(index: SourceIndex, kernel: Kernel, flow: KernelFlow, bound: ast.expr, out: Collector) -> None:
    if isinstance(bound, ast.Name) and bound.id in kernel.params and bound.id not in kernel.constexprs:
        out.add(
            "TRI102",
            bound,
            f"tl.arange bound `{bound.id}` is a runtime argument; block sizes must be compile-time constants. "
            f"Annotate the parameter `{bound.id}: tl.constexpr`",
            _constexpr_fix(index, kernel, bound.id, out),
        )
        return
    if isinstance(bound, ast.Name) and bound.id in kernel.assignments:
        tags = flow.tags(bound)
        runtime = sorted(
            t[6:] for t in tags if t.startswith("param:") and t[6:] not in kernel.constexprs and t[6:] != bound.id
        )
        if runtime or {"load", "pid"} & tags:
            source = f"parameter `{runtime[0]}`" if runtime else "a runtime value"
            out.add(
                "TRI102",
                bound,
                f"tl.arange bound `{bound.id}` is computed from {source}; block sizes must be tl.constexpr",
            )


def _axis(index: SourceIndex, call: ast.Call, function: str, out: Collector) -> None:
    axis = call.args[0] if call.args else keyword(call, "axis")
    value = index.const_value(axis) if axis is not None else None
    if isinstance(value, int) and not isinstance(value, bool) and value not in (0, 1, 2):
        out.add("TRI104", axis, f"tl.{function}({value}): the launch grid has axes 0, 1 and 2 only")


def _shape_elements(call: ast.Call, function: str) -> list[ast.expr]:
    if function == "make_block_ptr":
        shape = keyword(call, "block_shape")
        return list(shape.elts) if isinstance(shape, ast.Tuple | ast.List) else []
    if function in SHAPE_ARGUMENTS:
        position, name = SHAPE_ARGUMENTS[function]
        shape = call.args[position] if len(call.args) > position else keyword(call, name)
    else:
        rest = call.args[1:] if isinstance(call.func, ast.Attribute) and _is_module_call(call) else call.args
        shape = rest[0] if len(rest) == 1 else ast.Tuple(elts=list(rest)) if rest else keyword(call, "shape")
    if shape is None:
        return []
    return list(shape.elts) if isinstance(shape, ast.Tuple | ast.List) else [shape]


def _is_module_call(call: ast.Call) -> bool:
    """`tl.reshape(x, ...)` (first argument is the tensor) rather than `x.reshape(...)`."""
    return isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name | ast.Attribute)


def _shape_parameter(index: SourceIndex, kernel: Kernel, element: ast.expr, function: str, out: Collector) -> None:
    if isinstance(element, ast.Name) and element.id in kernel.params and element.id not in kernel.constexprs:
        out.add(
            "TRI103",
            element,
            f"`{element.id}` is used as a block shape in tl.{function} but is a runtime argument; "
            f"annotate it `{element.id}: tl.constexpr`",
            _constexpr_fix(index, kernel, element.id, out),
        )


def _constexpr_fix(index: SourceIndex, kernel: Kernel, name: str, out: Collector) -> dict | None:
    args = kernel.node.args.posonlyargs + kernel.node.args.args + kernel.node.args.kwonlyargs
    arg = next((a for a in args if a.arg == name), None)
    if arg is None:
        return None
    annotation = f"{index.tl_alias()}.constexpr"
    message = f"Annotate `{name}: {annotation}`"
    if arg.annotation is not None:
        return out.replace(message, arg.annotation, annotation)
    return out.insert(message, arg.lineno, arg.col_offset + len(name.encode("utf-8")), f": {annotation}")


def _plain_call(index: SourceIndex, kernel: Kernel, call: ast.Call, out: Collector) -> None:
    name = call.func.id
    function = index.functions.get(name)
    if function is None or name in kernel.params or name in kernel.assignments or function.decorator_list:
        return
    anchor = function
    fix = out.insert(
        f"Decorate `{name}` with @triton.jit",
        anchor.lineno,
        anchor.col_offset,
        f"@{_jit_spelling(index)}\n" + " " * anchor.col_offset,
    )
    out.add(
        "TRI106",
        call.func,
        f"`{name}` (line {function.lineno}) is a plain Python function; a kernel can only call @triton.jit "
        "functions and tl.* builtins. Decorate it with @triton.jit",
        fix,
    )


def _dot_shapes(shapes: _Shapes, flow: KernelFlow, call: ast.Call, out: Collector) -> None:
    if len(call.args) < 2:
        return
    operands = [shapes.of(arg) for arg in call.args[:2]]
    if any(s is None or len(s) != 2 for s in operands):
        return
    (m, k), (_, n) = operands
    small = [(label, v) for label, v in (("M", m), ("K", k), ("N", n)) if isinstance(v, int) and v < 16]
    if not small:
        return
    dims = ", ".join(f"{label}={value}" for label, value in small)
    certain = isinstance(k, int) and (k < 8 or (k < 16 and any("low_precision" in flow.tags(a) for a in call.args[:2])))
    out.add(
        "TRI107",
        call,
        f"tl.dot on a block below 16 ({dims}): fp16/bf16 inputs need K >= 16, fp32 (TF32) inputs K >= 8, and "
        "Triton releases before 3.4 need M, N and K >= 16. Use larger blocks and mask, or multiply with "
        "broadcasting and tl.sum",
        severity=None if certain else "warning",
    )


class _Shapes:
    """Block shapes of a kernel's expressions when they are built from literal sizes (else None).

    Each expression and each name is worked out once per kernel, so a kernel that reassigns names in branches
    and loops costs time in proportion to its size; a name whose shape depends on itself (`a = a * 2 + b` in a
    loop) is unknown.
    """

    def __init__(self, index: SourceIndex, kernel: Kernel):
        self.index = index
        self.kernel = kernel
        self.names: dict[str, tuple | None] = {}
        self.resolving: set[str] = set()

    def of(self, node: ast.AST) -> tuple | None:
        budget.check()
        index = self.index
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Subscript):
            base = self.of(node.value)
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if base is None or len(base) != sum(1 for i in items if isinstance(i, ast.Slice)):
                return None
            dims, rest = [], iter(base)
            for item in items:
                dims.append(next(rest) if isinstance(item, ast.Slice) else 1)
            return tuple(dims) if all(isinstance(i, ast.Slice) or _is_none(i) for i in items) else None
        if isinstance(node, ast.BinOp | ast.Compare):
            parts = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.left, *node.comparators]
            return _broadcast([self.of(p) for p in parts])
        if not isinstance(node, ast.Call):
            return () if index.const_value(node) is not None else None
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr in {"to", "cast"}
            and index.tl_function(node) is None
        ):
            return self.of(node.func.value)
        function = index.tl_function(node)
        if function == "arange" and len(node.args) == 2:
            low, high = (index.const_value(a) for a in node.args)
            return (high - low,) if isinstance(low, int) and isinstance(high, int) else None
        if function in {"zeros", "full"} and node.args:
            shape = node.args[0]
            elements = shape.elts if isinstance(shape, ast.Tuple | ast.List) else None
            values = [index.const_value(e) for e in elements] if elements is not None else None
            return tuple(values) if values and all(isinstance(v, int) for v in values) else None
        if function == "load" and node.args:
            return self.of(node.args[0])
        return None

    def _name(self, name: str) -> tuple | None:
        if name in self.kernel.params and name not in self.kernel.assignments:
            return ()
        if name in self.names:
            return self.names[name]
        if name in self.resolving:
            return None
        self.resolving.add(name)
        found = {self.of(value) for value in self.kernel.assignments.get(name, [])}
        self.resolving.discard(name)
        self.names[name] = found.pop() if len(found) == 1 else None
        return self.names[name]


def _broadcast(shapes: list[tuple | None]) -> tuple | None:
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    result = []
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _jit_spelling(index: SourceIndex) -> str:
    for alias, target in index.aliases.items():
        if target == "triton":
            return f"{alias}.jit"
        if target == "triton.jit":
            return alias
    return "triton.jit"
