"""A short step-by-step rationale for an SFT completion, read from the kernel it explains: which kernels, what
each loads, computes and stores, how it is launched, and what `forward` does around them.

It states only what the code shows, so it can never disagree with the kernel that follows it.
"""

from __future__ import annotations

import ast

REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "cumsum", "associative_scan", "xor_sum"}


def rationale(candidate: str) -> str:
    """Numbered steps describing `candidate` (a ModelNew module); empty if it has no kernels to describe."""
    tree = ast.parse(candidate)
    kernels = [node for node in tree.body if isinstance(node, ast.FunctionDef) and _is_jit(node)]
    if not kernels:
        return ""
    steps = [
        f"Write {len(kernels)} Triton kernel{'s' if len(kernels) != 1 else ''} "
        f"({', '.join(k.name for k in kernels)}); each program instance handles one block of the data."
    ]
    steps += [_describe(kernel) for kernel in kernels]
    launches = _launches(tree)
    if launches:
        steps.append(
            "In `forward`, allocate the outputs and launch "
            + ", then ".join(f"`{name}` over the grid `{grid}`" for name, grid in launches)
            + "."
        )
    return "\n".join(f"{number}. {step}" for number, step in enumerate(steps, 1))


def _describe(kernel: ast.FunctionDef) -> str:
    calls = [_call_name(node) for node in ast.walk(kernel) if isinstance(node, ast.Call)]
    loads, stores = calls.count("load"), calls.count("store")
    axes = sorted({_axis(node) for node in ast.walk(kernel) if _call_name(node) == "program_id"} - {None})
    parts = [f"`{kernel.name}`:"]
    if axes:
        parts.append(f"programs index a {len(axes)}-D grid;")
    parts.append(f"{loads} load{'s' if loads != 1 else ''},")
    work = []
    if "dot" in calls:
        work.append("a tiled matrix product with tl.dot")
    reductions = sorted(set(calls) & REDUCTIONS)
    if reductions:
        work.append(f"reductions ({', '.join(reductions)})")
    if any(isinstance(node, ast.For) for node in ast.walk(kernel)):
        work.append("a loop over the reduced dimension")
    parts.append(("then " + ", ".join(work) + ",") if work else "elementwise math in registers,")
    parts.append(f"{stores} store{'s' if stores != 1 else ''} of the result.")
    return " ".join(parts)


def _launches(tree: ast.Module) -> list[tuple[str, str]]:
    forward = next(
        (
            node
            for cls in tree.body
            if isinstance(cls, ast.ClassDef) and cls.name == "ModelNew"
            for node in cls.body
            if isinstance(node, ast.FunctionDef) and node.name == "forward"
        ),
        None,
    )
    if forward is None:
        return []
    found = []
    for node in ast.walk(forward):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            kernel = node.func.value
            if isinstance(kernel, ast.Name):
                found.append((kernel.id, ast.unparse(node.func.slice)))
    return found


def _is_jit(node: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(decorator) for decorator in node.decorator_list)


def _call_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _axis(node: ast.Call) -> int | None:
    argument = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "axis"), None)
    return argument.value if isinstance(argument, ast.Constant) and isinstance(argument.value, int) else None
