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
        self.nodes, self._bodies = _walk_with_bodies(tree)
        self._collect_aliases()
        self._collect_definitions()
        self._collect_launches()

    # ---------------------------------------------------------------- names

    def resolve(self, node: ast.AST) -> str | None:
        """Dotted name with import aliases expanded: `tl.arange` -> `triton.language.arange`."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.aliases:
            return self.aliases[head] + ("." + rest if rest else "")
        return dotted

    def tl_function(self, call: ast.AST) -> str | None:
        """`arange` for a call of `tl.arange` (also `tl.math.exp` -> `exp`, `libdevice.exp` -> `exp`)."""
        if not isinstance(call, ast.Call):
            return None
        resolved = self.resolve(call.func) or ""
        for prefix in (TL + ".math.", TL + ".extra.cuda.libdevice.", TL + ".extra.libdevice.", TL + "."):
            if resolved.startswith(prefix):
                return resolved[len(prefix) :]
        return None

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

    def _collect_aliases(self) -> None:
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.aliases[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

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
            nodes=self._bodies[id(node)],
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


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def walk(node: ast.AST) -> list[ast.AST]:
    """Every node under `node` (itself included), depth first in source order, without `ctx` markers.

    A faster `ast.walk` for the audit's hot paths; expression contexts (Load/Store) carry no information here.
    """
    found: list[ast.AST] = []
    stack = [node]
    while stack:
        current = stack.pop()
        found.append(current)
        kind = type(current)
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f != "ctx")
        children: list[ast.AST] = []
        for name in fields:
            value = getattr(current, name, None)
            if isinstance(value, list):
                children.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                children.append(value)
        stack.extend(reversed(children))
    return found


def _walk_with_bodies(tree: ast.Module) -> tuple[list[ast.AST], dict[int, list[ast.AST]]]:
    """`walk(tree)`, plus for every function the nodes of its body, in one pass."""
    found: list[ast.AST] = []
    bodies: dict[int, list[ast.AST]] = {}
    stack: list[tuple[ast.AST, tuple[list[ast.AST], ...]]] = [(tree, ())]
    while stack:
        current, owners = stack.pop()
        found.append(current)
        for owner in owners:
            owner.append(current)
        kind = type(current)
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f != "ctx")
        children: list[tuple[ast.AST, tuple[list[ast.AST], ...]]] = []
        body_owners = owners
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            body = bodies[id(current)] = []
            body_owners = (*owners, body)
        for name in fields:
            value = getattr(current, name, None)
            inner = body_owners if name == "body" else owners
            if isinstance(value, list):
                children.extend((item, inner) for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                children.append((value, inner))
        stack.extend(reversed(children))
    return found, bodies


def next_power_of_two(size: int) -> int:
    """The smallest power of two >= size (as `triton.next_power_of_2`)."""
    return 1 << max(size - 1, 0).bit_length()


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
