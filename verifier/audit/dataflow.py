"""A small, conservative data-flow view of one kernel: which facts reach an expression.

Names are followed through every assignment in the kernel (all branches, all loop iterations), so a tag
means "may reach". Rules use tags to ask questions such as "is this offset built from program_id and
arange?" or "does this value come from a masked load without `other=`?".
"""

from __future__ import annotations

import ast

from verifier.audit import budget
from verifier.audit.ranks import (
    ALONG_AXIS,
    AXIS_UNKNOWN,
    SCANS,
    Ranks,
    axis_of,
    is_full_slice,
    is_none,
    keeps_dims,
    operand_of,
)
from verifier.audit.reaching import reaching_definitions
from verifier.audit.source_index import CHILD_FIELDS, Kernel, SourceIndex, child_nodes

REDUCTIONS = ALONG_AXIS | SCANS
# Lanes a masked tl.load without other= leaves out: Triton's NVIDIA lowering sets them to 0 (the language leaves
# them undefined). The tag says what became of that 0 on the way: kept (plain), kept and known >= 0 (nonneg,
# through abs), moved off 0 (exp: 0 -> 1; moved: log, division, powers; shifted: `x - mean`, which an exp after
# it makes an exp), or multiplied by something (scaled: what the lanes hold is then unknown, whatever follows).
# After `#`, the axes (counted from the right, as Triton broadcasts) along which the load's mask varies: a
# reduction along any other axis never mixes masked lanes with loaded ones. "?" is any axis.
MASKED = "masked_no_other_"
AXIS = "ax:"  # an axis the expression varies along (from the right); "ax:?" where that is unknown
ANY_AXIS = "?"
RESHAPING = {"reshape", "view", "permute", "expand_dims", "join", "split", "interleave", "ravel", "flip", "sort"}
MASKED_KINDS = ("exp", "moved", "shifted", "plain", "nonneg", "scaled")
MOVING_ZERO = {"exp": "exp", "exp2": "exp", "log": "moved", "log2": "moved", "rsqrt": "moved", "fdiv": "moved"}
MOVING_ZERO |= {"div_rn": "moved", "pow": "moved"}
MAX_DEPTH = 60
MAX_ROUNDS = 12
EMPTY: frozenset[str] = frozenset()
LOW_PRECISION = {"float16", "bfloat16", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16"}


class KernelFlow:
    """Tag sets for the expressions of one kernel."""

    def __init__(self, index: SourceIndex, kernel: Kernel):
        self.index = index
        self.kernel = kernel
        self._names: dict[str, frozenset[str]] = {p: frozenset({f"param:{p}"}) for p in kernel.params}
        self._nodes: dict[int, frozenset[str]] = {}
        self._scratch: dict[int, frozenset[str]] = {}  # while a loop-carried cycle is solved: this round's tags
        self._memoise = False
        self.ranks = Ranks(index, kernel)
        self._reaching = reaching_definitions(kernel.node.body)
        self._solve()

    def _solve(self) -> None:
        """Tags of every assigned name: the least fixed point over all assignments, solved one strongly
        connected group of names at a time, dependencies first. A name outside a loop-carried cycle is final
        after one evaluation, so its expressions are memoised at once; a cycle is iterated to its fixed point."""
        assignments = self.kernel.assignments
        depends: dict[str, set[str]] = {name: set() for name in assignments}
        for name, values in assignments.items():
            self._names.setdefault(name, EMPTY)
            for value in values:
                for node in self.index.subtree(value):
                    if type(node) is ast.Name and node.id in assignments:
                        depends[name].add(node.id)
        for group in strongly_connected(depends):
            if len(group) == 1 and group[0] not in depends[group[0]]:
                self._memoise = True
                self._update(group[0])
            else:
                self._memoise = False
                self._iterate(group, depends)
        self._memoise = True

    def _update(self, name: str) -> bool:
        self._scratch.clear()
        merged = self._names[name].union(*(self.tags(value) for value in self.kernel.assignments[name]))
        changed = merged != self._names[name]
        self._names[name] = merged
        return changed

    def _iterate(self, group: list[str], depends: dict[str, set[str]]) -> None:
        """Worklist over one cycle of names until nothing changes (or the round budget runs out)."""
        members = set(group)
        users: dict[str, set[str]] = {name: set() for name in group}
        for user in group:
            for name in depends[user] & members:
                users[name].add(user)
        order = [name for name in self.kernel.assignments if name in members]
        queue = list(reversed(order))
        queued = set(queue)
        rounds_left = MAX_ROUNDS * len(group)
        while queue and rounds_left > 0:
            budget.check()
            rounds_left -= 1
            name = queue.pop()
            queued.discard(name)
            if self._update(name):
                for user in users[name] - queued:
                    queue.append(user)
                    queued.add(user)

    def tags(self, node: ast.AST | None, depth: int = 0) -> frozenset[str]:
        """Facts that may reach `node`: pid, arange, wrapped, outer, load, masked lanes, max, sub, i64, block_ptr,
        and `param:<name>` for each kernel parameter it depends on."""
        if node is None or depth > MAX_DEPTH:
            return EMPTY
        kind = type(node)
        if kind is ast.Name:
            return self._name_tags(node, depth)
        if not CHILD_FIELDS.get(kind, True):
            return EMPTY
        key = id(node)
        cache = self._nodes if self._memoise else self._scratch
        if key in self._nodes:
            return self._nodes[key]
        if key in cache:
            return cache[key]
        budget.check()
        tags = self._expression_tags(node, depth)
        cache[key] = tags
        return tags

    def _name_tags(self, node: ast.Name, depth: int) -> frozenset[str]:
        """The assignments this use sees, where the code says so plainly (reaching.py); else all of the name's."""
        values = self._reaching.get(id(node))
        if values is None or len(self.kernel.assignments.get(node.id, ())) < 2:
            return self._names.get(node.id, EMPTY)
        return frozenset().union(*(self.tags(value, depth + 1) for value in values))

    def _expression_tags(self, node: ast.AST, depth: int) -> frozenset[str]:
        if isinstance(node, ast.Call):
            return self._call_tags(node, depth)
        if type(node) is ast.BinOp:
            return self._binop_tags(node, depth)
        if type(node) is ast.Subscript:
            return self._subscript_tags(node, depth)
        tags = EMPTY
        for child in child_nodes(node):
            child_tags = self.tags(child, depth + 1)
            if child_tags:
                tags = tags | child_tags
        return tags

    def _binop_tags(self, node: ast.BinOp, depth: int) -> frozenset[str]:
        left = self.tags(node.left, depth + 1)
        right = self.tags(node.right, depth + 1)
        tags = left | right
        if isinstance(node.op, ast.Add) and (self._infinite_where(node.left) or self._infinite_where(node.right)):
            tags = _without_masked(tags)  # `scores + tl.where(keep, 0, -inf)`: the lanes it drops are -inf now
        if isinstance(node.op, ast.Sub) and _has_masked(left) != _has_masked(right) and not self._subtracts_zero(node):
            tags = _masked_as(tags, "shifted", {"plain", "nonneg"})  # `x - mean`: the lanes' 0 becomes -mean
        if isinstance(node.op, ast.Mult):
            tags = _masked_as(tags, "scaled", {"plain", "nonneg"})
        if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod | ast.Pow):
            tags = _masked_as(tags, "moved", {"plain", "nonneg"})
        if isinstance(node.op, ast.Mod) and "arange" in left:
            tags |= {"wrapped"}
        if isinstance(node.op, ast.FloorDiv) and "arange" in left:
            tags |= {"outer"}  # `xindex // 512`: the slow index of a flattened row-major block
        if isinstance(node.op, ast.Sub) and self.index.const_value(node.right) is None:
            tags |= {"sub"}
        return tags

    def _subscript_tags(self, node: ast.Subscript, depth: int) -> frozenset[str]:
        """`x[:, None]` moves x's axes (and its masked lanes' axes) to where the index puts them."""
        tags = self.tags(node.value, depth + 1) | self.tags(node.slice, depth + 1)
        entries = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not all(is_none(e) or is_full_slice(e) for e in entries):
            return tags
        kept = [position for position, entry in enumerate(entries) if is_full_slice(entry)]
        rank, new_rank = len(kept), len(entries)
        if not any(t.startswith(AXIS) for t in tags):  # a tensor from elsewhere (a parameter): it may vary anywhere
            tags |= {f"{AXIS}{-k}" for k in range(1, rank + 1)}
        return _remap(tags, lambda axis: kept[rank + axis] - new_rank if -rank <= axis < 0 else None)

    def _reduction_tags(self, call: ast.Call, name: str, operand: ast.expr, inner: frozenset[str]) -> frozenset[str]:
        """A reduction consumes the masked lanes it mixes (memory.py reports them there) and drops its axis; a scan
        keeps its axes."""
        axis = self.reduced_axis(call, operand)
        mixed = set(self.mixed_lanes(call, operand))
        tags = frozenset(t for t in inner if not (t.startswith(MASKED) and _where(t) in mixed))
        if name in SCANS:
            return tags
        if axis is None:
            return frozenset(t for t in tags if not t.startswith((MASKED, AXIS)))
        if axis == AXIS_UNKNOWN:
            return _remap(tags, lambda _: ANY_AXIS)
        if keeps_dims(call):
            return _remap(tags, lambda a: None if a == axis else a)
        return _remap(tags, lambda a: None if a == axis else (a + 1 if a < axis else a))

    def reduced_axis(self, call: ast.Call, operand: ast.expr) -> int | str | None:
        """The axis a reduction or scan runs along, counted from the right; None for all; AXIS_UNKNOWN."""
        axis = axis_of(call, self.index.tl_function(call) is None)
        if axis is None or axis == AXIS_UNKNOWN or axis < 0:
            return axis
        rank = self.ranks.of(operand)
        return axis - rank if rank is not None and 0 <= axis < rank else AXIS_UNKNOWN

    def mixed_lanes(self, call: ast.Call, operand: ast.expr) -> dict[str, str]:
        """`load location -> kind` of the masked lanes a reduction (or scan) along its axis mixes with loaded ones:
        those whose mask varies along that axis."""
        axis = self.reduced_axis(call, operand)
        found = {}
        for tag in self.tags(operand):
            if tag.startswith(MASKED):
                axes = _axes(tag)
                if axis is None or axis == AXIS_UNKNOWN or ANY_AXIS in axes or axis in axes:
                    found = _merged(found, tag)
        return found

    def contracted_lanes(self, call: ast.Call) -> dict[str, str]:
        """`load location -> kind` of the masked lanes a `tl.dot` adds up: those masked along the contracted axis
        (the first operand's last, the second's second last)."""
        found = {}
        for operand, axis in zip(call.args[:2], (-1, -2)):
            for tag in self.tags(operand):
                if tag.startswith(MASKED) and (ANY_AXIS in _axes(tag) or axis in _axes(tag)):
                    found = _merged(found, tag)
        return found

    def _dot_tags(self, call: ast.Call, depth: int) -> frozenset[str]:
        """`tl.dot(a, b)`: a's rows and b's columns go on; the contracted axis is summed away, and with it the masked
        lanes masked along that axis only."""
        tags = EMPTY
        for operand, contracted in zip(call.args[:2], (-1, -2)):
            own = self.tags(operand, depth + 1)
            summed = {_where(t) for t in own if t.startswith(MASKED) and _axes(t) == {contracted}}
            own = frozenset(t for t in own if not (t.startswith(MASKED) and _where(t) in summed))
            tags |= _remap(own, lambda a, contracted=contracted: None if a == contracted else a)
        for rest in (*call.args[2:], *(k.value for k in call.keywords)):
            tags |= self.tags(rest, depth + 1)
        return tags

    def _subtracts_zero(self, node: ast.BinOp) -> bool:
        return 0 in (self.index.const_value(node.left), self.index.const_value(node.right))

    def _infinite_where(self, node: ast.expr) -> bool:
        """`tl.where(cond, 0, float("-inf"))`: a mask written as an addend."""
        if not (isinstance(node, ast.Call) and self.index.tl_function(node) == "where" and len(node.args) == 3):
            return False
        return any(_is_infinite(branch) for branch in node.args[1:])

    def _call_tags(self, call: ast.Call, depth: int) -> frozenset[str]:
        function = self.index.tl_function(call)
        if function == "dot":
            return self._dot_tags(call, depth)
        inner = frozenset().union(*(self.tags(arg, depth + 1) for arg in call.args))
        inner |= frozenset().union(*(self.tags(k.value, depth + 1) for k in call.keywords))
        if isinstance(call.func, ast.Attribute) and function is None:
            inner |= self.tags(call.func.value, depth + 1)
            if call.func.attr == "to" and _mentions_int64(self.index, call):
                inner |= {"i64"}
            if call.func.attr == "to" and _mentions_low_precision(self.index, call):
                inner |= {"low_precision"}
        if function == "program_id":
            return frozenset({"pid"})
        if function == "arange":
            return inner | {"arange", f"{AXIS}-1"}
        name = call_name(self.index, call)
        if name in REDUCTIONS:
            operand = operand_of(self.index, call)
            if operand is not None:
                return self._reduction_tags(call, name, operand, inner)
        if name == "trans":
            return _remap(inner, lambda a: {-1: -2, -2: -1}.get(a, a))
        if name in RESHAPING:
            return _remap(inner, lambda _: ANY_AXIS)
        if function in {"minimum", "maximum", "where", "clamp"} and "arange" in inner:
            inner |= {"wrapped"}
        if function in {"max", "maximum"}:
            inner |= {"max"}
        if function in {"make_block_ptr", "advance", "make_tensor_descriptor"}:
            inner |= {"block_ptr"}
        if function == "cast" and _mentions_int64(self.index, call):
            inner |= {"i64"}
        if function in {"exp", "exp2"} and "load" in inner and not {"sub", "max"} & inner:
            inner |= {f"unshifted_exp@{location(call)}"}
        if function in MOVING_ZERO:
            inner = _masked_as(inner, MOVING_ZERO[function], {"plain", "nonneg", "shifted"})
        if function == "abs":
            inner = _masked_as(inner, "nonneg", {"plain"})
        if function in {"to", "cast"} and _mentions_low_precision(self.index, call):
            inner |= {"low_precision"}
        if function == "load":
            mask = call.args[1] if len(call.args) >= 2 else keyword(call, "mask")
            other = call.args[2] if len(call.args) >= 3 else keyword(call, "other")
            has_other = other is not None and not is_none(other)  # `other=None` is Triton's default: no value
            pointer = self.tags(call.args[0], depth + 1) if call.args else frozenset()
            mask_axes = {t for t in self.tags(mask, depth + 1) if t.startswith(AXIS)} if mask is not None else set()
            tags = {"load"} | {t for t in pointer if t.startswith(("param:", AXIS))} | mask_axes
            if mask is not None and not is_none(mask) and not has_other and "block_ptr" not in pointer:
                axes = ",".join(sorted(t[len(AXIS) :] for t in mask_axes))
                tags.add(f"{MASKED}plain@{location(call)}#{axes}")
            return frozenset(tags)
        if function == "where":
            return frozenset(t for t in inner if not t.startswith(MASKED))
        return inner


def _masked_as(tags: frozenset[str], kind: str, kinds: set[str]) -> frozenset[str]:
    """Re-tag masked-lane facts of the given kinds: what happened to the lanes' zeros on the way."""
    if not any(t.startswith(MASKED) for t in tags):
        return tags
    changed = set()
    for tag in tags:
        head, _, where = tag.partition("@")
        if head.startswith(MASKED) and head[len(MASKED) :] in kinds:
            tag = f"{MASKED}{kind}@{where}"
        changed.add(tag)
    return frozenset(changed)


def _merged(found: dict[str, str], tag: str) -> dict[str, str]:
    head, where = tag.split("@", 1)[0], _where(tag)
    kind = head[len(MASKED) :]
    return found | {where: kind if found.get(where) in (None, kind) else _worse(found[where], kind)}


def _where(tag: str) -> str:
    """The load location of a masked-lane tag (`masked_no_other_plain@12:8#-1` -> `12:8`)."""
    return tag.partition("@")[2].partition("#")[0]


def _axes(tag: str) -> set[int | str]:
    text = tag.partition("#")[2]
    return {ANY_AXIS if a == ANY_AXIS else int(a) for a in text.split(",") if a}


def _remap(tags: frozenset[str], move) -> frozenset[str]:
    """Axis tags and masked lanes' axes moved by `move(axis) -> new axis, None to drop it, or ANY_AXIS`."""
    if not any(t.startswith((AXIS, MASKED)) for t in tags):
        return tags
    changed = set()
    for tag in tags:
        if tag.startswith(AXIS):
            axis = tag[len(AXIS) :]
            moved = ANY_AXIS if axis == ANY_AXIS else move(int(axis))
            if moved is not None:
                changed.add(f"{AXIS}{moved}")
        elif tag.startswith(MASKED):
            head = tag.partition("#")[0]
            moved_axes = {ANY_AXIS if a == ANY_AXIS else move(a) for a in _axes(tag)} - {None}
            changed.add(f"{head}#{','.join(sorted(str(a) for a in moved_axes))}")
        else:
            changed.add(tag)
    return frozenset(changed)


def _has_masked(tags: frozenset[str]) -> bool:
    return any(t.startswith(MASKED) for t in tags)


def _without_masked(tags: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in tags if not t.startswith(MASKED))


def _is_infinite(node: ast.expr) -> bool:
    """`float("-inf")`, `-float("inf")`, `math.inf`, `-math.inf`."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _is_infinite(node.operand)
    if isinstance(node, ast.Attribute) and node.attr == "inf":
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" and node.args:
        text = node.args[0]
        return isinstance(text, ast.Constant) and str(text.value).strip().lower().lstrip("+-") in {"inf", "infinity"}
    return False


def _worse(a: str, b: str) -> str:
    return min(a, b, key=MASKED_KINDS.index)


def location(node: ast.AST) -> str:
    """A key for a node that survives in a tag: `line:column`."""
    return f"{node.lineno}:{node.col_offset}"


def tagged_locations(tags: frozenset[str], prefix: str) -> set[str]:
    return {t.split("@", 1)[1] for t in tags if t.startswith(prefix + "@")}


def _mentions_low_precision(index: SourceIndex, call: ast.Call) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in LOW_PRECISION for n in index.subtree(call))


def _mentions_int64(index: SourceIndex, call: ast.Call) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in {"int64", "uint64"} for n in index.subtree(call))


def call_name(index: SourceIndex, call: ast.Call) -> str | None:
    """`sum` for `tl.sum(x)` and for the method form `x.sum()`."""
    function = index.tl_function(call)
    if function is None and isinstance(call.func, ast.Attribute):
        return call.func.attr
    return function


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    for item in call.keywords:
        if item.arg == name:
            return item.value
    return None


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively; each group comes after every group it reaches."""
    number: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in graph:
        if root in number:
            continue
        number[root] = low[root] = len(number)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(graph[root]))]
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in number:
                    number[successor] = low[successor] = len(number)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(graph[successor])))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], number[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == number[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    groups.append(group)
    return groups
