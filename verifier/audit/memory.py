"""TRI2xx: memory safety. Out-of-bounds blocks, garbage in masked lanes, int32 offset overflow."""

from __future__ import annotations

import ast
import re

from verifier.audit.collector import Collector
from verifier.audit.dataflow import REDUCTIONS, KernelFlow, call_name, keyword, location
from verifier.audit.ranks import operand_of
from verifier.audit.source_index import Kernel, SourceIndex, constexpr_guarded

SIZE_NAME = re.compile(r"n|N|M|K|numel|size|length|count|\w*_?(numel|elements|size|len|length|count|cols|rows)")
NEUTRAL_OTHER = {"max": 'float("-inf")', "argmax": 'float("-inf")', "min": 'float("inf")', "argmin": 'float("inf")'}


def check_kernel(index: SourceIndex, kernel: Kernel, flow: KernelFlow, out: Collector) -> None:
    """Run every TRI2xx rule on one kernel."""
    guarded = constexpr_guarded(index, kernel)
    proven = _size_asserted(index, kernel)
    products: list[tuple[ast.BinOp, ast.expr, str]] = []
    for node in kernel.nodes:
        if isinstance(node, ast.Call) and not proven and id(node) not in guarded:
            if index.tl_function(node) in {"load", "store"}:
                _unmasked(index, flow, node, out)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            products.extend(_int32_products(kernel, flow, node))
        elif isinstance(node, ast.Compare):
            _inclusive_bound(kernel, flow, node, out)
    _report_int32(index, kernel, products, out)
    _masked_garbage(index, kernel, flow, out)


def _inclusive_bound(kernel: Kernel, flow: KernelFlow, compare: ast.Compare, out: Collector) -> None:
    """TRI204: `offsets <= n` where `n` is a size: the lane at offset n is one past the end."""
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.LtE):
        return
    bound = compare.comparators[0]
    if not (isinstance(bound, ast.Name) and bound.id in kernel.params and bound.id not in kernel.constexprs):
        return
    if "arange" not in flow.tags(compare.left):
        return
    size_like = SIZE_NAME.fullmatch(bound.id) is not None
    fix = out.replace(f"Use `< {bound.id}`", compare, f"{out.source_of(compare.left)} < {bound.id}")
    out.add(
        "TRI204",
        compare,
        f"`<= {bound.id}` lets the lane at offset {bound.id} through: "
        + (f"one past the end of a tensor of {bound.id} elements. " if size_like else "if it is a size, ")
        + f"Use `< {bound.id}`",
        fix,
        severity=None if size_like else "warning",
    )


def _unmasked(index: SourceIndex, flow: KernelFlow, call: ast.Call, out: Collector) -> None:
    function = index.tl_function(call)
    mask_position = 1 if function == "load" else 2
    if len(call.args) > mask_position or keyword(call, "mask") is not None or keyword(call, "boundary_check"):
        return
    pointer = call.args[0] if call.args else keyword(call, "pointer")
    tags = flow.tags(pointer)
    if not {"pid", "arange"} <= tags or "wrapped" in tags or "block_ptr" in tags:
        return
    out.add(
        "TRI201",
        call,
        f"tl.{function} at offsets built from tl.program_id and tl.arange has no mask: the last block "
        f"{'reads' if function == 'load' else 'writes'} past the end of the tensor unless its size is a multiple "
        "of the block size. Pass mask=offsets < n_elements"
        + (" (and other=...)" if function == "load" else "")
        + ", or assert the size is a multiple of the block",
    )


def _masked_garbage(index: SourceIndex, kernel: Kernel, flow: KernelFlow, out: Collector) -> None:
    """TRI202: a masked load without `other=` whose lanes a reduction mixes with loaded ones (its mask varies
    along the reduced axis), or that a `tl.dot` adds up after they moved off zero.

    Triton's NVIDIA lowering fills those lanes with 0 (checked in the PTX: `mov.u32 %r, 0x0` before the
    predicated load), so they are harmless where 0 is the reduction's neutral value (a sum, or the max of
    absolute values) and a warning there; an error where 0 is wrong (max, min, argmax, a combine we cannot
    see, or lanes that went through exp, log or a division first)."""
    loads = {location(n): n for n in kernel.nodes if isinstance(n, ast.Call) and index.tl_function(n) == "load"}
    reached: dict[str, set[tuple[str, str]]] = {}
    for node in kernel.nodes:
        if not isinstance(node, ast.Call):
            continue
        if index.tl_function(node) == "dot":
            for key, kind in flow.contracted_lanes(node).items():
                if kind in {"exp", "moved", "shifted"}:  # a zero times anything adds nothing; a moved one does
                    reached.setdefault(key, set()).add(("dot", kind))
            continue
        if call_name(index, node) not in REDUCTIONS:
            continue
        operand = operand_of(index, node)
        if operand is None:
            continue
        for key, kind in flow.mixed_lanes(node, operand).items():
            reached.setdefault(key, set()).add((call_name(index, node), kind))
    for key, seen in sorted(reached.items()):
        load = loads.get(key)
        if load is not None:
            _report_masked(out, load, seen)


def _report_masked(out: Collector, load: ast.Call, seen: set[tuple[str, str]]) -> None:
    reductions = sorted({reduction for reduction, _ in seen})
    names = ", ".join(f"tl.{r}" for r in reductions)
    wrong = sorted({f"tl.{r}" for r, kind in seen if _zero_is_wrong(r, kind)})
    kinds = {kind for _, kind in seen}
    if "shifted" in kinds and not kinds & {"exp", "moved"}:
        why = (
            f"have a value subtracted (`x - mean`) before they reach {names}, so the 0 Triton's NVIDIA lowering puts "
            "there (the language leaves them undefined) is no longer neutral; mask them with tl.where before"
        )
    elif "exp" in kinds or "moved" in kinds:
        why = (
            f"go through exp, log or a division before they reach {names}, so the 0 Triton's NVIDIA lowering "
            "puts there (the language leaves them undefined) is no longer neutral"
        )
    elif wrong:
        why = (
            f"reach {names}: Triton's NVIDIA lowering puts 0 there (the language leaves them undefined), "
            f"which is not a neutral value for {', '.join(wrong)}"
        )
    elif kinds == {"scaled"}:
        why = f"are multiplied and reach {names}; say what they hold"
    else:
        why = (
            f"reach {names}: Triton's NVIDIA lowering puts 0 there, which is right here, but the language leaves "
            "them undefined; say so"
        )
    out.add(
        "TRI202",
        load,
        f"masked tl.load without other=: the masked-off lanes {why}. Pass other= with the reduction's neutral value",
        _other_fix(out, load, seen),
        severity=None if wrong or kinds & {"exp", "moved", "shifted"} else "warning",
    )


def _zero_is_wrong(reduction: str, kind: str) -> bool:
    if kind in {"exp", "moved", "shifted"}:
        return True
    if kind == "scaled" or reduction in {"sum", "cumsum", "xor_sum"}:
        return False
    return not (kind == "nonneg" and reduction in {"max", "argmax"})


def _other_fix(out: Collector, load: ast.Call, seen: set[tuple[str, str]]) -> dict | None:
    """`other=` with the value that leaves every reduction unchanged, when there is one."""
    values = set()
    for reduction, kind in seen:
        if kind in {"moved", "shifted"}:
            return None
        values.add('float("-inf")' if kind == "exp" else NEUTRAL_OTHER.get(reduction, "0.0"))
    if len(values) != 1:
        return None
    value = values.pop()
    last = (load.args + [k.value for k in load.keywords])[-1]
    return out.insert(f"Pass other={value}", last.end_lineno, last.end_col_offset, f", other={value}")


def _int32_products(kernel: Kernel, flow: KernelFlow, node: ast.BinOp) -> list[tuple[ast.BinOp, ast.expr, str]]:
    """(product, program-id side, runtime parameter) when a scalar program id meets a runtime stride or size."""
    for pid_side, other in ((node.left, node.right), (node.right, node.left)):
        tags = flow.tags(pid_side)
        if "pid" not in tags or {"arange", "i64"} & tags:
            continue
        if isinstance(other, ast.Name) and other.id in kernel.params and other.id not in kernel.constexprs:
            return [(node, pid_side, other.id)]
    return []


def _report_int32(
    index: SourceIndex, kernel: Kernel, products: list[tuple[ast.BinOp, ast.expr, str]], out: Collector
) -> None:
    """TRI203, once per program id: at its `tl.program_id` definition when there is one, else per product."""
    int64 = f"{index.tl_alias()}.int64"
    by_source: dict[str, list[tuple[ast.BinOp, ast.expr, str]]] = {}
    for product in products:
        by_source.setdefault(out.source_of(product[1]), []).append(product)
    for text, group in by_source.items():
        definition = _program_id_definition(index, kernel, group[0][1])
        names = sorted({p[2] for p in group})
        examples = ", ".join(f"`{text} * {name}`" for name in names)
        verb = "is computed in int32 and overflows" if len(names) == 1 else "are computed in int32 and overflow"
        message = f"{examples} {verb} once the tensor has more than 2**31 elements"
        if definition is not None:
            replacement = f"{out.source_of(definition)}.to({int64})"
            out.add(
                "TRI203",
                definition,
                f"{message}; make the program id int64: `{replacement}`",
                out.replace("Make the program id int64", definition, replacement),
            )
            continue
        for node, pid_side, _ in group:
            wrapped = text if isinstance(pid_side, ast.Name | ast.Call | ast.Attribute) else f"({text})"
            out.add(
                "TRI203",
                node,
                f"{message}; cast first: `{wrapped}.to({int64})`",
                out.replace("Cast the program id to int64", pid_side, f"{wrapped}.to({int64})"),
            )


def _program_id_definition(index: SourceIndex, kernel: Kernel, pid_side: ast.expr) -> ast.Call | None:
    """The `tl.program_id(...)` call a plain name is bound to, when that is its only binding."""
    if not isinstance(pid_side, ast.Name):
        return None
    values = kernel.assignments.get(pid_side.id, [])
    if len(values) == 1 and index.tl_function(values[0]) == "program_id":
        return values[0]
    return None


def _size_asserted(index: SourceIndex, kernel: Kernel) -> bool:
    """An assertion that some size is a multiple of a block, in the kernel or where it is launched."""
    scopes = [
        kernel.node,
        *(launch.scope for launch in index.launches_of(kernel.name) if launch.scope is not index.tree),
    ]
    for scope in scopes:
        for node in index.subtree(scope):
            test = None
            if isinstance(node, ast.Assert):
                test = node.test
            elif isinstance(node, ast.Call) and index.tl_function(node) in {"static_assert", "device_assert", "assume"}:
                test = node.args[0] if node.args else None
            if test is not None and any(type(n) is ast.BinOp and type(n.op) is ast.Mod for n in index.subtree(test)):
                return True
    return False
