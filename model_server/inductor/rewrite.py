"""Turn Inductor's generated module into a standalone, readable KernelBench candidate (`class ModelNew`).

The candidate imports nothing from `torch._inductor`: Inductor's Triton helpers that a kernel uses are copied
in as plain `@triton.jit` functions, each kernel keeps only `@triton.jit` and gets a name from the ops it
fuses, and the launches become `kernel[grid](..., XBLOCK=..., num_warps=...)` calls in `forward`, with the
configuration Inductor chose. A `Variant` says what else to make of the same capture: fp32 `tl.dot` at another
precision, a matmul template at another tile, the project's own convolution or matmul kernel in place of a library
one, or a hybrid candidate that keeps Inductor's library calls (cuBLAS, cuDNN, ATen) as torch calls. Without
`hybrid`, a library call is refused with a message naming the op, because the result would not be a Triton candidate.
`forward` checks its inputs first: the kernels are specialised to the example inputs' shapes, strides and dtypes,
so any other input is refused with a clear error.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from model_server.inductor.construction import construction_code, plain_constant
from model_server.inductor.conv_calls import ConvCallError, replace_convolutions
from model_server.inductor.dynamic_guards import (
    UNEXPECTED_SHAPE,
    UNEXPECTED_SIZES,
    GuardError,
    dynamic_input_guards,
)
from model_server.inductor.matmul_calls import MatmulCallError, replace_matmuls
from verifier.audit import SourceIndex

LIBDEVICE_ON_INTERPRETER = {"abs", "ceil", "cos", "erf", "exp", "exp2", "floor", "fma", "log", "log2", "rsqrt"}
LIBDEVICE_ON_INTERPRETER |= {"sin", "sqrt", "div_rn", "fdiv", "sqrt_rn"}
INTERPRETER_REDUCTIONS = {"max2": "max", "min2": "min"}
# Inductor's elementwise `maximum` and `minimum` helpers pass a NaN through, as torch does: so does tl's with
# propagate_nan=ALL, one call in place of four inlined helper functions
NAN_PROPAGATING = {"maximum", "minimum"}
PYTHON_BUILTINS = {"any", "all", "min", "max", "sum", "abs", "pow", "round"}
DROPPED_CALLS = {"assert_size_stride", "assert_alignment", "torch.cuda.set_device", "get_raw_stream"}
ALLOCATORS = {"empty_strided_cuda", "empty_strided_cpu", "empty_strided"}
MAX_Y_GRID = 65535  # CUDA's limit on the launch grid's y and z sizes
EXTERN_TORCH = {"mm", "addmm", "bmm", "baddbmm", "convolution"}  # Inductor's extern kernels that are torch functions
# Extern kernels that are a torch function with an `out_dtype` keyword: the torch function writes `out` in the
# inputs' dtype, and refuses any other (so a candidate that needed another fails verification, it is never wrong)
EXTERN_TORCH_OUT_DTYPE = {"bmm_dtype": "bmm", "mm_dtype": "mm"}
TILE_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")
IMPURE_CALL_WORDS = ("store", "atomic", "inline_asm", "debug", "print", "assert")
DEFAULT_LABEL = "Inductor's default kernels"
KERNEL_PREFIX = re.compile(r"^triton_(?:poi|red|per|tem|for|spl|mix|cooperative)_(?:fused_)?")


class RewriteError(Exception):
    """Inductor's module cannot become a Triton candidate; the message says which op or construct."""


@dataclass(frozen=True)
class Variant:
    """What to make of one capture, and the label that says so in the candidate's header and the progress.

    `precision` rewrites every `tl.dot` to that input precision (`tf32x3`: three TF32 tensor-core products, as
    accurate as fp32); `tile` sets a matmul template's BLOCK_M/N/K, GROUP_M, num_warps and num_stages; `hybrid`
    keeps Inductor's library calls as torch calls instead of refusing them; `conv` launches the project's own
    implicit-GEMM kernel in place of each library convolution, at its tile (BLOCK_M/N/K, num_warps, num_stages)
    and dot `precision`; `matmul` likewise the project's matmul kernel in place of each library matmul (its tile
    has a GROUP_M too).
    """

    label: str = DEFAULT_LABEL
    precision: str | None = None
    tile: dict | None = None
    hybrid: bool = False
    conv: dict | None = None
    matmul: dict | None = None


@dataclass
class Kernel:
    """One generated kernel: Inductor's name, its new name, its definition, launch grid and configuration."""

    name: str
    new_name: str
    function: ast.FunctionDef
    grid_type: str
    config: dict
    template_launch: dict = field(default_factory=dict)
    tile: dict | None = None
    companions: list[ast.FunctionDef] = field(default_factory=list)  # jit functions it calls (scan combiners)


def rewrite(captured: dict, task_source: str, task_name: str = "task", variant: Variant | None = None) -> str:
    """The candidate module's source for a capture from `model_server.inductor.capture`."""
    variant = variant or Variant()
    wrapper = ast.parse(captured["wrapper"])
    interpreter = captured["device"] == "cpu"
    kernels = _kernels(captured["wrapper"], captured["configs"])
    if variant.tile:
        _retune(kernels, variant.tile)
    converter = _KernelConverter(interpreter, variant.precision)
    kernel_sources = [converter.convert(kernel) for kernel in kernels.values()]
    if variant.precision and not converter.dots:
        raise RewriteError(f"no `tl.dot` to run at {variant.precision} precision")
    statements = _launcher_statements(wrapper)
    if variant.conv:
        statements = _own_kernels(statements, wrapper, kernels, variant.conv, "convolution")
    if variant.matmul:
        statements = _own_kernels(statements, wrapper, kernels, variant.matmul, "matmul")
    kernel_sources += [converter.convert(kernel) for kernel in list(kernels.values())[len(kernel_sources) :]]
    helpers = _helper_sources(captured["helpers"], converter.helpers, converter)
    forward_body = _forward_body(statements, kernels, captured, variant.hybrid)
    if not kernels:
        library = re.search(r"\bextern_kernels\.\w+", captured["wrapper"])
        if library:
            raise RewriteError(_not_triton(library.group(0), "all of the task's compute"))
        raise RewriteError("Inductor generated no Triton kernel for this task (it needs no compute, or only views)")
    task = ast.parse(task_source)
    model = next((n for n in task.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise RewriteError("the task defines no `class Model`")
    dynamic = captured.get("dynamic")
    guards = _dynamic_guards(wrapper, captured, model) if dynamic else _input_guards(wrapper, captured)
    attributes = captured.get("attributes", {})
    attribute_guards = _value_guards({f"self.{name}": literal for name, literal in attributes.items()})
    if captured.get("training_only"):
        attribute_guards = [*TRAINING_GUARD, *attribute_guards]
    init_guards = _value_guards(captured.get("init_arguments", {}))
    parts = [
        _module_constants(task),
        *construction_code(task, model),
        *([UNEXPECTED_INPUT] if guards and not dynamic else []),
        *([UNEXPECTED_SHAPE, UNEXPECTED_SIZES] if dynamic else []),
        *([UNEXPECTED_VALUES] if attribute_guards or init_guards else []),
        *helpers,
        *kernel_sources,
        _model_class(model, guards + attribute_guards + forward_body, variant.hybrid, init_guards),
    ]
    body = "\n\n\n".join(part.rstrip() for part in parts if part.strip())
    imports = _imports(task, converter.uses_libdevice, _names_used(body))
    header = _header(task_name, captured, variant, bool(attribute_guards or init_guards))
    return "\n\n\n".join([header, imports, body]) + "\n"


# ---------------------------------------------------------------- what a capture holds


def uses_library(captured: dict) -> bool:
    """Whether Inductor hands part of the task to a library (an extern kernel or an ATen fallback)."""
    launcher = "\n".join(ast.unparse(stmt) for stmt in _launcher_statements(ast.parse(captured["wrapper"])))
    return re.search(r"\b(extern_kernels|aten|torch\.ops)\.\w+", launcher) is not None


def uses_library_convolution(captured: dict) -> bool:
    """Whether Inductor hands a convolution to the library (cuDNN on a GPU), which the project's kernel can take."""
    launcher = "\n".join(ast.unparse(stmt) for stmt in _launcher_statements(ast.parse(captured["wrapper"])))
    return re.search(r"\bextern_kernels\.convolution\(", launcher) is not None


def uses_library_matmul(captured: dict) -> bool:
    """Whether Inductor hands a matmul to the library (cuBLAS on a GPU), which the project's kernel can take."""
    launcher = "\n".join(ast.unparse(stmt) for stmt in _launcher_statements(ast.parse(captured["wrapper"])))
    return re.search(r"\bextern_kernels\.(?:mm|addmm|bmm)\(", launcher) is not None


def uses_dot(captured: dict) -> bool:
    """Whether any of the capture's Triton kernels multiplies matrices (a matmul or convolution template)."""
    return any("tl.dot(" in source for _, source in kernel_sources(captured["wrapper"]))


def matmul_tile(captured: dict) -> dict | None:
    """The tile (BLOCK_M/N/K, GROUP_M, warps, stages) of the capture's first fp32 matmul template kernel."""
    examples = _example_arguments(ast.parse(captured["wrapper"]))
    if any(dtype not in ("torch.float32",) and "float" in dtype for _, _, dtype in examples.values()):
        return None
    for kernel in _kernels(captured["wrapper"], captured["configs"]).values():
        constexprs = _constexprs(kernel.function)
        if kernel.grid_type == "FixedGrid" and all(key in constexprs for key in TILE_KEYS):
            tile = {key: ast.literal_eval(constexprs[key].value) for key in TILE_KEYS}
            return {**tile, "num_warps": kernel.config["num_warps"], "num_stages": kernel.config["num_stages"]}
    return None


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
        elif grid_type not in GRIDS:
            raise RewriteError(f"kernel `{name}` uses Inductor's {grid_type} launch grid, which is not supported yet")
        companions = [n for n in module.body if isinstance(n, ast.FunctionDef) and n is not function and _is_jit(n)]
        readable = _readable_name(name, len(found))
        found[name] = Kernel(name, readable, function, grid_type, config, template_launch, companions=companions)
    return found


def _own_kernels(
    statements: list[ast.stmt], wrapper: ast.Module, kernels: dict[str, Kernel], settings: dict, op: str
) -> list[ast.stmt]:
    """The launcher with its library `op`s (convolution or matmul) replaced by the project's kernels, which join
    `kernels`."""
    replace = replace_convolutions if op == "convolution" else replace_matmuls
    try:
        replaced, own = replace(statements, _example_arguments(wrapper), settings, len(kernels))
    except (ConvCallError, MatmulCallError) as exc:
        raise RewriteError(f"the project's {op} kernel cannot replace the library call: {exc}") from exc
    if not own:
        raise RewriteError(f"no library {op} for the project's {op} kernel to replace")
    for kernel in own:
        function = ast.parse(kernel.source).body[0]
        config = {"kwargs": {}, "num_warps": kernel.num_warps, "num_stages": kernel.num_stages}
        kernels[kernel.name] = Kernel(
            kernel.name, kernel.name, function, "FixedGrid", config, {"grid_args": kernel.grid_args}
        )
    return replaced


def _is_jit(function: ast.FunctionDef) -> bool:
    return any(ast.unparse(d) in ("triton.jit", "jit") for d in function.decorator_list)


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

    def __init__(self, interpreter: bool, precision: str | None = None):
        self.interpreter = interpreter
        self.precision = precision
        self.helpers: set[str] = set()
        self.uses_libdevice = False
        self.dots = 0

    def convert(self, kernel: Kernel) -> str:
        """The kernel's source, after the jit functions it calls (renamed after it: every Inductor kernel
        module names its scan combiner `_triton_helper_fn_add0`, whatever it computes)."""
        renamed = {
            c.name: f"{kernel.new_name}_combine_{c.name.removeprefix('_triton_helper_fn_')}" for c in kernel.companions
        }
        parts = []
        for companion in kernel.companions:
            converted = self.visit(companion)
            converted.name = renamed[companion.name]
            parts.append(ast.unparse(ast.fix_missing_locations(converted)))
        function = self.visit(kernel.function)
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and node.id in renamed:
                node.id = renamed[node.id]
        if kernel.tile:
            _check_block_k(function, kernel.tile["BLOCK_K"])
            constexprs = _constexprs(function)
            for name, value in kernel.tile.items():
                if name in TILE_KEYS and name in constexprs:
                    constexprs[name].value = ast.Constant(value)
        function.name = kernel.new_name
        function.decorator_list = [ast.parse("triton.jit", mode="eval").body]
        drop_dead_assignments(function)
        return "\n\n\n".join([*parts, ast.unparse(ast.fix_missing_locations(function))])

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
        if _is_helper_call(node, NAN_PROPAGATING):
            return ast.Call(
                ast.Attribute(ast.Name("tl", ast.Load()), function.attr, ast.Load()),
                [self.visit(argument) for argument in node.args],
                [ast.keyword("propagate_nan", ast.parse("tl.PropagateNan.ALL", mode="eval").body)],
            )
        if self.interpreter and isinstance(function, ast.Attribute) and _is_name(function.value, "libdevice"):
            replacement = _interpreter_equivalent(function.attr, node.args)
            if replacement is not None:
                return self.visit(replacement)
        self.generic_visit(node)
        if ast.unparse(function) == "tl.dot":
            self.dots += 1
            if self.precision:
                node.keywords = [k for k in node.keywords if k.arg not in ("allow_tf32", "input_precision")]
                node.keywords.append(ast.keyword("input_precision", ast.Constant(self.precision)))
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


def _is_helper_call(node: ast.Call, names: set[str]) -> bool:
    """`triton_helpers.NAME(a, b)` for one of `names`, with two arguments and no keywords."""
    function = node.func
    return (
        isinstance(function, ast.Attribute)
        and _is_name(function.value, "triton_helpers")
        and function.attr in names
        and len(node.args) == 2
        and not node.keywords
    )


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


def _launcher_statements(wrapper: ast.Module) -> list[ast.stmt]:
    """The statements of Inductor's `call`, with `with` blocks opened up and each subgraph it calls inlined.

    Inductor calls a subgraph (a decomposition its autotuner chose, such as a split-K matmul) as
    `name_args = [buf, ...]` then `(out,) = name(name_args)`. Inlined, the subgraph's parameters become the
    list's items, its locals (named after the subgraph) become `subN_...`, and its return is assigned to the
    call's targets."""
    functions = {node.name: node for node in wrapper.body if isinstance(node, ast.FunctionDef)}
    lists: dict[str, list[ast.expr]] = {}
    statements: list[ast.stmt] = []
    inlined = 0
    for stmt in _flatten_with(_call_function(wrapper).body):
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if isinstance(target, ast.Name) and isinstance(stmt.value, ast.List):
            lists[target.id] = stmt.value.elts
            continue
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in functions
            and len(value.args) == 1
            and ast.unparse(value.args[0]) in lists
        ):
            arguments = lists[ast.unparse(value.args[0])]
            statements += _inlined(functions[value.func.id], arguments, target, f"sub{inlined}_")
            inlined += 1
            continue
        statements.append(stmt)
    return statements


def _inlined(function: ast.FunctionDef, arguments: list[ast.expr], target: ast.expr, prefix: str) -> list[ast.stmt]:
    """A subgraph's statements with its parameters bound to `arguments` and its return assigned to `target`."""
    body = list(_flatten_with(function.body))
    unpacking = next((stmt for stmt in body if _is_args_unpacking(stmt)), None)
    parameters = [ast.unparse(t) for t in getattr(unpacking.targets[0], "elts", [])] if unpacking else []
    if len(parameters) != len(arguments):
        raise RewriteError(
            f"Inductor's subgraph `{function.name}` takes {len(parameters)} inputs, given {len(arguments)}"
        )
    bound = dict(zip(parameters, arguments))
    local = function.name + "_"

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            if node.id in bound:
                return ast.copy_location(ast.Name(ast.unparse(bound[node.id]), node.ctx), node)
            if node.id.startswith(local):
                node.id = prefix + node.id.removeprefix(local)
            return node

    statements = []
    for stmt in body:
        if stmt is unpacking or (isinstance(stmt, ast.Expr) and ast.unparse(stmt) == "args.clear()"):
            continue
        stmt = Rename().visit(stmt)
        if isinstance(stmt, ast.Return):
            targets = target.elts if isinstance(target, ast.Tuple) else [target]
            values = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
            if len(targets) != len(values):
                raise RewriteError(
                    f"Inductor's subgraph `{function.name}` returns {len(values)} values, not {len(targets)}"
                )
            statements += [ast.Assign([t], v, lineno=0) for t, v in zip(targets, values)]
            continue
        statements.append(stmt)
    return statements


def _forward_body(statements: list[ast.stmt], kernels: dict[str, Kernel], captured: dict, hybrid: bool) -> list[str]:
    """`forward`'s body: Inductor's `call` with graph inputs read from forward's arguments and the module,
    allocations on the inputs' device, and kernel launches in Triton's own syntax."""
    graph_inputs = captured["graph_inputs"]
    lines: list[str] = []
    names: dict[str, str] = {}
    for stmt in statements:
        if _is_args_unpacking(stmt):
            names = _input_names(stmt, graph_inputs)
            tensors = [s for s in graph_inputs if not s.startswith("self.") and ".shape[" not in s]
            device_source = next(iter(tensors), graph_inputs[0])
            lines.append(f"device = {device_source}.device")
            continue
        line = _statement(stmt, kernels, captured["output"], hybrid)
        if line is not None:
            lines.append(line)
    if names:
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
        lines = [pattern.sub(lambda m: names[m.group(1)], line) for line in lines]
    return _live_lines(lines)


def _input_names(stmt: ast.Assign, graph_inputs: list[str]) -> dict[str, str]:
    """Inductor's argument names (`arg0_1`) and the forward-side expressions they stand for."""
    names = [ast.unparse(t) for t in stmt.targets[0].elts] if isinstance(stmt.targets[0], ast.Tuple) else []
    if len(names) != len(graph_inputs):
        raise RewriteError(f"Inductor's module takes {len(names)} inputs, the graph has {len(graph_inputs)}")
    if not graph_inputs:
        raise RewriteError("Inductor's module takes no inputs, so there is no device to allocate on")
    return dict(zip(names, graph_inputs))


def _live_lines(lines: list[str]) -> list[str]:
    """The launcher's lines without assignments nothing reads (each line is one statement)."""
    statements = [ast.parse(line).body[0] for line in lines]
    launcher = ast.FunctionDef(name="forward", args=ast.arguments(), body=list(statements), decorator_list=[])
    drop_dead_assignments(launcher)
    kept = {id(stmt) for stmt in launcher.body}
    return [line for line, stmt in zip(lines, statements) if id(stmt) in kept]


def _flatten_with(body: list[ast.stmt]):
    """Statements of the call, with `with torch.cuda._DeviceGuard(...)` blocks opened up."""
    for stmt in body:
        if isinstance(stmt, ast.With):
            yield from _flatten_with(stmt.body)
        else:
            yield stmt


def _is_args_unpacking(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Assign) and _is_name(stmt.value, "args")


def _statement(stmt: ast.stmt, kernels: dict[str, Kernel], output: dict, hybrid: bool) -> str | None:
    if isinstance(stmt, ast.Delete):
        return None
    if isinstance(stmt, ast.Return):
        return _return(stmt, output, hybrid)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        name = ast.unparse(call.func)
        if name in DROPPED_CALLS or name == "args.clear":
            return None
        if name.endswith(".run") and name[:-4] in kernels:
            return _launch(call, kernels[name[:-4]])
        if hybrid and _library_call(name):
            # out= calls refuse to run when a parameter requires grad; the candidate has no backward anyway
            return f"with torch.no_grad():\n    {_expression(call, hybrid)}"
        raise RewriteError(_not_triton(name, _short(stmt)))
    if isinstance(stmt, ast.Assign):
        value = stmt.value
        if isinstance(value, ast.Call) and ast.unparse(value.func) in DROPPED_CALLS:
            return None
        return f"{ast.unparse(stmt.targets[0])} = {_expression(value, hybrid)}"
    raise RewriteError(f"unsupported statement in Inductor's launcher: {_short(stmt)}")


def _library_call(name: str) -> bool:
    return name.startswith("extern_kernels.") and name.split(".", 1)[1] in EXTERN_TORCH | EXTERN_TORCH_OUT_DTYPE.keys()


def _expression(value: ast.expr, hybrid: bool = False) -> str:
    if isinstance(value, ast.Name):
        return value.id
    if _size_arithmetic(value):
        return ast.unparse(value)
    if isinstance(value, ast.Call):
        name = ast.unparse(value.func)
        args = [_expression(a, hybrid) if isinstance(a, ast.Call) else ast.unparse(a) for a in value.args]
        if name in ALLOCATORS and len(args) == 3:
            return f"torch.empty_strided({args[0]}, {args[1]}, dtype={args[2]}, device=device)"
        if name == "reinterpret_tensor" and len(args) == 4:
            # Inductor's offset counts from the tensor's own storage offset, which a view need not have at 0
            base, size, stride, offset = args
            start = f"{base}.storage_offset()" + ("" if offset == "0" else f" + {offset}")
            return f"{base}.as_strided({size}, {stride}, {start})"
        if hybrid and _library_call(name):
            function = name.split(".", 1)[1]
            keywords = [ast.unparse(k) for k in value.keywords]
            if function in EXTERN_TORCH_OUT_DTYPE:
                function = EXTERN_TORCH_OUT_DTYPE[function]
                keywords = [ast.unparse(k) for k in value.keywords if k.arg != "out_dtype"]
            return f"torch.{function}({', '.join(args + keywords)})"
        raise RewriteError(_not_triton(name, ast.unparse(value)[:160]))
    raise RewriteError(f"unsupported expression in Inductor's launcher: {ast.unparse(value)[:160]}")


SIZE_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.USub)


def _size_arithmetic(value: ast.expr) -> bool:
    """Whether `value` is arithmetic on sizes, as a dynamic-shape launcher computes them: `s0*s1`, `arg0_1.size()`,
    `arg0_1_size[0]`."""
    return not isinstance(value, ast.Constant | ast.Attribute) and all(map(_size_node, ast.walk(value)))


def _size_node(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        method = node.func
        return (
            isinstance(method, ast.Attribute)
            and method.attr in ("size", "stride")
            and isinstance(method.value, ast.Name)
            and not node.args
            and not node.keywords
        )
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant)
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.operator | ast.unaryop):
        return isinstance(node, SIZE_OPERATORS)
    if isinstance(node, ast.Attribute):
        return node.attr in ("size", "stride")  # only as the method of a call checked above
    return isinstance(node, ast.Name | ast.BinOp | ast.UnaryOp | ast.Load)


def _not_triton(name: str, code: str) -> str:
    return (
        f"Inductor computes part of this task with `{name}` ({code}), a library call rather than a Triton kernel, "
        "so the result would not be a Triton candidate (the backend also tries Inductor's Triton matmul and "
        "convolution templates, with convolutions and pools that go to a library rewritten, and offers a hybrid "
        "candidate that keeps the library call)"
    )


def _launch(call: ast.Call, kernel: Kernel) -> str:
    args = [ast.unparse(a) for a in call.args]
    kwargs = dict(kernel.config.get("kwargs", {}))
    if kernel.grid_type == "FixedGrid":
        count = kernel.template_launch["grid_args"]
        grid = args[-count:] if count else ["1"]
        args = args[: len(args) - count] if count else args
        if kernel.tile:
            bound = dict(zip((a.arg for a in kernel.function.args.args), args))
            grid = [_retuned_grid(kernel, grid[0], bound), *grid[1:]]
    else:
        grid = GRIDS[kernel.grid_type](_GridSizes(kernel, args, kwargs))
    options = [f"{key}={value!r}" for key, value in kwargs.items()]
    options += [f"num_warps={kernel.config.get('num_warps', 4)}", f"num_stages={kernel.config.get('num_stages', 1)}"]
    return f"{kernel.new_name}[({', '.join(grid)},)]({', '.join(args + options)})"


class _GridSizes:
    """What Inductor's launch-grid kinds are computed from: the kernel's size arguments and block sizes."""

    def __init__(self, kernel: Kernel, args: list[str], kwargs: dict):
        self.kernel, self.args, self.kwargs = kernel, args, kwargs
        self.params = [a.arg for a in kernel.function.args.args]

    def numel(self, name: str) -> str:
        if name not in self.params or self.params.index(name) >= len(self.args):
            raise RewriteError(
                f"kernel `{self.kernel.name}` has no `{name}` argument for its {self.kernel.grid_type} grid"
            )
        return self.args[self.params.index(name)]

    def blocks(self, numel: str, block: str) -> str:
        """How many blocks of BLOCK cover `numel`: a number for a fixed size, else `triton.cdiv(numel, BLOCK)`."""
        size, step = self.numel(numel), self.kwargs.get(block)
        if not step:
            return size
        return str(_cdiv(int(size), step)) if size.isdigit() else f"triton.cdiv({size}, {step})"

    def literal(self, numel: str, block: str) -> int:
        size, step = self.numel(numel), self.kwargs.get(block) or 1
        if not size.isdigit():
            raise RewriteError(f"kernel `{self.kernel.name}`'s {self.kernel.grid_type} grid needs a fixed `{numel}`")
        return _cdiv(int(size), step)


def _y_overflow_grid(sizes: _GridSizes) -> list[str]:
    """y blocks beyond CUDA's y limit spill into z, as Inductor's Grid2DWithYZOverflow launches them."""
    y_blocks = sizes.literal("ynumel", "YBLOCK")
    z = _cdiv(y_blocks, MAX_Y_GRID)
    y = 0 if z == 0 else _cdiv(y_blocks, z)
    return [sizes.blocks("xnumel", "XBLOCK"), str(y), str(z)]


GRIDS = {
    "Grid1D": lambda g: [g.blocks("xnumel", "XBLOCK")],
    "Grid2D": lambda g: [g.blocks("xnumel", "XBLOCK"), g.blocks("ynumel", "YBLOCK")],
    "Grid3D": lambda g: [g.blocks("xnumel", "XBLOCK"), g.blocks("ynumel", "YBLOCK"), g.blocks("znumel", "ZBLOCK")],
    "BatchMatmulGrid3D": lambda g: [
        g.blocks("znumel", "ZBLOCK"),
        g.blocks("ynumel", "YBLOCK"),
        g.blocks("xnumel", "XBLOCK"),
    ],
    "Grid2DWithYZOverflow": _y_overflow_grid,
    "CooperativeReductionGrid": lambda g: [str(g.kwargs["RSPLIT"]), g.blocks("xnumel", "XBLOCK")],
    "MixOrderReductionGrid": lambda g: [g.blocks("xnumel", "RSPLIT_SIZE")],
    "SplitScanGrid": lambda g: [g.blocks("r0_numel", "R0_BLOCK"), g.numel("xnumel")],
    "FixedGrid": None,
}


# ---------------------------------------------------------------- variants of matmul templates


def _retune(kernels: dict[str, Kernel], tile: dict) -> None:
    """Give every matmul template kernel the tile of `tile` (its grid follows in `_launch`)."""
    templates = [
        k
        for k in kernels.values()
        if k.grid_type == "FixedGrid" and _constexprs(k.function).keys() >= {"BLOCK_M", "BLOCK_N"}
    ]
    if not templates:
        raise RewriteError("no matmul template kernel to retune")
    for kernel in templates:
        constexprs = _constexprs(kernel.function)
        kernel.template_launch["inductor_tile"] = {
            k: ast.literal_eval(constexprs[k].value) for k in ("BLOCK_M", "BLOCK_N")
        }
        kernel.tile = tile
        for key in ("num_warps", "num_stages"):
            if key in tile:
                kernel.config[key] = tile[key]


def _constexprs(function: ast.FunctionDef) -> dict[str, ast.AnnAssign]:
    return {
        stmt.target.id: stmt
        for stmt in function.body
        if isinstance(stmt, ast.AnnAssign)
        and isinstance(stmt.target, ast.Name)
        and "constexpr" in ast.unparse(stmt.annotation)
    }


def _retuned_grid(kernel: Kernel, launched: str, bound: dict[str, str]) -> str:
    """The program count of a retuned matmul template: one program per BLOCK_M x BLOCK_N output tile. The
    launched count must be that of Inductor's tile, else the template is not one this knows how to retune. A size
    the template reads from an argument (`M = ks0`, where sizes are dynamic) is the launch's expression for it
    (`bound`: parameter -> argument), and the count an expression of it; the launched count is then checked at a
    few sizes."""
    sizes = _template_sizes(kernel.function, bound)
    constexprs = kernel.template_launch["inductor_tile"]
    if not {"M", "N"} <= sizes.keys():
        raise RewriteError(f"template `{kernel.name}` has no fixed M and N to retune")
    tile = {**constexprs, **{k: v for k, v in kernel.tile.items() if k in TILE_KEYS}}
    if all(isinstance(sizes[n], int) for n in "MN"):
        if not launched.isdigit() or _tiles(sizes, constexprs) != int(launched):
            raise RewriteError(f"template `{kernel.name}` does not launch one program per output tile")
        return str(_tiles(sizes, tile))
    for trial in (1, 7, 64, 1000):
        named = dict.fromkeys(size for size in sizes.values() if isinstance(size, str))
        values = {name: trial + 3 * number for number, name in enumerate(named)}
        fixed = {n: values.get(size, size) for n, size in sizes.items()}
        if _evaluated(launched, values) != _tiles(fixed, constexprs):
            raise RewriteError(f"template `{kernel.name}` does not launch one program per output tile")
    blocks = [
        str(_cdiv(size, tile[block])) if isinstance(size, int) else f"triton.cdiv({size}, {tile[block]})"
        for size, block in ((sizes["M"], "BLOCK_M"), (sizes["N"], "BLOCK_N"))
    ]
    return " * ".join(blocks)


def _tiles(sizes: dict, tile: dict) -> int:
    return _cdiv(sizes["M"], tile["BLOCK_M"]) * _cdiv(sizes["N"], tile["BLOCK_N"])


def _template_sizes(function: ast.FunctionDef, bound: dict[str, str]) -> dict[str, int | str]:
    """M, N and K of a template: literals, or the launch's plain name for a size it takes as an argument."""
    sizes: dict[str, int | str] = dict(_fixed_sizes(function))
    for stmt in function.body:
        name = _assigned_name(stmt)
        if name in ("M", "N", "K") and isinstance(stmt.value, ast.Name) and stmt.value.id in bound:
            argument = bound[stmt.value.id]
            if argument.isidentifier():
                sizes[name] = argument
    return sizes


def _evaluated(expression: str, values: dict[str, int]) -> int | None:
    """The value of a launcher's size arithmetic at `values` (integers, + - * // %), else None."""
    operators = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__}
    operators[ast.Mod] = int.__mod__

    def value(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return values.get(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in operators:
            left, right = value(node.left), value(node.right)
            if left is None or right is None or (right == 0 and isinstance(node.op, ast.FloorDiv | ast.Mod)):
                return None
            return operators[type(node.op)](left, right)
        return None

    try:
        return value(ast.parse(expression, mode="eval").body)
    except SyntaxError:
        return None


def _check_block_k(function: ast.FunctionDef, block_k: int) -> None:
    """A new BLOCK_K must be a power of two (as `tl.arange` needs). Inductor renders a template whose BLOCK_K
    divides K without masks on its K loop, so there the new BLOCK_K must divide K too; where K is irregular, the
    loop's loads are masked against K, which holds for any BLOCK_K."""
    k = _fixed_sizes(function).get("K")
    if k is None:
        raise RewriteError("the matmul template has no fixed K to retune")
    if block_k & (block_k - 1):
        raise RewriteError(f"BLOCK_K {block_k} is not a power of two")
    if k % block_k and not _k_loop_masked(function):
        raise RewriteError(f"BLOCK_K {block_k} does not divide the template's K of {k}")


def _k_loop_masked(function: ast.FunctionDef) -> bool:
    """Whether every load in the template's K loop (`for k_idx in ...`) has a mask."""
    loops = [n for n in ast.walk(function) if isinstance(n, ast.For) and _is_name(n.target, "k_idx")]
    loads = [
        n for loop in loops for n in ast.walk(loop) if isinstance(n, ast.Call) and ast.unparse(n.func) == "tl.load"
    ]
    return bool(loads) and all(any(k.arg == "mask" for k in load.keywords) for load in loads)


def _fixed_sizes(function: ast.FunctionDef) -> dict[str, int]:
    """The matmul sizes a template kernel has as literals (`M = 2048`, `N = ...`, `K = ...`)."""
    return {
        name: stmt.value.value
        for stmt in function.body
        if (name := _assigned_name(stmt)) in ("M", "N", "K") and isinstance(stmt.value, ast.Constant)
    }


def _cdiv(size: int, step: int) -> int:
    return -(-size // step)


def _return(stmt: ast.Return, output: dict, hybrid: bool) -> str:
    """forward's return in the task's output structure (Inductor's module returns a flat tuple, which may hold
    views such as `reinterpret_tensor(buf, ...)` of a buffer)."""
    values = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
    names = [_expression(v, hybrid) for v in values]

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


# ---------------------------------------------------------------- dead code


def drop_dead_assignments(function: ast.FunctionDef) -> None:
    """Remove assignments to names the function never reads (Inductor leaves some), when computing the value
    has no effect: stores, atomics and asm are kept whatever happens to their result."""
    while True:
        read = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        removed = _drop_in(function.body, read)
        if not removed:
            return


def _drop_in(body: list[ast.stmt], read: set[str]) -> bool:
    removed = False
    for stmt in list(body):
        for child in ("body", "orelse"):
            inner = getattr(stmt, child, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                removed |= _drop_in(inner, read)
                if not inner:
                    inner.append(ast.Pass())
        target = _assigned_name(stmt)
        if target is not None and target not in read and _pure(stmt.value):
            body.remove(stmt)
            removed = True
    return removed


def _assigned_name(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return stmt.target.id
    return None


def _pure(value: ast.expr) -> bool:
    calls = [ast.unparse(n.func) for n in ast.walk(value) if isinstance(n, ast.Call)]
    return not any(word in call for call in calls for word in IMPURE_CALL_WORDS)


def _names_used(source: str) -> set[str]:
    """Every name the module's code reads (the roots of attribute chains included)."""
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}


# ---------------------------------------------------------------- the inputs forward expects


UNEXPECTED_INPUT = '''def unexpected_input(name, tensor, shape, stride, dtype):
    """The kernels are specialised to the example inputs' shapes, strides and dtypes; any other input is refused."""
    return ValueError(
        f"ModelNew was generated for `{name}` of shape {shape}, strides {stride} and {dtype}, but got shape "
        f"{tuple(tensor.shape)}, strides {tensor.stride()} and {tensor.dtype}; convert the task again for these inputs"
    )'''


UNEXPECTED_VALUES = '''def unexpected_values(names, expected, got):
    """The kernels have these values baked in: other values are refused, never silently ignored."""
    shown = ", ".join(f"{name}={value!r}" for name, value in zip(names, expected))
    found = ", ".join(f"{name}={value!r}" for name, value, wanted in zip(names, got, expected) if value != wanted)
    return ValueError(
        f"ModelNew's kernels were generated for {shown} (baked in), but got {found}; convert the task again for "
        "these values"
    )'''


TRAINING_GUARD = [
    "if not self.training:",
    '    raise ValueError("ModelNew computes the task in training mode, as it was verified (batch statistics, '
    "dropout); it has no eval mode: keep the task's Model for eval\")",
]


def _value_guards(literals: dict[str, str | None]) -> list[str]:
    """Lines that refuse values other than the example's (`name: literal`); a value with no literal is left out,
    and so is anything that is not a plain name and literal (a capture's record is data, never code to paste)."""
    known = {name: literal for name, literal in literals.items() if _plain(name, literal)}
    if not known:
        return []
    names = list(known)
    got, expected = _tuple_source(names), _tuple_source(list(known.values()))
    return [
        f"if {got} != {expected}:",
        f"    raise unexpected_values({_tuple_source([repr(n) for n in names])}, {expected}, {got})",
    ]


def _plain(name: str, literal: str | None) -> bool:
    """Whether `name` is a parameter or `self.attribute` and `literal` only constants, containers of them, a
    negation, `torch.<name>` (a dtype) or `float('inf'/'nan')`: what `capture._literal` writes."""
    if not isinstance(name, str) or not name.removeprefix("self.").isidentifier() or not isinstance(literal, str):
        return False
    try:
        tree = ast.parse(literal, mode="eval")
    except SyntaxError:
        return False
    allowed = (ast.Expression, ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.UnaryOp, ast.USub, ast.Load)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if not _is_name(node.value, "torch"):
                return False
        elif isinstance(node, ast.Call):
            if not (_is_name(node.func, "float") and len(node.args) == 1 and not node.keywords):
                return False
        elif not isinstance(node, allowed) and not _is_name(node, "torch") and not _is_name(node, "float"):
            return False
    return True


def _tuple_source(items: list[str]) -> str:
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def _input_guards(wrapper: ast.Module, captured: dict) -> list[str]:
    """`forward`'s first lines: refuse tensors other than the example's, and scalars Inductor baked in."""
    examples = _example_arguments(wrapper)
    lines = []
    for arg, source in zip(_graph_arguments(wrapper), captured["graph_inputs"]):
        if source.startswith("self.") or not source.isidentifier() or arg not in examples:
            continue
        shape, stride, dtype = examples[arg]
        lines += [
            f"if {source}.shape != {shape} or {source}.stride() != {stride} or {source}.dtype != {dtype}:",
            f"    raise unexpected_input({source!r}, {source}, {shape}, {stride}, {dtype})",
        ]
    for name, value in captured.get("scalars", {}).items():
        lines += [
            f"if float({name}) != {float(value)!r}:"
            if isinstance(value, float)
            else f"if int({name}) != {int(value)!r}:",
            f'    raise ValueError(f"ModelNew was generated for {name} == {value!r}, got {{{name}!r}}; '
            'convert the task again for this value")',
        ]
    return lines


def _dynamic_guards(wrapper: ast.Module, captured: dict, model: ast.ClassDef) -> list[str]:
    """`forward`'s first lines where sizes are dynamic: each tensor argument's rank, fixed sizes, strides and
    dtype as Inductor's code asserts them, then the conditions on the sizes the kernels were compiled under."""
    examples = _example_arguments(wrapper)
    asserted = _size_asserts(wrapper)
    tensors = []
    for arg, source in zip(_graph_arguments(wrapper), captured["graph_inputs"]):
        if source.startswith("self.") or not source.isidentifier() or arg not in examples:
            continue
        if arg not in asserted:
            raise RewriteError(f"Inductor's code does not say which sizes and strides `{source}` may have")
        shape, stride = asserted[arg]
        tensors.append((source, shape, stride, examples[arg][2]))
    forward = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    parameters = [a.arg for a in forward.args.args[1:]] if forward else []
    try:
        return dynamic_input_guards(tensors, captured["dynamic"], parameters)
    except GuardError as exc:
        raise RewriteError(f"the dynamic sizes cannot be checked: {exc}") from None


def _size_asserts(wrapper: ast.Module) -> dict[str, tuple[list[str], list[str]]]:
    """The sizes and strides Inductor's `call` asserts of each input (`assert_size_stride(arg, sizes, strides)`)."""
    found = {}
    for stmt in _flatten_with(_call_function(wrapper).body):
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and _is_name(call.func, "assert_size_stride") and len(call.args) >= 3:
            name, shape, stride = call.args[:3]
            if isinstance(name, ast.Name) and isinstance(shape, ast.Tuple) and isinstance(stride, ast.Tuple):
                found[name.id] = ([ast.unparse(e) for e in shape.elts], [ast.unparse(e) for e in stride.elts])
    return found


def _graph_arguments(wrapper: ast.Module) -> list[str]:
    for stmt in _flatten_with(_call_function(wrapper).body):
        if _is_args_unpacking(stmt) and isinstance(stmt.targets[0], ast.Tuple):
            return [ast.unparse(t) for t in stmt.targets[0].elts]
    return []


def _example_arguments(wrapper: ast.Module) -> dict[str, tuple[str, str, str]]:
    """(shape, strides, dtype) of each graph input, as Inductor's `get_args` makes its example tensors."""
    found = {}
    for node in ast.walk(wrapper):
        if isinstance(node, ast.FunctionDef) and node.name == "get_args":
            for stmt in node.body:
                value = getattr(stmt, "value", None)
                if isinstance(value, ast.Call) and ast.unparse(value.func) == "rand_strided" and len(value.args) == 2:
                    dtype = next((k.value for k in value.keywords if k.arg == "dtype"), None)
                    if dtype is not None:
                        shape, stride = (_tuple_text(a) for a in value.args)
                        found[ast.unparse(stmt.targets[0])] = (shape, stride, ast.unparse(dtype))
    return found


def _tuple_text(node: ast.expr) -> str:
    return _tuple_source([ast.unparse(e) for e in getattr(node, "elts", [])])


# ---------------------------------------------------------------- the module around them


def _header(task_name: str, captured: dict, variant: Variant, guarded: bool) -> str:
    where = "the Triton interpreter (CPU)" if captured["device"] == "cpu" else "a CUDA GPU"
    what = variant.label + (" (hybrid: a library call does part of the work)" if variant.hybrid else "")
    return (
        f'"""Triton kernels for `{task_name}`: {what}.\n\n'
        f"Derived from TorchInductor's code for {where} by `tritonize convert --backend inductor` (torch\n"
        f"{captured['torch']}) and rewritten to stand alone. "
        + (_dynamic_words(captured["dynamic"]) if captured.get("dynamic") else _SPECIALISED)
        + (
            "\nLikewise the constructor's arguments and attributes baked into its kernels: other values are refused."
            if guarded
            else ""
        )
        + '"""'
    )


_SPECIALISED = (
    "The kernels are specialised to the task's example\ninputs: `forward` refuses inputs of any other shape, "
    "stride or dtype."
)


def _dynamic_words(dynamic: dict) -> str:
    dims = ", ".join(f"{name}:{d}" for name, ds in sorted(dynamic["dims"].items()) for d in ds)
    return (
        f"The kernels accept any size along the\ndynamic dimensions ({dims}); `forward` refuses other "
        "dimensions, strides, dtypes, and sizes\noutside what the kernels assume."
    )


def _imports(task: ast.Module, uses_libdevice: bool, used: set[str]) -> str:
    """The imports the candidate needs: torch and Triton's, and the task's own that the module still uses."""
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
    return "\n".join(line for line in lines if _bound_name(line) in used)


def _bound_name(import_line: str) -> str:
    alias = ast.parse(import_line).body[0].names[0]
    return alias.asname or alias.name.split(".")[0]


def _module_constants(task: ast.Module) -> str:
    """Module-level constants of the task that `Model.__init__` may read, one block of lines as in the task."""
    return "\n".join(ast.unparse(n) for n in task.body if plain_constant(n))


def _model_class(model: ast.ClassDef, forward_body: list[str], hybrid: bool, init_guards: list[str]) -> str:
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    forward = methods.get("forward")
    if forward is None:
        raise RewriteError("the task's `Model` has no `forward`")
    lines = [
        "class ModelNew(nn.Module):",
        '    """Drop-in replacement for the task\'s `Model`: same parameters, '
        + ('a library call and Triton kernels compute."""' if hybrid else 'Triton compute."""'),
    ]
    init = methods.get("__init__")
    if init is not None:
        init = _SuperCall().visit(ast.parse(ast.unparse(init)).body[0])
        documented = ast.get_docstring(init) is not None
        init.body[documented:documented] = ast.parse("\n".join(init_guards)).body
        lines.append("")
        lines.extend("    " + line for line in ast.unparse(init).splitlines())
    lines.append("")
    lines.append(f"    def forward({ast.unparse(forward.args)}):")
    lines.extend("        " + line for statement in forward_body for line in statement.splitlines())
    return "\n".join(lines)


class _SuperCall(ast.NodeTransformer):
    """`super(Model, self)` -> `super()`, so the copied constructor works in `ModelNew`."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if _is_name(node.func, "super") and node.args:
            node.args = []
        return node
