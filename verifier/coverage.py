"""How much of the candidate's work Triton does: the report's `coverage` and `library_calls`.

Runs inside the candidate's sandbox on one extra call, after the compared ones (so autotuning is over). Every
ATen op the call dispatches outside a Triton launch is library work (`library_calls`), except allocation and
re-viewing, which compute nothing. On a GPU, `coverage` is the share of the call's kernel time spent in the
Triton kernels it launched (torch.profiler, as KernelGYM measures it); on the CPU, where the interpreter has
no kernel time, it is the share of ops: Triton launches over launches plus library ops. The figures come from
the candidate's process and are informational: they never change a verdict or a reward.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from verifier.launch_hook import LaunchCounter
from verifier.messages import Coverage

NOT_WORK = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "fill_", "zero_", "arange",
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t", "transpose", "permute", "expand",
    "expand_as", "unsqueeze", "squeeze", "slice", "select", "narrow", "detach", "alias", "set_", "lift_fresh",
    "unbind", "split", "split_with_sizes", "chunk", "flatten", "unflatten", "view_as", "movedim", "is_same_size",
    "_local_scalar_dense", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
}  # fmt: skip
MOST_NAMES = 10


class LibraryOps(TorchDispatchMode):
    """Counts the ATen ops dispatched outside Triton launches that do work."""

    def __init__(self, launches: LaunchCounter):
        super().__init__()
        self.launches = launches
        self.seen: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.launches.inside:
            name = func.name()
            if name.removeprefix("aten::").split(".")[0] not in NOT_WORK:
                self.seen[name.split(".")[0]] += 1
        return func(*args, **(kwargs or {}))


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
