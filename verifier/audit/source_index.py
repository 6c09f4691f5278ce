"""What the audit rules need to know about one module: import aliases, kernels, constants and launch sites.

Everything here reads the AST only; nothing in the audited file is imported or run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

TL = "triton.language"
JIT_DECORATORS = {"triton.jit", "triton.runtime.jit.jit", "triton.runtime.jit"}
WRAPPING_DECORATORS = {"triton.autotune", "triton.heuristics", "triton.runtime.autotune", "triton.runtime.heuristics"}


@dataclass
class Kernel:
    """A `@triton.jit` function and the facts about its parameters."""

    node: ast.FunctionDef
    params: list[str]
    constexprs: set[str]
    defaults: dict[str, ast.expr]
    autotune: ast.Call | None = None
    heuristics: ast.Call | None = None
    assignments: dict[str, list[ast.expr]] = field(default_factory=dict)
    nodes: list[ast.AST] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.node.name


@dataclass
class Launch:
    """A `kernel[grid](args...)` call and the function it sits in."""

    call: ast.Call
    kernel: str
    scope: ast.FunctionDef | ast.Module


class SourceIndex:
    """Aliases, kernels, plain functions, constants and launches of one parsed module."""

    def __init__(self, tree: ast.Module, source: str):
        self.tree = tree
        self.lines = source.splitlines()
        self.aliases: dict[str, str] = {}
        self.kernels: dict[str, Kernel] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.constants: dict[str, int | float | bool] = {}
        self.launches: list[Launch] = []
        self.nodes, self._spans = _preorder(tree)
        self._tl_functions: dict[int, tuple[ast.Call, str | None]] = {}
        self.aliases = import_aliases(self.nodes)
        self._collect_definitions()
        self._collect_launches()

    # ---------------------------------------------------------------- names

    def resolve(self, node: ast.AST) -> str | None:
        """Dotted name with import aliases expanded: `tl.arange` -> `triton.language.arange`."""
        return resolve_name(node, self.aliases)

    def tl_function(self, call: ast.AST) -> str | None:
        """`arange` for a call of `tl.arange` (also `tl.math.exp` -> `exp`, `libdevice.exp` -> `exp`)."""
        if not isinstance(call, ast.Call):
            return None
        cached = self._tl_functions.get(id(call))
        if cached is None or cached[0] is not call:
            cached = self._tl_functions[id(call)] = (call, self._tl_function(call))
        return cached[1]

    def _tl_function(self, call: ast.Call) -> str | None:
        resolved = self.resolve(call.func) or ""
        for prefix in (TL + ".math.", TL + ".extra.cuda.libdevice.", TL + ".extra.libdevice.", TL + "."):
            if resolved.startswith(prefix):
                return resolved[len(prefix) :]
        return None

    def subtree(self, node: ast.AST) -> list[ast.AST]:
        """Every node under `node` (itself included) in source order, as `walk(node)`, without walking again."""
        span = self._spans.get(id(node))
        if span is None:
            return walk(node)
        return self.nodes[span[0] : span[1]]

    def _body_nodes(self, function: ast.FunctionDef) -> list[ast.AST]:
        """The nodes of a function's body statements (not its arguments or decorators)."""
        first = self._spans.get(id(function.body[0]))
        last = self._spans.get(id(function.body[-1]))
        if first is None or last is None:
            return [n for stmt in function.body for n in self.subtree(stmt)]
        return self.nodes[first[0] : last[1]]

    def tl_alias(self) -> str:
        """How this module spells `triton.language` (for fixes)."""
        for alias, target in self.aliases.items():
            if target == TL:
                return alias
        return "triton.language"

    def is_constexpr_annotation(self, annotation: ast.AST | None) -> bool:
        if annotation is None:
            return False
        resolved = self.resolve(annotation) or ""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            resolved = annotation.value
        return resolved in {TL + ".constexpr", "tl.constexpr", "constexpr", "triton.language.core.constexpr"}

    def const_value(self, node: ast.AST, env: dict[str, int | float | bool] | None = None, depth: int = 0):
        """The value of a constant expression (literals, module constants, arithmetic), else None."""
        if depth > 20:
            return None
        env = env if env is not None else {}
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float | bool):
            return node.value
        if isinstance(node, ast.Name):
            return env.get(node.id, self.constants.get(node.id))
        if isinstance(node, ast.Call) and self.resolve(node.func) in {TL + ".constexpr", "triton.next_power_of_2"}:
            if len(node.args) != 1:
                return None
            value = self.const_value(node.args[0], env, depth + 1)
            if isinstance(value, int) and self.resolve(node.func) == "triton.next_power_of_2":
                return next_power_of_two(value)
            return value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = self.const_value(node.operand, env, depth + 1)
            return -value if isinstance(value, int | float) else None
        if isinstance(node, ast.BinOp):
            left = self.const_value(node.left, env, depth + 1)
            right = self.const_value(node.right, env, depth + 1)
            if isinstance(left, int | float) and isinstance(right, int | float):
                return _arith(node.op, left, right)
        return None

    # ---------------------------------------------------------------- collection

    def _collect_definitions(self) -> None:
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = self.const_value(node.value)
                if value is not None:
                    self.constants[node.targets[0].id] = value
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        for node in self.nodes:
            if not isinstance(node, ast.FunctionDef):
                continue
            decorators = [self.decorator_name(d) for d in node.decorator_list]
            if any(d in JIT_DECORATORS for d in decorators):
                self.kernels[node.name] = self._kernel(node)
            elif node.name not in self.kernels:
                self.functions.setdefault(node.name, node)

    def decorator_name(self, decorator: ast.AST) -> str | None:
        """The resolved name of a decorator, called (`@triton.autotune(...)`) or not (`@triton.jit`)."""
        return self.resolve(decorator.func if isinstance(decorator, ast.Call) else decorator)

    def _kernel(self, node: ast.FunctionDef) -> Kernel:
        args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        positional = node.args.posonlyargs + node.args.args
        defaults = dict(
            zip([a.arg for a in positional[len(positional) - len(node.args.defaults) :]], node.args.defaults)
        )
        defaults |= {a.arg: d for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None}
        kernel = Kernel(
            node=node,
            params=[a.arg for a in args],
            constexprs={a.arg for a in args if self.is_constexpr_annotation(a.annotation)},
            defaults=defaults,
            nodes=self._body_nodes(node),
        )
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call):
                name = self.decorator_name(decorator)
                if name in {"triton.autotune", "triton.runtime.autotune"}:
                    kernel.autotune = decorator
                elif name in {"triton.heuristics", "triton.runtime.heuristics"}:
                    kernel.heuristics = decorator
        for stmt in walk_body(node.body):
            for target, value in assigned(stmt):
                kernel.assignments.setdefault(target, []).append(value)
        return kernel

    def _collect_launches(self) -> None:
        functions = [n for n in self.nodes if isinstance(n, ast.FunctionDef) and n.name not in self.kernels]
        for node in self.nodes:
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
                continue
            if isinstance(node.func.value, ast.Name):
                enclosing = [f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or f.lineno)]
                scope = max(enclosing, key=lambda f: f.lineno, default=self.tree)
                self.launches.append(Launch(node, node.func.value.id, scope))

    def launches_of(self, kernel: str) -> list[Launch]:
        return [launch for launch in self.launches if launch.kernel == kernel]

    def is_candidate(self) -> bool:
        """A converted model (KernelBench `ModelNew`): the anti-hacking rules apply."""
        return "ModelNew" in self.classes


def constexpr_guarded(index: SourceIndex, kernel: Kernel) -> set[int]:
    """Ids of the nodes under an `if` on constexpr parameters only (the EVEN_K / no-mask fast-path pattern):
    Triton compiles only the branch the launch's constexpr values select."""
    guarded: set[int] = set()
    for node in kernel.nodes:
        if isinstance(node, ast.If) and id(node) not in guarded:
            names = {n.id for n in index.subtree(node.test) if isinstance(n, ast.Name)}
            if names and names <= kernel.constexprs:
                for stmt in (*node.body, *node.orelse):
                    guarded.update(id(n) for n in index.subtree(stmt))
    return guarded


_SCALAR_FIELDS = {"ctx", "id", "attr", "arg", "name", "asname", "module", "level", "type_comment", "simple"}
_SCALAR_FIELDS |= {"conversion", "kind", "kwd_attrs", "is_async", "tag"}
_SCALAR_FIELDS_OF = {
    ast.Constant: {"value"},
    ast.MatchSingleton: {"value"},
    ast.Global: {"names"},
    ast.Nonlocal: {"names"},
}


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that can hold child nodes: not names, flags, constants or `ctx` markers."""
    scalar = _SCALAR_FIELDS | _SCALAR_FIELDS_OF.get(kind, set())
    return tuple(f for f in getattr(kind, "_fields", ()) if f not in scalar)


def _node_types(base: type) -> list[type]:
    return [base, *(t for sub in base.__subclasses__() for t in _node_types(sub))]


CHILD_FIELDS: dict[type, tuple[str, ...]] = {kind: _child_fields(kind) for kind in _node_types(ast.AST)}


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The direct children of `node` in source order, without `ctx` markers (a faster `ast.iter_child_nodes`)."""
    kind = type(node)
    fields = CHILD_FIELDS.get(kind)
    if fields is None:
        fields = CHILD_FIELDS[kind] = _child_fields(kind)
    children: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if type(value) is list:
            children.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


def walk(node: ast.AST) -> list[ast.AST]:
    """Every node under `node` (itself included), depth first in source order, without `ctx` markers.

    A faster `ast.walk` for the audit's hot paths; expression contexts (Load/Store) carry no information here.
    """
    found: list[ast.AST] = []
    stack = [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(reversed(child_nodes(current)))
    return found


def _preorder(tree: ast.AST) -> tuple[list[ast.AST], dict[int, tuple[int, int]]]:
    """`walk(tree)`, plus the slice of that list that holds each inner node's subtree, in one pass.

    A node's subtree is contiguous in depth-first order, so rules can ask for it without walking again. Leaves
    get no span (their subtree is themselves): operator nodes are shared singletons and must not get one.
    Recursion is twice as fast as an explicit stack; trees nested deeper than Python's recursion limit (long
    operator chains) take the stack.
    """
    found: list[ast.AST] = []
    spans: dict[int, tuple[int, int]] = {}

    def visit(node: ast.AST) -> None:
        start = len(found)
        found.append(node)
        fields = CHILD_FIELDS.get(type(node))
        if fields is None:
            fields = CHILD_FIELDS[type(node)] = _child_fields(type(node))
        if not fields:
            return
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        visit(item)
            elif isinstance(value, ast.AST):
                visit(value)
        if len(found) > start + 1:
            spans[id(node)] = (start, len(found))

    try:
        visit(tree)
    except RecursionError:
        return _preorder_by_stack(tree)
    return found, spans


def _preorder_by_stack(tree: ast.AST) -> tuple[list[ast.AST], dict[int, tuple[int, int]]]:
    found: list[ast.AST] = []
    spans: dict[int, tuple[int, int]] = {}
    stack: list[object] = [tree]
    while stack:
        current = stack.pop()
        if type(current) is tuple:
            start, node = current
            spans[id(node)] = (start, len(found))
            continue
        children = child_nodes(current)
        if children:
            stack.append((len(found), current))
            stack.extend(reversed(children))
        found.append(current)
    return found, spans


def next_power_of_two(size: int) -> int:
    """The smallest power of two >= size (as `triton.next_power_of_2`)."""
    return 1 << max(size - 1, 0).bit_length()


def import_aliases(nodes: list[ast.AST]) -> dict[str, str]:
    """What each imported name stands for, from every absolute import in `nodes` (later imports win)."""
    aliases: dict[str, str] = {}
    for node in nodes:
        kind = type(node)
        if kind is ast.Import:
            for alias in node.names:
                head = alias.name.split(".")[0]
                aliases[alias.asname or head] = alias.name if alias.asname else head
        elif kind is ast.ImportFrom and node.module and node.level == 0:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def resolve_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """Dotted name with import aliases expanded: `tl.arange` -> `triton.language.arange`."""
    dotted = dotted_name(node)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    if head in aliases:
        return aliases[head] + ("." + rest if rest else "")
    return dotted


def dotted_name(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of attribute loads on a name; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def walk_body(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body in source order, nested blocks included, nested definitions not entered."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from walk_body(getattr(stmt, name, []))
        for handler in getattr(stmt, "handlers", []):
            yield from walk_body(handler.body)
        for case in getattr(stmt, "cases", []):
            yield from walk_body(case.body)


def assigned(stmt: ast.stmt) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) for each plain name a statement binds; tuple targets pair up element by element."""
    if isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            yield from _pairs(target, stmt.value)
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
        yield stmt.target.id, stmt.value
    elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        yield stmt.target.id, ast.BinOp(left=ast.Name(stmt.target.id, ast.Load()), op=stmt.op, right=stmt.value)
    elif isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
        yield stmt.target.id, stmt.iter


def _pairs(target: ast.AST, value: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, ast.Tuple | ast.List):
        if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
            for sub_target, sub_value in zip(target.elts, value.elts):
                yield from _pairs(sub_target, sub_value)
        else:
            for sub_target in target.elts:
                yield from _pairs(sub_target, value)


def _arith(op: ast.operator, left: int | float, right: int | float) -> int | float | None:
    try:
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.FloorDiv):
            return left // right
        if isinstance(op, ast.Div):
            return left / right
        if isinstance(op, ast.Mod):
            return left % right
        if isinstance(op, ast.LShift) and isinstance(left, int) and isinstance(right, int) and 0 <= right < 64:
            return left << right
        if isinstance(op, ast.Pow) and abs(right) < 64:
            return left**right
    except (ZeroDivisionError, OverflowError, TypeError):
        return None
    return None
