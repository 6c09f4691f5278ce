"""Static anti-hacking rules (TRI301-TRI316) on a candidate's source.

A candidate earns a reward only if its core compute runs in Triton. These checks read the AST (nothing is
imported or run) and refuse the known ways of faking that: PyTorch compute on the `forward` path, escape
hatches out of the sandbox's view (dynamic code, dunder access, forbidden imports), state that survives
between calls, and tampering with the timing or launch machinery. The runtime half lives in
`verifier/sandbox/harness.py`; every rule is registered in `verifier/rules.py`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from verifier.audit import budget
from verifier.audit.source_index import SourceIndex, dotted_name, resolve_name, walk_body
from verifier.findings import Finding
from verifier.rules import RULES

ALLOWED_IMPORTS = {
    "torch", "triton", "math", "typing", "functools", "itertools", "operator",
    "dataclasses", "enum", "collections", "numbers", "__future__",
}  # fmt: skip
FORBIDDEN_SUBMODULES = ("torch.utils.cpp_extension", "torch._", "triton.testing", "triton.runtime", "triton.knobs")
DYNAMIC_BUILTINS = {
    "eval", "exec", "compile", "__import__", "open", "getattr", "setattr", "delattr", "globals",
    "locals", "vars", "breakpoint", "input", "__build_class__",
}  # fmt: skip
ALLOWED_DUNDERS = {"__init__", "__name__"}
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
# Private helpers of torch.nn that only compute sizes or initialise parameters (what nn.Linear's own
# reset_parameters uses); any compute they would do on the forward path is still PyTorch compute (TRI302).
SETUP_HELPERS = ("torch.nn.init.", "torch.nn.modules.utils.")
CACHE_DECORATORS = {"functools.lru_cache", "functools.cache", "functools.cached_property"}
TRY_NODES = {ast.Try, getattr(ast, "TryStar", ast.Try)}
BINDING_NODES = {ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete}
MODULE_WIDE_NODES = {ast.Import, ast.ImportFrom, ast.Name, ast.Attribute, ast.ClassDef, ast.FunctionDef, ast.Call}
MODULE_WIDE_NODES |= TRY_NODES | BINDING_NODES | {ast.AsyncFunctionDef}
IO_PREFIXES = (
    "torch.load", "torch.save", "torch.from_file", "torch.hub", "torch.serialization", "torch.multiprocessing",
    "torch.distributed", "torch.utils.data",
)  # fmt: skip

# What a launcher may do with PyTorch: allocate, inspect and re-view tensors. Everything else is compute.
ALLOWED_TORCH = {
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like",
    "torch.ones", "torch.ones_like", "torch.full", "torch.full_like", "torch.arange", "torch.device",
    "torch.Size", "torch.finfo", "torch.iinfo", "torch.is_tensor", "torch.is_grad_enabled", "torch.no_grad",
    "torch.promote_types", "torch.broadcast_shapes", "torch.get_default_dtype", "torch.Tensor",
    "torch.cuda.current_device", "torch.cuda.device", "torch.cuda.is_available",
    "torch.cuda.get_device_capability", "torch.cuda.get_device_properties", "torch.autograd.Function",
    "torch.cuda.synchronize", "torch.nn.Parameter", "torch.as_strided",
}  # fmt: skip
TORCH_DTYPES = {
    "float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8", "uint8", "int16",
    "int32", "int", "int64", "long", "bool", "float8_e4m3fn", "float8_e5m2", "complex64", "dtype",
}  # fmt: skip
ALLOWED_METHODS = {
    # shape and layout
    "size", "stride", "numel", "dim", "ndimension", "is_contiguous", "data_ptr", "element_size",
    "storage_offset", "contiguous", "view", "view_as", "reshape", "flatten", "unsqueeze", "squeeze",
    "permute", "transpose", "t", "expand", "expand_as", "unflatten", "movedim", "as_strided",
    # allocation and placement: device moves, dtype casts (integer casts of index tensors too), a scalar read
    "new_empty", "new_zeros", "new_ones", "new_full", "to", "float", "half", "bfloat16", "double",
    "cuda", "cpu", "int", "long", "zero_", "fill_", "requires_grad_", "detach", "item", "is_floating_point",
    "get_device",
    # plain Python containers and strings
    "append", "extend", "insert", "pop", "get", "items", "keys", "values", "index", "count", "format",
    "join", "split", "startswith", "endswith", "apply", "save_for_backward",
}  # fmt: skip
SAFE_BUILTINS = {
    "len", "range", "int", "float", "bool", "min", "max", "tuple", "list", "dict", "isinstance", "enumerate",
    "zip", "abs", "str", "divmod", "round", "any", "all", "sorted", "reversed", "set", "type", "print",
    "super", "hasattr", "ValueError", "RuntimeError", "TypeError", "AssertionError", "NotImplementedError",
}  # fmt: skip


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


class _Checker:
    def __init__(self, index: SourceIndex, task_module: str | None):
        self.index = index
        self.shadowed: set[int] = set()
        self.tree = index.tree
        self.nodes = index.nodes
        self.aliases = index.aliases
        self.kernels = set(index.kernels)
        self.task_module = task_module
        self.findings: list[Finding] = []
        self.seen: set[Finding] = set()
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.module_names: set[str] = set()

    def run(self) -> None:
        self._collect_definitions()
        self.shadowed = self._shadowed_builtins()
        for node in self.nodes:
            if type(node) in MODULE_WIDE_NODES:
                self._check_module_wide(node)
        if not self.kernels:
            self._add("TRI301", self.tree, "no @triton.jit kernel is defined: the compute must run in Triton")
        self._check_unused_kernels()
        self._check_forward_path()

    # ---------------------------------------------------------------- bookkeeping

    def _add(self, rule: str, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + 1
        end_line = getattr(node, "end_lineno", None) or line
        end_col = (getattr(node, "end_col_offset", None) or col - 1) + 1
        severity = RULES[rule].severity
        finding = Finding(rule, severity, message, line, col, end_line, end_col)
        if finding not in self.seen:
            self.seen.add(finding)
            self.findings.append(finding)

    def _resolve(self, node: ast.AST) -> str | None:
        """Dotted name with import aliases expanded (`F.relu` -> `torch.nn.functional.relu`)."""
        return resolve_name(node, self.aliases)

    def _collect_definitions(self) -> None:
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[node.name] = node
                self.module_names.add(node.name)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
                self.module_names.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            self.module_names.add(name.id)

    def _shadowed_builtins(self) -> set[int]:
        """Uses of a name like `input` or `compile` inside a function that binds it (a parameter called
        `input`, say): they are the function's own variable, not the builtin. Defaults and decorators are
        outside that scope and still count."""
        shadowed: set[int] = set()
        for function in self.nodes:
            if type(function) not in (ast.FunctionDef, ast.AsyncFunctionDef):
                continue
            arguments = function.args
            bound = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
            bound |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
            body = [n for stmt in function.body for n in self.index.subtree(stmt)]
            bound |= {n.id for n in body if type(n) is ast.Name and type(n.ctx) is ast.Store}
            names = bound & DYNAMIC_BUILTINS
            if names:
                shadowed |= {id(n) for n in body if type(n) is ast.Name and n.id in names}
        return shadowed

    # ---------------------------------------------------------------- whole-module rules

    def _check_unused_kernels(self) -> None:
        used = {n.id for n in self.nodes if type(n) is ast.Name and type(n.ctx) is ast.Load}
        for node in self.nodes:
            if type(node) is ast.FunctionDef and node.name in self.kernels and node.name not in used:
                self._add(
                    "TRI316",
                    node,
                    f"kernel `{node.name}` is never launched or called: a decoy does not make the model run in Triton",
                )

    def _check_module_wide(self, node: ast.AST) -> None:
        kind = type(node)
        if kind is ast.Import or kind is ast.ImportFrom:
            self._check_import(node)
        elif kind in TRY_NODES:
            self._add("TRI303", node, "try/except is not allowed: a fallback path can hide PyTorch compute")
        elif kind is ast.Name:
            dynamic = node.id in DYNAMIC_BUILTINS and id(node) not in self.shadowed
            if dynamic or node.id == "__builtins__":
                self._add("TRI305", node, f"`{node.id}` runs or reaches code the verifier cannot check")
        elif kind is ast.Attribute:
            self._check_attribute(node)
        elif kind in BINDING_NODES:
            self._check_patching(node)
        elif kind is ast.ClassDef:
            self._check_class(node)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if self._resolve(target) in CACHE_DECORATORS:
                    self._add("TRI310", decorator, "a caching decorator lets results survive between calls")
        elif kind is ast.Call:
            self._check_call_anywhere(node)

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

    def _check_attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in ALLOWED_DUNDERS:
            self._add("TRI306", node, f"`.{node.attr}` reaches interpreter internals")
            return
        classified = _torch_attribute_rule(self._resolve(node) or "")
        if classified is not None:
            self._add(classified[0], node, classified[1])

    def _check_patching(self, node: ast.AST) -> None:
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if not isinstance(sub, ast.Attribute):
                    continue
                root = dotted_name(sub)
                head = root.split(".")[0] if root else None
                if head in self.aliases or (head in self.classes and head != "self"):
                    self._add("TRI307", sub, f"assigning `{root}` patches shared code")

    def _check_class(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if self._resolve(base) in {"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase"}:
                self._add("TRI308", node, f"class `{node.name}` subclasses torch.Tensor")
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name in {"__torch_function__", "__torch_dispatch__"}:
                self._add("TRI308", item, f"`{item.name}` intercepts PyTorch operations")

    def _check_call_anywhere(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "print":
            self._add("TRI315", node, "print() output is captured into the report and never read as a result")
        if isinstance(node.func, ast.Name) and node.func.id == "type" and len(node.args) == 3:
            self._add("TRI305", node, "three-argument type() builds classes dynamically")

    # ---------------------------------------------------------------- the forward path

    def _check_forward_path(self) -> None:
        model = self.classes.get("ModelNew")
        if model is None:
            return
        methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
        forward = methods.get("forward")
        if forward is None:
            return
        params = forward.args.posonlyargs + forward.args.args + forward.args.kwonlyargs
        tensor_params = frozenset(a.arg for a in params[1:] if not _annotated_scalar(a))
        if forward.args.vararg:
            tensor_params |= {forward.args.vararg.arg}
        seen: set[tuple[int, frozenset[str]]] = set()
        queue: list[_Work] = [(forward, methods, tensor_params)]
        while queue:
            budget.check()
            work = queue.pop()
            if (id(work[0]), work[2]) in seen:
                continue
            seen.add((id(work[0]), work[2]))
            queue.extend(_ForwardScan(self, work).run())


class _ForwardScan:
    """Checks one function that `forward` reaches; returns the further functions it calls."""

    def __init__(self, checker: _Checker, work: _Work):
        self.checker = checker
        self.func, self.methods, tensor_params = work
        params = self.func.args.posonlyargs + self.func.args.args + self.func.args.kwonlyargs
        self.tensors = {a.arg for a in params if a.arg in tensor_params or _annotated_tensor(a)}
        self.scalars = {a.arg for a in params if _annotated_scalar(a)}
        self.host_values: set[str] = set()
        self.locals = {a.arg for a in params}
        self.calls: list[_Work] = []

    def run(self) -> list[_Work]:
        for stmt in walk_body(self.func.body):
            self._statement(stmt)
        return self.calls

    def _add(self, rule: str, node: ast.AST, message: str) -> None:
        self.checker._add(rule, node, f"{message} (in `{self.func.name}`, reached from ModelNew.forward)")

    def _statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Global | ast.Nonlocal):
            self._add("TRI310", stmt, "global/nonlocal state can carry results between calls")
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return
        nodes = list(_own_expressions(stmt))
        inner = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
        inner |= {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        for node in nodes:
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.BinOp):
                self._binop(node)
            elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
                if self._tensorish(node.operand):
                    self._add("TRI302", node, "arithmetic on a tensor runs in PyTorch")
            elif isinstance(node, ast.Compare) and any(self._tensorish(x) for x in [node.left, *node.comparators]):
                self._add("TRI302", node, "comparing tensors runs in PyTorch")
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in inner:
                self._torch_reference(node)
        if isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign):
            self._assignment(stmt)
        elif isinstance(stmt, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith):
            targets = (
                [stmt.target]
                if isinstance(stmt, ast.For | ast.AsyncFor)
                else [i.optional_vars for i in stmt.items if i.optional_vars is not None]
            )
            self.locals |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}

    def _assignment(self, stmt: ast.Assign | ast.AugAssign | ast.AnnAssign) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value_is_tensor = stmt.value is not None and self._tensorish(stmt.value)
        for target in targets:
            root = _root_name(target)
            if isinstance(target, ast.Attribute | ast.Subscript) and self._is_shared_state(root):
                self._add("TRI310", target, f"writing into `{root}` keeps state between calls")
            elif isinstance(target, ast.Subscript) and root in self.tensors:
                self._add("TRI302", target, "indexed assignment into a tensor runs in PyTorch")
            elif isinstance(target, ast.Name | ast.Tuple | ast.List):
                names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
                self.locals |= names
                if value_is_tensor and isinstance(target, ast.Name):
                    self.tensors.add(target.id)
                elif stmt.value is not None and self._read_from_tensor(stmt.value):
                    self.host_values |= names
                elif stmt.value is not None and self._scalar(stmt.value):
                    self.scalars |= names
        if isinstance(stmt, ast.AugAssign) and (self._tensorish(stmt.target) or self._tensorish(stmt.value)):
            self._add("TRI302", stmt, "in-place arithmetic on a tensor runs in PyTorch")

    def _is_shared_state(self, root: str | None) -> bool:
        """`self`, a class or a module-level name: anything that outlives one call."""
        if root is None or (root in self.locals and root != "self"):
            return False
        return root == "self" or root in self.checker.module_names or root in self.checker.aliases

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Subscript):
            return  # kernel[grid](...) launches; dict dispatch is left to the runtime launch check
        resolved = self.checker._resolve(func)
        if isinstance(func, ast.Name):
            self._call_name(node, func.id, resolved)
        elif isinstance(func, ast.Attribute):
            self._call_attribute(node, func, resolved)

    def _call_name(self, node: ast.Call, name: str, resolved: str | None) -> None:
        checker = self.checker
        root = resolved.split(".")[0] if resolved else None
        if name in self.locals or name in checker.classes or name in DYNAMIC_BUILTINS:
            return  # dynamic builtins are refused module-wide (TRI305)
        if name in checker.kernels:
            self._add("TRI302", node, f"kernel `{name}` must be launched as `{name}[grid](...)`")
        elif name in checker.functions:
            self.calls.append(self._work(checker.functions[name], {}, node, bound=False))
        elif root == "torch":
            self._torch_call(node, resolved)
        elif root in SAFE_MODULES or (name in SAFE_BUILTINS and name not in checker.module_names):
            return
        elif name in checker.module_names:
            self._add("TRI302", node, f"call through module-level variable `{name}` hides what runs")
        else:
            self._add("TRI302", node, f"call to unknown function `{name}` on the forward path")

    def _call_attribute(self, node: ast.Call, func: ast.Attribute, resolved: str | None) -> None:
        checker = self.checker
        owner = func.value
        root = resolved.split(".")[0] if resolved else _root_name(owner)
        if func.attr in MUTATING_METHODS and self._is_shared_state(root) and root not in checker.aliases:
            self._add("TRI310", node, f"`.{func.attr}()` on `{root}` keeps state between calls")
        elif root == "torch":
            self._torch_call(node, resolved)
        elif root in SAFE_MODULES or root in checker.aliases:
            return
        elif isinstance(owner, ast.Name) and owner.id == "self":
            method = self.methods.get(func.attr)
            if method is None:
                self._add("TRI302", node, f"`self.{func.attr}(...)` runs a PyTorch module or callable")
            else:
                self.calls.append(self._work(method, self.methods, node, bound=True))
        elif isinstance(owner, ast.Name) and owner.id in checker.classes and func.attr == "apply":
            cls = checker.classes[owner.id]
            methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
            if "forward" in methods:
                self.calls.append(self._work(methods["forward"], methods, node, bound=True))
        elif func.attr not in ALLOWED_METHODS and not self._scalar(owner):
            self._add("TRI302", node, f"`.{func.attr}()` computes in PyTorch; move the work into a Triton kernel")

    def _work(self, func: ast.FunctionDef, methods: dict, call: ast.Call, bound: bool) -> _Work:
        """The callee with the parameters that this call site fills with tensors."""
        params = func.args.posonlyargs + func.args.args
        params = params[1:] if bound else params
        tensors = {p.arg for p, arg in zip(params, call.args) if self._tensorish(arg)}
        tensors |= {k.arg for k in call.keywords if k.arg and self._tensorish(k.value)}
        return func, methods, frozenset(tensors)

    def _torch_call(self, node: ast.Call, resolved: str) -> None:
        if resolved not in ALLOWED_TORCH and _torch_attribute_rule(resolved) is None:
            self._add("TRI302", node, f"`{resolved}` computes in PyTorch; move the work into a Triton kernel")

    def _torch_reference(self, node: ast.Attribute) -> None:
        """A torch function used as a value (e.g. `op = torch.add`) is compute too."""
        resolved = self.checker._resolve(node) or ""
        parts = resolved.split(".")
        if parts[0] != "torch" or len(parts) < 2:
            return
        harmless = resolved in ALLOWED_TORCH or parts[-1] in TORCH_DTYPES or parts[1] == "cuda"
        harmless = harmless or _torch_attribute_rule(resolved) is not None
        if resolved.startswith("torch.nn.functional") or (not harmless and parts[1] != "nn"):
            self._add("TRI302", node, f"`{resolved}` is PyTorch compute on the forward path")

    def _binop(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult):
            self._add("TRI302", node, "`@` multiplies matrices in PyTorch; use tl.dot in a kernel")
        elif self._tensorish(node.left) or self._tensorish(node.right):
            self._add("TRI302", node, "arithmetic on a tensor runs in PyTorch")
        elif self._read_from_tensor(node.left) or self._read_from_tensor(node.right):
            self._add(
                "TRI302",
                node,
                "arithmetic on a value read out of a tensor (`.item()`) computes on the host; pass the value to "
                "the kernel and compute there",
            )

    def _read_from_tensor(self, node: ast.AST) -> bool:
        """A Python number read out of a tensor's data with `.item()` (or a name holding one)."""
        if isinstance(node, ast.Name):
            return node.id in self.host_values
        if isinstance(node, ast.Call):
            return isinstance(node.func, ast.Attribute) and node.func.attr == "item"
        if isinstance(node, ast.BinOp | ast.UnaryOp):
            return any(self._read_from_tensor(c) for c in ast.iter_child_nodes(node))
        return False

    def _scalar(self, node: ast.AST) -> bool:
        """Whether an expression is certainly a Python number, size or shape (its methods compute nothing)."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int | float | bool)
        if isinstance(node, ast.Name):
            return (node.id in self.scalars or node.id in self.host_values) and node.id not in self.tensors
        if isinstance(node, ast.BinOp):
            return self._scalar(node.left) and self._scalar(node.right)
        if isinstance(node, ast.UnaryOp):
            return self._scalar(node.operand)
        if isinstance(node, ast.Tuple | ast.List):
            return all(self._scalar(e) for e in node.elts)
        if isinstance(node, ast.Attribute):
            return node.attr in SIZE_ATTRIBUTES
        if isinstance(node, ast.Subscript):
            return self._scalar(node.value)
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Name) and func.id in SIZE_BUILTINS:
            return func.id in {"len", "int", "float", "bool", "round"} or all(self._scalar(a) for a in node.args)
        if isinstance(func, ast.Attribute) and func.attr in SIZE_METHODS:
            return True
        return (self.checker._resolve(func) or "").startswith(("triton.cdiv", "triton.next_power_of_2", "math."))

    def _tensorish(self, node: ast.AST) -> bool:
        """Whether an expression is (likely) a tensor rather than a shape, size or Python number."""
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Subscript):
            return self._tensorish(node.value)
        if isinstance(node, ast.BinOp | ast.UnaryOp):
            return any(self._tensorish(c) for c in ast.iter_child_nodes(node))
        if isinstance(node, ast.Call):
            resolved = self.checker._resolve(node.func) or ""
            if resolved.startswith("torch."):
                return resolved not in NON_TENSOR_TORCH
            if isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_METHODS:
                return self._tensorish(node.func.value)
        return False


SAFE_MODULES = {"triton", "math", "operator", "itertools", "functools", "typing"}
SIZE_ATTRIBUTES = {"shape", "ndim", "is_cuda", "device", "dtype", "itemsize"}
SIZE_METHODS = {
    "numel", "dim", "ndimension", "size", "stride", "element_size", "storage_offset", "data_ptr", "item",
    "bit_length", "is_contiguous", "get_device", "is_floating_point",
}  # fmt: skip
SIZE_BUILTINS = {"len", "int", "float", "bool", "round", "abs", "min", "max", "divmod"}
MUTATING_METHODS = {"append", "extend", "insert", "pop", "update", "setdefault", "clear", "add", "remove"}
NON_TENSOR_TORCH = {
    "torch.Size", "torch.finfo", "torch.iinfo", "torch.is_grad_enabled", "torch.is_tensor", "torch.device",
    "torch.cuda.current_device", "torch.cuda.is_available", "torch.cuda.get_device_capability",
    "torch.cuda.get_device_properties", "torch.promote_types", "torch.broadcast_shapes",
}  # fmt: skip
TENSOR_METHODS = {
    "view", "view_as", "reshape", "contiguous", "flatten", "transpose", "permute", "t", "expand", "to",
    "unsqueeze", "squeeze", "new_empty", "new_zeros", "new_ones", "new_full", "float", "half", "detach",
    "bfloat16", "double", "movedim", "unflatten", "expand_as", "cuda", "cpu", "int", "long",
}  # fmt: skip


_Work = tuple[ast.FunctionDef, dict[str, ast.FunctionDef], frozenset[str]]
SCALAR_ANNOTATIONS = {"int", "float", "bool", "str", "tuple", "list", "dict"}


def _annotated_tensor(arg: ast.arg) -> bool:
    return arg.annotation is not None and (dotted_name(arg.annotation) or "").endswith("Tensor")


def _annotated_scalar(arg: ast.arg) -> bool:
    return arg.annotation is not None and (dotted_name(arg.annotation) or "").split(".")[-1] in SCALAR_ANNOTATIONS


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Subscript | ast.Attribute | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _own_expressions(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The expression nodes of one statement, without those of the statements nested in it."""
    stack = [c for c in ast.iter_child_nodes(stmt) if not isinstance(c, ast.stmt | ast.excepthandler)]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(ast.iter_child_nodes(node))
