"""Guard zones around the buffers a candidate reads and writes, so an out-of-bounds access is seen (TRI358).

Runs inside the sandboxed child, in the interpreter and on the GPU alike. Each input is copied into the middle
of a larger buffer whose guard bytes hold 0xFF (a NaN in every float type: a lane that reads past the end
poisons the result); every buffer the candidate allocates while `forward` runs (`torch.empty`, `empty_like`,
`zeros`, `full`, `new_empty`, ...) gets guards of 0xA5. After the call, a guard byte that changed names the
buffer and how far outside it the write went. Nothing here is visible to the candidate but data pointers
that are 512 bytes into their allocation (alignment is kept).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

GUARD_BYTES = 512
INPUT_CANARY = 0xFF
ALLOCATION_CANARY = 0xA5
ALLOCATORS = ("empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like")
TENSOR_ALLOCATORS = ("new_empty", "new_zeros", "new_ones", "new_full")
UNINITIALISED = {"empty", "empty_like", "empty_strided", "new_empty"}
_EMPTY = torch.empty
_EMPTY_STRIDED = torch.empty_strided


@dataclass
class _Guarded:
    name: str
    bytes: torch.Tensor  # the whole allocation, as uint8
    start: int  # first byte of the tensor's storage
    end: int  # one past its last byte
    canary: int

    def damage(self) -> str | None:
        """Where the guards were overwritten, or None."""
        before = self.bytes[: self.start] != self.canary
        after = self.bytes[self.end :] != self.canary
        problems = []
        if bool(before.any()):
            first = int(before.nonzero()[0])
            problems.append(f"{self.start - first} bytes before its first element")
        if bool(after.any()):
            last = int(after.nonzero()[-1])
            problems.append(f"{last + 1} bytes after its last element")
        return f"{self.name} was written " + " and ".join(problems) if problems else None


class Guards:
    """The guarded buffers of one call."""

    def __init__(self) -> None:
        self.buffers: list[_Guarded] = []

    def input(self, value: object, position: int) -> object:
        """A guarded copy of a tensor argument (other values pass through)."""
        if type(value) is not torch.Tensor:
            return value
        guarded = self._allocate(value, value.device, f"input #{position} ({_describe(value)})", INPUT_CANARY)
        _span(guarded).copy_(_span(value))  # memory as laid out: an expanded input's elements share locations
        return guarded

    @contextlib.contextmanager
    def allocations(self) -> Iterator[None]:
        """While inside, the tensors the candidate allocates get guard zones."""
        originals = {name: getattr(torch, name) for name in ALLOCATORS}
        methods = {name: getattr(torch.Tensor, name) for name in TENSOR_ALLOCATORS}
        for name, original in originals.items():
            setattr(torch, name, self._guarding(original, f"torch.{name}", name in UNINITIALISED))
        for name, original in methods.items():
            setattr(torch.Tensor, name, self._guarding(original, f"Tensor.{name}", name in UNINITIALISED))
        try:
            yield
        finally:
            for name, original in originals.items():
                setattr(torch, name, original)
            for name, original in methods.items():
                setattr(torch.Tensor, name, original)

    def damage(self) -> list[str]:
        """Every buffer whose guards changed, in allocation order."""
        return [problem for buffer in self.buffers if (problem := buffer.damage()) is not None]

    def _guarding(self, allocate: Callable, how: str, uninitialised: bool) -> Callable:
        def guarded(*args, **kwargs):
            plain = allocate(*args, **kwargs)
            if type(plain) is not torch.Tensor or plain.is_sparse or "out" in kwargs:
                return plain
            number = sum(1 for b in self.buffers if b.canary == ALLOCATION_CANARY) + 1
            name = f"buffer #{number} ({_describe(plain)}, from {how})"
            wants_grad, device = plain.requires_grad, plain.device
            if uninitialised:  # nothing to copy: a GB-sized buffer is given back before its guarded twin is taken
                layout = _EMPTY_STRIDED(plain.shape, plain.stride(), dtype=plain.dtype, device="meta")
                del plain
                tensor = self._allocate(layout, device, name, ALLOCATION_CANARY)
            else:
                tensor = self._allocate(plain, device, name, ALLOCATION_CANARY)
                tensor.copy_(plain)
            return tensor.requires_grad_(True) if wants_grad else tensor

        return guarded

    def _allocate(self, like: torch.Tensor, device: torch.device, name: str, canary: int) -> torch.Tensor:
        """A tensor on `device` with `like`'s size, strides and dtype, in the middle of a guarded allocation."""
        elements = _storage_elements(like)
        size = like.element_size()
        guard = GUARD_BYTES // size
        whole = _EMPTY(elements + 2 * guard, dtype=like.dtype, device=device)
        raw = whole.view(torch.uint8)
        raw[: guard * size] = canary
        raw[(guard + elements) * size :] = canary
        self.buffers.append(_Guarded(name, raw, guard * size, (guard + elements) * size, canary))
        return whole.as_strided(like.shape, like.stride(), guard)


def _span(tensor: torch.Tensor) -> torch.Tensor:
    """The memory a tensor's elements lie in, from its first element to its last, as one flat view."""
    return tensor.as_strided((_storage_elements(tensor),), (1,), tensor.storage_offset())


def _storage_elements(tensor: torch.Tensor) -> int:
    """Elements a tensor of this size and stride spans (0 when empty)."""
    if tensor.numel() == 0:
        return 0
    return 1 + sum((extent - 1) * abs(step) for extent, step in zip(tensor.shape, tensor.stride()))


def _describe(tensor: torch.Tensor) -> str:
    return f"{str(tensor.dtype).removeprefix('torch.')}{list(tensor.shape)}"
