"""Static anti-hacking rules (TRI301-TRI318) on a candidate's source: an allowlist, not a denylist.

A candidate earns a reward only if its work runs in Triton. The module is read (never imported or run) as three
kinds of code:

- kernels (`@triton.jit`): Triton's language, their own parameters and locals, the module's constants;
- construction (the module's top level, `__init__` and what only `__init__` calls): building modules and
  parameters as PyTorch's own layers do;
- everything else (`forward`, and whatever could run while it does): kernel launches and a named set of
  operations that compute nothing (allocation, metadata, views, layout, Python arithmetic on sizes).

PyTorch compute found where `forward` could run is reported as TRI302, a warning that explains: whether it ran
is decided when the candidate runs (TRI360 in the sandbox), so a CPU fallback that never runs on a GPU costs
nothing. Anything on no list is TRI317, a refusal naming what was not known to be allowed. Names that lead out
of Python's object model (interpreter internals, dynamic code, patching, files and processes) are refused
wherever they appear, and `ModelNew` must be one plain top-level class (TRI318). Every rule is registered in
`verifier/rules.py`; the runtime half lives in `verifier/sandbox/candidate.py`.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from dataclasses import dataclass, field

from verifier.audit import budget, torch_names
from verifier.audit.source_index import SourceIndex, dotted_name, resolve_name
from verifier.findings import Finding
from verifier.rules import RULES

ALLOWED_IMPORTS = {
    "torch", "triton", "math", "typing", "functools", "itertools", "operator",
    "dataclasses", "enum", "collections", "numbers", "__future__",
}  # fmt: skip
FORBIDDEN_SUBMODULES = (
    "torch.utils.cpp_extension", "torch._", "triton.testing", "triton.runtime", "triton.knobs", "triton.compiler",
    "triton.backends", "triton.tools",
)  # fmt: skip
DYNAMIC_BUILTINS = {
    "eval", "exec", "compile", "__import__", "open", "getattr", "setattr", "delattr", "globals",
    "locals", "vars", "breakpoint", "input", "__build_class__",
}  # fmt: skip
SAFE_BUILTINS = {
    "len", "range", "int", "float", "bool", "min", "max", "tuple", "list", "dict", "isinstance", "enumerate",
    "zip", "abs", "str", "divmod", "round", "any", "all", "sorted", "reversed", "set", "frozenset", "type", "print",
    "super", "hasattr", "sum", "map", "filter", "iter", "next", "slice", "callable", "issubclass", "repr", "format",
    "pow", "ord", "chr", "hash", "staticmethod", "classmethod", "property", "NotImplemented", "Ellipsis", "object",
    "True", "False", "None",
    "Exception", "ValueError", "RuntimeError", "TypeError", "AssertionError", "NotImplementedError", "IndexError",
    "KeyError", "ZeroDivisionError", "OverflowError", "ArithmeticError", "AttributeError", "StopIteration",
}  # fmt: skip
ALLOWED_DUNDERS = {"__init__", "__name__", "__doc__"}
FRAME_ATTRIBUTES = {
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "f_back", "f_globals", "f_locals", "f_code",
    "f_builtins", "tb_frame", "tb_next", "co_code", "func_globals", "func_code",
}  # fmt: skip
STREAM_NAMES = {"Stream", "stream", "set_stream", "ExternalStream", "graph", "CUDAGraph", "graphs", "StreamContext"}
SEED_NAMES = {"manual_seed", "manual_seed_all", "seed", "seed_all", "set_rng_state", "fork_rng"}
PRECISION_NAMES = {
    "allow_tf32", "set_float32_matmul_precision", "allow_fp16_reduced_precision_reduction",
    "allow_bf16_reduced_precision_reduction", "fp32_precision",
}  # fmt: skip
DELEGATION_PREFIXES = (
    "torch.compile", "torch.jit", "torch.ops", "torch.library", "torch.export", "torch.fx",
    "torch.utils.cpp_extension", "torch.cuda.jiterator",
)  # fmt: skip
IO_PREFIXES = (
    "torch.load", "torch.save", "torch.from_file", "torch.hub", "torch.serialization", "torch.multiprocessing",
    "torch.distributed", "torch.utils.data",
)  # fmt: skip
# Private helpers of torch.nn that only compute sizes or initialise parameters (what nn.Linear's own
# reset_parameters uses).
SETUP_HELPERS = ("torch.nn.init.", "torch.nn.modules.utils.")
CACHE_DECORATORS = {"functools.lru_cache", "functools.cache", "functools.cached_property"}
TENSOR_BASES = {"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase"}
MODE_BASES = {"torch.overrides.TorchFunctionMode", "torch.utils._python_dispatch.TorchDispatchMode"}
MODULE_BASES = {"torch.nn.Module", "torch.nn.modules.module.Module"}
CLASS_BASES = MODULE_BASES | {"torch.autograd.Function", "typing.NamedTuple", "enum.Enum", "object"}

# What a launcher may use from torch anywhere: allocate, inspect, re-view and place tensors.
ALLOWED_TORCH = {
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like",
    "torch.ones", "torch.ones_like", "torch.full", "torch.full_like", "torch.arange", "torch.device",
    "torch.Size", "torch.finfo", "torch.iinfo", "torch.is_tensor", "torch.is_grad_enabled", "torch.no_grad",
    "torch.enable_grad", "torch.inference_mode", "torch.is_floating_point", "torch.numel",
    "torch.promote_types", "torch.broadcast_shapes", "torch.get_default_dtype", "torch.Tensor", "torch.dtype",
    "torch.tensor", "torch.as_tensor", "torch.as_strided", "torch.cuda.current_device", "torch.cuda.device",
    "torch.cuda.is_available", "torch.cuda.get_device_capability", "torch.cuda.get_device_properties",
    "torch.cuda.device_count", "torch.cuda.synchronize", "torch.cuda.current_stream", "torch.cuda.get_device_name",
    "torch.autograd.Function", "torch.autograd.function.FunctionCtx", "torch.nn.Parameter", "torch.nn.Module",
    "torch.nn.ModuleList", "torch.nn.ParameterList", "torch.nn.ModuleDict", "torch.nn.ParameterDict",
    "torch.nn.Identity", "torch.nn.Buffer", "torch.version.cuda", "torch.version.hip",
}  # fmt: skip
RANDOM_TORCH = {
    "torch.rand",
    "torch.randn",
    "torch.randint",
    "torch.randperm",
    "torch.rand_like",
    "torch.randn_like",
    "torch.randint_like",
    "torch.normal",
    "torch.bernoulli",
    "torch.multinomial",
    "torch.poisson",
}  # fmt: skip  (initialising parameters; PyTorch compute where forward could run)
TORCH_DTYPES = {
    "float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8", "uint8", "int16",
    "int32", "int", "int64", "long", "bool", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "complex64", "complex128", "uint16", "uint32", "uint64", "short", "cfloat", "cdouble", "contiguous_format",
    "channels_last", "preserve_format", "strided",
}  # fmt: skip
TRITON_ALLOWED = {
    "triton.jit", "triton.autotune", "triton.heuristics", "triton.Config", "triton.cdiv", "triton.next_power_of_2",
    "triton.constexpr", "triton.language",
}  # fmt: skip
OTHER_ALLOWED = {
    "dataclasses.dataclass", "dataclasses.field", "functools.wraps", "itertools.product", "itertools.chain",
    "collections.namedtuple", "collections.OrderedDict", "enum.Enum", "enum.IntEnum", "numbers.Number",
}  # fmt: skip
# Methods that allocate, inspect, re-view, lay out or place a tensor; of Python containers, strings and numbers;
# of autograd contexts and modules. Everything a launcher needs, nothing that computes.
ALLOWED_METHODS = {
    "size", "stride", "numel", "nelement", "dim", "ndimension", "is_contiguous", "data_ptr", "element_size",
    "storage_offset", "contiguous", "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "unsqueeze",
    "squeeze", "permute", "transpose", "t", "expand", "expand_as", "movedim", "moveaxis", "as_strided", "narrow",
    "select", "split", "chunk", "unbind", "detach", "clone", "new_empty", "new_empty_strided", "new_zeros",
    "new_ones", "new_full", "to", "float", "half", "bfloat16", "double", "int", "long", "short", "bool", "byte",
    "char", "cuda", "cpu", "type", "type_as", "zero_", "fill_", "copy_", "requires_grad_", "item",
    "is_floating_point", "is_complex", "get_device", "is_cuda", "dim_order", "bit_length", "is_integer",
    "as_integer_ratio", "conjugate",
    "append", "extend", "insert", "pop", "get", "items", "keys", "values", "index", "count", "format", "join",
    "startswith", "endswith", "lower", "upper", "strip", "replace", "copy", "update", "setdefault",
    "add", "discard",
    "apply", "save_for_backward", "saved_tensors", "mark_dirty", "mark_non_differentiable", "set_materialize_grads",
    "register_buffer", "register_parameter", "add_module", "parameters", "named_parameters", "buffers",
    "named_buffers", "children", "named_children", "modules", "named_modules", "train", "eval", "extra_repr",
}  # fmt: skip
REFUSED_METHODS = {
    "numpy", "tolist", "storage", "untyped_storage", "storage_type", "share_memory_", "apply_", "map_", "map2_",
    "as_subclass", "module_load", "register_hook", "register_forward_hook", "register_forward_pre_hook",
    "register_full_backward_hook", "register_backward_hook", "backward", "retain_grad", "set_", "new",
    "pin_memory", "record_stream", "__reduce_ex__",
}  # fmt: skip
HOST_READS = {"item", "tolist"}
TENSOR_ALLOCATORS = {
    "torch.empty", "torch.empty_like", "torch.zeros", "torch.zeros_like", "torch.ones", "torch.ones_like",
    "torch.full", "torch.full_like", "torch.empty_strided", "torch.arange",
}  # fmt: skip
TENSOR_RESULT_METHODS = {
    "view", "view_as", "reshape", "contiguous", "flatten", "transpose", "permute", "t", "expand", "to", "unsqueeze",
    "squeeze", "new_empty", "new_zeros", "new_ones", "new_full", "float", "half", "detach", "bfloat16", "double",
    "movedim", "unflatten", "expand_as", "cuda", "cpu", "int", "long", "clone",
}  # fmt: skip
SIZE_METHODS = {"numel", "dim", "ndimension", "size", "stride", "element_size", "storage_offset", "bit_length"}
FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
MUTATING_METHODS = {"append", "extend", "insert", "pop", "update", "setdefault", "clear", "add", "remove", "discard"}
# Attributes and methods of Triton tensors, dtypes and constexprs a kernel may use (Triton 3.x).
KERNEL_MEMBERS = {
    "T", "abs", "advance", "argmax", "argmin", "associative_scan", "atomic_add", "atomic_and", "atomic_cas",
    "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "broadcast_to", "cast", "cdiv", "ceil",
    "cos", "cumprod", "cumsum", "erf", "exp", "exp2", "expand_dims", "flip", "floor", "gather", "histogram", "log",
    "log2", "logical_and", "logical_or", "max", "min", "permute", "ravel", "reduce", "reduce_or", "reshape",
    "rsqrt", "sigmoid", "sin", "softmax", "sort", "split", "sqrt", "sqrt_rn", "store", "sum", "to", "trans",
    "view", "xor_sum", "dtype", "shape", "numel", "type", "element_ty", "value", "primitive_bitwidth",
    "scalar", "is_floating", "is_int", "is_ptr", "is_fp32", "is_fp16", "is_bf16", "is_fp64", "is_int_signed",
    "is_int_unsigned", "int_bitwidth", "fp_mantissa_width", "name", "pointer_to", "item",
}  # fmt: skip
CONSTRUCTION, RUNTIME, KERNEL = "construction", "runtime", "kernel"
MODULE = "<module>"  # the module's top level, as a scope's function


def check_candidate(source: str, task_module: str | None = None, index: SourceIndex | None = None) -> list[Finding]:
    """Return every static anti-hacking finding in a candidate's source (raises SyntaxError if unparsable).

    `index` is the source's SourceIndex, when the caller (the audit) has built it already.
    """
    index = index if index is not None else SourceIndex(ast.parse(source), source)
    checker = _Checker(index, task_module)
    checker.run()
    return sorted(checker.findings, key=lambda f: (f.line, f.column, f.rule))


def _torch_attribute_rule(resolved: str) -> tuple[str, str] | None:
    """(rule, message) for a torch name that a specific rule refuses wherever it appears, else None."""
    parts = resolved.split(".")
    if parts[0] != "torch":
        return None
    if (parts[-1] in STREAM_NAMES and "cuda" in parts) or resolved in {"torch.Stream", "torch.Event"}:
        return "TRI309", f"`{resolved}`: work on side streams or graphs escapes timing"
    if parts[-1] in SEED_NAMES:
        return "TRI311", f"`{resolved}`: candidates must not seed or replay random state"
    if parts[-1] in PRECISION_NAMES:
        return "TRI312", f"`{resolved}` lowers precision for everything that follows"
    if resolved.startswith(IO_PREFIXES):
        return "TRI304", f"`{resolved}` reads or writes files or spawns processes"
    if resolved.startswith(DELEGATION_PREFIXES):
        return "TRI313", f"`{resolved}` delegates to PyTorch's compilers or internals"
    if any(p.startswith("_") for p in parts[1:]) and not resolved.startswith(SETUP_HELPERS):
        return "TRI313", f"`{resolved}` delegates to PyTorch's compilers or internals"
    return None


def _torch_compute(resolved: str) -> bool:
    """Whether a torch name is one of PyTorch's compute functions or layers (`torch_names.py`)."""
    head, _, name = resolved.rpartition(".")
    lists = {
        "torch": torch_names.TORCH,
        "torch.nn.functional": torch_names.FUNCTIONAL,
        "torch.special": torch_names.SPECIAL,
        "torch.linalg": torch_names.LINALG,
        "torch.fft": torch_names.FFT,
        "torch.nn": torch_names.LAYERS,
        "torch.Tensor": torch_names.TENSOR_METHODS,
    }
    return name in lists.get(head, ())


@dataclass
class _Scope:
    """What one function knows of its names while it is read."""

    context: str
    function: str
    locals: set[str] = field(default_factory=set)
    enclosing: set[str] = field(default_factory=set)  # an enclosing function's names: state that outlives a call
    tensors: set[str] = field(default_factory=set)  # names certainly bound to tensors
    sizes: set[str] = field(default_factory=set)  # names certainly bound to Python numbers, sizes or shapes
    host_values: set[str] = field(default_factory=set)  # numbers read out of tensors (`.item()`)


class _Checker:
    def __init__(self, index: SourceIndex, task_module: str | None):
        self.index = index
        self.tree = index.tree
        self.aliases = index.aliases
        self.kernels = set(index.kernels)
        self.task_module = task_module
        self.findings: list[Finding] = []
        self.seen: set[tuple] = set()
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.module_names: set[str] = set()
        self.own_attributes: set[str] = set()
        self.construction_only: set[int] = set()
        self.reported: set[int] = set()  # attribute chains already judged as a whole

    def run(self) -> None:
        self._collect_definitions()
        self.construction_only = self._construction_only()
        for node in self.index.nodes:
            kind = type(node)
            if kind is ast.Import or kind is ast.ImportFrom:
                self._check_import(node)
            elif kind is ast.Try or kind.__name__ == "TryStar":
                self._add("TRI303", node, "try/except is not allowed: a fallback path can hide PyTorch compute")
            elif kind in (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete):
                self._check_patching(node)
        if not self.kernels:
            self._add("TRI301", self.tree, "no @triton.jit kernel is defined: the compute must run in Triton")
        self._check_model_is_plain()
        self._check_unused_kernels()
        module_scope = _Scope(CONSTRUCTION, MODULE)
        self._statements(self.tree.body, module_scope, top=True)

    # ---------------------------------------------------------------- bookkeeping

    def _add(self, rule: str, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + 1
        end_line = getattr(node, "end_lineno", None) or line
        end_col = (getattr(node, "end_col_offset", None) or col - 1) + 1
        key = (rule, line, col, message)
        if key not in self.seen:
            self.seen.add(key)
            self.findings.append(Finding(rule, RULES[rule].severity, message, line, col, end_line, end_col))

    def _resolve(self, node: ast.AST) -> str | None:
        """Dotted name with import aliases expanded (`F.relu` -> `torch.nn.functional.relu`); None unless the
        name's root is an import."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in self.aliases):
            return None
        return resolve_name(node, self.aliases)

    def _collect_definitions(self) -> None:
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[node.name] = node
                self.module_names.add(node.name)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
                self.module_names.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                self.module_names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        for node in self.index.nodes:
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                self.own_attributes.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.own_attributes.add(node.name)
        for cls in self.classes.values():
            for item in cls.body:
                if isinstance(item, ast.Assign | ast.AnnAssign):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    self.own_attributes |= {t.id for t in targets if isinstance(t, ast.Name)}

    def _construction_only(self) -> set[int]:
        """Ids of the functions only construction reaches: `__init__` methods and what only they (and the module's
        top level) name. Everything else could run while `forward` does: what no code names (`forward`, called
        by the harness), and whatever such code names, transitively."""
        owners = [f for f in self.functions.values() if f.name not in self.kernels]
        owners += [i for c in self.classes.values() for i in c.body if isinstance(i, FUNCTION_NODES)]
        inside = {id(f): _names_used(self.index.subtree(f)) for f in owners}
        names = {key: set(used) for key, used in inside.items()}
        everywhere = _names_used(self.index.nodes)
        # named outside every function body (a class attribute `forward = helper`, a decorator, a module constant):
        # such a value may be called at any time
        outside = {name for name, count in everywhere.items() if count > sum(u.get(name, 0) for u in inside.values())}
        by_name: dict[str, list] = {}
        for function in owners:
            by_name.setdefault(function.name, []).append(function)
        entry = {name for name in (f.name for f in owners) if name not in everywhere or name in outside}
        runtime = [f for f in owners if f.name != "__init__" and (f.name in entry or f.name == "forward")]
        seen = {id(f) for f in runtime}
        while runtime:
            budget.check()
            function = runtime.pop()
            for name in names[id(function)]:
                for callee in by_name.get(name, []):
                    if callee.name != "__init__" and id(callee) not in seen:
                        seen.add(id(callee))
                        runtime.append(callee)
        return {id(f) for f in owners} - seen

    # ---------------------------------------------------------------- whole-module rules

    def _check_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom) and node.level:
            self._add("TRI304", node, "relative imports are not allowed in a candidate")
            return
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        if isinstance(node, ast.ImportFrom):
            names += [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            root = name.split(".")[0]
            if self.task_module and root == self.task_module:
                self._add("TRI314", node, f"importing the task module `{root}` is not allowed")
            elif root not in ALLOWED_IMPORTS:
                self._add(
                    "TRI304",
                    node,
                    f"import of `{root}` is not allowed (allowed: {', '.join(sorted(ALLOWED_IMPORTS))})",
                )
            elif any(name == p or name.startswith(p) for p in FORBIDDEN_SUBMODULES):
                rule = "TRI313" if name.startswith("torch") else "TRI304"
                self._add(rule, node, f"import of `{name}` is not allowed in a candidate")

    def _check_patching(self, node: ast.AST) -> None:
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if not isinstance(sub, ast.Attribute):
                    continue
                root = dotted_name(sub)
                head = root.split(".")[0] if root else None
                if head in self.aliases or (head in self.classes and head != "self"):
                    self._add("TRI307", sub, f"assigning `{root}` patches shared code")

    def _check_unused_kernels(self) -> None:
        used = {n.id for n in self.index.nodes if type(n) is ast.Name and type(n.ctx) is ast.Load}
        for name in self.kernels:
            node = self.index.kernels[name].node
            if name not in used:
                self._add(
                    "TRI316",
                    node,
                    f"kernel `{name}` is never launched or called: a decoy does not make the model run in Triton",
                )

    def _check_model_is_plain(self) -> None:
        """`ModelNew` is one class statement at the module's top level, bound nowhere else, built from plain
        classes: the class the harness builds is the class these rules read."""
        top = [n for n in self.tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"]
        for node in self.index.nodes:
            bound = _binds_name(node, "ModelNew")
            if bound and not (isinstance(node, ast.ClassDef) and top and node is top[0]):
                where = "a second definition" if isinstance(node, ast.ClassDef) else "a binding"
                self._add(
                    "TRI318",
                    node,
                    f"{where} of `ModelNew` outside its one top-level class statement (an alias, a conditional or "
                    "dynamic definition) is not allowed: the verified class must be the one these checks read",
                )
        if top:
            self._check_plain_class(top[0], set())

    def _check_plain_class(self, cls: ast.ClassDef, seen: set[str]) -> None:
        seen.add(cls.name)
        if cls.decorator_list or cls.keywords:
            self._add("TRI318", cls, f"class `{cls.name}` must be plain: no decorators, no metaclass or keywords")
        for base in cls.bases:
            resolved = self._resolve(base)
            if resolved in MODULE_BASES:
                continue
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                self._check_plain_class(self.classes[base.id], seen)
            else:
                shown = resolved or ast.unparse(base)
                self._add(
                    "TRI318",
                    base,
                    f"`ModelNew` must derive from torch.nn.Module (through plain classes), not `{shown}`",
                )

    # ---------------------------------------------------------------- statements

    def _statements(self, body: list[ast.stmt], scope: _Scope, top: bool = False) -> None:
        for stmt in body:
            budget.check()
            self._statement(stmt, scope, top)

    def _statement(self, stmt: ast.stmt, scope: _Scope, top: bool) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self._function(stmt, scope)
            return
        if isinstance(stmt, ast.ClassDef):
            self._class(stmt, scope)
            return
        if isinstance(stmt, ast.Global | ast.Nonlocal):
            if not top:
                self._add(
                    "TRI310", stmt, f"global/nonlocal state can carry results between calls (in `{scope.function}`)"
                )
            return
        if isinstance(stmt, ast.If) and top and _is_main_guard(stmt.test):
            return  # never runs when the candidate is loaded as a module
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            return
        for expr in _own_expressions(stmt):
            self._expression(expr, scope)
        self._bind(stmt, scope)
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                self._statement(child, scope, top)
            elif isinstance(child, ast.excepthandler):
                self._statements(child.body, scope, top)

    def _bind(self, stmt: ast.stmt, scope: _Scope) -> None:
        """Record the names a statement binds, what is certain of their values, and refuse state kept between
        calls where `forward` could run."""
        if isinstance(stmt, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith):
            targets = (
                [stmt.target]
                if isinstance(stmt, ast.For | ast.AsyncFor)
                else [i.optional_vars for i in stmt.items if i.optional_vars is not None]
            )
            scope.locals |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            return
        if not isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign):
            return
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = stmt.value
        for target in targets:
            root = _root_name(target)
            if isinstance(target, ast.Attribute | ast.Subscript) and scope.context == RUNTIME:
                if self._is_shared_state(root, scope):
                    self._add(
                        "TRI310", target, f"writing into `{root}` keeps state between calls (in `{scope.function}`)"
                    )
                elif isinstance(target, ast.Subscript) and root in scope.tensors:
                    self._add(
                        "TRI302", target, f"indexed assignment into a tensor runs in PyTorch (in `{scope.function}`)"
                    )
            names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            scope.locals |= names
            if value is None or not isinstance(target, ast.Name):
                scope.tensors -= names
                continue
            name = target.id
            scope.tensors.discard(name)
            scope.sizes.discard(name)
            scope.host_values.discard(name)
            if self._host_read(value, scope):
                scope.host_values.add(name)
            elif self._size(value, scope):
                scope.sizes.add(name)
            elif self._tensor(value, scope):
                scope.tensors.add(name)
        if isinstance(stmt, ast.AugAssign) and scope.context == RUNTIME:
            self._arithmetic(stmt, [stmt.target, stmt.value], scope)

    def _is_shared_state(self, root: str | None, scope: _Scope) -> bool:
        """`self`, a class, a module-level name, an enclosing function's name (a closure), or what `type(...)` or
        `super()` lead to: anything that outlives one call."""
        if root is None:
            return False
        if root in scope.enclosing or root in {"type", "super"}:
            return root not in scope.locals
        if root in scope.locals and root != "self":
            return False
        return root == "self" or root in self.module_names or root in self.aliases

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, outer: _Scope) -> None:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self._resolve(target) in CACHE_DECORATORS:
                self._add("TRI310", decorator, "a caching decorator lets results survive between calls")
            self._expression(decorator, _Scope(CONSTRUCTION, outer.function, set(outer.locals)))
        if node.name in self.kernels and node is self.index.kernels[node.name].node:
            _KernelScan(self, node).run()
            return
        if node.name in {"__torch_function__", "__torch_dispatch__"}:
            self._add("TRI308", node, f"`{node.name}` intercepts PyTorch operations")
        context = CONSTRUCTION if id(node) in self.construction_only else RUNTIME
        if outer.function != MODULE:  # a function made inside another is a value that may run at any time
            context = RUNTIME
        scope = _Scope(context, node.name, set(), _enclosed(outer) | outer.enclosing)
        arguments = node.args
        params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        params += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        for default in [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]:
            self._expression(default, scope)  # a default is used where the function runs
            if context == RUNTIME and _mutable(default):
                self._add("TRI310", default, f"a mutable default argument keeps state between calls (in `{node.name}`)")
        for arg in params:
            if arg.annotation is not None:
                self._expression(arg.annotation, _Scope(CONSTRUCTION, node.name, set(scope.locals)))
        scope.locals |= {a.arg for a in params}
        first = params[0].arg if params and params[0].arg in {"self", "cls", "ctx"} else None
        scope.tensors |= {a.arg for a in params if a.arg != first and _annotated_tensor(a)}
        if node.name == "forward":  # forward's inputs are the task's tensors (scalars said so are left out)
            scope.tensors |= {a.arg for a in params if a.arg != first and not _annotated_scalar(a)}
        self._statements(node.body, scope)

    def _class(self, node: ast.ClassDef, outer: _Scope) -> None:
        for base in node.bases:
            resolved = self._resolve(base)
            if resolved in TENSOR_BASES:
                self._add("TRI308", node, f"class `{node.name}` subclasses torch.Tensor")
            elif resolved in MODE_BASES:
                self._add("TRI308", node, f"class `{node.name}` intercepts PyTorch operations (`{resolved}`)")
            elif resolved is not None and resolved not in CLASS_BASES:
                self._add("TRI317", base, f"deriving from `{resolved}` is not known to be allowed in a candidate")
            elif resolved is None and not (isinstance(base, ast.Name) and base.id in self.classes):
                self._expression(base, outer)
        for keyword in node.keywords:
            self._add("TRI317", keyword, f"class keyword `{keyword.arg}` (a metaclass) is not allowed in a candidate")
        for decorator in node.decorator_list:
            if self._resolve(decorator) not in {"dataclasses.dataclass"}:
                self._expression(decorator, outer)
        scope = _Scope(CONSTRUCTION, node.name, set(), _enclosed(outer) | outer.enclosing)
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                if _is_dunder(item.name) and item.name not in {"__init__", "__repr__"}:
                    self._add("TRI306", item, f"defining `{item.name}` changes how Python treats the object")
                self._function(item, outer)
            elif isinstance(item, ast.Expr | ast.Assign | ast.AnnAssign | ast.Pass):
                targets = item.targets if isinstance(item, ast.Assign) else [getattr(item, "target", None)]
                for target in targets:
                    if isinstance(target, ast.Name) and _is_dunder(target.id) and target.id not in ALLOWED_DUNDERS:
                        self._add("TRI306", target, f"setting `{target.id}` changes how Python treats the object")
                self._statement(item, scope, top=False)
            else:
                self._add("TRI317", item, f"a `{type(item).__name__}` statement in a class body is not allowed")

    # ---------------------------------------------------------------- expressions

    def _expression(self, expr: ast.AST, scope: _Scope) -> None:
        for node in _expression_nodes(expr):
            kind = type(node)
            if kind is ast.Name:
                self._name(node, scope)
            elif kind is ast.Attribute:
                self._attribute(node, scope)
            elif kind is ast.Call:
                self._call(node, scope)
            elif kind is ast.BinOp:
                self._arithmetic(node, [node.left, node.right], scope)
            elif kind is ast.UnaryOp and not isinstance(node.op, ast.Not):
                self._arithmetic(node, [node.operand], scope)
            elif kind is ast.Compare:
                self._arithmetic(node, [node.left, *node.comparators], scope)
            elif kind is ast.Lambda:
                inner = _Scope(RUNTIME, scope.function, _lambda_params(node), _enclosed(scope) | scope.enclosing)
                self._expression(node.body, inner)
            elif kind in (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp):
                scope.locals |= {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            elif kind in (ast.Yield, ast.YieldFrom, ast.Await):
                self._add("TRI317", node, f"`{kind.__name__.lower()}` is not allowed in a candidate's code")
            elif kind is ast.NamedExpr and isinstance(node.target, ast.Name):
                scope.locals.add(node.target.id)

    def _name(self, node: ast.Name, scope: _Scope) -> None:
        name = node.id
        if not isinstance(node.ctx, ast.Load):
            return
        bound = name in scope.locals or name in scope.enclosing
        if name == "__builtins__" or (name in DYNAMIC_BUILTINS and not bound):
            self._add("TRI305", node, f"`{name}` runs or reaches code the verifier cannot check")
        elif name in self.aliases and id(node) not in self.reported:
            resolved = self.aliases[name]
            self._judge_path(node, resolved, scope, called=False)
        elif not bound and name not in self.module_names and hasattr(builtins, name) and name not in SAFE_BUILTINS:
            self._add("TRI317", node, f"the builtin `{name}` is not known to be allowed in a candidate")

    def _attribute(self, node: ast.Attribute, scope: _Scope) -> None:
        if id(node) in self.reported:
            return
        attr = node.attr
        if _is_dunder(attr) and attr not in ALLOWED_DUNDERS:
            self._add("TRI306", node, f"`.{attr}` reaches interpreter internals")
            return
        if attr in FRAME_ATTRIBUTES:
            self._add("TRI306", node, f"`.{attr}` reaches interpreter internals (frames, code, globals)")
            return
        resolved = self._resolve(node)
        if resolved is not None:
            self._mark_chain(node)
            self._judge_path(node, resolved, scope, called=False)
        elif attr.startswith("_") and attr not in self.own_attributes and attr not in ALLOWED_DUNDERS:
            self._add("TRI317", node, f"the private attribute `.{attr}` is not known to be allowed in a candidate")

    def _mark_chain(self, node: ast.AST) -> None:
        """An import-rooted chain is judged once, as a whole (`torch.nn.functional.relu`, not its prefixes)."""
        while isinstance(node, ast.Attribute):
            self.reported.add(id(node))
            node = node.value
        self.reported.add(id(node))

    def _call(self, node: ast.Call, scope: _Scope) -> None:
        func = node.func
        if isinstance(func, ast.Subscript):
            target = func.value
            if not (isinstance(target, ast.Name) and target.id in self.kernels):
                self._add(
                    "TRI317",
                    node,
                    "a call through a subscript is not a kernel launch; launch a @triton.jit kernel as "
                    "`kernel[grid](...)`",
                )
            return
        if isinstance(func, ast.Name):
            self._call_name(node, func, scope)
            return
        if not isinstance(func, ast.Attribute):
            return
        resolved = self._resolve(func)
        if resolved is not None:
            self._mark_chain(func)
            self._judge_path(func, resolved, scope, called=True, call=node)
            return
        self._method(node, func, scope)

    def _call_name(self, node: ast.Call, func: ast.Name, scope: _Scope) -> None:
        name = func.id
        if name in self.aliases:
            self.reported.add(id(func))
            self._judge_path(func, self.aliases[name], scope, called=True, call=node)
        elif name in self.kernels and name not in scope.locals and scope.context != KERNEL:
            self._add("TRI317", node, f"kernel `{name}` must be launched as `{name}[grid](...)`")
        elif name == "type" and len(node.args) == 3:
            self._add("TRI305", node, "three-argument type() builds classes dynamically")
        elif name == "print" and name not in scope.locals:
            self._add("TRI315", node, "print() output is captured into the report and never read as a result")
        elif name == "hasattr" and not (len(node.args) == 2 and isinstance(node.args[1], ast.Constant)):
            self._add("TRI305", node, "hasattr() with a computed name reaches attributes the checks cannot see")

    def _method(self, node: ast.Call, func: ast.Attribute, scope: _Scope) -> None:
        """`value.method(...)` where the value is not an import: allowed, PyTorch compute, or unknown."""
        method = func.attr
        owner = func.value
        root = _root_name(owner)
        mutating = method in MUTATING_METHODS or (method.endswith("_") and not method.startswith("_"))
        if scope.context == RUNTIME and mutating and self._is_shared_state(root, scope):
            if root not in self.aliases:
                self._add(
                    "TRI310", node, f"`.{method}()` on `{root}` keeps state between calls (in `{scope.function}`)"
                )
            return
        if method in ALLOWED_METHODS:
            return
        if method in REFUSED_METHODS:
            self._add("TRI317", node, f"`.{method}()` is not allowed in a candidate: it reads values to the host or "
                      "reaches past the tensor")  # fmt: skip
            return
        if isinstance(owner, ast.Name) and owner.id == "self":
            if method in self.own_attributes and not self._is_method(method) and scope.context == RUNTIME:
                self._add(
                    "TRI302",
                    node,
                    f"`self.{method}(...)` runs a PyTorch module or callable (in `{scope.function}`)",
                )
            return
        if method in self.own_attributes and method not in torch_names.TENSOR_METHODS:
            return
        if method in torch_names.TENSOR_METHODS:
            if scope.context == RUNTIME and not self._size(owner, scope):
                self._add(
                    "TRI302",
                    node,
                    f"`.{method}()` computes in PyTorch (in `{scope.function}`); move the work into a Triton kernel",
                )
            return
        if scope.context == RUNTIME and self._size(owner, scope):
            return  # methods of Python numbers and shapes
        self._add("TRI317", node, f"`.{method}()` is not known to be allowed in a candidate")

    def _is_method(self, name: str) -> bool:
        return any(
            isinstance(item, ast.FunctionDef) and item.name == name
            for cls in self.classes.values()
            for item in cls.body
        )

    def _judge_path(
        self, node: ast.AST, resolved: str, scope: _Scope, called: bool, call: ast.Call | None = None
    ) -> None:
        """An import-rooted name: allowed, refused by a specific rule, PyTorch compute (TRI302 where forward
        could run), or not known to be allowed (TRI317)."""
        parts = resolved.split(".")
        if len(parts) == 1:
            if not isinstance(node, ast.Attribute) and id(node) not in self.reported:
                self._add("TRI317", node, f"the module `{resolved}` is used as a value; only its allowed names may be")
            return
        specific = _torch_attribute_rule(resolved)
        if specific is not None:
            self._add(specific[0], node, specific[1])
            return
        if any(resolved == p or resolved.startswith(p + ".") for p in FORBIDDEN_SUBMODULES if not p.endswith("_")):
            self._add("TRI304", node, f"`{resolved}` is not allowed in a candidate")
            return
        if any(part.startswith("_") for part in parts[1:]) and not resolved.startswith(SETUP_HELPERS):
            self._add("TRI306", node, f"`{resolved}` reaches private internals")
            return
        root = parts[0]
        if root == "torch":
            self._judge_torch(node, resolved, scope, called, call)
        elif root == "triton":
            if not (resolved in TRITON_ALLOWED or resolved.startswith("triton.language.")):
                self._add("TRI317", node, f"`{resolved}` is not known to be allowed in a candidate")
        elif root in {"math", "typing"}:
            return
        elif resolved not in OTHER_ALLOWED:
            self._add("TRI317", node, f"`{resolved}` runs in PyTorch or is not known to be allowed in a candidate")

    def _judge_torch(self, node: ast.AST, resolved: str, scope: _Scope, called: bool, call: ast.Call | None) -> None:
        parts = resolved.split(".")
        if resolved in ALLOWED_TORCH or (parts[-1] in TORCH_DTYPES and len(parts) == 2):
            if resolved in {"torch.tensor", "torch.as_tensor"} and scope.context == RUNTIME and call is not None:
                data = call.args[0] if call.args else None
                if data is not None and not _constant(data):
                    self._add(
                        "TRI317", call, f"`{resolved}` of values computed in Python builds the output on the host"
                    )
            return
        if resolved.startswith(SETUP_HELPERS) and scope.context == CONSTRUCTION:
            return
        if _torch_compute(resolved) or resolved.startswith(SETUP_HELPERS) or resolved in RANDOM_TORCH:
            if scope.context == RUNTIME:
                what = "is PyTorch compute" if not called else "computes in PyTorch"
                self._add(
                    "TRI302",
                    node,
                    f"`{resolved}` {what} (in `{scope.function}`); move the work into a Triton kernel",
                )
            return
        self._add("TRI317", node, f"`{resolved}` is not known to be allowed in a candidate")

    # ---------------------------------------------------------------- values

    def _arithmetic(self, node: ast.AST, operands: list[ast.AST], scope: _Scope) -> None:
        if scope.context != RUNTIME:
            return
        if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.MatMult):
            self._add(
                "TRI302", node, f"`@` multiplies matrices in PyTorch (in `{scope.function}`); use tl.dot in a kernel"
            )
        elif not isinstance(node, ast.Compare) and any(self._host_read(o, scope) for o in operands):
            self._add(
                "TRI317",
                node,
                "arithmetic on a value read out of a tensor (`.item()`) computes on the host; pass the value to the "
                "kernel and compute there",
            )
        elif any(self._tensor(o, scope) for o in operands):
            words = "comparing tensors" if isinstance(node, ast.Compare) else "arithmetic on a tensor"
            self._add("TRI302", node, f"{words} runs in PyTorch (in `{scope.function}`)")

    def _host_read(self, node: ast.AST, scope: _Scope) -> bool:
        """A Python number read out of a tensor's data (`.item()`, `float(x[0])`), or a name holding one."""
        if isinstance(node, ast.Name):
            return node.id in scope.host_values
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in HOST_READS:
                return True
            if isinstance(func, ast.Name) and func.id in {"float", "int", "bool"} and len(node.args) == 1:
                argument = node.args[0]
                return (isinstance(argument, ast.Subscript) and not self._size(argument, scope)) or self._tensor(
                    argument, scope
                )
        if isinstance(node, ast.BinOp | ast.UnaryOp):
            return any(self._host_read(c, scope) for c in ast.iter_child_nodes(node))
        return False

    def _size(self, node: ast.AST, scope: _Scope) -> bool:
        """Whether an expression is certainly a Python number, size or shape (its methods compute nothing)."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int | float | bool)
        if isinstance(node, ast.Name):
            return node.id in scope.sizes
        if isinstance(node, ast.BinOp):
            return self._size(node.left, scope) and self._size(node.right, scope)
        if isinstance(node, ast.UnaryOp):
            return self._size(node.operand, scope)
        if isinstance(node, ast.Tuple | ast.List):
            return all(self._size(e, scope) for e in node.elts)
        if isinstance(node, ast.Attribute):
            return node.attr in {"shape", "ndim", "itemsize"}
        if isinstance(node, ast.Subscript):
            return self._size(node.value, scope)
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Name) and func.id in {"len", "min", "max", "abs", "round", "divmod"}:
            return func.id == "len" or all(self._size(a, scope) for a in node.args)
        if isinstance(func, ast.Attribute) and func.attr in SIZE_METHODS:
            return True
        return (self._resolve(func) or "").startswith(("triton.cdiv", "triton.next_power_of_2", "math."))

    def _tensor(self, node: ast.AST, scope: _Scope) -> bool:
        """Whether an expression is certainly a tensor: a name bound to one, an allocation, a view of one."""
        if isinstance(node, ast.Name):
            return node.id in scope.tensors
        if isinstance(node, ast.Subscript):
            return self._tensor(node.value, scope)
        if isinstance(node, ast.Call):
            resolved = self._resolve(node.func) or ""
            if resolved in TENSOR_ALLOCATORS:
                return True
            func = node.func
            return (
                isinstance(func, ast.Attribute)
                and func.attr in TENSOR_RESULT_METHODS
                and self._tensor(func.value, scope)
            )
        return False


class _KernelScan:
    """A `@triton.jit` function: Triton's language and the kernel's own names (on the CPU its body runs as
    Python in Triton's interpreter, so what it may name matters there)."""

    def __init__(self, checker: _Checker, node: ast.FunctionDef):
        self.checker = checker
        self.node = node
        arguments = node.args
        params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        self.names = {a.arg for a in params} | {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }

    def run(self) -> None:
        checker = self.checker
        scope = _Scope(KERNEL, self.node.name, set(self.names) | checker.module_names)
        for stmt in self.node.body:
            for node in ast.walk(stmt):
                budget.check()
                if isinstance(node, ast.ClassDef | ast.Lambda | ast.Try | ast.With | ast.Import | ast.ImportFrom):
                    checker._add(
                        "TRI317", node, f"a `{type(node).__name__}` is not allowed in kernel `{self.node.name}`"
                    )
                elif isinstance(node, ast.Global | ast.Nonlocal):
                    checker._add("TRI310", node, f"global/nonlocal in kernel `{self.node.name}`")
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    self._name(node, scope)
                elif isinstance(node, ast.Attribute):
                    self._attribute(node)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                    checker._add("TRI315", node, "print() in a kernel: use tl.device_print")

    def _name(self, node: ast.Name, scope: _Scope) -> None:
        checker = self.checker
        name = node.id
        if name in checker.aliases or name in scope.locals:
            return
        if name == "__builtins__" or name in DYNAMIC_BUILTINS:
            checker._add("TRI305", node, f"`{name}` in kernel `{self.node.name}` runs code the verifier cannot check")
        elif hasattr(builtins, name) and name not in SAFE_BUILTINS:
            checker._add("TRI317", node, f"the builtin `{name}` is not allowed in kernel `{self.node.name}`")

    def _attribute(self, node: ast.Attribute) -> None:
        checker = self.checker
        if id(node) in checker.reported:
            return
        attr = node.attr
        if _is_dunder(attr):
            checker._add("TRI306", node, f"`.{attr}` reaches interpreter internals (in kernel `{self.node.name}`)")
            return
        resolved = checker._resolve(node)
        if resolved is not None:
            checker._mark_chain(node)
            parts = resolved.split(".")
            allowed = resolved.startswith("triton.language.") or resolved in TRITON_ALLOWED
            allowed = allowed or (parts[0] == "torch" and len(parts) == 2 and parts[1] in TORCH_DTYPES)
            allowed = allowed or (parts[0] == "math" and len(parts) == 2)
            if not allowed or any(p.startswith("_") for p in parts[1:]):
                checker._add("TRI317", node, f"`{resolved}` is not allowed in kernel `{self.node.name}`")
        elif attr not in KERNEL_MEMBERS:
            checker._add(
                "TRI317", node, f"`.{attr}` is not a member of Triton's tensors (in kernel `{self.node.name}`)"
            )


# ---------------------------------------------------------------- helpers


def _expression_nodes(expr: ast.AST) -> Iterator[ast.AST]:
    """The nodes of an expression, outermost first, without descending into lambdas (scanned on their own)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _own_expressions(stmt: ast.stmt) -> list[ast.AST]:
    """The expression children of one statement (not its nested statements, handlers or function bodies)."""
    return [
        child
        for child in ast.iter_child_nodes(stmt)
        if not isinstance(child, ast.stmt | ast.excepthandler | ast.arguments)
        and not (isinstance(child, ast.expr_context))
    ]


def _enclosed(outer: _Scope) -> set[str]:
    """The names a function defined in `outer` sees as locals: an enclosing function's (closures), never the
    module's (module-level names are shared state, known to the checker on their own)."""
    return set() if outer.function == MODULE else set(outer.locals)


def _names_used(nodes: list[ast.AST]) -> dict[str, int]:
    """How often each name is read among `nodes`: plain names and attribute names (`self.helper`)."""
    counts: dict[str, int] = {}
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            counts[node.attr] = counts.get(node.attr, 0) + 1
    return counts


def _binds_name(node: ast.AST, name: str) -> bool:
    """Whether a node binds `name` (an assignment target, a definition, an import alias, a global, a del)."""
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, ast.Store | ast.Del)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Global | ast.Nonlocal):
        return name in node.names
    if isinstance(node, ast.alias):
        return (node.asname or node.name) == name
    return False


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _is_main_guard(test: ast.expr) -> bool:
    """`if __name__ == "__main__":`, which never runs when the candidate is loaded as a module."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _lambda_params(node: ast.Lambda) -> set[str]:
    arguments = node.args
    params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return {a.arg for a in params} | {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}


def _constant(node: ast.AST) -> bool:
    """A literal (numbers, strings, and tuples or lists of them)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, ast.Tuple | ast.List):
        return all(_constant(e) for e in node.elts)
    return False


def _mutable(node: ast.AST) -> bool:
    """A literal or constructor of a container that a function's later calls would share."""
    if isinstance(node, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"list", "dict", "set"}


def _annotated_tensor(arg: ast.arg) -> bool:
    return arg.annotation is not None and (dotted_name(arg.annotation) or "").endswith("Tensor")


def _annotated_scalar(arg: ast.arg) -> bool:
    names = {"int", "float", "bool", "str", "tuple", "list", "dict"}
    return arg.annotation is not None and (dotted_name(arg.annotation) or "").split(".")[-1] in names


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Subscript | ast.Attribute | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None
