"""Which assignment a name's use sees, where the code says it plainly: the last one before it in the same
straight-line block, or either branch's after an `if`. Inside a loop, a name the loop assigns may come from the
previous iteration, so its uses there (and after the loop) are left to the caller's all-assignments view.

This lets the masked-lane analysis see that `qk += tl.where(causal, 0, float("-inf"))` guards the reduction
after it, although `qk` held unguarded values earlier in the same iteration."""

from __future__ import annotations

import ast

from verifier.audit import budget
from verifier.audit.source_index import assigned

Definitions = tuple[ast.expr, ...]
LOOPS = (ast.For, ast.While, ast.AsyncFor)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def reaching_definitions(body: list[ast.stmt]) -> dict[int, Definitions]:
    """`id(name node) -> the values it may hold` for each use of a name whose assignments reach it plainly.
    An augmented assignment's value is a new `BinOp` whose left name is also in the map."""
    reaching: dict[int, Definitions] = {}
    _block(body, {}, reaching)
    return reaching


def _block(statements: list[ast.stmt], env: dict[str, Definitions], reaching: dict[int, Definitions]) -> dict:
    for statement in statements:
        budget.check()
        if isinstance(statement, ast.If):
            _uses(statement.test, env, reaching)
            env = _merge(_block(statement.body, dict(env), reaching), _block(statement.orelse, dict(env), reaching))
        elif isinstance(statement, LOOPS):
            env = _loop(statement, env, reaching)
        elif isinstance(statement, ast.With | ast.AsyncWith):
            for item in statement.items:
                _uses(item.context_expr, env, reaching)
            env = _block(statement.body, env, reaching)
        elif isinstance(statement, ast.stmt) and not _is_compound(statement):
            _uses(statement, env, reaching)
            for name, value in assigned(statement):
                if isinstance(statement, ast.AugAssign) and isinstance(value, ast.BinOp) and name in env:
                    reaching[id(value.left)] = env[name]
                env[name] = (value,)
        else:
            env = {name: values for name, values in env.items() if name not in _assigned_within(statement)}
    return env


def _loop(loop: ast.For | ast.While | ast.AsyncFor, env: dict, reaching: dict) -> dict:
    """A loop's body sees only the names it does not assign; after it, those names are ambiguous too."""
    if isinstance(loop, ast.While):
        carried = _assigned_within(loop)
        _uses(loop.test, {k: v for k, v in env.items() if k not in carried}, reaching)
    else:
        _uses(loop.iter, env, reaching)
        carried = _assigned_within(loop)
    outside = {name: values for name, values in env.items() if name not in carried}
    _block(loop.body, dict(outside), reaching)
    return _block(loop.orelse, outside, reaching)


def _merge(first: dict[str, Definitions], second: dict[str, Definitions]) -> dict[str, Definitions]:
    merged = {}
    for name in first.keys() & second.keys():
        merged[name] = first[name] + tuple(v for v in second[name] if all(v is not w for w in first[name]))
    return merged


def _uses(node: ast.AST, env: dict[str, Definitions], reaching: dict[int, Definitions]) -> None:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load) and current.id in env:
            reaching[id(current)] = env[current.id]
        elif not isinstance(current, SCOPES):
            stack.extend(ast.iter_child_nodes(current))


def _assigned_within(statement: ast.stmt) -> set[str]:
    names = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.stmt):
            names.update(name for name, _ in assigned(node))
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _is_compound(statement: ast.stmt) -> bool:
    return any(isinstance(getattr(statement, field, None), list) for field in ("body", "orelse", "handlers", "cases"))
