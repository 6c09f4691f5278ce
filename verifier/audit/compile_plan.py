"""Which compilations to try for each kernel: argument types and constexpr values known without running code.

Sources, strongest first: `@triton.autotune` configs, the launch sites in the same file (keyword and positional
constants, `num_warps=`, dtypes of tensors allocated there), then constexpr defaults. Pointer parameters are
those reached through `+`/`-` chains in loads and stores; what cannot be known is assumed (fp32 pointers,
int32 scalars) and every assumption is recorded so a failure it may have caused is not reported as an error.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from verifier.audit.dataflow import keyword
from verifier.audit.source_index import Kernel, Launch, SourceIndex, walk, walk_body
from verifier.wire.messages import CompileJobSpec

MAX_JOBS_PER_KERNEL = 4
TORCH_DTYPES = {
    "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
    "float64": "fp64", "double": "fp64", "int32": "i32", "int": "i32", "int64": "i64", "long": "i64",
    "int8": "i8", "uint8": "u8", "int16": "i16", "bool": "i1",
}  # fmt: skip
CAST_METHODS = {"half": "fp16", "float": "fp32", "bfloat16": "bf16", "double": "fp64", "long": "i64", "int": "i32"}
POINTER_USES = {"load", "store", "atomic_add", "atomic_cas", "atomic_xchg", "atomic_max", "atomic_min"}
EXAMPLE_CONSTRUCTORS = {f"torch.{n}" for n in ("randn", "rand", "zeros", "ones", "empty", "full", "randn_like")}
FLOAT_NAMES = ("eps", "scale", "alpha", "beta", "slope", "momentum", "temperature", "factor", "coef", "theta")


@dataclass(frozen=True)
class CompileJob:
    """One compilation of one kernel: what Triton's `ASTSource` needs, and how we came to it."""

    kernel: str
    line: int
    signature: dict[str, str]
    constexprs: dict[str, object]
    num_warps: int
    num_stages: int | None
    assumptions: tuple[str, ...]

    @property
    def label(self) -> str:
        values = ", ".join(f"{k}={v}" for k, v in self.constexprs.items())
        stages = f", num_stages={self.num_stages}" if self.num_stages is not None else ""
        return f"{values + ', ' if values else ''}num_warps={self.num_warps}{stages}"

    def as_dict(self) -> CompileJobSpec:
        return {
            "kernel": self.kernel,
            "line": self.line,
            "signature": self.signature,
            "constexprs": self.constexprs,
            "num_warps": self.num_warps,
            "num_stages": self.num_stages,
        }


def plan(index: SourceIndex) -> list[CompileJob]:
    """Compile jobs for every kernel whose constexpr values can all be known; others are skipped."""
    helpers = {  # jit functions a kernel calls or hands on (a tl.reduce or tl.associative_scan combine_fn)
        node.id
        for kernel in index.kernels.values()
        for node in kernel.nodes
        if isinstance(node, ast.Name) and node.id in index.kernels and node.id != kernel.name
    }
    jobs: list[CompileJob] = []
    for kernel in index.kernels.values():
        if kernel.node.col_offset != 0 or (kernel.name in helpers and not index.launches_of(kernel.name)):
            continue  # nested kernels cannot be rebuilt alone; helpers compile as part of their callers
        jobs.extend(_kernel_jobs(index, kernel))
    return jobs


def _kernel_jobs(index: SourceIndex, kernel: Kernel) -> list[CompileJob]:
    pointers = _pointer_params(index, kernel)
    example = _example_dtype(index)
    launches = index.launches_of(kernel.name)
    settings = [_launch_settings(index, kernel, launch) for launch in launches] or [({}, {}, {})]
    configs = _autotune_configs(index, kernel) or [({}, {})]
    jobs: list[CompileJob] = []
    for constants, options, dtypes in settings:
        for config_constants, config_options in configs:
            values = {**constants, **config_constants}
            constexprs = {}
            for name in kernel.params:
                if name not in kernel.constexprs:
                    continue
                value = values.get(name, index.const_value(kernel.defaults[name]) if name in kernel.defaults else None)
                if value is None:
                    break
                constexprs[name] = value
            else:
                guessed = tuple(f"{name}={constexprs[name]}" for name in dtypes.get("=guessed", ()))
                known = {p: example for p in pointers if example and p not in dtypes} | dtypes
                job = _job(kernel, pointers, constexprs, {**options, **config_options}, known, guessed)
                if job not in jobs:
                    jobs.append(job)
    return jobs[:MAX_JOBS_PER_KERNEL]


def _job(
    kernel: Kernel, pointers: set[str], constexprs: dict, options: dict, dtypes: dict, guessed: tuple[str, ...]
) -> CompileJob:
    signature: dict[str, str] = {}
    assumptions: list[str] = list(guessed)
    for name in kernel.params:
        if name in kernel.constexprs:
            signature[name] = "constexpr"
        elif name in pointers:
            signature[name] = "*" + dtypes.get(name, "fp32")
            if name not in dtypes:
                assumptions.append(f"{name}: *fp32")
        elif isinstance(dtypes.get(name), str):
            signature[name] = dtypes[name]
        else:
            guess = "fp32" if any(hint in name.lower() for hint in FLOAT_NAMES) else "i32"
            signature[name] = guess
            assumptions.append(f"{name}: {guess}")
    return CompileJob(
        kernel=kernel.name,
        line=kernel.node.lineno,
        signature=signature,
        constexprs=constexprs,
        num_warps=int(options.get("num_warps", 4)),
        num_stages=int(options["num_stages"]) if "num_stages" in options else None,
        assumptions=tuple(assumptions),
    )


def _pointer_params(index: SourceIndex, kernel: Kernel) -> set[str]:
    pointers: set[str] = set()
    for node in kernel.nodes:
        if not isinstance(node, ast.Call):
            continue
        function = index.tl_function(node)
        if function in POINTER_USES and node.args:
            pointers |= _pointer_roots(kernel, node.args[0], set())
        elif function == "make_block_ptr":
            base = node.args[0] if node.args else keyword(node, "base")
            pointers |= _pointer_roots(kernel, base, set()) if base is not None else set()
        elif isinstance(node.func, ast.Name) and node.func.id in index.kernels:
            callee = index.kernels[node.func.id]
            if callee is kernel:
                continue
            callee_pointers = _pointer_params(index, callee)
            for argument, parameter in zip(node.args, callee.params):
                if parameter in callee_pointers:
                    pointers |= _pointer_roots(kernel, argument, set())
    return pointers & set(kernel.params)


def _pointer_roots(kernel: Kernel, node: ast.AST, seen: set[str]) -> set[str]:
    """Names an address is built from by adding offsets: `x_ptr + offs * stride` -> {x_ptr}."""
    if isinstance(node, ast.Name):
        if node.id in kernel.params:
            return {node.id}
        if node.id in seen:
            return set()
        seen.add(node.id)
        return set().union(*(_pointer_roots(kernel, v, seen) for v in kernel.assignments.get(node.id, [])))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        return _pointer_roots(kernel, node.left, seen) | _pointer_roots(kernel, node.right, seen)
    if isinstance(node, ast.Subscript):
        return _pointer_roots(kernel, node.value, seen)
    hints = {"multiple_of", "max_contiguous", "max_constancy", "advance"}
    if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute) and node.func.attr in hints:
        return _pointer_roots(kernel, node.args[0], seen)
    return set()


def _launch_settings(index: SourceIndex, kernel: Kernel, launch: Launch) -> tuple[dict, dict, dict]:
    """(constexpr values, launch options, argument dtypes) visible at one launch site."""
    env, expressions = _scope_constants(index, launch.scope)
    allocations = _scope_allocations(index, launch.scope)
    constants: dict[str, object] = {}
    options: dict[str, int] = {}
    dtypes: dict[str, str] = {}
    bound = list(zip(kernel.params, launch.call.args))
    bound += [(k.arg, k.value) for k in launch.call.keywords if k.arg]
    for name, value in bound:
        if name in {"num_warps", "num_stages"}:
            number = index.const_value(value, env)
            if isinstance(number, int):
                options[name] = number
        elif name in kernel.constexprs:
            number = index.const_value(value, env)
            if number is None:
                number = _representative(index, expressions.get(value.id) if isinstance(value, ast.Name) else value)
                if number is not None:
                    dtypes.setdefault("=guessed", []).append(name)
            if number is not None:
                constants[name] = number
        elif isinstance(value, ast.Constant) and isinstance(value.value, float):
            dtypes[name] = "fp32"
        elif _is_int_expression(index, value, env):
            dtypes[name] = "i32"
        elif isinstance(value, ast.Name) and value.id in allocations:
            dtypes[name] = allocations[value.id]
    return constants, options, dtypes


def _example_dtype(index: SourceIndex) -> str | None:
    """The one floating dtype of every tensor a same-file `get_inputs()` builds (KernelBench example inputs)."""
    function = index.functions.get("get_inputs")
    if function is None:
        return None
    found = set()
    for node in walk(function):
        if not isinstance(node, ast.Call):
            continue
        resolved = index.resolve(node.func) or ""
        if resolved.split(".")[-1] in {"randint", "arange", "tensor"} and resolved.startswith("torch."):
            return None
        if resolved in EXAMPLE_CONSTRUCTORS:
            dtype = keyword(node, "dtype")
            name = (index.resolve(dtype) or "").split(".")[-1] if dtype is not None else "float32"
            found.add(TORCH_DTYPES.get(name))
    return found.pop() if len(found) == 1 and None not in found else None


def _is_int_expression(index: SourceIndex, value: ast.AST, env: dict) -> bool:
    """Sizes and strides: int literals, `x.numel()`, `x.stride(i)`, `x.size(i)`, `x.shape[i]`, `len(...)`."""
    number = index.const_value(value, env)
    if isinstance(number, int) and not isinstance(number, bool):
        return True
    if isinstance(value, ast.Subscript):
        return isinstance(value.value, ast.Attribute) and value.value.attr == "shape"
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute) and value.func.attr in {"numel", "stride", "size", "dim"}:
            return True
        return isinstance(value.func, ast.Name) and value.func.id in {"len", "int"}
    return False


def _representative(index: SourceIndex, value: ast.AST) -> int | bool | None:
    """A typical value for a constexpr computed at run time: a block from next_power_of_2, a flag from `is None`."""
    if value is None:
        return None
    if isinstance(value, ast.Call) and (index.resolve(value.func) or "").endswith("next_power_of_2"):
        return 1024
    if isinstance(value, ast.Compare) and len(value.ops) == 1 and isinstance(value.ops[0], ast.Is | ast.IsNot):
        return isinstance(value.ops[0], ast.IsNot)
    return None


def _scope_constants(index: SourceIndex, scope: ast.AST) -> tuple[dict[str, int | float | bool], dict[str, ast.expr]]:
    """Names bound to constants in a launcher, and the last expression bound to every name."""
    env: dict[str, int | float | bool] = {}
    expressions: dict[str, ast.expr] = {}
    body = scope.body if isinstance(scope, ast.FunctionDef | ast.Module) else []
    for stmt in walk_body(body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = index.const_value(stmt.value, env)
            name = stmt.targets[0].id
            expressions[name] = stmt.value
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
    return env, expressions


def _scope_allocations(index: SourceIndex, scope: ast.AST) -> dict[str, str]:
    """Names bound to tensors whose dtype is spelled out: `torch.empty(..., dtype=torch.float16)`, `x.half()`."""
    found: dict[str, str] = {}
    body = scope.body if isinstance(scope, ast.FunctionDef | ast.Module) else []
    for stmt in walk_body(body):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        dtype = _spelled_dtype(index, stmt.value)
        if dtype is not None:
            found[stmt.targets[0].id] = dtype
    return found


def _spelled_dtype(index: SourceIndex, value: ast.AST) -> str | None:
    if not isinstance(value, ast.Call):
        return None
    if isinstance(value.func, ast.Attribute) and value.func.attr in CAST_METHODS and not value.args:
        return CAST_METHODS[value.func.attr]
    dtype = keyword(value, "dtype")
    if dtype is None and isinstance(value.func, ast.Attribute) and value.func.attr == "to" and value.args:
        dtype = value.args[0]
    resolved = index.resolve(dtype) if dtype is not None else None
    if resolved and resolved.startswith("torch."):
        return TORCH_DTYPES.get(resolved.split(".")[-1])
    return None


def _autotune_configs(index: SourceIndex, kernel: Kernel) -> list[tuple[dict, dict]]:
    """Literal `triton.Config({...}, num_warps=..., num_stages=...)` entries of the kernel's autotune."""
    if kernel.autotune is None:
        return []
    configs = kernel.autotune.args[0] if kernel.autotune.args else keyword(kernel.autotune, "configs")
    configs = _literal_list(index, configs)
    if configs is None:
        return []
    found: list[tuple[dict, dict]] = []
    for entry in configs.elts[:MAX_JOBS_PER_KERNEL]:
        if not (isinstance(entry, ast.Call) and isinstance(entry.args[0] if entry.args else None, ast.Dict)):
            continue
        mapping = entry.args[0]
        constants = {}
        for key, value in zip(mapping.keys, mapping.values):
            number = index.const_value(value)
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and number is not None:
                constants[key.value] = number
        options = {}
        for item in entry.keywords:
            number = index.const_value(item.value)
            if item.arg in {"num_warps", "num_stages"} and isinstance(number, int):
                options[item.arg] = number
        found.append((constants, options))
    return found


def _literal_list(index: SourceIndex, node: ast.AST | None) -> ast.List | ast.Tuple | None:
    """A list literal, or the one a module-level name or a same-file function (`return [...]`) gives."""
    if isinstance(node, ast.List | ast.Tuple):
        return node
    if isinstance(node, ast.Name):
        for stmt in index.tree.body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in stmt.targets):
                return stmt.value if isinstance(stmt.value, ast.List | ast.Tuple) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in index.functions:
        for stmt in walk_body(index.functions[node.func.id].body):
            if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.List | ast.Tuple):
                return stmt.value
    return None
