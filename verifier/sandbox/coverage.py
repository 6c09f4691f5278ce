"""How much of the candidate's work Triton does: the report's `coverage` and `library_calls`.

Runs inside the candidate's sandbox on one extra call, after the compared ones (so autotuning is over). Every
PyTorch function or tensor method the call uses outside a Triton launch is library work (`library_calls`),
except allocation, re-viewing and reading metadata, which compute nothing. A function mode sees them: it costs
nothing to set up, unlike a dispatch mode, whose first use imports half of torch. On a GPU, `coverage` is the
share of the call's kernel time spent in the Triton kernels it launched (torch.profiler, as KernelGYM measures
it); on the CPU, where the interpreter has no kernel time, it is the share of calls: Triton launches over
launches plus library calls. The figures come from the candidate's process and are informational: they never
change a verdict or a reward.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import torch
from torch.overrides import TorchFunctionMode

from verifier.sandbox.launch_hook import LaunchCounter
from verifier.wire.messages import Coverage

NOT_WORK = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "arange", "tensor", "as_tensor",
    "view", "view_as", "reshape", "reshape_as", "as_strided", "t", "transpose", "permute", "expand", "expand_as",
    "unsqueeze", "squeeze", "flatten", "unflatten", "movedim", "narrow", "select", "unbind", "split", "chunk",
    "detach", "contiguous", "size", "stride", "numel", "dim", "ndimension", "data_ptr", "element_size",
    "storage_offset", "is_contiguous", "is_floating_point", "is_complex", "get_device", "__getitem__", "__len__",
    "__iter__", "__repr__", "__format__", "__bool__", "__index__", "__int__", "__float__", "__hash__", "__eq__",
    "__ne__", "__get__", "__set__", "__init__", "__new__", "requires_grad_", "is_grad_enabled", "broadcast_shapes",
    "_set_grad_enabled", "set_grad_enabled", "is_inference_mode_enabled",
}  # fmt: skip
MOST_NAMES = 10


class LibraryOps(TorchFunctionMode):
    """Counts the PyTorch functions and tensor methods called outside Triton launches that do work."""

    def __init__(self, launches: LaunchCounter):
        super().__init__()
        self.launches = launches
        self.seen: Counter[str] = Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if not self.launches.inside:
            name = _name(func)
            if name.rsplit(".", 1)[-1] not in NOT_WORK:
                self.seen[name] += 1
        return func(*args, **(kwargs or {}))


def _name(func: object) -> str:
    """`torch.relu`, `Tensor.add`, `torch.nn.functional.linear`: how a user would write the call."""
    qualified = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__
    if qualified.startswith("TensorBase.") or qualified.startswith("Tensor."):
        return "Tensor." + qualified.split(".", 1)[1]
    if qualified.startswith("_VariableFunctionsClass."):
        return "torch." + qualified.split(".", 1)[1]
    module = getattr(func, "__module__", None) or ""
    if module.startswith("torch.nn.functional") or module.startswith("torch._C._nn"):
        return "torch.nn.functional." + qualified
    return f"{module}.{qualified}" if module.startswith("torch") else "torch." + qualified


def measure(call: Callable[[], object], launches: LaunchCounter, device: torch.device) -> Coverage:
    """Run `call` once and say how much of its work ran in Triton kernels."""
    launches.reset()
    ops = LibraryOps(launches)
    if device.type == "cuda":
        share, basis = _kernel_time_share(call, ops, launches), "kernel time"
    else:
        with ops:
            call()
        work = launches.count + sum(ops.seen.values())
        share, basis = (launches.count / work if work else None), "ops"
    library = [name for name, _ in ops.seen.most_common(MOST_NAMES)]
    return {"share": share, "basis": basis, "library_calls": library}


def _kernel_time_share(call: Callable[[], object], ops: LibraryOps, launches: LaunchCounter) -> float | None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as profiler, ops:
        call()
        torch.cuda.synchronize()
    names = set(launches.names)
    triton = total = 0.0
    for event in profiler.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        elapsed = event.time_range.elapsed_us()
        total += elapsed
        if any(event.name == name or event.name.startswith(name + "_") for name in names):
            triton += elapsed
    return triton / total if total > 0 else None
