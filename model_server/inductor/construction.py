"""The task's own code that a candidate's constructor needs.

A task's `Model` may build its parameters from classes and functions of its module: a harvested library block
carries the library's source, and its `Model.__init__` only instantiates it. The candidate's `ModelNew.__init__` is
the task's constructor, so it needs that code too, but only what construction runs: each class the constructor
reaches keeps its `__init__` and the methods that calls, never its `forward` (the candidate's kernels compute; the
modules only hold parameters, drawn as the task draws them: the same constructors in the same order), with the
module-level values and functions they read. Two forms the verifier's allowlist refuses are written as forms it
accepts, with the same meaning: a `SimpleNamespace(...)` config becomes a class of attributes, and
`getattr(obj, "name", default)` becomes `obj.name if hasattr(obj, "name") else default`. Annotations, which run
nothing here, and statements that only report (a module logger's messages, `warnings.warn`) are left out: they name
modules a candidate may not import, and change nothing that is built.
"""

from __future__ import annotations

import ast

ENTRY_POINTS = frozenset({"Model", "ModelNew", "get_inputs", "get_init_inputs"})
Definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


def construction_code(task: ast.Module, model: ast.ClassDef) -> list[str]:
    """The module-level statements of `task` that `model`'s constructor reaches, in source order, each as source
    and reduced to what construction runs; plain constants are left out (the rewrite copies every one)."""
    init = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return []
    loggers = {
        target.id
        for node in task.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func).startswith("logging.")
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    statements = {}  # each name's last binding, as importing the module leaves it
    for node in task.body:
        for name in _bound_names(node):
            if name not in ENTRY_POINTS:
                statements[name] = node
    kept: dict[int, ast.stmt] = {}
    todo = _names_read([init])
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        node = statements.get(name)
        if name in seen or node is None or plain_constant(node):
            continue
        seen.add(name)
        if id(node) not in kept:
            kept[id(node)] = _for_construction(node, loggers)
            todo |= _names_read([kept[id(node)]])
    return [ast.unparse(kept[id(node)]) for node in task.body if id(node) in kept]


def _for_construction(node: ast.stmt, loggers: set[str]) -> ast.stmt:
    """A copy of a module-level statement in the form the candidate gets: a class without what construction never
    runs, a config namespace as a class, `getattr` with a constant name as attribute access, no annotations and no
    messages (calls of `loggers`' methods, `warnings.warn`)."""
    node = ast.parse(ast.unparse(node)).body[0]
    if isinstance(node, ast.ClassDef):
        node = _construction_methods(node)
    node = _AttributeAccess().visit(_namespace_class(node) or node)
    node = _WithoutMessages(loggers).visit(_WithoutAnnotations().visit(node))
    for part in ast.walk(node):
        if isinstance(getattr(part, "body", None), list) and not part.body:
            part.body = [ast.Pass()]  # a block that held only a bare annotation
    return node


def _construction_methods(cls: ast.ClassDef) -> ast.ClassDef:
    """`cls` with its `__init__`, the methods that reaches through `self.NAME` or `ClassName.NAME`, and its class-level
    assignments; no docstring."""
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    wanted = {"__init__"} & set(methods)
    todo = list(wanted)
    while todo:
        for node in ast.walk(methods[todo.pop()]):
            if isinstance(node, ast.Attribute) and node.attr in methods and node.attr not in wanted:
                wanted.add(node.attr)
                todo.append(node.attr)
    body = [
        n
        for n in cls.body
        if (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name in wanted)
        or isinstance(n, ast.Assign | ast.AnnAssign)
    ]
    for method in body:
        if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef) and ast.get_docstring(method) is not None:
            method.body = method.body[1:] or [ast.Pass()]
    cls.body = body or [ast.Pass()]
    return cls


def _namespace_class(node: ast.stmt) -> ast.ClassDef | None:
    """`NAME = SimpleNamespace(key=value, ...)` as `class NAME:` with those attributes, else None."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return None
    call = node.value
    if (
        not isinstance(call, ast.Call)
        or call.args
        or ast.unparse(call.func) not in ("SimpleNamespace", "types.SimpleNamespace")
    ):
        return None
    if any(keyword.arg is None for keyword in call.keywords):
        return None
    attributes = [
        ast.Assign(targets=[ast.Name(id=keyword.arg, ctx=ast.Store())], value=keyword.value)
        for keyword in call.keywords
    ]
    cls = ast.ClassDef(
        name=node.targets[0].id,
        bases=[],
        keywords=[],
        body=attributes or [ast.Pass()],
        decorator_list=[],
        type_params=[],
    )
    return ast.fix_missing_locations(cls)


class _AttributeAccess(ast.NodeTransformer):
    """`getattr(obj, "name")` -> `obj.name`; `getattr(obj, "name", default)` -> `obj.name if hasattr(obj, "name")
    else default`: the same value, without a builtin that reaches any attribute by a computed name."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if not (isinstance(node.func, ast.Name) and node.func.id == "getattr" and not node.keywords):
            return node
        if len(node.args) not in (2, 3) or not _identifier(node.args[1]):
            return node
        target, name = node.args[0], node.args[1].value
        access = ast.Attribute(value=target, attr=name, ctx=ast.Load())
        if len(node.args) == 2:
            return ast.copy_location(access, node)
        test = ast.Call(func=ast.Name(id="hasattr", ctx=ast.Load()), args=[target, node.args[1]], keywords=[])
        return ast.copy_location(ast.IfExp(test=test, body=access, orelse=node.args[2]), node)


class _WithoutAnnotations(ast.NodeTransformer):
    """Arguments and returns without annotations; `x: T = v` as `x = v`; a bare `x: T` dropped."""

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        node.returns = None
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt | None:
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


class _WithoutMessages(ast.NodeTransformer):
    """Statements that only report, `logger.warning(...)` or `warnings.warn(...)`, left out."""

    def __init__(self, loggers: set[str]):
        self.loggers = loggers

    def visit_Expr(self, node: ast.Expr) -> ast.Expr | None:
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            owner = call.func.value
            if isinstance(owner, ast.Name) and (owner.id in self.loggers or ast.unparse(call.func) == "warnings.warn"):
                return None
        return node


def _identifier(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier()


def _bound_names(node: ast.stmt) -> list[str]:
    """The names a module-level statement binds (definitions and assignments; imports are the rewrite's)."""
    if isinstance(node, Definition):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return [n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)]


def plain_constant(node: ast.stmt) -> bool:
    """A module-level `NAME = literal`: the rewrite copies every such line as it stands."""
    return isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(getattr(node, "value", None), ast.Constant)


def _names_read(nodes: list[ast.AST]) -> set[str]:
    """The names `nodes` read from the module: each function's reads but its own arguments and locals (a
    constructor's `bias_shape` argument is not the module's `bias_shape`), and what is read outside functions."""
    read = set()
    for node in nodes:
        for part in ast.walk(node):
            if isinstance(part, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                arguments = part.args.posonlyargs + part.args.args + part.args.kwonlyargs
                arguments += [a for a in (part.args.vararg, part.args.kwarg) if a is not None]
                local = {a.arg for a in arguments} | _names(part, ast.Store)
                read |= _names(part, ast.Load) - local
        read |= _names(node, ast.Load, into_functions=False)
    return read


def _names(node: ast.AST, context: type, into_functions: bool = True) -> set[str]:
    found, todo = set(), [node]
    while todo:
        part = todo.pop()
        if isinstance(part, ast.Name) and isinstance(part.ctx, context):
            found.add(part.id)
        if into_functions or not isinstance(part, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(part))
        else:  # what is read where the function is defined: decorators and default values
            todo.extend(
                [*getattr(part, "decorator_list", []), *part.args.defaults, *filter(None, part.args.kw_defaults)]
            )
    return found
