"""Compiles a file's kernels for a CUDA target in a sandboxed child process: `python -m verifier.sandbox.compile_child`.

Only what kernels need is rebuilt from the file (imports they use, module-level assignments, function
definitions); launchers and classes never run. The job file and the results (the last line of stdout, which
nothing the rebuilt code prints can reach: stdout points at /dev/null while it runs) are typed in
`verifier/wire/messages.py`.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import types

from verifier.wire.messages import CompileJobSpec, CompileOutcome, CompileResult, CompileSpec

IMPORTABLE = {"triton", "torch", "math"}
PLAIN_CALLS = {"constexpr", "int", "float", "bool", "next_power_of_2", "cdiv"}
PLAIN_NODES = (
    ast.Constant, ast.Name, ast.Attribute, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.Tuple, ast.List, ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.keyword, ast.expr_context,
)  # fmt: skip
NOT_REBUILT = "__tritonize_not_rebuilt__"
SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
REGISTERS = re.compile(r"Used (\d+) registers")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--job", required=True, help="JSON file: source path, capability, jobs")
    args = parser.parse_args()
    with open(args.job) as handle:
        spec = json.load(handle)
    results = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # whatever compiling prints cannot pass for the results
    outcome = compile_all(spec)
    results.write("\n" + json.dumps(outcome) + "\n")
    results.flush()


def compile_all(spec: CompileSpec) -> CompileOutcome:
    path = spec["source_path"]
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    module, notes = _rebuild(path, source)
    return {"notes": notes, "results": [_compile(module, job, spec["capability"]) for job in spec["jobs"]]}


def _rebuild(path: str, source: str) -> tuple[types.ModuleType, list[str]]:
    """The part of the file kernels need, and nothing else: imports of triton, torch and math, the @jit
    functions, and module-level constants whose values are plain expressions. Launchers, classes, loops and
    calls at module level never run (a file that allocates or loops forever on import compiles all the same)."""
    tree = ast.parse(source)
    module = types.ModuleType("tritonize_audit_subject")
    module.__file__ = path
    sys.modules[module.__name__] = module
    notes = []
    dropped: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            if not _known_import(stmt):
                dropped |= _bound_names(stmt)
                continue
        elif isinstance(stmt, ast.FunctionDef):
            if not any(_keeps(d) for d in stmt.decorator_list):
                continue
            stmt.decorator_list = [d for d in stmt.decorator_list if _keeps(d)]
        elif not (isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None and _plain(stmt.value)):
            dropped |= _bound_names(stmt)
            continue
        try:
            exec(compile(ast.Module([stmt], []), path, "exec"), module.__dict__)
        except Exception as exc:
            notes.append(f"line {stmt.lineno}: {type(exc).__name__}: {exc}")
    setattr(module, NOT_REBUILT, dropped)
    return module, notes


def _bound_names(stmt: ast.stmt) -> set[str]:
    """The module-level names a statement binds (imports, assignment targets, definitions)."""
    if isinstance(stmt, ast.Import):
        return {a.asname or a.name.split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.ImportFrom):
        return {a.asname or a.name for a in stmt.names}
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}


def _known_import(stmt: ast.Import | ast.ImportFrom) -> bool:
    names = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else [stmt.module or ""]
    return not getattr(stmt, "level", 0) and all(name.split(".")[0] in IMPORTABLE for name in names)


def _plain(value: ast.expr) -> bool:
    """A value built from literals, names, attributes and arithmetic, with calls only to constexpr and
    number constructors: evaluating it cannot run the file's code."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            function = ast.unparse(node.func)
            if function.rsplit(".", 1)[-1] not in PLAIN_CALLS:
                return False
        elif not isinstance(node, PLAIN_NODES):
            return False
    return True


def _keeps(decorator: ast.AST) -> bool:
    """Keep `@triton.jit` (and `@jit`, `@triton.constexpr_function`); drop autotune, heuristics and the rest."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name in {"jit", "constexpr_function"}


def _compile(module: types.ModuleType, job: CompileJobSpec, capability: int) -> CompileResult:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    result: CompileResult = {"kernel": job["kernel"], "constexprs": job["constexprs"]}
    function = module.__dict__.get(job["kernel"])
    if function is None or not hasattr(function, "run"):
        return {**result, "skipped": f"`{job['kernel']}` could not be rebuilt from the file"}
    options = {"num_warps": job["num_warps"]}
    if job["num_stages"] is not None:
        options["num_stages"] = job["num_stages"]
    try:
        signature = job["signature"]
        source = ASTSource(function, signature, _constexprs(function, job["constexprs"]), _aligned(signature))
        compiled = triton.compile(source, target=GPUTarget("cuda", capability, 32), options=options)
    except Exception as exc:
        missing = _missing_name(exc, getattr(module, NOT_REBUILT, set()))
        if missing is not None:
            return {**result, "skipped": f"`{job['kernel']}` uses `{missing}`, which comes from code the compile "
                    "check does not run (another module's import or a computed constant)"}  # fmt: skip
        return {**result, "error": _describe_error(exc)}
    figures = _ptxas_figures(compiled.asm.get("ptx"), capability)
    registers = _cubin_registers(compiled.asm.get("cubin"), job["kernel"], capability)
    if registers is not None:
        figures["registers"] = registers
    return {**result, "shared": int(compiled.metadata.shared), **figures}


def _missing_name(exc: BaseException, not_rebuilt: set[str]) -> str | None:
    """The name a compile failed on, when the rebuild left it out on purpose (not the kernel's fault)."""
    current: BaseException | None = exc
    while current is not None:
        for name in re.findall(r"'?(\w+)'? is not defined", str(current)):
            if name in not_rebuilt:
                return name
        current = current.__cause__ or current.__context__
    return None


def _cubin_registers(cubin: bytes | None, kernel: str, capability: int) -> int | None:
    """Registers of the very cubin Triton built (what the driver will report), via `cuobjdump -res-usage`."""
    ptxas = _ptxas_path(capability)
    if not cubin or ptxas is None:
        return None
    tool = os.path.join(os.path.dirname(ptxas), "cuobjdump")
    if not os.path.exists(tool):
        return None
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "kernel.cubin")
    with open(path, "wb") as handle:
        handle.write(cubin)
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        run = subprocess.run([tool, "-res-usage", path], capture_output=True, text=True, timeout=60)
        match = re.search(r"Function \S*" + re.escape(kernel) + r"\S*:\s*REG:(\d+)", run.stdout)
        return int(match.group(1)) if match else None
    return None


def _aligned(signature: dict[str, str]) -> dict | None:
    """Pointers specialised as 16-byte aligned, as Triton does at launch for tensors torch allocates."""
    if _triton_version() < (3, 3):
        return None
    return {(i,): [["tt.divisibility", 16]] for i, kind in enumerate(signature.values()) if kind.startswith("*")}


def _triton_version() -> tuple[int, int]:
    import triton

    return tuple(int(part) for part in triton.__version__.split(".")[:2])


def _constexprs(function, values: dict) -> dict:
    """Triton 3.3+ keys constexprs by name; older releases by argument index tuples."""
    if _triton_version() >= (3, 3):
        return values
    return {(function.arg_names.index(name),): value for name, value in values.items()}


def _describe_error(exc: BaseException) -> dict:
    """The innermost Triton compilation error: its message and where it points, relative to a `def`."""
    chain, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    located = [e for e in chain if getattr(e, "node", None) is not None and getattr(e, "src", None)]
    innermost = located[-1] if located else exc
    message = getattr(innermost, "error_message", None) or _last_line(str(innermost)) or type(innermost).__name__
    if innermost is not exc and not getattr(innermost, "error_message", None):
        message = _last_line(str(chain[-1])) or message
    description = {"type": type(innermost).__name__, "message": message}
    node = getattr(innermost, "node", None)
    src = getattr(innermost, "src", None)
    if node is not None and src:
        header = re.search(r"^\s*def\s+(\w+)", src, re.MULTILINE)
        description |= {
            "function": header.group(1) if header else None,
            "line": getattr(node, "lineno", 1),
            "column": getattr(node, "col_offset", 0),
            "end_line": getattr(node, "end_lineno", None),
            "end_column": getattr(node, "end_col_offset", None),
        }
    return description


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _ptxas_figures(ptx: str | None, capability: int) -> dict:
    """Registers and spill bytes from `ptxas -v` on the kernel's PTX (the driver is not needed); the register
    count is replaced by the built cubin's own when `cuobjdump` is available."""
    ptxas = _ptxas_path(capability)
    if not ptx or ptxas is None:
        return {}
    scratch = os.environ.get("TMPDIR", "/tmp")
    ptx_file = os.path.join(scratch, "kernel.ptx")
    with open(ptx_file, "w") as handle:
        handle.write(ptx)
    arch = f"sm_{capability}a" if capability >= 90 else f"sm_{capability}"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        run = subprocess.run(
            [ptxas, "-v", f"--gpu-name={arch}", ptx_file, "-o", ptx_file + ".cubin"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        registers = REGISTERS.search(run.stderr)
        spills = SPILLS.search(run.stderr)
        figures = {}
        if registers:
            figures["registers"] = int(registers.group(1))
        if spills:
            figures["spill_stores"], figures["spill_loads"] = int(spills.group(1)), int(spills.group(2))
        return figures
    return {}


def _ptxas_path(capability: int) -> str | None:
    try:
        from triton.backends.nvidia.compiler import get_ptxas
    except ImportError:
        return shutil.which("ptxas")
    for call in (lambda: get_ptxas(capability), get_ptxas):
        try:
            return call().path
        except TypeError:
            continue
        except Exception:
            return shutil.which("ptxas")
    return shutil.which("ptxas")


if __name__ == "__main__":
    main()
