"""Pooling that Inductor hands to ATen, rewritten into ops it compiles to Triton.

Inductor lowers pools itself except an overlapping average pool of more than 25 elements, a 3-D adaptive average
pool (other than a global one) and a 2-D adaptive one with uneven windows of more than 25: those go to ATen, so
the candidate could only be a hybrid. The templates capture (`capture.py`) hands Inductor these decompositions:

- a large overlapping average pool: the sum of the window's strided slices of the padded input, in the window's
  row-major order as ATen's kernels add them, over a divisor computed per output from the window's clipped
  extent; Inductor fuses it into one pointwise kernel;
- an adaptive average pool whose input divides into equal blocks: the fixed-window pool of one block;
- any other adaptive average pool: each output's window gathered tap by tap up to the widest window, the taps
  past its end masked to zero, summed and divided by its size.

Anything else (integer inputs, windows past `MAX_UNROLLED` or `MAX_GATHERED` taps) is left as Inductor would
handle it.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import torch

aten = torch.ops.aten

INDUCTOR_WINDOW = 25  # Inductor lowers windows up to this many elements itself
# One kernel loads every tap of a window, so past these many taps compiling it takes too long: an uneven adaptive
# pool's taps are gathered (index arithmetic per tap), and one of 4 x 4 x 4 taps passed the templates compile's
# 45 s on an H200, where 3 x 3 x 3 compiled in time (2026-11-27). A fixed window's taps are strided slices, which
# cost less: 27 compiled in time there; the limit of 64 for them is not measured.
MAX_UNROLLED = 64
MAX_GATHERED = 27


def decompositions() -> dict:
    """Pooling entries for the templates capture's table (Inductor's own has none for these ops)."""
    return {
        aten.avg_pool2d.default: functools.partial(avg_pool, 2),
        aten.avg_pool3d.default: functools.partial(avg_pool, 3),
        aten._adaptive_avg_pool2d.default: adaptive_avg_pool,
        aten._adaptive_avg_pool3d.default: adaptive_avg_pool,
    }


def avg_pool(
    dims: int,
    x: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
):
    """`aten.avg_pool2d`/`avg_pool3d` (`dims` 2 or 3) as the sum of the window's slices over its divisor, where
    Inductor would call ATen (an overlapping window of more than 25 elements); NotImplemented elsewhere."""
    window = _Window(dims, x, kernel_size, stride, padding, ceil_mode)
    overlapping = window.kernel != window.stride
    if not (overlapping and INDUCTOR_WINDOW < window.elements <= MAX_UNROLLED) or not x.dtype.is_floating_point:
        return NotImplemented
    padded = window.padded(_accumulating(x))
    total = None
    for taps in itertools.product(*(range(k) for k in window.kernel)):
        part = window.slice(padded, taps)
        total = part if total is None else total + part
    if divisor_override:
        return (total / divisor_override).to(x.dtype)
    return (total / window.divisors(x.device, count_include_pad).to(total.dtype)).to(x.dtype)


def adaptive_avg_pool(x: torch.Tensor, output_size: Sequence[int]):
    """`aten._adaptive_avg_pool2d`/`3d` where Inductor would call ATen: a fixed-window average pool where the
    input divides into equal blocks, else the masked sum of each output's window, gathered tap by tap."""
    dims = len(output_size)
    sizes = list(x.shape[-dims:])
    if any(out <= 0 for out in output_size) or not x.dtype.is_floating_point:
        return NotImplemented
    if all(size % out == 0 for size, out in zip(sizes, output_size)):
        if dims == 2:  # Inductor makes it an average pool itself
            return NotImplemented
        kernel = [size // out for size, out in zip(sizes, output_size)]
        return aten.avg_pool3d.default(x, kernel, kernel)
    widest = [-(-(size + out - 1) // out) for size, out in zip(sizes, output_size)]
    if (dims == 2 and math.prod(widest) <= INDUCTOR_WINDOW) or math.prod(widest) > MAX_GATHERED:
        return NotImplemented
    source = _accumulating(x)
    starts, ends = [], []
    for a in range(dims):
        out = torch.arange(output_size[a], device=x.device)
        starts.append(_along(out * sizes[a] // output_size[a], a, dims))
        ends.append(_along(((out + 1) * sizes[a] + output_size[a] - 1) // output_size[a], a, dims))
    total = None
    for taps in itertools.product(*(range(w) for w in widest)):
        positions = [starts[a] + taps[a] for a in range(dims)]
        inside = functools.reduce(torch.logical_and, [positions[a] < ends[a] for a in range(dims)])
        clamped = [torch.clamp(positions[a], max=sizes[a] - 1) for a in range(dims)]
        part = torch.where(inside, aten.index.Tensor(source, [None] * (x.dim() - dims) + clamped), 0.0)
        total = part if total is None else total + part
    count = functools.reduce(torch.mul, [ends[a] - starts[a] for a in range(dims)])
    return (total / count.to(total.dtype)).to(x.dtype)


class _Window:
    """An average pool's geometry over the last `dims` axes: kernel, stride, padding, input and output sizes."""

    def __init__(self, dims: int, x: torch.Tensor, kernel_size, stride, padding, ceil_mode: bool):
        self.kernel = _spread(kernel_size, dims)
        self.stride = _spread(stride, dims) if stride else self.kernel
        self.padding = _spread(padding, dims)
        self.sizes = list(x.shape[-dims:])
        self.dims = dims
        self.elements = math.prod(self.kernel)
        self.outputs = [
            _pooled_size(self.sizes[a], self.kernel[a], self.stride[a], self.padding[a], ceil_mode) for a in range(dims)
        ]

    def padded(self, x: torch.Tensor) -> torch.Tensor:
        """`x` padded with zeros so that every window's every tap lies inside it."""
        pads: list[int] = []
        for a in reversed(range(self.dims)):
            reach = (self.outputs[a] - 1) * self.stride[a] + self.kernel[a]
            pads += [self.padding[a], max(0, reach - self.padding[a] - self.sizes[a])]
        return aten.constant_pad_nd.default(x, pads, 0.0)

    def slice(self, padded: torch.Tensor, taps: Sequence[int]) -> torch.Tensor:
        """Tap `taps` of every window: one strided slice of the padded input."""
        index = [slice(None)] * (padded.dim() - self.dims)
        for a, tap in enumerate(taps):
            index.append(slice(tap, tap + (self.outputs[a] - 1) * self.stride[a] + 1, self.stride[a]))
        return padded[tuple(index)]

    def divisors(self, device, count_include_pad: bool) -> torch.Tensor:
        """Each window's element count as ATen's average pool divides by it: the window clipped to the padded
        input, or to the input itself where padding is not counted."""
        total = torch.ones((), dtype=torch.int64, device=device)
        for a in range(self.dims):
            start = torch.arange(self.outputs[a], device=device) * self.stride[a] - self.padding[a]
            end = torch.clamp(start + self.kernel[a], max=self.sizes[a] + self.padding[a])
            if not count_include_pad:
                start, end = torch.clamp(start, min=0), torch.clamp(end, max=self.sizes[a])
            total = total * _along(end - start, a, self.dims)
        return total


def _pooled_size(size: int, kernel: int, stride: int, padding: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output length: with `ceil_mode`, a last window is kept only if it starts inside the input
    or its left padding."""
    out = (size + 2 * padding - kernel + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _accumulating(x: torch.Tensor) -> torch.Tensor:
    """`x` in the precision ATen's pools add in: fp32 for half types."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _along(values: torch.Tensor, axis: int, dims: int) -> torch.Tensor:
    """A 1-D tensor shaped to broadcast along spatial `axis` of `dims`."""
    return values.reshape(-1, *([1] * (dims - 1 - axis)))


def _spread(values: int | Sequence[int], dims: int) -> list[int]:
    values = [values] if isinstance(values, int) else list(values)
    return values * dims if len(values) == 1 else values
