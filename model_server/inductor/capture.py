"""Compile a task with TorchInductor and print what the rewriter needs, as one JSON object (a subprocess).

    python -m model_server.inductor.capture TASK.py --device cpu|cuda [--templates | --tuned]
    python -m model_server.inductor.capture FOLDER --wait ...   (a spare: imports first, then reads the task's
                                                                 file name in FOLDER from stdin, a JSON list)

On a GPU the compiled model really runs, so Inductor's autotuner picks each kernel's launch configuration.
On a CPU, Inductor is asked for Triton code (`cpu_backend = "triton"`) with a stand-in Triton driver that
reports an sm_90 target: generation works without a device, and the run is stopped as soon as the code
exists. Each kernel then gets the first configuration of Inductor's own heuristics. The user's task runs here
(it is their code, and `verify` runs it too), but never in the server's process: the backend starts this module
in a sandbox and holds the GPU lock for it (`model_server/backends/inductor.py`).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import json
import math
import os
import re
import sys
import textwrap
import time
from pathlib import Path
from unittest import mock

from model_server.inductor.rewrite import kernel_sources


class CaptureError(Exception):
    """The task cannot be compiled into Triton by Inductor; the message says why. `out_of_memory`: the GPU ran
    out of memory, which may be the fault of other work on it rather than the task's. `task_failed`: the task's own
    code failed (importing it, building its model or inputs, its forward), before Inductor was asked anything."""

    def __init__(self, message: str, out_of_memory: bool = False, task_failed: bool = False):
        super().__init__(message)
        self.out_of_memory = out_of_memory
        self.task_failed = task_failed


class _Captured(Exception):
    """Raised on CPU once the code exists, to stop Inductor before it tries to load or run it."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--templates", action="store_true", help="use Inductor's Triton matmul/conv templates")
    how.add_argument(
        "--tuned", action="store_true", help="on a GPU: let Inductor tune each kernel's launch configuration further"
    )
    parser.add_argument(
        "--reductions",
        choices=["looped"],
        help="looped: every reduction walks its rows in a loop of blocks, none holds a whole row at once (Inductor's "
        "persistent reductions off)",
    )
    parser.add_argument(
        "--configs",
        type=int,
        metavar="N",
        help="with --templates: keep the first N of Inductor's matmul template configurations (1: no autotuning); "
        "convolution templates are autotuned over all of theirs",
    )
    parser.add_argument(
        "--dynamic",
        metavar="SPEC",
        help="compile for other sizes along these dimensions of forward's tensor arguments (`auto`: all but the "
        "innermost that can vary; `0`, `x:0,y:1`: exactly these, an error where the task's code fixes one)",
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="TASK is a folder: import torch and Inductor, then read the task's file name from stdin (a JSON list "
        "of one name), so the imports are done before the task exists",
    )
    args = parser.parse_args(argv)
    task = Path(args.task)
    if args.wait:
        _import_compiler()
        names = _names(sys.stdin.readline())
        if names is None:
            print(json.dumps({"error": "no task was handed to this capture"}))
            return 1
        task = task / names[0]
    try:
        result = capture(task, args.device, args.templates, args.configs, args.tuned, args.reductions, args.dynamic)
    except CaptureError as exc:
        flags = {name: True for name in ("out_of_memory", "task_failed") if getattr(exc, name)}
        print(json.dumps({"error": str(exc), **flags}))
        return 1
    print(json.dumps(result))
    return 0


def _import_compiler() -> None:
    """What `capture` imports, done ahead (about 10 s on the GPU machine: torch, then Inductor's compiler)."""
    import torch
    import torch._inductor.compile_fx
    import torch._inductor.graph  # noqa: F401

    from model_server.inductor import decompositions  # noqa: F401
    from verifier import load_module  # noqa: F401  (the verifier's task helpers, which import torch's parts)


def _names(line: str) -> list[str] | None:
    try:
        names = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(names, list) or len(names) != 1 or not isinstance(names[0], str):
        return None
    return names


def capture(
    task: Path,
    device: str,
    templates: bool,
    configs: int | None = None,
    tuned: bool = False,
    reductions: str | None = None,
    dynamic: str | None = None,
) -> dict:
    """Wrapper code, kernel configurations, graph inputs, output structure and the scalar arguments Inductor
    baked into the code, of one compiled task (the model in training mode, as the verifier runs it); and how
    long the imports, the task (its model and inputs, made on the device, and an eager call) and the compile
    took. `tuned`: Inductor's coordinate-descent tuning searches each kernel's block sizes, warps and stages
    around its heuristic's choice, timing them on the GPU. `reductions="looped"`: no persistent reductions, each
    row is reduced in a loop over blocks of it. `dynamic`: a `verifier.dynamic` spec of the dimensions compiled
    for any size, recorded as `dynamic` (those that did vary, and the conditions on their sizes the code assumes)."""
    if tuned and device != "cuda":
        raise CaptureError("tuning times kernels on the GPU: --tuned needs --device cuda")
    began, started = time.time(), time.perf_counter()
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.graph import GraphLowering
    from torch._inductor.runtime import triton_helpers

    from model_server.inductor.decompositions import templates_table
    from verifier import flatten, full_precision, load_module, seed_everything, trial_inputs

    full_precision()
    inductor_config.coordinate_descent_tuning = tuned
    inductor_config.triton.persistent_reductions = reductions != "looped"
    if device == "cpu":
        inductor_config.cpu_backend = "triton"
        _install_stand_in_driver()
    if templates:
        inductor_config.max_autotune_gemm = True
        inductor_config.max_autotune_gemm_backends = "TRITON"
        # Triton alone: where cuDNN would win the autotuning, the default capture's hybrid keeps it already;
        # a 1x1 convolution becomes a matmul (Inductor's other choice for it is an extern matmul)
        inductor_config.max_autotune_conv_backends = "TRITON"
        inductor_config.conv_1x1_as_mm = True
        inductor_config.test_configs.max_mm_configs = configs
        if device == "cuda":  # on the CPU nothing can time the configurations: every template takes the first
            _convolutions_autotuned(inductor_config)
    imported = time.perf_counter()
    module = _in_task("import", task, lambda: load_module(str(task), "task"))
    with _out_of_memory_named(torch):
        seed_everything(0)
        with torch.device(device):  # made where they are used: a 6 GiB input costs seconds to draw on the CPU
            init_values = _in_task("get_init_inputs", task, lambda: list(module.get_init_inputs()))
            model = _in_task("init", task, lambda: module.Model(*init_values).to(device))
        constructed = _attributes_read(model)
        inputs = _in_task("get_inputs", task, lambda: trial_inputs(module, 0, torch.device(device)))
        with torch.no_grad():
            structure, leaves = flatten(_in_task("forward", task, lambda: model(*inputs)))
        if not all(isinstance(leaf, torch.Tensor) for leaf in leaves):
            raise CaptureError("forward must return a tensor or a tuple/list of tensors")

        graph_inputs: list[str] = []
        table = templates_table() if templates else None
        spec = _parsed_spec(dynamic)
        sizes: dict = {}

        def backend(gm, example_inputs):
            graph_inputs[:] = [_expression(node) for node in gm.graph.nodes if node.op == "placeholder"]
            try:
                return compile_fx(gm, example_inputs, decompositions=table)
            finally:
                if spec is not None:
                    sizes.update(_dynamic_sizes(example_inputs))

        codes: list[str] = []

        def save_output_code(code: str) -> None:
            codes.append(code)
            if device == "cpu":
                raise _Captured

        ready = time.perf_counter()
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=backend, fullgraph=True)
        if spec is not None:
            _mark_dynamic(spec, parameters(model), inputs)
        with mock.patch.object(GraphLowering, "save_output_code", save_output_code, create=True):
            try:
                with torch.no_grad(), _distinct_sizes(spec is not None):
                    compiled(*inputs)
            except Exception as exc:
                if not _caused_by(exc, _Captured):
                    raise CaptureError(f"torch.compile failed: {_first_line(exc)}") from exc
        if not codes:
            raise CaptureError("Inductor produced no code for this task")
    wrapper = codes[-1]
    scalars = {
        name: value
        for name, value in zip(parameters(model), inputs)
        if isinstance(value, bool | int | float) and name not in graph_inputs
    }
    if "error" in sizes:
        raise CaptureError(sizes["error"])
    if spec is not None:
        _check_varied(spec, parameters(model), inputs, sizes.get("dims", {}))
    return {
        "scalars": scalars,
        "init_arguments": _constructor_arguments(module.Model, init_values),
        # those `forward` itself changes are left out: the kernels do not repeat a Python side effect
        "attributes": {k: v for k, v in _attributes_read(model).items() if constructed.get(k) == v},
        "training_only": _mode_dependent(model),
        "wrapper": wrapper,
        "configs": _chosen_configs(wrapper) if device == "cuda" else _heuristic_configs(wrapper),
        "graph_inputs": graph_inputs,
        "output": structure,
        "helpers": Path(triton_helpers.__file__).read_text(),
        "device": device,
        "template_configs": configs if templates else None,
        "tuned": tuned,
        "reductions": reductions,
        "dynamic": sizes or None,
        "torch": torch.__version__,
        "seconds": {
            "imports": round(imported - started, 2),
            "task": round(ready - imported, 2),
            "compile": round(time.perf_counter() - ready, 2),
        },
        # the wall clock at the capture's start and end: the backend measures its process's start and exit by them
        "clock": {"began": began, "ended": time.time()},
    }


def parameters(model) -> list[str]:
    """The names of `model.forward`'s parameters: the positions of `get_inputs()`'s values."""
    return list(inspect.signature(model.forward).parameters)


def _parsed_spec(dynamic: str | None):
    if dynamic is None:
        return None
    from verifier import UsageError, parse_dynamic

    try:
        return parse_dynamic(dynamic)
    except UsageError as exc:
        raise CaptureError(str(exc)) from None


def _mark_dynamic(spec, names: list[str], inputs: list) -> None:
    """Mark the spec's dimensions of forward's tensor arguments for Dynamo: `auto` ones where they can vary (the
    compile keeps a dimension the code fixes at its size), the others as dynamic (`_check_varied` then names any the
    code fixed)."""
    import torch

    if spec.auto:
        for value in inputs:
            if isinstance(value, torch.Tensor):
                for dim in range(value.dim() - 1):
                    if value.shape[dim] >= 2:
                        torch._dynamo.maybe_mark_dynamic(value, dim)
    for _, value, dim, _ in _spec_dims(spec, names, inputs):
        torch._dynamo.mark_dynamic(value, dim)


def _check_varied(spec, names: list[str], inputs: list, varied: dict[str, list[int]]) -> None:
    """A CaptureError naming each dimension the spec names that the compile fixed (the task's code needs that
    size), or saying that none varied."""
    fixed = [
        f"dimension {written} of `{name}`"
        for name, _, dim, written in _spec_dims(spec, names, inputs)
        if dim not in varied.get(name, [])
    ]
    if fixed:
        raise CaptureError(
            f"--dynamic {spec}: {', '.join(fixed)} cannot vary: the task's code fixes "
            f"{'its size' if len(fixed) == 1 else 'their sizes'}; leave {'it' if len(fixed) == 1 else 'them'} out"
        )
    if not varied:
        raise CaptureError(f"--dynamic {spec}: no dimension can vary: the task's code fixes the size of every one")


def _spec_dims(spec, names: list[str], inputs: list):
    """(argument, tensor, dimension counted from 0, dimension as the spec wrote it) for each dimension the spec's
    items select. An item for every input passes over those that lack the dimension or have it at size 0 or 1
    (which cannot vary); an item naming an argument that is no tensor, lacks the dimension or has it at size 0 or 1
    is a CaptureError."""
    import torch

    tensors = {name: value for name, value in zip(names, inputs) if isinstance(value, torch.Tensor)}
    for named, dim in spec.dims:
        if named is not None and named not in tensors:
            taken = ", ".join(tensors) or "none"
            raise CaptureError(f"--dynamic names `{named}`, which is not a tensor argument of forward ({taken})")
        for name, value in tensors.items():
            if named not in (None, name):
                continue
            if not -value.dim() <= dim < value.dim():
                if named is None:
                    continue
                raise CaptureError(f"--dynamic {named}:{dim}: `{name}` has {value.dim()} dimensions")
            if value.shape[dim] < 2 and named is None:
                continue
            if value.shape[dim] < 2:
                raise CaptureError(
                    f"--dynamic: dimension {dim} of `{name}` has size {value.shape[dim]} in the example inputs; a size "
                    "of 0 or 1 is fixed by the compiler: make the example larger along it"
                )
            yield name, value, dim % value.dim(), dim


@contextlib.contextmanager
def _distinct_sizes(dynamic: bool):
    """Where sizes are dynamic, each dimension gets its own size variable even where two are equal in the example
    (no duck sizing): the code then assumes two sizes equal only where the task's computation needs them to be.
    And a size of 1 is not special (size-oblivious): without it the compiler assumes every dynamic size is at
    least 2, and a kernel for any batch would refuse a batch of one."""
    if not dynamic:
        yield
        return
    import torch.fx.experimental._config as fx_config

    with (
        mock.patch.object(fx_config, "use_duck_shape", False),
        mock.patch.object(fx_config, "backed_size_oblivious", True),
    ):
        yield


def _dynamic_sizes(example_inputs) -> dict:
    """`_sizes_assumed`, or its failure as {"error": ...}: it runs where the CPU capture is being stopped, and an
    exception there would be taken for the stop."""
    try:
        return _sizes_assumed(example_inputs)
    except Exception as exc:
        return {"error": str(exc) if isinstance(exc, CaptureError) else f"--dynamic: {_first_line(exc)}"}


def _sizes_assumed(example_inputs) -> dict:
    """What a dynamic compile assumes of its sizes: the dimensions that did vary (`dims`: argument name -> its
    dimensions), and the conditions the code holds under (`guards`: Python comparisons over `x.shape[d]`): sizes
    that must be equal, the bounds of 32-bit indexing, sizes of at least 1; and which argument's size each of
    Inductor's size variables is (`symbols`)."""
    import sympy
    from torch._guards import detect_fake_mode
    from torch.utils._sympy.printers import PythonPrinter

    fake_mode = detect_fake_mode(example_inputs)
    shape_env = getattr(fake_mode, "shape_env", None)
    if shape_env is None:
        return {}
    sources = {}
    for symbol, found in shape_env.var_to_sources.items():
        text = _source_text(found[0]) if found else None
        sources[symbol] = text
    varied = [s for s, text in sources.items() if text is not None and not shape_env.simplify(s).is_number]
    dims: dict[str, list[int]] = {}
    for symbol in varied:
        name, dim = re.fullmatch(r"(\w+)\.shape\[(\d+)\]", sources[symbol]).groups()
        dims.setdefault(name, []).append(int(dim))
    printer = PythonPrinter()
    guards = []
    for guard in shape_env.guards:
        expr = guard.expr
        unnamed = [s for s in expr.free_symbols if sources.get(s) is None]
        if unnamed:
            raise CaptureError(f"--dynamic: the code assumes `{expr}` of sizes it cannot name")
        named = {s: sympy.Symbol(sources[s], integer=True, positive=True) for s in expr.free_symbols}
        guards.append(printer.doprint(expr.xreplace(named)))
    for symbol in varied:
        bounds = shape_env.var_to_range.get(symbol)
        lower = int(bounds.lower) if bounds is not None and bounds.lower.is_Integer else 0
        guards.append(f"{sources[symbol]} >= {max(lower, 1)}")  # an empty input is never verified
        if bounds is not None and bounds.upper.is_Integer:
            guards.append(f"{sources[symbol]} <= {int(bounds.upper)}")
    symbols = {str(symbol): text for symbol, text in sources.items() if text is not None}
    return {
        "dims": {name: sorted(d) for name, d in dims.items()},
        "guards": list(dict.fromkeys(guards)),
        "symbols": symbols,
    }


def _source_text(source) -> str | None:
    """`x.shape[0]` for the source of a forward argument's size; None for any other."""
    name = source.name() if callable(getattr(source, "name", None)) else getattr(source, "name", None)
    found = re.fullmatch(r"L\['(\w+)'\]\.size\(\)\[(\d+)\]", name or "")
    return f"{found.group(1)}.shape[{found.group(2)}]" if found else None


def _constructor_arguments(model_class: type, values: list) -> dict[str, str | None]:
    """Each of `Model.__init__`'s parameters (defaults applied) as the Python literal of the example's value, or
    None where the value has no literal (a tensor, an object): the kernels may have any of them baked in."""
    try:
        bound = inspect.signature(model_class.__init__).bind(None, *values)
    except (TypeError, ValueError):
        return {}
    bound.apply_defaults()
    return {name: _literal(value) for name, value in list(bound.arguments.items())[1:]}


def _mode_dependent(model) -> bool:
    """Whether the model computes differently in eval mode (dropout, batch or instance statistics, or its own
    `forward` reading `self.training`): the capture is of training mode, so its kernels compute only that."""
    from torch import nn

    for module in model.modules():
        if isinstance(module, nn.modules.dropout._DropoutNd):
            return True
        if isinstance(module, nn.modules.batchnorm._NormBase) and module.track_running_stats:
            return True  # eval mode normalises by the running statistics
        if "self.training" in _forward_source(module):
            return True
    return False


def _forward_source(module) -> str:
    try:
        return inspect.getsource(type(module).forward)
    except (OSError, TypeError):
        return ""


def _attributes_read(model) -> dict[str, str]:
    """The model's own plain attributes (not parameters, buffers or submodules) that its `forward` reads, as
    literals: Inductor bakes their values into the kernels, so changing one later would go unnoticed."""
    try:
        tree = ast.parse(textwrap.dedent(_forward_source(model)))
    except SyntaxError:
        return {}
    read = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
    }
    found = {}
    for name in sorted(read & set(vars(model)) - {"training"}):
        literal = _literal(vars(model)[name])
        if literal is not None:
            found[name] = literal
    return found


def _literal(value: object, depth: int = 0) -> str | None:
    """Python source that evaluates to `value` (with `torch` imported), for the plain values a constructor takes:
    numbers, strings, flags, None, dtypes, and tuples, lists and dicts of them; else None."""
    import torch

    if depth > 4:
        return None
    if value is None or isinstance(value, bool | int | str):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, tuple | list):
        items = [_literal(item, depth + 1) for item in value]
        if None in items or len(items) > 64:
            return None
        if isinstance(value, list):
            return f"[{', '.join(items)}]"  # type: ignore[arg-type]
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"  # type: ignore[arg-type]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        pairs = [(repr(key), _literal(item, depth + 1)) for key, item in value.items()]
        if any(item is None for _, item in pairs):
            return None
        return "{" + ", ".join(f"{key}: {item}" for key, item in pairs) + "}"
    return None


def _convolutions_autotuned(inductor_config) -> None:
    """Let convolution templates autotune over all of Inductor's configurations while matmul templates keep the
    `max_mm_configs` cap (Inductor applies the one cap to both): a variant can set a matmul's tile, not a
    convolution's. Where this torch has no `InductorChoices.get_conv_configs`, the cap applies to both."""
    from torch._inductor.choices import InductorChoices

    capped = getattr(InductorChoices, "get_conv_configs", None)
    if capped is None:
        return

    def get_conv_configs(self, *args, **kwargs):
        configs = capped(self, *args, **kwargs)

        def every(*call_args, **call_kwargs):
            limit = inductor_config.test_configs.max_mm_configs
            inductor_config.test_configs.max_mm_configs = None
            try:
                yield from configs(*call_args, **call_kwargs)
            finally:
                inductor_config.test_configs.max_mm_configs = limit

        return every

    InductorChoices.get_conv_configs = get_conv_configs


def _in_task(what: str, task: Path, run):
    """`run`, the task's own code at stage `what`; its failure as a CaptureError naming the task's file and line and
    the stage, as the verifier names a task's failure (running out of GPU memory is left to `_out_of_memory_named`)."""
    import torch

    from verifier import StageError, stage

    try:
        return stage(what, str(task), run)
    except StageError as exc:
        if _caused_by(exc.exc, torch.OutOfMemoryError):
            raise exc.exc from None
        failed = exc.as_result()
        line = f":{failed['line']}" if failed["line"] else ""
        raise CaptureError(
            f"{task.name}{line}: {what} failed: {failed['error_type']}: {failed['error']}", task_failed=True
        ) from exc


@contextlib.contextmanager
def _out_of_memory_named(torch):
    """Running out of GPU memory anywhere in the capture (the model, its inputs, the compile, the autotuning)
    becomes a CaptureError that says so."""
    try:
        yield
    except Exception as exc:
        if not _caused_by(exc, torch.OutOfMemoryError):
            raise
        raise CaptureError(f"the GPU ran out of memory: {_first_line(exc)}", out_of_memory=True) from exc


def _install_stand_in_driver() -> None:
    """A Triton driver that only names a CUDA target, so Inductor can generate code on a machine without one."""
    import torch._inductor.runtime.triton_helpers as triton_helpers
    from triton.backends.compiler import GPUTarget
    from triton.runtime.driver import driver

    class StandInDriver:
        def get_current_target(self) -> GPUTarget:
            return GPUTarget("cuda", 90, 32)

        def get_current_device(self) -> int:
            return 0

        def is_active(self) -> bool:
            return True

    driver.set_active(StandInDriver())
    triton_helpers.set_driver_to_cpu = lambda: None


def _expression(node) -> str:
    """The forward-side expression of a graph input: `x`, `self.linear.weight`."""
    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    source = source.name() if callable(getattr(source, "name", None)) else getattr(source, "name", None)
    if not isinstance(source, str):
        raise CaptureError(f"graph input `{node.name}` has no source in forward's arguments or the module")
    text = re.sub(r"^L\['(\w+)'\]", r"\1", source)
    text = re.sub(r"\.size\(\)\[(\d+)\]$", r".shape[\1]", text)
    text = re.sub(r"\._(?:modules|parameters|buffers)\['(\w+)'\]", r".\1", text)
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*|\[\d+\])*", text):
        raise CaptureError(f"graph input `{source}` is not an argument, parameter or buffer")
    return text


def _chosen_configs(wrapper: str) -> dict[str, dict]:
    """The configuration Inductor's autotuner launched for each kernel of the module that just ran."""
    from torch._inductor.codecache import PyCodeCache

    names = [name for name, _ in kernel_sources(wrapper)]
    for module in reversed(list(PyCodeCache.modules)):
        if all(hasattr(module, name) for name in names):
            return {name: _config_of(getattr(module, name)) for name in names}
    raise CaptureError("cannot find the compiled module to read its kernels' configurations")


def _heuristic_configs(wrapper: str) -> dict[str, dict]:
    """The first configuration of Inductor's heuristics for each kernel, read without a device."""
    import importlib.util
    import tempfile

    configs = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, source in kernel_sources(wrapper):
            path = Path(scratch) / f"{name}.py"
            path.write_text(source)
            spec = importlib.util.spec_from_file_location(f"_inductor_kernel_{name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            configs[name] = _config_of(getattr(module, name))
    return configs


def _config_of(autotuner) -> dict:
    launchers = getattr(autotuner, "launchers", None) or []
    config = launchers[0].config if launchers else autotuner.configs[0]
    return {"kwargs": dict(config.kwargs), "num_warps": config.num_warps, "num_stages": config.num_stages}


def _caused_by(exc: BaseException, kind: type) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _first_line(exc: BaseException) -> str:
    """The innermost cause's type and first line (Dynamo wraps backend errors)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


if __name__ == "__main__":
    code = main()
    # the result is out: skip the interpreter's shutdown, where Inductor waits seconds for its compile workers
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
