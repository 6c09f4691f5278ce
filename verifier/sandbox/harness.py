"""What runs inside a sandboxed child: load a task or candidate from its file, run it, report what it saw.

Every process makes each trial's inputs itself, from the trial's seed, on the device (`trial_inputs`): a
6 GiB input never crosses a process boundary. The candidate's job streams its outputs through the slot's
`channel.Channel`; the reference side's job, which the candidate never touches, computes the task's output
for the same call and compares the two chunk by chunk on the device (`compare.LeafCheck`); where the outputs
miss only on the size of their errors, it runs the task again in float64 for a second opinion
(`compare.against_exact`). Every job computes fp32 in full fp32 (`full_precision`). The candidate's
job also records what only it can see, as the runtime rules TRI351-TRI358 of `rules.py`: how many Triton
kernels launched and on which streams, threads started, inputs changed, outputs that are not plain tensors
or that alias an earlier call's output, timers or hooks that were replaced, and writes outside the buffers
(guard zones, `guards.py`). Results are JSON (typed in `messages.py`), judged by the trusted parent.
"""

from __future__ import annotations

import copy
import functools
import gc
import importlib.util
import json
import math
import os
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import NoReturn

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from verifier.rules import RULES
from verifier.sandbox import compare, coverage, launch_hook, memcheck, timing
from verifier.sandbox.guards import Guards
from verifier.wire.channel import Channel, ChannelClosed
from verifier.wire.messages import (
    RESULT_FILE,
    SANITIZED_JOB_FILE,
    SANITIZER_LOG_FILE,
    CandidateResult,
    Coverage,
    Job,
    OutputsHeader,
    ReferenceResult,
    StageFailure,
    TimedCandidate,
    TimedReference,
    Violation,
)

_CLONE = torch.Tensor.clone
_EQUAL = torch.equal
_GC_COLLECT = gc.collect
_SEND_TENSOR = Channel.send_tensor
_SEND_JSON = Channel.send_json
TASK_INPUTS_MODULE = "tritonize_task_inputs"
READY_TIMEOUT = 600.0
FINGERPRINT_MODULUS = 65521
GC_AFTER_BYTES = 64 * 2**20
EXACT_OUTPUT_BYTES = 4 * 2**30  # the published cumsum's 4 GiB output still gets its second opinion
EXACT_INPUT_BYTES = 8 * 2**30  # on a CPU; on a GPU, what the device has free (the published matvec's are 8 GiB)
EXACT_MODEL_BYTES = 2 * 2**30
UNTRUSTED_FRAME_ERRORS = (ValueError, TypeError, KeyError, IndexError, RecursionError, OverflowError, RuntimeError)


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
        "sanitize": sanitize,
        "sanitized_candidate": sanitized_candidate,
    }
    started = time.perf_counter()
    full_precision()
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
    """For each call: the task's output on the call's inputs, compared with what the candidate streams."""
    device = torch.device(job["device"])
    channel = _channel(job, device)
    module = _stage("import", job["source"], lambda: load_module(job["source"], job["module_name"]))
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise StageError("import", AttributeError(f"the task defines no `{name}`"), job["source"])
    model = _stage("init", job["source"], lambda: _build(module.Model, init_inputs(module, job), job, device))
    comparison, repeated = compare.Comparison(), None
    fingerprints: list[tuple[int, int]] = []
    compared = 0
    deadline = time.monotonic() + job["wait_seconds"]
    try:
        for call in job["calls"]:
            inputs = _stage("get_inputs", job["source"], lambda c=call: trial_inputs(module, c["seed"], device))
            with torch.no_grad():
                output = _stage("forward", job["source"], lambda args=inputs: model(*args))
            del inputs
            structure, ref_leaves = flatten(output)
            channel.mark_ready()
            try:
                check, fingerprint, missed = _receive_call(
                    channel, call["label"], structure, ref_leaves, job, device, deadline
                )
            except UNTRUSTED_FRAME_ERRORS as exc:  # what the candidate's side sent does not make sense
                raise ChannelClosed(f"{type(exc).__name__}: {exc}") from exc
            if missed:
                check.merge(_second_opinion(missed, model, module, call["seed"], device))
            del missed
            comparison.merge(check)
            ref_fingerprint = _fingerprint_leaves(ref_leaves, channel.slot_bytes)
            previous = fingerprints[-1] if fingerprints else None
            repeats = previous is not None and fingerprint == previous[0] and ref_fingerprint != previous[1]
            if repeats and call["label"].startswith("trial") and repeated is None:
                repeated = f"{call['label']} returned exactly the previous trial's output although the inputs changed"
            fingerprints.append((fingerprint, ref_fingerprint))
            compared += 1
            del output
            _collect_garbage(ref_leaves)
            del ref_leaves
    except (ChannelClosed, TimeoutError) as exc:
        comparison.problems.append(f"the candidate's outputs stopped arriving after {compared} calls ({exc})")
    return {
        "ok": True,
        "calls_compared": compared,
        "comparison": {
            "max_abs_error": comparison.max_abs_error,
            "max_rel_error": comparison.max_rel_error,
            "problems": comparison.problems,
            "tolerance": comparison.tolerance,
            "notes": comparison.notes,
        },
        "repeated": repeated,
    }


def _receive_call(
    channel: Channel, label: str, structure: object, ref_leaves: list, job: Job, device: torch.device, deadline: float
) -> tuple[compare.Comparison, int | None, list[Missed]]:
    """Read one call's frames from the candidate and compare them: the comparison, the fingerprint of the bytes
    it sent, and the leaves that missed only on the size of their errors (kept for a second opinion, left out
    of the comparison)."""
    header = channel.receive_json(deadline)
    if not isinstance(header, dict) or not isinstance(header.get("leaves"), list):
        raise ChannelClosed("a malformed frame header")
    result = compare.Comparison(problems=compare.compare_structure(structure, header.get("structure"), label))
    cand_leaves = header["leaves"]
    ref_described = [_describe(x) for x in ref_leaves]
    if not result.problems:
        result.problems += compare.compare_devices(
            ref_described, [c if isinstance(c, dict) else {} for c in cand_leaves]
        )
    limit = 4 * sum(_nbytes(x) for x in ref_leaves) + 2**30
    keep = _exact_possible(ref_leaves) and not result.problems
    parts: list[torch.Tensor] = []
    missed = []
    for index, cand in enumerate(cand_leaves):
        ref = ref_leaves[index] if index < len(ref_leaves) else None
        name = label if len(ref_leaves) == 1 else f"{label}, output {index}"
        if not isinstance(cand, dict) or cand.get("type") != "Tensor":
            if ref is not None and not result.problems:
                value = cand.get("value") if isinstance(cand, dict) else None
                if isinstance(ref, torch.Tensor):
                    kind = cand.get("type", "nothing") if isinstance(cand, dict) else "nothing"
                    result.merge(compare.Comparison(problems=[f"{name}: expected a torch.Tensor, got {kind}"]))
                else:
                    result.merge(compare.compare_value(ref, value, name))
            continue
        size = _announced_bytes(cand)
        if size is None or size > limit:
            raise ChannelClosed(f"output {index} announces an impossible size")
        check = (
            compare.LeafCheck(ref, name, job.get("atol"), job.get("rtol")) if isinstance(ref, torch.Tensor) else None
        )
        usable = check is not None and not result.problems and check.admits(cand["dtype"], cand["shape"])
        element = ref.element_size() if isinstance(ref, torch.Tensor) else 1
        kept = _room_for(ref) if usable and keep and check.floating else None
        offset = 0
        for chunk in channel.receive_bytes(size, device, deadline):
            parts.append(_fingerprint(chunk))
            if usable:
                values, start = chunk.view(ref.dtype), offset // element
                check.add(start, values)
                if kept is not None:
                    kept[start : start + values.numel()] = values
            offset += chunk.numel()
        if check is not None and not result.problems:
            finished = check.finish()
            if check.near_miss and kept is not None:
                missed.append(Missed(index, check, finished, kept))
            else:
                result.merge(finished)
    if len(cand_leaves) != len(ref_leaves) and not result.problems:
        result.problems.append(f"{label}: {len(cand_leaves)} outputs, expected {len(ref_leaves)}")
    if result.problems:
        for leaf in missed:
            result.merge(leaf.comparison)
        missed = []
    return result, _fold(parts), missed


@dataclass
class Missed:
    """One output leaf the candidate got right but for the size of its errors, with the values it sent."""

    index: int
    check: compare.LeafCheck
    comparison: compare.Comparison
    values: torch.Tensor


def _room_for(ref: torch.Tensor) -> torch.Tensor | None:
    """A flat buffer like `ref` for the candidate's values, or None where the device has no room for it."""
    try:
        return torch.empty_like(ref).reshape(-1)
    except torch.OutOfMemoryError:
        return None


def _exact_possible(ref_leaves: list) -> bool:
    """Whether a call's outputs are small enough to keep the candidate's copy for a float64 second opinion."""
    return sum(_nbytes(x) for x in ref_leaves) <= EXACT_OUTPUT_BYTES


def _second_opinion(
    missed: list[Missed], model: torch.nn.Module, module: ModuleType, seed: int, device: torch.device
) -> compare.Comparison:
    """The missed leaves judged against the task's float64 output on the same inputs (`compare.against_exact`);
    where the task cannot run in float64 (too large, an op without float64, a fault) the misses stand."""
    result = compare.Comparison()
    exact = _float64_outputs(model, module, seed, device)
    for leaf in missed:
        if exact is None or leaf.index >= len(exact):
            result.merge(leaf.comparison)
        else:
            result.merge(compare.against_exact(leaf.comparison, leaf.check, leaf.values, exact[leaf.index]))
    return result


def _float64_outputs(model: torch.nn.Module, module: ModuleType, seed: int, device: torch.device) -> list | None:
    """The task's outputs in float64 (a copy of the model, the call's inputs widened), or None where that is
    not possible within `EXACT_MODEL_BYTES` and the room for the widened inputs, or fails."""
    state = sum(_nbytes(t) for t in (*model.parameters(), *model.buffers()))
    if state > EXACT_MODEL_BYTES:
        return None
    try:
        inputs = trial_inputs(module, seed, device)
        if not _room_to_widen(inputs, device):
            return None
        wide = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
        del inputs
        with torch.no_grad():
            output = copy.deepcopy(model).double()(*wide)
        return flatten(output)[1]
    except Exception:  # an op with no float64 kernel, memory: the fp32 verdict stands
        return None


def _room_to_widen(inputs: list, device: torch.device) -> bool:
    """Whether float64 copies of `inputs` fit: on a GPU in 80% of its free memory (a verification beside this
    one must not run out because of it), on a CPU within EXACT_INPUT_BYTES."""
    wide = 2 * sum(_nbytes(x) for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point())
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return wide <= 0.8 * free
    return wide <= 2 * EXACT_INPUT_BYTES


def time_reference(job: Job) -> TimedReference:
    """Eager and torch.compile medians on the first call's inputs, measured like the candidate."""
    device = torch.device(job["device"])
    module = load_module(job["source"], job["module_name"])
    model = _build(module.Model, init_inputs(module, job), job, device)
    inputs = trial_inputs(module, job["calls"][0]["seed"], device)
    result: TimedReference = {"ok": True}
    with torch.no_grad():
        result["eager"] = timing.time_cuda(lambda: model(*inputs), job["timing_trials"])
        result["peak_bytes"] = torch.cuda.max_memory_allocated(device)
        result["device_bytes"] = torch.cuda.get_device_properties(device).total_memory
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
        self.originals += [(torch.Tensor, "clone", _CLONE), (torch, "equal", _EQUAL)]
        self.originals += [(Channel, "send_tensor", _SEND_TENSOR), (Channel, "send_json", _SEND_JSON)]
        self.violations: list[Violation] = []

    def flag(self, rule: str, message: str) -> None:
        """Record a runtime finding (once per rule), with the severity the catalog gives it."""
        if not any(v["rule"] == rule for v in self.violations):
            self.violations.append(RULES[rule].seen_at_run_time(message))

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
    """Run every call of the job (the trials under no_grad, then one enable_grad call), recording what the
    watch sees and streaming each call's outputs to the comparer."""
    started = time.perf_counter()
    device = torch.device(job["device"])
    channel = _channel(job, device)
    task, init = _task_inputs(job)
    watch = Watch(device)  # before the candidate's import: its launches and threads are seen from the start
    model = _candidate_model(job, init, device)
    watch.check_environment()
    stages = {"load_s": time.perf_counter() - started, "first_call_s": 0.0, "calls_s": 0.0}
    launches, previous = [], []
    for number, call in enumerate(job["calls"]):
        call_started = time.perf_counter()
        grad_mode = torch.enable_grad if call["grad"] else torch.no_grad
        guards = Guards()
        fresh = _stage("get_inputs", job["inputs_source"], lambda c=call: trial_inputs(task, c["seed"], device))
        on_device = [guards.input(x, position) for position, x in enumerate(fresh)]
        del fresh
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
        del before
        structure, leaves = flatten(output)
        _check_leaves(watch, leaves, previous, on_device)
        previous = _held(leaves)
        _send_outputs(channel, structure, leaves)
        del output, on_device
        _collect_garbage(leaves)
        del leaves
        watch.check_environment()
        stages["first_call_s" if number == 0 else "calls_s"] += time.perf_counter() - call_started
    kernels = sorted(set(watch.launches.names))
    coverage_started = time.perf_counter()
    measured = _coverage(model, task, job, device, watch)
    watch.check_environment()
    stages["coverage_s"] = time.perf_counter() - coverage_started
    return {
        "ok": True,
        "launches": launches,
        "kernels": kernels,
        "violations": watch.violations,
        "coverage": measured,
        "stages": stages,
    }


def _task_inputs(job: Job) -> tuple[ModuleType, list]:
    """The candidate side's copy of the task (without its `Model`) and the constructor arguments drawn from it."""
    task = _stage("get_inputs", job["inputs_source"], lambda: load_module(job["inputs_source"], TASK_INPUTS_MODULE))
    init = _stage("get_init_inputs", job["inputs_source"], lambda: init_inputs(task, job))
    return task, init


def _candidate_model(job: Job, init: list, device: torch.device) -> torch.nn.Module:
    """The candidate's `ModelNew`, imported and built on `device`."""
    module = _stage("import", job["source"], lambda: load_module(job["source"], job["module_name"]))
    if not hasattr(module, "ModelNew"):
        raise StageError("import", AttributeError("the candidate defines no `ModelNew` class"), job["source"])
    return _stage("init", job["source"], lambda: _build(module.ModelNew, init, job, device))


def _coverage(model: torch.nn.Module, task: ModuleType, job: Job, device: torch.device, watch: Watch) -> Coverage:
    """Coverage of one more call on the first call's inputs (not compared: its outputs are dropped)."""
    inputs = trial_inputs(task, job["calls"][0]["seed"], device)

    try:
        with torch.no_grad():
            return coverage.measure(lambda: model(*inputs), watch.launches, device)
    except Exception as exc:  # the figure is informational; a call that fails here was already judged
        return {"share": None, "library_calls": [], "error": _short(f"{type(exc).__name__}: {exc}", 300)}


def time_candidate(job: Job) -> TimedCandidate:
    """Median time of the candidate on the first call's inputs; its last output goes to the comparer."""
    device = torch.device(job["device"])
    channel = _channel(job, device)
    task = load_module(job["inputs_source"], TASK_INPUTS_MODULE)
    init = init_inputs(task, job)
    watch = Watch(device)
    module = load_module(job["source"], job["module_name"])
    model = _build(module.ModelNew, init, job, device)
    inputs = trial_inputs(task, job["calls"][0]["seed"], device)
    holder = {}

    def call() -> None:
        holder["out"] = model(*inputs)

    channel.wait_ready(time.monotonic() + READY_TIMEOUT)  # the comparer's reference run is over: the GPU is ours
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
    structure, leaves = flatten(holder["out"])
    _send_outputs(channel, structure, leaves)
    return {"ok": True, "candidate": measured, "violations": watch.violations}


def sanitize(job: Job) -> NoReturn:
    """Replace this process with compute-sanitizer running `sanitized_candidate` on the same job in a fresh
    interpreter (memcheck must see CUDA start up). The sandbox stays: namespaces, the read-only filesystem,
    the limits and the process tree are all kept across `exec`."""
    inner = {**job, "kind": "sanitized_candidate"}
    with open(SANITIZED_JOB_FILE, "w") as f:
        json.dump(inner, f)
    # -P: the job directory (writable by the candidate) is not put on the import path
    target = [sys.executable, "-P", "-m", "verifier.sandbox.zygote", "--run-job", os.path.abspath(SANITIZED_JOB_FILE)]
    argv = memcheck.command(job["sanitizer"], os.path.abspath(SANITIZER_LOG_FILE), target)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(argv[0], argv, memcheck.environment())


def sanitized_candidate(job: Job) -> dict:
    """One plain call of the candidate on the first call's inputs: no guard zones (memcheck must see an
    overrun leave the tensor's own allocation) and nothing streamed (the outputs were already compared)."""
    device = torch.device(job["device"])
    task, init = _task_inputs(job)
    model = _candidate_model(job, init, device)
    inputs = _stage("get_inputs", job["inputs_source"], lambda: trial_inputs(task, job["calls"][0]["seed"], device))
    with torch.no_grad():
        _stage("forward", job["source"], lambda: model(*inputs))
        _stage("forward", job["source"], lambda: _synchronize(device))
    return {"ok": True}


def _send_outputs(channel: Channel, structure: object, leaves: list) -> None:
    header: OutputsHeader = {"structure": structure, "leaves": []}
    for leaf in leaves:
        if type(leaf) is torch.Tensor:
            header["leaves"].append(_describe(leaf))
        else:
            header["leaves"].append({"type": type(leaf).__qualname__, "value": _plain(leaf)})
    channel.send_json(header)
    for leaf in leaves:
        if type(leaf) is torch.Tensor:
            channel.send_tensor(leaf)


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


def _held(leaves: list) -> list[tuple[int, StorageWeakRef]]:
    """Where each output tensor lives, without keeping it alive: a GB-sized output is freed before the next call
    unless the candidate itself holds on to it (a cache), which is what TRI357 looks for."""
    return [
        (x.data_ptr(), StorageWeakRef(x.untyped_storage())) for x in leaves if type(x) is torch.Tensor and x.numel()
    ]


def _check_leaves(watch: Watch, leaves: list, previous: list[tuple[int, StorageWeakRef]], inputs: list) -> None:
    for leaf in leaves:
        if type(leaf) is not torch.Tensor:
            watch.flag("TRI355", f"forward returned a {type(leaf).__qualname__}, not a plain torch.Tensor")
    earlier = {pointer for pointer, storage in previous if not storage.expired()}
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
    return _walk(output, leaves), leaves


def _walk(obj: object, leaves: list) -> object:
    """A plain recursive function, not a closure: a self-referencing closure is a reference cycle that would
    keep every output it saw alive until the garbage collector happens to run (GBs at published sizes)."""
    if isinstance(obj, tuple | list) and type(obj) in (tuple, list):
        return {"kind": type(obj).__name__, "items": [_walk(x, leaves) for x in obj]}
    leaves.append(obj)
    return {"kind": "leaf", "index": len(leaves) - 1}


def full_precision() -> None:
    """fp32 is real fp32 in every job: PyTorch lets cuDNN run fp32 convolutions on TF32 tensor cores by default
    (about 1e-3 relative error). The reference would then be too coarse for any accurate kernel to match, a
    hybrid candidate's library call would miss the tolerance, and the eager and compile baselines would be
    timed at a precision the candidate may not use. Set before anything is imported, so a task or candidate
    that chooses its own precision still does (and is judged by its error)."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def init_inputs(module: ModuleType, job: Job) -> list:
    """The task's constructor arguments, drawn from the job's init seed (the same in every process)."""
    seed_everything(job["init_seed"])
    return list(module.get_init_inputs())


def trial_inputs(module: ModuleType, seed: int, device: torch.device) -> list:
    """One call's inputs from its seed, made on `device` directly (tensor factories default to it), so the
    reference and the candidate draw identical data without moving a byte between processes."""
    seed_everything(seed)
    with device:
        inputs = list(module.get_inputs())
    return [_to_device(x, device) for x in inputs]


def _build(cls: type, init: list, job: Job, device: torch.device) -> torch.nn.Module:
    """The model made on its device: a published GEMM's 4 GiB weight takes seconds to initialise on a CPU."""
    seed_everything(job["init_seed"])
    with torch.device(device):
        return cls(*init).to(device)


def _channel(job: Job, device: torch.device) -> Channel:
    channel = Channel(job["channel_fd"])
    if device.type == "cuda":
        channel.pin()
    return channel


def _collect_garbage(leaves: list) -> None:
    """After a call with large outputs, collect reference cycles now: a cycle (Triton's interpreter makes one
    per launch; candidate code may too) would otherwise keep that call's GB-sized tensors alive for several
    more calls. Small calls skip it (a collection costs tens of milliseconds)."""
    if sum(_nbytes(x) for x in leaves) >= GC_AFTER_BYTES:
        _GC_COLLECT()


def _nbytes(value: object) -> int:
    return value.numel() * value.element_size() if isinstance(value, torch.Tensor) else 0


def _announced_bytes(leaf: dict) -> int | None:
    """The byte size a candidate's leaf description claims, or None if the description is not well formed."""
    shape, dtype = leaf.get("shape"), getattr(torch, str(leaf.get("dtype", "")).removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype) or not isinstance(shape, list):
        return None
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        return None
    return math.prod(shape) * dtype.itemsize


def _fingerprint(chunk: torch.Tensor) -> torch.Tensor:
    """A position-sensitive checksum of a uint8 chunk (tells a repeated output from a fresh one), as two int64
    values left on the chunk's device: a GB-sized output's chunks are folded with one sync (`_fold`)."""
    values = chunk.view(torch.int32) if chunk.numel() % 4 == 0 else chunk
    values = values.to(torch.int64)
    return torch.stack([values.sum(), (values * _weights(values.numel(), values.device)).sum()])


@functools.lru_cache(maxsize=4)
def _weights(count: int, device: torch.device) -> torch.Tensor:
    """The fingerprint's position weights (every full chunk of a GB-sized output has the same count)."""
    return torch.arange(count, device=device) % FINGERPRINT_MODULUS + 1


def _fold(parts: list[torch.Tensor]) -> int:
    """One fingerprint of a sequence of chunk checksums."""
    fingerprint = 0
    for plain, weighted in torch.stack(parts).tolist() if parts else []:
        fingerprint = (fingerprint * 1000003 + (plain * 1000003 + weighted) % 2**61) % 2**61
    return fingerprint


def _fingerprint_leaves(leaves: list, chunk_bytes: int) -> int:
    parts = []
    for leaf in leaves:
        if type(leaf) is torch.Tensor:
            flat = leaf.detach().contiguous().reshape(-1).view(torch.uint8)
            parts += [_fingerprint(flat[start : start + chunk_bytes]) for start in range(0, flat.numel(), chunk_bytes)]
    return _fold(parts)


def _stage(stage: str, source: str, fn: Callable):
    try:
        return fn()
    except Exception as exc:
        raise StageError(stage, exc, source) from exc


def _to_device(value: object, device: torch.device) -> object:
    return value.to(device) if isinstance(value, torch.Tensor) else value


def _plain(value: object) -> object:
    """A non-tensor output as JSON can carry it: numbers, booleans and None as they are, anything else as text."""
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
