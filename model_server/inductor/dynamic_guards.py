"""The first lines of a dynamic candidate's `forward`: the inputs its kernels accept, by rank, fixed sizes, strides
and dtype, and the conditions on the varying sizes they were compiled under (sizes that must be equal, 32-bit
indexing bounds). A capture's record is data, never code to paste: every expression is parsed and checked to be
arithmetic and comparisons over `forward`'s arguments' sizes before it is written.
"""

from __future__ import annotations

import ast
import re

SYMBOL = re.compile(r"\b[su]\d+\b")  # Inductor's size variables in its wrapper's code
SIZE = re.compile(r"([A-Za-z_]\w*)\.shape\[(\d+)\]")
ALLOWED_NODES = (
    ast.Expression,
    ast.Compare,
    ast.BoolOp,
    ast.BinOp,
    ast.UnaryOp,
    ast.Constant,
    ast.Load,
    ast.Call,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)
CALLS = {"max", "min", "abs"}

UNEXPECTED_SHAPE = '''def unexpected_shape(name, tensor, shape, stride, dtype):
    """The kernels accept other sizes only along the dynamic dimensions (shown as expressions of the sizes)."""
    return ValueError(
        f"ModelNew was generated for `{name}` of shape {shape}, strides {stride} and {dtype}, but got shape "
        f"{tuple(tensor.shape)}, strides {tensor.stride()} and {tensor.dtype}; convert the task again for these inputs"
    )'''

UNEXPECTED_SIZES = '''def unexpected_sizes(condition, shapes):
    """The kernels were compiled for sizes where `condition` holds; any other sizes are refused."""
    got = ", ".join(f"`{name}` {shape}" for name, shape in shapes.items())
    return ValueError(
        f"ModelNew's kernels were compiled for sizes where `{condition}`, but got {got}; convert the task again "
        "for these sizes"
    )'''


class GuardError(Exception):
    """A capture's record of sizes that cannot be written as a guard; the message says which."""


def dynamic_input_guards(
    tensors: list[tuple[str, list[str], list[str], str]], dynamic: dict, parameters: list[str]
) -> list[str]:
    """Lines that refuse inputs the kernels were not compiled for. `tensors`: each tensor argument's name, and
    its shape, strides and dtype as Inductor's wrapper asserts them (over its size variables); `dynamic`: the
    capture's record (`symbols`: size variable -> `x.shape[d]`; `guards`: conditions over those)."""
    symbols = _symbols(dynamic.get("symbols", {}), parameters)
    lines = []
    for name, shape, stride, dtype in tensors:
        sizes = [_over_sizes(e, symbols, parameters) for e in shape]
        strides = [_over_sizes(e, symbols, parameters) for e in stride]
        checks = [f"{name}.dim() != {len(sizes)}"]
        checks += [f"{name}.shape[{i}] != {size}" for i, size in enumerate(sizes) if size != f"{name}.shape[{i}]"]
        checks += _stride_checks(name, sizes, strides)
        checks.append(f"{name}.dtype != {dtype}")
        shown = _tuple(["*" if size == f"{name}.shape[{i}]" else size for i, size in enumerate(sizes)])
        lines += [
            f"if {' or '.join(checks)}:",
            f"    raise unexpected_shape({name!r}, {name}, {shown!r}, {_tuple(strides)!r}, {dtype})",
        ]
    shapes = "{" + ", ".join(f"{name!r}: tuple({name}.shape)" for name, *_ in tensors) + "}"
    for guard in dynamic.get("guards", []):
        condition = _over_sizes(guard, symbols, parameters)
        lines += [f"if not ({condition}):", f"    raise unexpected_sizes({condition!r}, {shapes})"]
    return lines


def _stride_checks(name: str, sizes: list[str], strides: list[str]) -> list[str]:
    """Each dimension's stride as asserted, except where its size is 1: the kernels index it at 0 only, so its
    stride never matters (PyTorch leaves it arbitrary in views)."""
    checks = []
    for i, (size, stride) in enumerate(zip(sizes, strides)):
        if size == "1":
            continue
        mismatch = f"{name}.stride({i}) != {stride}"
        checks.append(mismatch if size.isdigit() else f"({name}.shape[{i}] != 1 and {mismatch})")
    return checks


def _symbols(symbols: dict, parameters: list[str]) -> dict[str, str]:
    checked = {}
    for symbol, text in symbols.items():
        found = SIZE.fullmatch(str(text))
        if not SYMBOL.fullmatch(str(symbol)) or found is None or found.group(1) not in parameters:
            raise GuardError(f"the capture names size variable {symbol!r} as {text!r}, not a size of forward's inputs")
        checked[symbol] = text
    return checked


def _over_sizes(expression: str, symbols: dict[str, str], parameters: list[str]) -> str:
    """`expression` with Inductor's size variables written as the sizes they stand for, once it is checked to be
    arithmetic and comparisons over `forward`'s arguments' sizes."""

    def named(found: re.Match) -> str:
        if found.group(0) not in symbols:
            raise GuardError(f"`{expression}` uses size variable {found.group(0)}, which no input's size names")
        return symbols[found.group(0)]

    text = SYMBOL.sub(named, str(expression))
    for name, _ in SIZE.findall(text):
        if name not in parameters:
            raise GuardError(f"`{expression}` reads the size of `{name}`, not one of forward's arguments")
    try:
        tree = ast.parse(SIZE.sub("1", text), mode="eval")
    except SyntaxError:
        raise GuardError(f"`{expression}` is not a Python expression") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in CALLS:
            continue
        if not isinstance(node, ALLOWED_NODES):
            raise GuardError(f"`{expression}` is not arithmetic on sizes ({type(node).__name__})")
        if isinstance(node, ast.Constant) and type(node.value) is not int:
            raise GuardError(f"`{expression}` holds a constant that is no integer")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in CALLS and not node.keywords
        ):
            raise GuardError(f"`{expression}` calls something other than {', '.join(sorted(CALLS))}")
    return text


def _tuple(items: list[str]) -> str:
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
