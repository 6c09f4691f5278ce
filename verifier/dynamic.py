"""Dynamic dimensions: which input sizes a kernel must accept besides the example's (the other sizes it is then
verified at are `verifier.wire.resize`'s).

A spec is `auto` (every dimension of every tensor input but the innermost) or a comma-separated list of items,
each `D` (dimension D of every tensor input that has it) or `NAME:D` (dimension D of `forward`'s argument NAME);
D may be negative. `tritonize convert --dynamic` writes the dimensions that did vary as a `# tritonize-dynamic:`
line below the policy line, and `tritonize verify` reads it back, so both check the same sizes.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from verifier.errors import UsageError

AUTO = "auto"
LINE = re.compile(r"^# tritonize-dynamic: (\S+)", re.MULTILINE)
LINES_READ = 5
ITEM = re.compile(r"(?:([A-Za-z_]\w*):)?(-?\d+)")
MAX_ITEMS = 64


@dataclass(frozen=True)
class DynamicSpec:
    """A parsed spec: `auto`, or (argument name or None for every input, dimension) pairs."""

    auto: bool
    dims: tuple[tuple[str | None, int], ...] = ()

    def __str__(self) -> str:
        if self.auto:
            return AUTO
        return ",".join(f"{name}:{dim}" if name else str(dim) for name, dim in self.dims)


def parse_dynamic(text: str) -> DynamicSpec:
    """The spec `text` names; a UsageError that quotes the item it cannot read."""
    text = text.strip()
    if text == AUTO:
        return DynamicSpec(auto=True)
    items = [item.strip() for item in text.split(",")]
    if not text or len(items) > MAX_ITEMS:
        raise UsageError(f"a dynamic spec is `auto` or up to {MAX_ITEMS} items such as `0` or `x:0`, got {text!r}")
    dims = []
    for item in items:
        found = ITEM.fullmatch(item)
        if found is None:
            raise UsageError(
                f"dynamic spec item {item!r} is neither a dimension (`0`, `-2`) nor an argument's dimension (`x:0`)"
            )
        dims.append((found.group(1), int(found.group(2))))
    return DynamicSpec(auto=False, dims=tuple(dict.fromkeys(dims)))


def declared_dynamic(source: str, first_lines: int | None = LINES_READ) -> str | None:
    """The spec a kernel's `# tritonize-dynamic:` line names, among its first lines (`first_lines` None: anywhere,
    for a kernel the editor placed in the task's own file); None without one."""
    found = LINE.search("\n".join(source.splitlines()[:first_lines]))
    return found.group(1) if found else None


def dynamic_line(spec: str) -> str:
    """The line `tritonize convert` writes below the policy line of a kernel verified at other sizes."""
    return f"# tritonize-dynamic: {spec} -- verified at the example sizes and others along these dimensions\n"


def dynamic_positions(text: str, tree: ast.Module, origin: str) -> list[list[int | None]]:
    """The spec `text` for the verifier's calls, checked against the task (`tree`, named `origin` in errors)."""
    return positions(parse_dynamic(text), forward_parameters(tree), origin)


def forward_parameters(tree: ast.Module) -> list[str]:
    """The names of the task's `Model.forward` parameters after `self`, in order: `get_inputs()`'s positions."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    arguments = item.args.posonlyargs + item.args.args
                    return [a.arg for a in arguments[1:]]
    return []


def positions(spec: DynamicSpec, parameters: list[str], origin: str) -> list[list[int | None]]:
    """The spec for the verifier's calls: [position or None for every input, dimension] pairs (auto: empty, the
    sandbox applies it); a UsageError for a name `forward` does not take."""
    resolved: list[list[int | None]] = []
    for name, dim in spec.dims:
        if name is None:
            resolved.append([None, dim])
            continue
        if name not in parameters:
            taken = ", ".join(parameters) or "nothing"
            raise UsageError(f"the dynamic spec names `{name}`, but {origin}'s Model.forward takes {taken}")
        resolved.append([parameters.index(name), dim])
    return resolved
