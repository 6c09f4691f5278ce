"""TRI5xx: performance hints. Untuned kernels, strided innermost access, loop-invariant loads."""

from __future__ import annotations

import ast

from verifier.audit.collector import Collector
from verifier.audit.dataflow import ANY_AXIS, AXIS, KernelFlow, keyword
from verifier.audit.source_index import Kernel, SourceIndex, assigned, walk_body

WRITES = {"store", "atomic_add", "atomic_cas", "atomic_xchg", "atomic_max", "atomic_min", "atomic_and", "atomic_or"}


def check_kernel(index: SourceIndex, kernel: Kernel, flow: KernelFlow, out: Collector) -> None:
    """Run every TRI5xx rule on one kernel."""
    _untuned(index, kernel, out)
    for node in kernel.nodes:
        if isinstance(node, ast.Call) and index.tl_function(node) in {"load", "store"} and node.args:
            _strided_inner(index, flow, node, out)
    for loop in (s for s in walk_body(kernel.node.body) if isinstance(s, ast.For | ast.While)):
        _invariant_loads(index, loop, out)


def _untuned(index: SourceIndex, kernel: Kernel, out: Collector) -> None:
    if kernel.autotune is not None:
        return
    launches = index.launches_of(kernel.name)
    if not launches or any(keyword(launch.call, "num_warps") is not None for launch in launches):
        return
    heavy = any(isinstance(n, ast.For | ast.While) for n in kernel.nodes) or any(
        isinstance(n, ast.Call) and index.tl_function(n) == "dot" for n in kernel.nodes
    )
    if heavy:
        anchor = ast.Name(kernel.name)
        anchor.lineno, anchor.col_offset = kernel.node.lineno, kernel.node.col_offset + len("def ")
        anchor.end_lineno, anchor.end_col_offset = kernel.node.lineno, anchor.col_offset + len(kernel.name)
        out.add(
            "TRI501",
            anchor,
            f"`{kernel.name}` loops or uses tl.dot but runs with the default 4 warps and untuned block sizes; "
            "add @triton.autotune over a few configs, or pass num_warps= at the launch",
        )


def _strided_inner(index: SourceIndex, flow: KernelFlow, call: ast.Call, out: Collector) -> None:
    for node in index.subtree(call.args[0]):
        if not isinstance(node, ast.BinOp) or not isinstance(node.op, ast.Mult):
            continue
        for offsets, factor in ((node.left, node.right), (node.right, node.left)):
            value = index.const_value(factor)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 1:
                continue
            tags = flow.tags(offsets)
            if "arange" in tags and "outer" not in tags and _innermost(index, offsets, tags):
                out.add(
                    "TRI502",
                    node,
                    f"the innermost offsets are multiplied by {value}: each thread touches every {value}th element "
                    "and memory transactions are wasted. Make the contiguous dimension the last block axis",
                )


def _innermost(index: SourceIndex, offsets: ast.expr, tags: frozenset[str]) -> bool:
    """Whether the offsets vary along the block's last axis (Inductor's `x0 = xindex`, an `[:, None]` row index, is
    the outer one)."""
    axes = {t for t in tags if t.startswith(AXIS)}
    if axes:
        return f"{AXIS}-1" in axes or f"{AXIS}{ANY_AXIS}" in axes
    if isinstance(offsets, ast.Subscript):
        items = offsets.slice.elts if isinstance(offsets.slice, ast.Tuple) else [offsets.slice]
        return isinstance(items[-1], ast.Slice)
    return not any(isinstance(n, ast.Subscript) for n in index.subtree(offsets))


def _invariant_loads(index: SourceIndex, loop: ast.For | ast.While, out: Collector) -> None:
    statements = list(walk_body(loop.body))
    varying = {name for stmt in statements for name, _ in assigned(stmt)}
    varying |= _names(index, loop.target) if isinstance(loop, ast.For) else set()
    varying |= {name for stmt in statements for target in _targets(stmt) for name in _names(index, target)}
    written = set()
    loads = []
    once = {id(n) for n in index.subtree(loop.iter)} if isinstance(loop, ast.For) else set()  # the range: read once
    for node in index.subtree(loop):
        if isinstance(node, ast.Call) and node.args and id(node) not in once:
            function = index.tl_function(node)
            if function in WRITES:
                written |= _names(index, node.args[0])
            elif function == "load":
                loads.append(node)
    for load in loads:
        used = set().union(*(_names(index, a) for a in load.args), *(_names(index, k.value) for k in load.keywords))
        if used & varying or _names(index, load.args[0]) & written or keyword(load, "volatile") is not None:
            continue
        out.add(
            "TRI503",
            load,
            f"this tl.load reads the same addresses on every iteration of the loop on line {loop.lineno}; "
            "load once before the loop",
        )


def _targets(stmt: ast.stmt) -> list[ast.AST]:
    if isinstance(stmt, ast.Assign):
        return stmt.targets
    if isinstance(stmt, ast.AugAssign | ast.AnnAssign | ast.For):
        return [stmt.target]
    return []


def _names(index: SourceIndex, node: ast.AST) -> set[str]:
    return {n.id for n in index.subtree(node) if isinstance(n, ast.Name)}
