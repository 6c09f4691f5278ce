"""The source of a library's class or function with everything it needs from its library, as one self-contained module.

`closure(objects, library, substitutes)` starts from `inspect.getsource` of each object and follows its free names
through the defining module's globals: functions and classes of `library` are pulled in (their source, recursively,
dependencies first), modules and objects of the standard library and torch become plain imports, simple constants are
written as assignments, and a name of `substitutes` is replaced by its given source. Anything else is refused with the
reason, as is a closure past `MAX_DEFINITIONS` definitions or `MAX_DEPTH` levels. Decorators and annotations that
belong to `library` are dropped (library machinery: hub kernels, deprecation shims); the harvester proves afterwards
that the extracted code computes what the library computes.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
import textwrap
import types
from dataclasses import dataclass, field

MAX_DEFINITIONS = 40
MAX_DEPTH = 8
IMPORTABLE = (
    "torch",
    "math",
    "typing",
    "inspect",
    "contextlib",
    "warnings",
    "abc",
    "collections",
    "dataclasses",
    "functools",
    "itertools",
    "enum",
    "numbers",
)
CONSTANTS = (int, float, str, bool, type(None))


class Refused(Exception):
    """The object cannot be made self-contained; the message says why."""


@dataclass
class Closure:
    """Import lines, then definitions in dependency order (each a source text), making the objects self-contained."""

    imports: list[str] = field(default_factory=list)
    definitions: list[str] = field(default_factory=list)
    bound: dict[str, object] = field(default_factory=dict)

    def source(self) -> str:
        return "\n".join(self.imports) + "\n\n\n" + "\n\n\n".join(self.definitions) + "\n"


def closure(objects: list[object], library: str, substitutes: dict[str, str]) -> Closure:
    """The self-contained source of `objects` (classes or functions of `library`); raises `Refused`."""
    found = Closure()
    for obj in objects:
        _resolve(getattr(obj, "__name__", "?"), obj, library, substitutes, found, depth=-1)
    return found


def _add(obj: object, name: str, library: str, substitutes: dict[str, str], found: Closure, depth: int) -> None:
    if found.bound.get(name, _MISSING) is obj:
        return
    if name in found.bound:
        raise Refused(f"name {name!r} means two different things in the closure")
    if depth > MAX_DEPTH or len(found.definitions) >= MAX_DEFINITIONS:
        raise Refused(f"closure deeper than {MAX_DEPTH} or larger than {MAX_DEFINITIONS} definitions at {name!r}")
    found.bound[name] = obj
    tree = _cleaned(obj, library)
    module = sys.modules[obj.__module__]
    for free in sorted(_free_names(tree)):
        if free in substitutes:
            _substitute(free, substitutes[free], found)
        elif free in vars(module):
            _resolve(free, vars(module)[free], library, substitutes, found, depth)
        elif not hasattr(builtins, free):
            raise Refused(f"{obj.__module__}.{name} reads {free!r}, which its module does not define")
    text = ast.unparse(tree)
    if obj.__name__ != name:
        text += f"\n\n\n{name} = {obj.__name__}"
    found.definitions.append(text)


_MISSING = object()


def _resolve(name: str, value: object, library: str, substitutes: dict[str, str], found: Closure, depth: int) -> None:
    """Bring `name` (bound to `value` in the module being read) into the closure, or refuse."""
    if isinstance(value, types.ModuleType):
        _import_module(name, value, found)
    elif isinstance(value, CONSTANTS) or _simple_tuple(value):
        _define(name, f"{name} = {value!r}", value, found)
    elif (inspect.isclass(value) or inspect.isfunction(value)) and value.__module__.split(".")[0] == library:
        _add(value, name, library, substitutes, found, depth + 1)
    elif _importable(value):
        line = f"from {value.__module__} import {value.__qualname__}"
        line += f" as {name}" if value.__qualname__ != name else ""
        _define(name, line, value, found, imported=True)
    else:
        where = getattr(value, "__module__", None) or type(value).__module__
        raise Refused(f"{name!r} is a {type(value).__name__} from {where}, not library source nor a plain import")


def _import_module(name: str, module: types.ModuleType, found: Closure) -> None:
    if module.__name__.split(".")[0] not in IMPORTABLE:
        raise Refused(f"{name!r} is the module {module.__name__}, outside torch and the standard library")
    head, _, tail = module.__name__.rpartition(".")
    line = f"import {module.__name__}" if name == module.__name__ else f"import {module.__name__} as {name}"
    if head and tail == name:
        line = f"from {head} import {tail}"
    _define(name, line, module, found, imported=True)


def _importable(value: object) -> bool:
    """Whether `value` is reachable as `from <its module> import <its qualname>` from torch or the standard library."""
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "." in qualname or "<" in qualname:
        return False
    if module.split(".")[0] not in IMPORTABLE or module not in sys.modules:
        return False
    return getattr(sys.modules[module], qualname, None) is value


def _simple_tuple(value: object) -> bool:
    return isinstance(value, tuple) and all(isinstance(item, CONSTANTS) for item in value)


def _define(name: str, line: str, value: object, found: Closure, imported: bool = False) -> None:
    if name in found.bound:
        if found.bound[name] is not value and not (imported and line in found.imports):
            raise Refused(f"name {name!r} means two different things in the closure")
        return
    found.bound[name] = value
    (found.imports if imported else found.definitions).append(line)


def _substitute(name: str, text: str, found: Closure) -> None:
    if name not in found.bound:
        found.bound[name] = text
        found.definitions.append(text)


def _cleaned(obj: object, library: str) -> ast.Module:
    """The parsed source of `obj` without annotations and without decorators that come from `library`."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except (OSError, TypeError, SyntaxError) as error:
        raise Refused(f"no source for {obj!r}: {error}") from None
    module = sys.modules[obj.__module__]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.decorator_list = [d for d in node.decorator_list if not _from_library(d, module, library)]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
            for argument in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                argument.annotation = None
            for argument in (node.args.vararg, node.args.kwarg):
                if argument is not None:
                    argument.annotation = None
    return tree


def _from_library(decorator: ast.expr, module: types.ModuleType, library: str) -> bool:
    head = decorator.func if isinstance(decorator, ast.Call) else decorator
    while isinstance(head, ast.Attribute):
        head = head.value
    if not isinstance(head, ast.Name) or head.id not in vars(module):
        return False
    value = vars(module)[head.id]
    where = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", "") or ""
    return where.split(".")[0] == library


def _free_names(tree: ast.Module) -> set[str]:
    """Names the code reads and does not itself bind (a simple over-approximation: any binding anywhere counts)."""
    loaded, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    top = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    return loaded - (bound - top) - top
