"""The candidate's side of a slot (hostile code): run each call, stream its outputs to the comparer, and record
what only this process can see, as the runtime rules of `rules.py`: how many Triton kernels launched and on which
streams, what PyTorch computed meanwhile (`torch_work.py`), threads started, inputs changed, outputs that are
not plain tensors or that alias an earlier call's output, timers or hooks that were replaced, writes outside the
buffers (guard zones, `guards.py`), and what the audit hook refused (`audit_hook.py`). The records are taken by
code the candidate has no allowed name to reach (`audit/anti_hacking.py` holds it to an allowlist) and the hook
refuses the routes around the names.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from types import ModuleType
from typing import NoReturn

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from verifier.rules import RULES
from verifier.sandbox import audit_hook, coverage, launch_hook, memcheck, timing
from verifier.sandbox.guards import Guards
from verifier.sandbox.task_code import (
    TASK_INPUTS_MODULE,
    StageError,
    build,
    call_inputs,
    collect_garbage,
    current_stream,
    describe,
    flatten,
    init_inputs,
    load_module,
    load_task,
    open_channel,
    optional_call,
    short,
    stage,
    synchronize,
    trial_inputs,
)
from verifier.sandbox.torch_work import TorchWork
from verifier.wire.channel import Channel
from verifier.wire.messages import (
    SANITIZED_JOB_FILE,
    SANITIZER_LOG_FILE,
    CandidateResult,
    Coverage,
    Job,
    OutputsHeader,
    TimedCandidate,
    Violation,
)

_CLONE = torch.Tensor.clone
_EQUAL = torch.equal
_SEND_TENSOR = Channel.send_tensor
_SEND_JSON = Channel.send_json
READY_TIMEOUT = 600.0
MOST_OPS = 20  # PyTorch operations named per call


class Watch:
    """Runtime anti-hacking state installed before the candidate is imported: the launch counter, the record of
    PyTorch's work, the audit hook, and the originals of what a candidate might replace."""

    def __init__(self, device: torch.device):
        self.interpreter = device.type == "cpu"
        self.violations: list[Violation] = []
        self.hook = audit_hook.install(lambda what: self.flag("TRI361", f"the sandbox refused {what}"))
        self.launches = launch_hook.install(self.interpreter)
        self.work = TorchWork()
        self.torch_ops: list[dict] = []
        self.threads_before = {t.ident for t in threading.enumerate()}
        self.threads_started: list[str] = []
        _count_thread_starts(self.threads_started)
        self.originals = timing.tamper_targets()
        self.originals += [(torch.Tensor, "clone", _CLONE), (torch, "equal", _EQUAL)]
        self.originals += [(Channel, "send_tensor", _SEND_TENSOR), (Channel, "send_json", _SEND_JSON)]

    def flag(self, rule: str, message: str) -> None:
        """Record a runtime finding (once per rule), with the severity the catalog gives it."""
        if not any(v["rule"] == rule for v in self.violations):
            self.violations.append(RULES[rule].seen_at_run_time(message))

    def note_work(self, label: str) -> None:
        """Keep what PyTorch computed for the candidate during the call just made (nothing if it computed nothing)."""
        if self.work.ops:
            self.torch_ops.append({"call": label, "ops": dict(self.work.ops.most_common(MOST_OPS))})
        self.work.reset()

    def check_environment(self) -> None:
        new_threads = [t.name for t in threading.enumerate() if t.ident not in self.threads_before]
        new_threads += self.threads_started
        if new_threads:
            self.flag("TRI353", f"the candidate started threads: {', '.join(new_threads[:5])}")
        replaced = [f"{getattr(o, '__name__', o)}.{n}" for o, n, orig in self.originals if getattr(o, n) is not orig]
        if replaced or not launch_hook.still_installed(self.launches, self.interpreter):
            what = ", ".join(replaced) or "the Triton launch hook"
            self.flag("TRI356", f"the candidate replaced {what}")


def warm_up() -> None:
    """Use the record of PyTorch's work once, on the CPU: its first use imports what every later use needs. Nothing
    here starts a thread or touches a GPU, so the zygote that calls it stays safe to fork."""
    with TorchWork():
        torch.ones(2) + 1


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
    """Run every call of the job (the trials under no_grad, one under enable_grad), recording what the
    watch sees and streaming each call's outputs to the comparer."""
    started = time.perf_counter()
    device = torch.device(job["device"])
    channel = open_channel(job, device)
    task, init = _task_inputs(job)
    watch = Watch(device)  # before the candidate's import: its launches and threads are seen from the start
    try:
        return _run_calls(job, watch, channel, task, init, started)
    except StageError as exc:
        exc.violations = watch.violations
        raise


def _run_calls(
    job: Job, watch: Watch, channel: Channel, task: ModuleType, init: list, started: float
) -> CandidateResult:
    device = torch.device(job["device"])
    model = _candidate_model(job, init, device)
    watch.check_environment()
    stages = {"load_s": time.perf_counter() - started, "first_call_s": 0.0, "calls_s": 0.0}
    launches, previous = [], []
    for number, call in enumerate(job["calls"]):
        call_started = time.perf_counter()
        grad_mode = torch.enable_grad if call["grad"] else torch.no_grad
        guards = Guards()
        fresh = stage("get_inputs", job["inputs_source"], lambda c=call: call_inputs(task, c, device))
        on_device = [guards.input(x, position) for position, x in enumerate(fresh)]
        del fresh
        before = [_CLONE(x) if isinstance(x, torch.Tensor) else x for x in on_device]
        stream = current_stream(device)
        watch.launches.reset()
        try:
            with grad_mode(), guards.allocations(), watch.work:
                output = stage("forward", job["source"], lambda args=on_device: model(*args))
                stage("forward", job["source"], lambda: synchronize(device))
        except StageError as exc:
            if not optional_call(call):
                raise
            # the task may be unable to run this call too (an input smaller than its convolution's kernel), and
            # only the reference knows: it is told, and judges; what forward did before it raised is still checked
            _check_damage(watch, guards)
            _check_inputs(watch, before, on_device)
            watch.check_environment()
            channel.send_json({"structure": None, "leaves": [], "failed": _failure_text(exc)})
            del on_device, before
            continue
        watch.note_work(call["label"])
        _check_damage(watch, guards)
        launches.append(watch.launches.count)
        _check_launch(watch, grad_mode, stream)
        _check_inputs(watch, before, on_device)
        del before
        structure, leaves = flatten(output)
        _check_leaves(watch, leaves, previous, on_device)
        previous = _held(leaves)
        _send_outputs(channel, structure, leaves)
        del output, on_device
        collect_garbage(leaves)
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
        "torch_ops": watch.torch_ops,
        "coverage": measured,
        "stages": stages,
    }


def _task_inputs(job: Job) -> tuple[ModuleType, list]:
    """The candidate side's copy of the task (without its `Model`) and the constructor arguments drawn from it."""
    task = stage(
        "get_inputs",
        job["inputs_source"],
        lambda: load_task(job["inputs_source"], TASK_INPUTS_MODULE, job["init_seed"]),
    )
    init = stage("get_init_inputs", job["inputs_source"], lambda: init_inputs(task, job))
    return task, init


def _candidate_model(job: Job, init: list, device: torch.device) -> torch.nn.Module:
    """The candidate's `ModelNew`, imported and built on `device`."""
    module = stage("import", job["source"], lambda: load_module(job["source"], job["module_name"]))
    if not hasattr(module, "ModelNew"):
        raise StageError("import", AttributeError("the candidate defines no `ModelNew` class"), job["source"])
    return stage("init", job["source"], lambda: build(module.ModelNew, init, job, device))


def _coverage(model: torch.nn.Module, task: ModuleType, job: Job, device: torch.device, watch: Watch) -> Coverage:
    """Coverage of one more call on the first call's inputs (not compared: its outputs are dropped)."""
    inputs = trial_inputs(task, job["calls"][0]["seed"], device)

    try:
        with torch.no_grad():
            return coverage.measure(lambda: model(*inputs), watch.launches, device)
    except Exception as exc:  # the figure is informational; a call that fails here was already judged
        return {"share": None, "library_calls": [], "error": short(f"{type(exc).__name__}: {exc}", 300)}


def time_candidate(job: Job) -> TimedCandidate:
    """Median time of the candidate on the first call's inputs; its last output goes to the comparer."""
    device = torch.device(job["device"])
    channel = open_channel(job, device)
    task = load_task(job["inputs_source"], TASK_INPUTS_MODULE, job["init_seed"])
    init = init_inputs(task, job)
    watch = Watch(device)
    module = load_module(job["source"], job["module_name"])
    model = build(module.ModelNew, init, job, device)
    inputs = trial_inputs(task, job["calls"][0]["seed"], device)
    holder = {}

    def call() -> None:
        holder["out"] = model(*inputs)

    channel.wait_ready(time.monotonic() + READY_TIMEOUT)  # the comparer's reference run is over: the GPU is ours
    with torch.no_grad():
        watch.launches.reset()
        measured = timing.time_cuda(call, job["timing_trials"])
        launched = watch.launches.count
        with watch.work:  # the compared call (not timed) is watched like every compared call
            call()
            synchronize(device)
    watch.note_work("timed call")
    watch.check_environment()
    calls = measured["trials"] + measured["warmup"] + 4
    if launched < calls:
        watch.flag("TRI351", f"only {launched} Triton launches in {calls} timed calls: work skipped while timed")
    structure, leaves = flatten(holder["out"])
    _send_outputs(channel, structure, leaves)
    return {"ok": True, "candidate": measured, "violations": watch.violations, "torch_ops": watch.torch_ops}


def sanitize(job: Job) -> NoReturn:
    """Replace this process with compute-sanitizer running `sanitized_candidate` on the same job in a fresh
    interpreter (memcheck must see CUDA start up). The sandbox stays: namespaces, the read-only filesystem,
    the limits and the process tree are all kept across `exec`."""
    inner = {**job, "kind": "sanitized_candidate"}
    with open(SANITIZED_JOB_FILE, "w") as f:
        json.dump(inner, f)
    os.set_inheritable(job["result_fd"], True)
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []  # the job directory is not put on the import path
    target = [
        sys.executable,
        *safe_path,
        "-m",
        "verifier.sandbox.zygote",
        "--run-job",
        os.path.abspath(SANITIZED_JOB_FILE),
    ]
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
    inputs = stage("get_inputs", job["inputs_source"], lambda: trial_inputs(task, job["calls"][0]["seed"], device))
    with torch.no_grad():
        stage("forward", job["source"], lambda: model(*inputs))
        stage("forward", job["source"], lambda: synchronize(device))
    return {"ok": True}


def _check_damage(watch: Watch, guards: Guards) -> None:
    for damage in guards.damage():
        watch.flag("TRI358", f"forward accessed memory outside its buffers: {damage}")


def _failure_text(exc: StageError) -> str:
    """The error's type and message (its traceback would need frames, which the sandbox refuses by now)."""
    return f"{type(exc.exc).__name__}: {str(exc.exc)[:300]}"


def _send_outputs(channel: Channel, structure: object, leaves: list) -> None:
    header: OutputsHeader = {"structure": structure, "leaves": []}
    for leaf in leaves:
        if type(leaf) is torch.Tensor:
            header["leaves"].append(describe(leaf))
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


def _plain(value: object) -> object:
    """A non-tensor output as JSON can carry it: numbers, booleans and None as they are, anything else as text."""
    return value if isinstance(value, int | float | bool | type(None)) else repr(value)[:200]


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(_EQUAL(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)))
    return bool(_EQUAL(a, b))
