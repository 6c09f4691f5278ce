"""From an editor buffer to a KernelBench task (docs/ARCHITECTURE.md, "Tasks and candidates"): find what is
under the cursor, wrap it, add inputs; and, for a converted kernel, find the task it was converted from.

Only the AST is read; nothing in the buffer is imported or run here (the model server runs it, sandboxed).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

WRAPPER_CLASS = "Model"
TASK_MARKER = "# tritonize-task:"


class TaskSourceError(ValueError):
    """The buffer cannot become a task; the message says what to add or select."""


@dataclass(frozen=True)
class Target:
    """A top-level function or `nn.Module` class: its name, kind and 1-based line span (decorators included)."""

    name: str
    kind: str  # "module" or "function"
    line: int
    end_line: int
    node: ast.FunctionDef | ast.ClassDef


def parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def target_at(tree: ast.Module, line: int) -> Target | None:
    """The convertible definition holding 1-based `line`: a module class with forward, or a plain function."""
    return next((t for t in targets(tree) if t.line <= line <= t.end_line), None)


def targets(tree: ast.Module) -> list[Target]:
    """Every convertible top-level definition, in order."""
    found = []
    for node in tree.body:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.ClassDef) and _forward(node) and node.name != "ModelNew":
            found.append(Target(node.name, "module", start, end, node))
        elif isinstance(node, ast.FunctionDef) and not node.decorator_list and node.name not in _TASK_HOOKS:
            found.append(Target(node.name, "function", start, end, node))
    return found


def target_named(tree: ast.Module | None, name: str) -> Target | None:
    """The convertible top-level definition called `name`, wherever it is now."""
    for node in tree.body if tree else []:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return target_at(tree, node.lineno)
    return None


def defined_names(tree: ast.Module) -> set[str]:
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def build_task(source: str, tree: ast.Module, target: Target) -> str:
    """The buffer plus what makes `target` the task's `Model`; errors name the missing piece."""
    names = defined_names(tree)
    if "get_inputs" not in names:
        raise TaskSourceError(
            f"{target.name} has no example inputs: this file defines no get_inputs(); "
            'run the "Add example inputs" code action first'
        )
    parts = [source.rstrip("\n"), "", "", "# --- added by tritonize to make the selection the task's Model ---"]
    if target.kind == "function":
        parts += [
            "import torch.nn as _tritonize_nn",
            "",
            "",
            f"class {WRAPPER_CLASS}(_tritonize_nn.Module):",
            "    def forward(self, *args):",
            f"        return {target.name}(*args)",
        ]
    elif target.name != WRAPPER_CLASS:
        parts.append(f"{WRAPPER_CLASS} = {target.name}")
    if "get_init_inputs" not in names:
        if target.kind == "module" and _params(_method(target.node, "__init__"), skip_self=True):
            raise TaskSourceError(
                f"{target.name}.__init__ takes arguments but this file defines no get_init_inputs(); "
                'run the "Add example inputs" code action first'
            )
        parts += ["", "", "def get_init_inputs():", "    return []"]
    return "\n".join(parts) + "\n"


def example_inputs(tree: ast.Module, target: Target) -> str:
    """`get_inputs()` (and `get_init_inputs()` when missing) with values guessed from the annotations."""
    if target.kind == "module":
        forward = _params(_forward(target.node), skip_self=True)
        init = _params(_method(target.node, "__init__"), skip_self=True)
    else:
        forward, init = _params(target.node, skip_self=False), []
    names = defined_names(tree)
    blocks = []
    if "get_inputs" not in names:
        values = ", ".join(_example(arg) for arg in forward)
        blocks.append(
            f"def get_inputs():\n    # example inputs for {target.name}: edit the shapes to match real use\n"
            f"    return [{values}]\n"
        )
    if "get_init_inputs" not in names:
        values = ", ".join(_example(arg, init=True) for arg in init)
        blocks.append(f"def get_init_inputs():\n    return [{values}]\n")
    return "\n\n".join(blocks)


def task_reference(source: str, path: str) -> tuple[str, str] | None:
    """(task file, definition) from a `# tritonize-task: file.py::Name` line, else `x_triton.py` -> `x.py::Model`."""
    for line in source.splitlines()[:40]:
        if line.startswith(TASK_MARKER):
            file, _, name = line[len(TASK_MARKER) :].strip().partition("::")
            return str(Path(path).parent / file), name or WRAPPER_CLASS
    stem = Path(path).stem
    if "_triton" in stem:
        sibling = Path(path).with_name(stem[: stem.rindex("_triton")] + ".py")
        if sibling.is_file():
            return str(sibling), WRAPPER_CLASS
    return None


def top_level_imports(tree: ast.Module) -> dict[str, str]:
    """Each name a top-level import binds, and the module or object it names (`F` -> `torch.nn.functional`)."""
    bound = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                bound[alias.asname or root] = alias.name if alias.asname else root
        elif isinstance(node, ast.ImportFrom) and not node.level:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def uses_torch(tree: ast.Module) -> bool:
    """The module imports torch (or something from it) at top level: it is PyTorch code worth converting."""
    return any(target.split(".")[0] == "torch" for target in top_level_imports(tree).values())


def binds_torch(tree: ast.Module) -> bool:
    """`torch` names the torch module here, so generated code can say `torch.randn`."""
    return top_level_imports(tree).get("torch") == "torch"


_TASK_HOOKS = {"get_inputs", "get_init_inputs"}
_DEFAULT_SIZE = 256
_DEFAULT_BATCH = 16
_DIM_NAMES = {"batch": 16, "b": 16, "bs": 16, "seq": 128, "s": 128, "t": 128, "heads": 8, "h": 8}


def _forward(node: ast.ClassDef) -> ast.FunctionDef | None:
    return _method(node, "forward")


def _method(node: ast.AST, name: str) -> ast.FunctionDef | None:
    if not isinstance(node, ast.ClassDef):
        return None
    return next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _params(function: ast.FunctionDef | None, skip_self: bool) -> list[ast.arg]:
    """Positional parameters without a default: the ones a caller must pass."""
    if function is None:
        return []
    positional = [*function.args.posonlyargs, *function.args.args]
    if skip_self and positional:
        positional = positional[1:]
    required = len(positional) - len(function.args.defaults)
    return positional[: max(required, 0)]


def _example(arg: ast.arg, init: bool = False) -> str:
    annotation = ""
    if isinstance(arg.annotation, ast.Constant) and isinstance(arg.annotation.value, str):
        annotation = arg.annotation.value  # a quoted annotation: "Float[Tensor, 'b n']"
    elif arg.annotation is not None:
        annotation = ast.unparse(arg.annotation)
    base = annotation.split("[", 1)[0].rsplit(".", 1)[-1]
    if base == "int" or (init and not annotation):
        return str(_DEFAULT_SIZE)
    if base == "float":
        return "1e-5" if "eps" in arg.arg.lower() else "0.5"
    if base == "bool":
        return "True"
    shape = _shape(annotation)
    if base in ("Int", "Int32", "Int64", "Integer", "Long", "UInt8"):
        return f"torch.randint(0, 16, ({shape},))"
    if base == "Bool":
        return f"torch.rand({shape}) > 0.5"
    return f"torch.randn({shape})"


def _shape(annotation: str) -> str:
    """Dimensions from a jaxtyping-style string (`Float[Tensor, "batch 1024"]`), else (16, 256)."""
    match = re.search(r"""["']([^"']+)["']""", annotation)
    if not match:
        return f"{_DEFAULT_BATCH}, {_DEFAULT_SIZE}"
    dims = []
    for token in match.group(1).split():
        token = token.strip("*#_ ")
        if token.isdigit():
            dims.append(token)
        elif token and token != "...":
            dims.append(str(_DIM_NAMES.get(token.lower(), _DEFAULT_SIZE)))
    return ", ".join(dims) if dims else f"{_DEFAULT_BATCH}, {_DEFAULT_SIZE}"
