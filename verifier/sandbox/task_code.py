"""Loading and running task and candidate code inside a sandboxed child, shared by the reference's side and the
candidate's: modules from files, seeds, each call's inputs drawn on the device from its seed (so a 6 GiB input
never crosses a process boundary), models built on their device, outputs flattened to leaves, fp32 kept in full
fp32, and failures attributed to the stage (import, init, forward, ...) they happened in.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import random
import sys
import traceback
from collections.abc import Callable
from types import ModuleType

import torch

from verifier.wire.channel import Channel
from verifier.wire.messages import Call, Job, StageFailure, Violation
from verifier.wire.resize import other_size

GC_COLLECT = gc.collect
TASK_INPUTS_MODULE = "tritonize_task_inputs"
GC_AFTER_BYTES = 64 * 2**20


class StageError(Exception):
    """A failure attributed to one stage of a job (import, init, forward, ...)."""

    def __init__(self, stage: str, exc: BaseException, source_file: str):
        super().__init__(f"{stage}: {exc}")
        self.stage = stage
        self.exc = exc
        self.source_file = source_file
        self.violations: list[Violation] = []  # what the candidate's watch had seen when it failed

    def as_result(self) -> StageFailure:
        line = line_in(self.exc, self.source_file)
        return {
            "ok": False,
            "stage": self.stage,
            "error_type": type(self.exc).__name__,
            "error": short(str(self.exc) or type(self.exc).__name__),
            "line": line,
            "triton_compile_error": is_triton_compile_error(self.exc),
            "traceback": short("".join(traceback.format_exception(self.exc)), 4000),
            "violations": self.violations,
        }


def autotune_without_timing() -> None:
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


def trial_inputs(module: ModuleType, seed: int, device: torch.device, scale: float = 1.0) -> list:
    """One call's inputs from its seed, made on `device` directly (tensor factories default to it), so the
    reference and the candidate draw identical data without moving a byte between processes. `scale`
    multiplies the floating-point tensors (a trial whose values reach branches the task's own inputs rarely do)."""
    seed_everything(seed)
    with device:
        inputs = list(module.get_inputs())
    moved = [to_device(x, device) for x in inputs]
    if scale == 1.0:
        return moved
    # out of place: `get_inputs` may hand out the same tensor every call (a module-level constant)
    return [x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in moved]


def load_task(source_file: str, name: str, seed: int) -> ModuleType:
    """The task's module, imported right after seeding: a tensor drawn at import (`X = torch.randn(...)` at the top
    of the file) is the same in the reference's sandbox and the candidate's."""
    seed_everything(seed)
    return load_module(source_file, name)


def optional_call(call: Call) -> bool:
    """A call at scaled inputs or other sizes: one the task itself may be unable to run, skipped where it cannot."""
    return call.get("scale", 1.0) != 1.0 or "resize" in call


def call_inputs(module: ModuleType, call: Call, device: torch.device) -> list:
    """The inputs of one of a job's calls: its seed's, scaled or resized as the call says."""
    inputs = trial_inputs(module, call["seed"], device, call.get("scale", 1.0))
    resize = call.get("resize")
    if resize is None:
        return inputs
    extra = [trial_inputs(module, call["seed"] + k, device) for k in (1, 2)] if resize["step"] == "larger" else []
    return [
        _resized(value, [value, *(draw[p] for draw in extra)], _dynamic_dims(value, p, resize), resize["step"])
        for p, value in enumerate(inputs)
    ]


def _dynamic_dims(value: object, position: int, resize: dict) -> list[int]:
    """The dimensions of input `position` that a resized call changes: those the spec names that it has, of size
    2 or more (a compiler fixes sizes 0 and 1)."""
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return []
    dims = set(range(value.dim() - 1)) if resize["auto"] else set()
    for named, dim in resize["dims"]:
        if named in (None, position) and -value.dim() <= dim < value.dim():
            dims.add(dim % value.dim())
    return sorted(d for d in dims if value.shape[d] >= 2)


def _resized(value: object, draws: list, dims: list[int], step: str) -> object:
    """`value` at the other sizes of `step` along `dims`, with fresh values where it grows (from the extra `draws`
    of the same input: repeating its own values would hide a kernel that still indexes by the example's size), and
    its dimensions in the same memory order (a transposed input stays transposed)."""
    if not dims:
        return value
    for draw in draws:
        if not isinstance(draw, torch.Tensor) or draw.shape != value.shape:
            shape = tuple(draw.shape) if isinstance(draw, torch.Tensor) else type(draw).__name__
            raise ValueError(
                f"get_inputs() drew an input of shape {tuple(value.shape)}, then {shape} from another seed: to verify "
                "other sizes, its sizes must not depend on the seed"
            )
    order = sorted(range(value.dim()), key=lambda d: -value.stride(d))
    sources = [d.permute(order) for d in draws]
    for dim in dims:
        at = order.index(dim)
        size = sources[0].shape[at]
        wanted = other_size(size, step)
        if wanted <= size:
            sources = [s.narrow(at, 0, wanted) for s in sources]
        else:
            rolled = sources[1:] + sources[:1]
            sources = [torch.cat([s, r], at).narrow(at, 0, wanted) for s, r in zip(sources, rolled)]
    inverse = [order.index(d) for d in range(value.dim())]
    dense = torch.empty(sources[0].shape, dtype=value.dtype, device=value.device)  # size-1 dims strided as new
    return dense.copy_(sources[0]).permute(inverse)


def build(cls: type, init: list, job: Job, device: torch.device) -> torch.nn.Module:
    """The model made on its device: a published GEMM's 4 GiB weight takes seconds to initialise on a CPU."""
    seed_everything(job["init_seed"])
    with torch.device(device):
        return cls(*init).to(device)


def open_channel(job: Job, device: torch.device) -> Channel:
    channel = Channel(job["channel_fd"])
    if device.type == "cuda":
        channel.pin()
    return channel


def collect_garbage(leaves: list) -> None:
    """After a call with large outputs, collect reference cycles now: a cycle (Triton's interpreter makes one
    per launch; candidate code may too) would otherwise keep that call's GB-sized tensors alive for several
    more calls. Small calls skip it (a collection costs tens of milliseconds)."""
    if sum(nbytes(x) for x in leaves) >= GC_AFTER_BYTES:
        GC_COLLECT()


def nbytes(value: object) -> int:
    return value.numel() * value.element_size() if isinstance(value, torch.Tensor) else 0


def stage(stage: str, source: str, fn: Callable):
    try:
        return fn()
    except Exception as exc:
        raise StageError(stage, exc, source) from exc


def to_device(value: object, device: torch.device) -> object:
    return value.to(device) if isinstance(value, torch.Tensor) else value


def describe(value: object) -> dict:
    if type(value) is torch.Tensor:
        return {"type": "Tensor", "dtype": str(value.dtype), "shape": list(value.shape), "device": value.device.type}
    return {"type": type(value).__qualname__}


def current_stream(device: torch.device) -> int | None:
    return torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else None


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def line_in(exc: BaseException, source_file: str) -> int | None:
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


def is_triton_compile_error(exc: BaseException) -> bool:
    """Triton rejected the kernel's code: a compiler error, or its interpreter's equivalent on CPU."""
    for cls in type(exc).__mro__:
        if cls.__module__.startswith("triton.compiler") or cls.__name__ in {"CompilationError", "InterpreterError"}:
            return True
    return False


def short(text: str, limit: int = 1000) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " ... [truncated]"
