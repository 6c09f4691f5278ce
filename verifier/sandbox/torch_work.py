"""What PyTorch computed while the candidate's `forward` ran: the runtime truth behind the strict policy.

A dispatch mode sees every ATen operation that runs during a compared call, on the device where it runs, however
the candidate reached it (a torch function, a tensor method, an operator, `operator.matmul`, a submodule, a
callable kept in a dict). Operations that only allocate, re-view, lay out or read tensors are not work
(`NOT_WORK`). Every other operation is the candidate's work unless it was issued by Triton's own machinery (its
autotuner's benchmark, the interpreter copying arguments) or by this harness (guard zones): the nearest calling
frame outside torch's package decides, so a callback of the candidate's that Triton calls (a grid lambda, an
autotune pre-hook) still counts as the candidate's. Printing a tensor computes only to show it and is left out.
A branch that never runs records nothing: a CPU fallback on a GPU costs a candidate nothing, on the CPU it is
what ran.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

import torch
import triton
from torch.utils._python_dispatch import TorchDispatchMode

NOT_WORK = frozenset(
    {
        # allocation and filling with a constant
        "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided", "zeros",
        "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
        "scalar_tensor", "arange", "lift_fresh", "lift_fresh_copy", "zero_", "fill_", "resize_",
        # layout: copies, casts, moves
        "copy_", "clone", "_to_copy", "contiguous",
        # views
        "view", "_unsafe_view", "_reshape_alias", "reshape", "as_strided", "expand", "expand_as", "permute", "t",
        "transpose", "unsqueeze", "squeeze", "select", "slice", "narrow", "split", "split_with_sizes", "unbind",
        "chunk", "diagonal", "unfold", "view_as", "view_as_real", "view_as_complex", "alias", "detach",
        "movedim", "flatten", "unflatten", "lift",
        # reading values and metadata
        "_local_scalar_dense", "is_nonzero", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
        "is_same_size", "_has_compatible_shallow_copy_type", "is_pinned", "record_stream", "set_",
    }
)  # fmt: skip


def package_folders(module_file: str) -> tuple[str, ...]:
    """A package's folder as its code objects name it, and its real path (they differ under a symlink)."""
    folder = os.path.dirname(module_file)
    return tuple(dict.fromkeys(f + os.sep for f in (folder, os.path.realpath(folder))))


TORCH_DIRS = package_folders(torch.__file__)
TRITON_DIRS = package_folders(triton.__file__)
MACHINERY_DIRS = TRITON_DIRS + package_folders(__file__)
PRINTING = tuple(folder + "_tensor_str.py" for folder in TORCH_DIRS)


class TorchWork(TorchDispatchMode):
    """Counts the ATen operations that did the candidate's work since the last `reset()`."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def reset(self) -> None:
        self.ops.clear()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name not in NOT_WORK and not _from_machinery(sys._getframe(1)):
            self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def _from_machinery(frame) -> bool:
    """Whether the nearest caller outside torch's own package is Triton or this harness (not the candidate)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(TORCH_DIRS) or not filename.startswith(os.sep):
            if filename in PRINTING:
                return True
            frame = frame.f_back  # torch's own Python layers, and code made by exec (Triton's argument binder)
            continue
        return filename.startswith(MACHINERY_DIRS)
    return True
