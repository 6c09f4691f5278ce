"""What runs inside a sandboxed child: load a task or candidate from its file, run it, write the results.

Nothing here judges correctness: the child writes its outputs (`outputs.pt`, loaded by the parent with
`weights_only=True`) and a result (typed in `messages.py`), and the trusted parent compares them against the
reference, which ran in a different process. The child does record what only it can see, as the runtime
rules TRI351-TRI358 of `rules.py`: how many Triton kernels launched and on which streams, threads started,
inputs changed, outputs that are not plain tensors or that alias an earlier call's output, timers or hooks
that were replaced, and writes outside the buffers (guard zones, `guards.py`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import ModuleType

import torch

from verifier import launch_hook, timing
from verifier.guards import Guards
from verifier.messages import (
    INIT_FILE,
    INPUTS_FILE,
    OUTPUTS_FILE,
    RESULT_FILE,
    CandidateResult,
    Job,
    ReferenceResult,
    StageFailure,
    TimedCandidate,
    TimedReference,
    Violation,
)
from verifier.rules import RULES

_CLONE = torch.Tensor.clone
_EQUAL = torch.equal
_SAVE = torch.save


class StageError(Exception):
    """A failure attributed to one stage of a job (import, init, forward, ...)."""

    def __init__(self, stage: str, exc: BaseException, source_file: str):
        super().__init__(f"{stage}: {exc}")
        self.stage = stage
        self.exc = exc
        self.source_file = source_file

    def as_result(self) -> StageFailure:
        line = _line_in(self.exc, self.source_file)
        return {
            "ok": False,
            "stage": self.stage,
            "error_type": type(self.exc).__name__,
            "error": _short(str(self.exc) or type(self.exc).__name__),
            "line": line,
            "triton_compile_error": _is_triton_compile_error(self.exc),
            "traceback": _short("".join(traceback.format_exception(self.exc)), 4000),
        }


def run_job(job: Job) -> None:
    """Entry point in the forked child; the working directory is the job directory."""
    handlers = {
        "reference": run_reference,
        "candidate": run_candidate,
        "time_reference": time_reference,
        "time_candidate": time_candidate,
    }
    started = time.perf_counter()
    if job["device"] == "cpu":
        _autotune_without_timing()
    try:
        result = handlers[job["kind"]](job)
    except StageError as exc:
        result = exc.as_result()
    except Exception as exc:  # e.g. a CUDA fault that surfaces only when the harness synchronises
        result = StageError("run", exc, job["source"]).as_result()
    result["seconds"] = time.perf_counter() - started
    with open(RESULT_FILE, "w") as f:
        json.dump(result, f)


# ------------------------------------------------------------------ the reference (trusted task code)


def run_reference(job: Job) -> ReferenceResult:
    """Generate each trial's inputs from its seed, and the reference outputs on clones of them."""
    device = torch.device(job["device"])
    module = _stage("import", job["source"], lambda: load_module(job["source"], job["module_name"]))
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise StageError("import", AttributeError(f"the task defines no `{name}`"), job["source"])
    seed_everything(job["init_seed"])
    init_inputs = _stage("get_init_inputs", job["source"], lambda: list(module.get_init_inputs()))
    model = _stage("init", job["source"], lambda: _build(module.Model, init_inputs, job["init_seed"], device))
    all_inputs, all_outputs, structure, leaves = [], [], None, []
    for seed in job["trial_seeds"]:
        seed_everything(seed)
        inputs = _stage("get_inputs", job["source"], lambda: list(module.get_inputs()))
        all_inputs.append(inputs)
        on_device = [_to_device(x, device) for x in inputs]
        with torch.no_grad():
            output = _stage("forward", job["source"], lambda args=on_device: model(*args))
        structure, leaves = flatten(output)
        all_outputs.append([_to_cpu(x) for x in leaves])
    torch.save(init_inputs, INIT_FILE)
    torch.save(all_inputs, INPUTS_FILE)
    torch.save(all_outputs, OUTPUTS_FILE)
    return {"ok": True, "structure": structure, "leaves": [_describe(x) for x in leaves]}


def time_reference(job: Job) -> TimedReference:
    """Eager and torch.compile medians on the first trial's inputs, measured like the candidate."""
    device = torch.device(job["device"])
    module = load_module(job["source"], job["module_name"])
    init_inputs = torch.load(INIT_FILE, weights_only=True)
    inputs = [_to_device(x, device) for x in torch.load(INPUTS_FILE, weights_only=True)[0]]
    model = _build(module.Model, init_inputs, job["init_seed"], device)
    result: TimedReference = {"ok": True}
    with torch.no_grad():
        result["eager"] = timing.time_cuda(lambda: model(*inputs), job["timing_trials"])
        if job.get("compile", True):
            compiled = torch.compile(model)
            started = time.perf_counter()
            try:
                compiled(*inputs)
                result["compile_seconds"] = time.perf_counter() - started
                result["compiled"] = timing.time_cuda(lambda: compiled(*inputs), job["timing_trials"])
            except Exception as exc:  # a baseline that fails to compile is reported, not fatal
                result["compile_error"] = _short(f"{type(exc).__name__}: {exc}")
    return result


# ------------------------------------------------------------------ the candidate (hostile code)


class Watch:
    """Runtime anti-hacking state installed before the candidate is imported."""

    def __init__(self, device: torch.device):
        self.interpreter = device.type == "cpu"
        self.launches = launch_hook.install(self.interpreter)
        self.threads_before = {t.ident for t in threading.enumerate()}
        self.threads_started: list[str] = []
        _count_thread_starts(self.threads_started)
        self.originals = timing.tamper_targets()
        self.originals += [(torch.Tensor, "clone", _CLONE), (torch, "equal", _EQUAL), (torch, "save", _SAVE)]
        self.violations: list[Violation] = []

    def flag(self, rule: str, message: str) -> None:
        """Record a runtime finding (once per rule), with the severity the catalog gives it."""
        if not any(v["rule"] == rule for v in self.violations):
            severity = RULES[rule].severity
            self.violations.append({"rule": rule, "severity": severity, "message": message, "line": 0, "column": 0})

    def check_environment(self) -> None:
        new_threads = [t.name for t in threading.enumerate() if t.ident not in self.threads_before]
        new_threads += self.threads_started
        if new_threads:
            self.flag("TRI353", f"the candidate started threads: {', '.join(new_threads[:5])}")
        replaced = [f"{getattr(o, '__name__', o)}.{n}" for o, n, orig in self.originals if getattr(o, n) is not orig]
        if replaced or not launch_hook.still_installed(self.launches, self.interpreter):
            what = ", ".join(replaced) or "the Triton launch hook"
            self.flag("TRI356", f"the candidate replaced {what}")


def _count_thread_starts(started: list[str]) -> None:
    """Wrap every way Python starts an OS thread, so even a thread that already ended is seen."""
    import _thread

    for module in (_thread, threading):
        for name in ("start_new_thread", "_start_new_thread", "start_joinable_thread", "_start_joinable_thread"):
            original = getattr(module, name, None)
            if original is None:
                continue

            def counted(*args, _original=original, _name=name, **kwargs):
                started.append(f"thread via {_name}")
                return _original(*args, **kwargs)

            setattr(module, name, counted)


def run_candidate(job: Job) -> CandidateResult:
    """Run every trial (under no_grad) plus one enable_grad call, recording what the watch sees."""
    device = torch.device(job["device"])
    watch = Watch(device)
    init_inputs = torch.load(INIT_FILE, weights_only=True)
    all_inputs = torch.load(INPUTS_FILE, weights_only=True)
    module = _stage("import", job["source"], lambda: load_module(job["source"], job["module_name"]))
    if not hasattr(module, "ModelNew"):
        raise StageError("import", AttributeError("the candidate defines no `ModelNew` class"), job["source"])
    model = _stage("init", job["source"], lambda: _build(module.ModelNew, init_inputs, job["init_seed"], device))
    watch.check_environment()
    outputs, launches, previous = [], [], []
    calls = [(inputs, torch.no_grad) for inputs in all_inputs] + [(all_inputs[0], torch.enable_grad)]
    for inputs, grad_mode in calls:
        guards = Guards()
        on_device = [guards.input(_to_device(x, device), position) for position, x in enumerate(inputs)]
        before = [_CLONE(x) if isinstance(x, torch.Tensor) else x for x in on_device]
        stream = _current_stream(device)
        watch.launches.reset()
        with grad_mode(), guards.allocations():
            output = _stage("forward", job["source"], lambda args=on_device: model(*args))
            _stage("forward", job["source"], lambda: _synchronize(device))
        for damage in guards.damage():
            watch.flag("TRI358", f"forward accessed memory outside its buffers: {damage}")
        launches.append(watch.launches.count)
        _check_launch(watch, grad_mode, stream)
        _check_inputs(watch, before, on_device)
        structure, leaves = flatten(output)
        _check_leaves(watch, leaves, previous, on_device)
        previous = leaves
        outputs.append([_to_cpu(x) if type(x) is torch.Tensor else None for x in leaves])
        watch.check_environment()
    torch.save(outputs, OUTPUTS_FILE)
    return {
        "ok": True,
        "structure": structure,
        "leaves": [_describe(x) for x in previous],
        "launches": launches,
        "kernels": sorted(set(watch.launches.names)),
        "violations": watch.violations,
    }


def time_candidate(job: Job) -> TimedCandidate:
    """Median time of the candidate on the first trial's inputs; its last output is checked by the parent."""
    device = torch.device(job["device"])
    watch = Watch(device)
    module = load_module(job["source"], job["module_name"])
    init_inputs = torch.load(INIT_FILE, weights_only=True)
    inputs = [_to_device(x, device) for x in torch.load(INPUTS_FILE, weights_only=True)[0]]
    model = _build(module.ModelNew, init_inputs, job["init_seed"], device)
    holder = {}

    def call() -> None:
        holder["out"] = model(*inputs)

    with torch.no_grad():
        watch.launches.reset()
        measured = timing.time_cuda(call, job["timing_trials"])
        launched = watch.launches.count
        call()
    _synchronize(device)
    watch.check_environment()
    calls = measured["trials"] + measured["warmup"] + 4
    if launched < calls:
        watch.flag("TRI351", f"only {launched} Triton launches in {calls} timed calls: work skipped while timed")
    _, leaves = flatten(holder["out"])
    torch.save([[_to_cpu(x) if type(x) is torch.Tensor else None for x in leaves]], OUTPUTS_FILE)
    return {"ok": True, "candidate": measured, "violations": watch.violations}


def _check_launch(watch: Watch, grad_mode: type, stream: int | None) -> None:
    mode = "torch.no_grad()" if grad_mode is torch.no_grad else "torch.enable_grad()"
    if watch.launches.count == 0:
        watch.flag("TRI351", f"forward launched no Triton kernel under {mode}")
    if stream is not None and watch.launches.streams - {stream}:
        watch.flag("TRI352", "a Triton kernel was launched on a side stream, outside the timed stream")


def _check_inputs(watch: Watch, before: list, after: list) -> None:
    for index, (old, new) in enumerate(zip(before, after)):
        if isinstance(old, torch.Tensor) and not _same_bits(old, new):
            watch.flag("TRI354", f"forward modified its input #{index}")


def _check_leaves(watch: Watch, leaves: list, previous: list, inputs: list) -> None:
    for leaf in leaves:
        if type(leaf) is not torch.Tensor:
            watch.flag("TRI355", f"forward returned a {type(leaf).__qualname__}, not a plain torch.Tensor")
    earlier = {x.data_ptr() for x in previous if type(x) is torch.Tensor and x.numel()}
    fresh = {x.data_ptr() for x in inputs if isinstance(x, torch.Tensor) and x.numel()}
    for leaf in leaves:
        if type(leaf) is torch.Tensor and leaf.numel() and leaf.data_ptr() in earlier - fresh:
            watch.flag("TRI357", "forward returned the same tensor as on the previous call (cached output)")


# ------------------------------------------------------------------ helpers


def _autotune_without_timing() -> None:
    """Under Triton's interpreter there is nothing to time (and no driver to time it with): an autotuned kernel
    runs its first configuration that survives pruning, as a single-config autotune would."""
    from triton.runtime import autotuner

    autotuner.Autotuner._bench = lambda self, *args, config=None, **kwargs: [0.0, 0.0, 0.0]


def load_module(path: str, name: str) -> ModuleType:
    """Import a module from a file (Triton's @jit needs real source files, never exec'd strings)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass


def flatten(output: object) -> tuple[object, list]:
    """(structure, leaves) of a forward's result: nested tuples/lists of tensors or Python scalars."""
    leaves: list = []

    def walk(obj: object) -> object:
        if isinstance(obj, tuple | list) and type(obj) in (tuple, list):
            return {"kind": type(obj).__name__, "items": [walk(x) for x in obj]}
        leaves.append(obj)
        return {"kind": "leaf", "index": len(leaves) - 1}

    return walk(output), leaves


def _build(cls: type, init_inputs: list, seed: int, device: torch.device) -> torch.nn.Module:
    seed_everything(seed)
    return cls(*init_inputs).to(device)


def _stage(stage: str, source: str, fn: Callable):
    try:
        return fn()
    except Exception as exc:
        raise StageError(stage, exc, source) from exc


def _to_device(value: object, device: torch.device) -> object:
    return value.to(device) if isinstance(value, torch.Tensor) else value


def _to_cpu(value: object) -> object:
    if type(value) is torch.Tensor:
        return value.detach().to("cpu", copy=True).contiguous()
    return value if isinstance(value, int | float | bool | type(None)) else repr(value)[:200]


def _describe(value: object) -> dict:
    if type(value) is torch.Tensor:
        return {"type": "Tensor", "dtype": str(value.dtype), "shape": list(value.shape), "device": value.device.type}
    return {"type": type(value).__qualname__}


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(_EQUAL(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)))
    return bool(_EQUAL(a, b))


def _current_stream(device: torch.device) -> int | None:
    return torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else None


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _line_in(exc: BaseException, source_file: str) -> int | None:
    target = os.path.abspath(source_file)
    if isinstance(exc, SyntaxError) and exc.filename and os.path.abspath(exc.filename) == target:
        return exc.lineno
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if os.path.abspath(frame.f_code.co_filename) == target:
            line = lineno
    for attr in ("lineno", "line"):
        value = getattr(exc, attr, None)
        if line is None and isinstance(value, int):
            line = value
    return line


def _is_triton_compile_error(exc: BaseException) -> bool:
    """Triton rejected the kernel's code: a compiler error, or its interpreter's equivalent on CPU."""
    for cls in type(exc).__mro__:
        if cls.__module__.startswith("triton.compiler") or cls.__name__ in {"CompilationError", "InterpreterError"}:
            return True
    return False


def _short(text: str, limit: int = 1000) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " ... [truncated]"
