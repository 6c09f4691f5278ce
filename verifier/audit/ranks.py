"""The rank (number of dimensions) of a kernel's expressions, where the source says it: `tl.arange` is 1,
`x[:, None]` one more than `x`, `tl.zeros([M, N])` 2, a reduction over one axis one less. Unknown is None.

The masked-lane analysis needs it to turn a reduction's `axis=1` into the axis counted from the right, which is
how Triton broadcasts."""

from __future__ import annotations

import ast

from verifier.audit import budget
from verifier.audit.source_index import Kernel, SourceIndex

ALONG_AXIS = {"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum"}
SCANS = {"cumsum", "cumprod", "associative_scan"}
SAME_RANK = {"to", "trans", "permute", "abs", "exp", "exp2", "log", "sqrt", "rsqrt", "sigmoid", "sort", "flip"}
SHAPED = {"zeros", "full", "empty", "ones", "broadcast_to", "reshape", "view", "zeros_like"}
SCALARS = {"program_id", "num_programs", "cdiv", "multiple_of", "max_contiguous", "static_range"}
MAX_DEPTH = 60


class Ranks:
    """Ranks of one kernel's expressions, memoised; a name's rank is the largest of its assignments' ranks."""

    def __init__(self, index: SourceIndex, kernel: Kernel):
        self.index = index
        self.kernel = kernel
        self._names: dict[str, int | None] = {}
        self._open: set[str] = set()

    def of(self, node: ast.AST | None, depth: int = 0) -> int | None:
        if node is None or depth > MAX_DEPTH:
            return None
        budget.check()
        if isinstance(node, ast.Constant):
            return 0
        if isinstance(node, ast.Name):
            return self._name(node.id, depth)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.BinOp):
            return _largest(self.of(node.left, depth + 1), self.of(node.right, depth + 1))
        if isinstance(node, ast.UnaryOp):
            return self.of(node.operand, depth + 1)
        if isinstance(node, ast.Compare):
            return _largest(*(self.of(n, depth + 1) for n in (node.left, *node.comparators)))
        if isinstance(node, ast.BoolOp):
            return _largest(*(self.of(n, depth + 1) for n in node.values))
        if isinstance(node, ast.IfExp):
            return _largest(self.of(node.body, depth + 1), self.of(node.orelse, depth + 1))
        if isinstance(node, ast.Attribute):
            return 2 if node.attr == "T" else None
        return None

    def _name(self, name: str, depth: int) -> int | None:
        if name in self._names:
            return self._names[name]
        values = self.kernel.assignments.get(name)
        if not values:
            return 0  # a parameter or a global constant: a scalar
        if name in self._open:
            return -1  # a loop-carried use: says nothing about the rank
        self._open.add(name)
        ranks = [self.of(value, depth + 1) for value in values]
        self._open.discard(name)
        known = [rank for rank in ranks if rank != -1]
        rank = None if not known or None in known else max(known)
        self._names[name] = rank
        return rank

    def _subscript(self, node: ast.Subscript, depth: int) -> int | None:
        """`x[:, None]`: as many dimensions as the index has entries; anything else is unknown."""
        entries = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if all(is_full_slice(e) or is_none(e) for e in entries):
            return len(entries)
        return None

    def _call(self, call: ast.Call, depth: int) -> int | None:
        function = self.index.tl_function(call)
        method = call.func.attr if function is None and isinstance(call.func, ast.Attribute) else None
        name = function or method
        operand = operand_of(self.index, call)
        args = call.args if function else [operand, *call.args]
        if name in SCALARS:
            return 0
        if name == "arange":
            return 1
        if name in SHAPED and len(args) > 1 and isinstance(args[1], ast.List | ast.Tuple):
            return len(args[1].elts)
        if function in {"zeros", "full", "empty", "ones"} and args and isinstance(args[0], ast.List | ast.Tuple):
            return len(args[0].elts)
        if name in ALONG_AXIS:
            return _reduced_rank(self.of(operand, depth + 1), axis_of(call, method is not None), keeps_dims(call))
        if name in SCANS or name in SAME_RANK:
            return self.of(operand, depth + 1)
        if name in {"dot", "load", "store", "where", "maximum", "minimum", "clamp", "rand", "randn", "fma", "cast"}:
            return _largest(
                *(self.of(a, depth + 1) for a in args), *(self.of(k.value, depth + 1) for k in call.keywords)
            )
        if name == "expand_dims":
            rank = self.of(operand, depth + 1)
            return None if rank is None or rank < 0 else rank + 1
        return None


AXIS_UNKNOWN = "unknown"


def operand_of(index: SourceIndex, call: ast.Call) -> ast.expr | None:
    """The tensor a call acts on: `x` of `tl.sum(x, 0)` and of the method form `x.sum(0)`."""
    if index.tl_function(call) is None and isinstance(call.func, ast.Attribute):
        return call.func.value
    return call.args[0] if call.args else None


def axis_of(call: ast.Call, method: bool) -> int | str | None:
    """The `axis` a reduction or scan is given: an int, None for all axes, or AXIS_UNKNOWN where it is not a
    literal."""
    position = 0 if method else 1
    value = next((k.value for k in call.keywords if k.arg == "axis"), None)
    if value is None and len(call.args) > position:
        value = call.args[position]
    if value is None:
        return None
    if isinstance(value, ast.Constant) and (value.value is None or isinstance(value.value, int)):
        return value.value
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and isinstance(value.operand, ast.Constant):
        return -value.operand.value if isinstance(value.operand.value, int) else AXIS_UNKNOWN
    return AXIS_UNKNOWN


def keeps_dims(call: ast.Call) -> bool:
    value = next((k.value for k in call.keywords if k.arg in {"keep_dims", "keepdims"}), None)
    return isinstance(value, ast.Constant) and value.value is True


def _reduced_rank(rank: int | None, axis: int | str | None, keeps: bool) -> int | None:
    if rank is None or rank < 0 or axis == AXIS_UNKNOWN:
        return None
    if keeps:
        return rank
    return 0 if axis is None else max(rank - 1, 0)


def _largest(*ranks: int | None) -> int | None:
    known = [rank for rank in ranks if rank != -1]
    if not known or None in known:
        return None
    return max(known)


def is_full_slice(node: ast.AST) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and node.step is None


def is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
