"""Turn Inductor's generated module into a standalone, readable KernelBench candidate (`class ModelNew`).

The candidate imports nothing from `torch._inductor`: Inductor's Triton helpers that a kernel uses are copied
in as plain `@triton.jit` functions, each kernel keeps only `@triton.jit` and gets a name from the ops it
fuses, and the launches become `kernel[grid](..., XBLOCK=..., num_warps=...)` calls in `forward`, with the
configuration Inductor chose. Anything that is not a Triton kernel (cuBLAS/ATen fallbacks) is refused with a
message naming the op, because it would not be a Triton candidate.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from verifier.audit.source_index import SourceIndex

LIBDEVICE_ON_INTERPRETER = {"abs", "ceil", "cos", "erf", "exp", "exp2", "floor", "fma", "log", "log2", "rsqrt"}
LIBDEVICE_ON_INTERPRETER |= {"sin", "sqrt", "div_rn", "fdiv", "sqrt_rn"}
INTERPRETER_REDUCTIONS = {"max2": "max", "min2": "min"}
PYTHON_BUILTINS = {"any", "all", "min", "max", "sum", "abs", "pow", "round"}
DROPPED_CALLS = {"assert_size_stride", "assert_alignment", "torch.cuda.set_device", "get_raw_stream"}
ALLOCATORS = {"empty_strided_cuda", "empty_strided_cpu", "empty_strided"}
GRID_AXES = {"Grid1D": "x", "Grid2D": "xy", "Grid3D": "xyz"}
KERNEL_PREFIX = re.compile(r"^triton_(?:poi|red|per|tem|for|spl|mix|cooperative)_(?:fused_)?")


class RewriteError(Exception):
    """Inductor's module cannot become a Triton candidate; the message says which op or construct."""


@dataclass
class Kernel:
    """One generated kernel: Inductor's name, its new name, its definition, launch grid and configuration."""

    name: str
    new_name: str
    function: ast.FunctionDef
    grid_type: str
    config: dict
    template_launch: dict = field(default_factory=dict)


def rewrite(captured: dict, task_source: str, task_name: str = "task") -> str:
    """The candidate module's source for a capture from `model_server.inductor.capture`."""
    wrapper = ast.parse(captured["wrapper"])
    interpreter = captured["device"] == "cpu"
    kernels = _kernels(captured["wrapper"], captured["configs"])
    converter = _KernelConverter(interpreter)
    kernel_sources = [converter.convert(kernel) for kernel in kernels.values()]
    helpers = _helper_sources(captured["helpers"], converter.helpers, converter)
    forward_body = _forward_body(_call_function(wrapper), kernels, captured)
    if not kernels:
        raise RewriteError("Inductor generated no Triton kernel for this task (it needs no compute, or only views)")
    task = ast.parse(task_source)
    model = next((n for n in task.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise RewriteError("the task defines no `class Model`")
    parts = [
        _header(task_name, captured),
        _imports(task, converter.uses_libdevice),
        *_module_constants(task),
        *helpers,
        *kernel_sources,
        _model_class(model, forward_body),
    ]
    return "\n\n\n".join(part.rstrip() for part in parts if part.strip()) + "\n"


# ---------------------------------------------------------------- kernels


def kernel_sources(wrapper: str) -> list[tuple[str, str]]:
    """(name, source) of every `name = async_compile.triton('name', '''source''', ...)` in Inductor's module."""
    return re.findall(r"^(\w+) = async_compile\.triton\('\w+', '''(.*?)'''", wrapper, re.M | re.S)


def _kernels(wrapper: str, configs: dict) -> dict[str, Kernel]:
    found = {}
    for name, source in kernel_sources(wrapper):
        module = ast.parse(source)
        function = next((n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if function is None:
            raise RewriteError(f"Inductor's kernel `{name}` has no function definition")
        heuristics = _heuristics_call(function)
        meta = _keyword_dict(heuristics, "inductor_meta")
        grid_type = meta.get("grid_type", "Grid1D")
        config = dict(configs.get(name) or {"kwargs": {}, "num_warps": 4, "num_stages": 1})
        template_launch = {}
        if grid_type == "FixedGrid":
            template_launch = {"grid_args": len(meta.get("extra_launcher_args", meta.get("fixed_grid", [])))}
            for key in ("num_warps", "num_stages"):
                value = _keyword_constant(heuristics, key)
                if value is not None:
                    config[key] = value
        elif grid_type not in GRID_AXES:
            raise RewriteError(f"kernel `{name}` uses Inductor's {grid_type} launch grid, which is not supported yet")
        found[name] = Kernel(name, _readable_name(name, len(found)), function, grid_type, config, template_launch)
    return found


def _readable_name(name: str, position: int) -> str:
    stem = KERNEL_PREFIX.sub("", name).strip("_")
    stem = re.sub(r"_\d+$", "", stem) or "fused"
    return f"{stem}_kernel_{position}"


def _heuristics_call(function: ast.FunctionDef) -> ast.Call | None:
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Call) and ast.unparse(decorator.func).startswith("triton_heuristics."):
            return decorator
    return None


def _keyword_dict(call: ast.Call | None, name: str) -> dict:
    """Literal entries of a dict keyword argument (entries that are not literals are skipped)."""
    for keyword in call.keywords if call is not None else []:
        if keyword.arg == name and isinstance(keyword.value, ast.Dict):
            out = {}
            for key, value in zip(keyword.value.keys, keyword.value.values):
                try:
                    out[ast.literal_eval(key)] = ast.literal_eval(value)
                except (ValueError, TypeError, SyntaxError):
                    continue
            return out
    return {}


def _keyword_constant(call: ast.Call | None, name: str):
    for keyword in call.keywords if call is not None else []:
        if keyword.arg == name and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    return None


class _KernelConverter(ast.NodeTransformer):
    """Strips Inductor's decorators and runtime imports from a kernel, inlining helpers by name.

    For the Triton interpreter (CPU), libdevice calls become `tl.math` or plain `tl` spellings (the interpreter
    has no libdevice), and max/min reductions use `tl.max`/`tl.min`: a reduction with a jit combine function
    runs element by element there, thousands of times slower."""

    def __init__(self, interpreter: bool):
        self.interpreter = interpreter
        self.helpers: set[str] = set()
        self.uses_libdevice = False

    def convert(self, kernel: Kernel) -> str:
        function = self.visit(kernel.function)
        function.name = kernel.new_name
        function.decorator_list = [ast.parse("triton.jit", mode="eval").body]
        return ast.unparse(ast.fix_missing_locations(function))

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        owner = node.value.id if isinstance(node.value, ast.Name) else None
        if owner == "triton_helpers" and self.interpreter and node.attr in INTERPRETER_REDUCTIONS:
            return ast.Attribute(ast.Name("tl", ast.Load()), INTERPRETER_REDUCTIONS[node.attr], ast.Load())
        if owner == "triton_helpers":
            self.helpers.add(node.attr)
            return ast.Name(helper_name(node.attr), ast.Load())
        if owner in {"tl_math", "math"}:
            return _tl_math(node.attr)
        if owner == "libdevice":
            if self.interpreter and node.attr in LIBDEVICE_ON_INTERPRETER:
                return _tl_math(node.attr)
            if self.interpreter:
                raise RewriteError(
                    f"the kernel needs `libdevice.{node.attr}`, which Triton's interpreter (CPU) does not have; "
                    "convert this task on a GPU (--device cuda)"
                )
            self.uses_libdevice = True
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        function = node.func
        if self.interpreter and isinstance(function, ast.Attribute) and _is_name(function.value, "libdevice"):
            replacement = _interpreter_equivalent(function.attr, node.args)
            if replacement is not None:
                return self.visit(replacement)
        self.generic_visit(node)
        return node


def helper_name(name: str) -> str:
    """An inlined helper's name: Inductor's, unless it would shadow a Python builtin."""
    return f"{name}_" if name in PYTHON_BUILTINS else name


def _tl_math(attr: str) -> ast.Attribute:
    return ast.Attribute(ast.Attribute(ast.Name("tl", ast.Load()), "math", ast.Load()), attr, ast.Load())


def _interpreter_equivalent(name: str, args: list[ast.expr]) -> ast.expr | None:
    """tl-only spellings of libdevice functions the Triton interpreter lacks."""
    if len(args) != 1:
        return None
    x = ast.unparse(args[0])
    spellings = {
        "isnan": f"({x}) != ({x})",
        "isinf": f"tl.abs({x}) == float('inf')",
        "tanh": f"2.0 * tl.sigmoid(2.0 * ({x})) - 1.0",
        "sigmoid": f"tl.sigmoid({x})",
        "log1p": f"tl.log(1.0 + ({x}))",
        "expm1": f"tl.exp({x}) - 1.0",
    }
    spelled = spellings.get(name)
    return ast.parse(spelled, mode="eval").body if spelled else None


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _helper_sources(helpers_source: str, wanted: set[str], converter: _KernelConverter) -> list[str]:
    """Inductor's jit helpers the kernels call, and the helpers those call, as standalone functions."""
    index = SourceIndex(ast.parse(helpers_source), helpers_source)
    available = {name: kernel.node for name, kernel in index.kernels.items()}
    needed: list[str] = []
    pending = sorted(wanted)
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        if name not in available:
            raise RewriteError(f"the kernel calls Inductor's helper `triton_helpers.{name}`, which cannot be found")
        needed.append(name)
        pending.extend(n.id for n in ast.walk(available[name]) if isinstance(n, ast.Name) and n.id in available)
    sources = []
    for name in reversed(needed):
        function = converter.visit(available[name])
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and node.id in available:
                node.id = helper_name(node.id)
        function.name = helper_name(name)
        function.decorator_list = [ast.parse("triton.jit", mode="eval").body]
        sources.append(ast.unparse(ast.fix_missing_locations(function)))
    return sources


# ---------------------------------------------------------------- the launcher


def _call_function(wrapper: ast.Module) -> ast.FunctionDef:
    for node in ast.walk(wrapper):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    raise RewriteError("Inductor's module has no `call` function")


def _forward_body(call: ast.FunctionDef, kernels: dict[str, Kernel], captured: dict) -> list[str]:
    lines: list[str] = []
    graph_inputs = captured["graph_inputs"]
    statements = list(_flatten_with(call.body))
    for stmt in statements:
        if _is_args_unpacking(stmt):
            names = [ast.unparse(t) for t in stmt.targets[0].elts] if isinstance(stmt.targets[0], ast.Tuple) else []
            if len(names) != len(graph_inputs):
                raise RewriteError(f"Inductor's module takes {len(names)} inputs, the graph has {len(graph_inputs)}")
            if not graph_inputs:
                raise RewriteError("Inductor's module takes no inputs, so there is no device to allocate on")
            lines.extend(f"{name} = {source}" for name, source in zip(names, graph_inputs))
            device_source = next((s for s in graph_inputs if not s.startswith("self.")), graph_inputs[0])
            lines.append(f"device = {device_source}.device")
            continue
        converted = _statement(stmt, kernels, captured["output"])
        if converted is not None:
            lines.append(converted)
    return lines


def _flatten_with(body: list[ast.stmt]):
    """Statements of the call, with `with torch.cuda._DeviceGuard(...)` blocks opened up."""
    for stmt in body:
        if isinstance(stmt, ast.With):
            yield from _flatten_with(stmt.body)
        else:
            yield stmt


def _is_args_unpacking(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Assign) and _is_name(stmt.value, "args")


def _statement(stmt: ast.stmt, kernels: dict[str, Kernel], output: dict) -> str | None:
    if isinstance(stmt, ast.Delete):
        return None
    if isinstance(stmt, ast.Return):
        return _return(stmt, output)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        name = ast.unparse(call.func)
        if name in DROPPED_CALLS or name == "args.clear":
            return None
        if name.endswith(".run") and name[:-4] in kernels:
            return _launch(call, kernels[name[:-4]])
        raise RewriteError(_not_triton(name, _short(stmt)))
    if isinstance(stmt, ast.Assign):
        value = stmt.value
        if isinstance(value, ast.Call) and ast.unparse(value.func) in DROPPED_CALLS:
            return None
        return f"{ast.unparse(stmt.targets[0])} = {_expression(value)}"
    raise RewriteError(f"unsupported statement in Inductor's launcher: {_short(stmt)}")


def _expression(value: ast.expr) -> str:
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Call):
        name = ast.unparse(value.func)
        args = [ast.unparse(a) for a in value.args]
        if name in ALLOCATORS and len(args) == 3:
            return f"torch.empty_strided({args[0]}, {args[1]}, dtype={args[2]}, device=device)"
        if name == "reinterpret_tensor" and len(args) == 4:
            return f"torch.as_strided({', '.join(args)})"
        raise RewriteError(_not_triton(name, ast.unparse(value)[:160]))
    raise RewriteError(f"unsupported expression in Inductor's launcher: {ast.unparse(value)[:160]}")


def _not_triton(name: str, code: str) -> str:
    return (
        f"Inductor computes part of this task with `{name}` ({code}), a library call rather than a Triton kernel, "
        "so the result would not be a Triton candidate (on a GPU the backend also tries Inductor's Triton "
        "matmul templates)"
    )


def _launch(call: ast.Call, kernel: Kernel) -> str:
    args = [ast.unparse(a) for a in call.args]
    params = [a.arg for a in kernel.function.args.args]
    kwargs = dict(kernel.config.get("kwargs", {}))
    if kernel.grid_type == "FixedGrid":
        count = kernel.template_launch["grid_args"]
        grid = args[-count:] if count else ["1"]
        args = args[: len(args) - count] if count else args
    else:
        grid = []
        for axis in GRID_AXES[kernel.grid_type]:
            numel = f"{axis}numel"
            if numel not in params or params.index(numel) >= len(args):
                raise RewriteError(f"kernel `{kernel.name}` has no `{numel}` argument for its {kernel.grid_type} grid")
            block = kwargs.get(f"{axis.upper()}BLOCK")
            size = args[params.index(numel)]
            grid.append(f"triton.cdiv({size}, {block})" if block else size)
    options = [f"{key}={value!r}" for key, value in kwargs.items()]
    options += [f"num_warps={kernel.config.get('num_warps', 4)}", f"num_stages={kernel.config.get('num_stages', 1)}"]
    return f"{kernel.new_name}[({', '.join(grid)},)]({', '.join(args + options)})"


def _return(stmt: ast.Return, output: dict) -> str:
    values = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
    names = [ast.unparse(v) for v in values]

    def build(node: dict) -> str:
        if node["kind"] == "leaf":
            if node["index"] >= len(names):
                raise RewriteError("Inductor's module returns fewer tensors than forward does")
            return names[node["index"]]
        items = [build(item) for item in node["items"]]
        if node["kind"] == "tuple":
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        return f"[{', '.join(items)}]"

    return f"return {build(output)}"


def _short(stmt: ast.AST) -> str:
    return ast.unparse(stmt).splitlines()[0][:160]


# ---------------------------------------------------------------- the module around them


def _header(task_name: str, captured: dict) -> str:
    where = "the Triton interpreter (CPU)" if captured["device"] == "cpu" else "a CUDA GPU"
    return (
        f'"""Triton kernels for `{task_name}`, derived from TorchInductor\'s generated code for {where}.\n\n'
        f"Generated by `tritonize convert --backend inductor` (torch {captured['torch']}): the kernels and launch\n"
        'configurations are Inductor\'s, rewritten to stand alone. Shapes are specialised to the task\'s inputs."""'
    )


def _imports(task: ast.Module, uses_libdevice: bool) -> str:
    lines = ["import torch", "import torch.nn as nn", "import triton", "import triton.language as tl"]
    if uses_libdevice:
        lines.append("from triton.language.extra import libdevice")
    for node in task.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                single = type(node)(**{**node.__dict__, "names": [alias]})
                text = ast.unparse(single)
                if text not in lines:
                    lines.append(text)
    return "\n".join(lines)


def _module_constants(task: ast.Module) -> list[str]:
    """Module-level constants of the task that `Model.__init__` may read."""
    return [
        ast.unparse(n)
        for n in task.body
        if isinstance(n, ast.Assign | ast.AnnAssign) and isinstance(getattr(n, "value", None), ast.Constant)
    ]


def _model_class(model: ast.ClassDef, forward_body: list[str]) -> str:
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    forward = methods.get("forward")
    if forward is None:
        raise RewriteError("the task's `Model` has no `forward`")
    lines = [
        "class ModelNew(nn.Module):",
        '    """Drop-in replacement for the task\'s `Model`: same parameters, Triton compute."""',
    ]
    init = methods.get("__init__")
    if init is not None:
        init = _SuperCall().visit(ast.parse(ast.unparse(init)).body[0])
        lines.append("")
        lines.extend("    " + line for line in ast.unparse(init).splitlines())
    lines.append("")
    lines.append(f"    def forward({ast.unparse(forward.args)}):")
    lines.extend("        " + line for line in forward_body)
    return "\n".join(lines)


class _SuperCall(ast.NodeTransformer):
    """`super(Model, self)` -> `super()`, so the copied constructor works in `ModelNew`."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if _is_name(node.func, "super") and node.args:
            node.args = []
        return node
