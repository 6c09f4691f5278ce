"""A small, conservative data-flow view of one kernel: which facts reach an expression.

Names are followed through every assignment in the kernel (all branches, all loop iterations), so a tag
means "may reach". Rules use tags to ask questions such as "is this offset built from program_id and
arange?" or "does this value come from a masked load without `other=`?".
"""

from __future__ import annotations

import ast

from verifier.audit import budget
from verifier.audit.source_index import CHILD_FIELDS, Kernel, SourceIndex, child_nodes

REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "cumsum", "cumprod", "xor_sum", "associative_scan"}
# Lanes a masked tl.load without other= leaves out: Triton's NVIDIA lowering sets them to 0 (the language leaves
# them undefined). The tag says what became of that 0 on the way: kept (plain), kept and known >= 0 (nonneg,
# through abs), moved off 0 (exp: 0 -> 1; moved: log, division, powers), or multiplied by something (scaled:
# what the lanes hold is then unknown, whatever follows).
MASKED = "masked_no_other_"
MASKED_KINDS = ("exp", "moved", "plain", "nonneg", "scaled")
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
        self._memoise = False
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
            return self._names.get(node.id, EMPTY)
        if not CHILD_FIELDS.get(kind, True):
            return EMPTY
        key = id(node)
        if key in self._nodes:
            return self._nodes[key]
        budget.check()
        tags = self._expression_tags(node, depth)
        if self._memoise:
            self._nodes[key] = tags
        return tags

    def _expression_tags(self, node: ast.AST, depth: int) -> frozenset[str]:
        if isinstance(node, ast.Call):
            return self._call_tags(node, depth)
        if type(node) is ast.BinOp:
            return self._binop_tags(node, depth)
        tags = EMPTY
        for child in child_nodes(node):
            child_tags = self.tags(child, depth + 1)
            if child_tags:
                tags = tags | child_tags
        return tags

    def _binop_tags(self, node: ast.BinOp, depth: int) -> frozenset[str]:
        left = self.tags(node.left, depth + 1)
        tags = left | self.tags(node.right, depth + 1)
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

    def _call_tags(self, call: ast.Call, depth: int) -> frozenset[str]:
        function = self.index.tl_function(call)
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
            return inner | {"arange"}
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
            inner = _masked_as(inner, MOVING_ZERO[function], {"plain", "nonneg"})
        if function == "abs":
            inner = _masked_as(inner, "nonneg", {"plain"})
        if function in {"to", "cast"} and _mentions_low_precision(self.index, call):
            inner |= {"low_precision"}
        if function == "load":
            keywords = {k.arg for k in call.keywords}
            has_mask = len(call.args) >= 2 or "mask" in keywords
            has_other = len(call.args) >= 3 or "other" in keywords
            pointer = self.tags(call.args[0], depth + 1) if call.args else frozenset()
            tags = {"load"} | {t for t in pointer if t.startswith("param:")}
            if has_mask and not has_other and "block_ptr" not in pointer:
                tags.add(f"{MASKED}plain@{location(call)}")
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


def masked_lanes(tags: frozenset[str]) -> dict[str, str]:
    """`load location -> kind` for each masked load without `other=` whose lanes reach these tags."""
    found = {}
    for tag in tags:
        head, _, where = tag.partition("@")
        if head.startswith(MASKED):
            kind = head[len(MASKED) :]
            found[where] = kind if found.get(where) in (None, kind) else _worse(found[where], kind)
    return found


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
