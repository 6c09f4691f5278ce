"""Convolutions that Inductor's Triton templates do not take, rewritten into ones they do.

Inductor's conv templates cover 2-D and 3-D forward convolutions without dilation; a transposed, dilated or 1-D
convolution goes to cuDNN, so its candidate could only be a hybrid. The templates capture (`capture.py`) hands
Inductor this decomposition of `aten.convolution`, which rewrites such a convolution exactly, in fp32, as one
the templates take:

- transposed, stride 1: a forward convolution of the input padded by `dilation * (kernel - 1) - padding` (plus
  `output_padding` at the end), with the kernel flipped and its in and out channels exchanged within each group;
- transposed, strided: one such forward convolution per output phase (the outputs whose index plus padding is the
  same modulo the stride), each with only the kernel taps that reach that phase, interleaved and cropped;
- dilated, stride 1 along the dilated axes: one undilated convolution per output phase (the outputs whose index is
  the same modulo the dilation), over every dilation-th input element, interleaved;
- dilated and strided along one axis: the kernel with zeros inserted between its taps, so the dilation is 1 (those
  zeros cost multiplications, which the candidate's measured speed shows);
- 1-D: the 2-D convolution of a height-1 image;
- depthwise (one group per input channel, at most `MAX_TAPS` kernel taps): the sum, tap by tap, of the padded
  input's strided slices times each channel's weight: a stencil Inductor fuses into one pointwise kernel, where
  the conv template would reduce over a single channel;
- ungrouped with fewer than `FEW_CHANNELS` input channels (an image's 3 colours, say): the matrix product of
  the input's patches (one row per output position, one column per channel and tap) with the weight, which the
  matmul templates take with K spanning every channel and tap (padded with zeros to a multiple of the tiles'
  BLOCK_K), where the conv template's K block would hold the few channels of one tap at a time.

On the CPU the bias is added after the convolution: Inductor peels it off there only on a GPU, and its conv
template, which has no bias input, would drop it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch

aten = torch.ops.aten

MAX_TAPS = 64
FEW_CHANNELS = 16  # the conv template's smallest K block
K_MULTIPLE = 32  # the BLOCK_K of the tiles the backend sets on a matmul template, which must divide K


def convolution(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
):
    """`aten.convolution` as a forward, undilated convolution of 2 or 3 spatial dims; NotImplemented where it is
    one already (Inductor lowers it as it would have)."""
    dims = weight.dim() - 2
    stride, padding, dilation = _spread(stride, dims), _spread(padding, dims), _spread(dilation, dims)
    output_padding = _spread(output_padding, dims)
    if bias is not None and x.device.type == "cpu":  # Inductor hands a CPU template the bias, which it drops
        unbiased = aten.convolution.default(
            x, weight, None, stride, padding, dilation, transposed, output_padding, groups
        )
        return unbiased + bias.reshape(-1, *([1] * dims))
    if not transposed and groups > 1 and groups == x.shape[1] and math.prod(weight.shape[2:]) <= MAX_TAPS:
        return _depthwise(x, weight, bias, stride, padding, dilation)
    if not transposed and groups == 1 and x.shape[1] < FEW_CHANNELS:
        return _patches_product(x, weight, bias, stride, padding, dilation)
    if not transposed and all(d == 1 for d in dilation) and dims in (2, 3):
        return NotImplemented
    if transposed and any(step > 1 for step in stride):
        return _by_phase(x, weight, bias, stride, padding, dilation, output_padding, groups)
    if transposed:
        x, weight, padding = _as_forward(x, weight, padding, dilation, output_padding, groups)
    if any(d != 1 for d in dilation) and all(st == 1 for st, d in zip(stride, dilation) if d != 1):
        return _dilated_by_phase(x, weight, bias, stride, padding, dilation, groups)
    if any(d != 1 for d in dilation):
        weight = _dilated(weight, dilation)
    if dims == 1:
        flat = aten.convolution.default(
            x.unsqueeze(2), weight.unsqueeze(2), bias, [1, *stride], [0, *padding], [1, 1], False, [0, 0], groups
        )
        return flat.squeeze(2)
    return aten.convolution.default(x, weight, bias, stride, padding, [1] * dims, False, [0] * dims, groups)


def _depthwise(x, weight, bias, stride, padding, dilation):
    """A depthwise convolution (channel multiplier `out / in`) as the sum over its taps of each tap's weight times
    the input slice it reads."""
    channels_out = weight.shape[0]
    multiplier = channels_out // x.shape[1]
    if multiplier > 1:  # output channel o reads input channel o // multiplier
        x = x.unsqueeze(2).expand(x.shape[0], x.shape[1], multiplier, *x.shape[2:]).flatten(1, 2)
    total = None
    for index, tap in _taps(x, weight.shape[2:], stride, padding, dilation):
        term = tap * weight[(slice(None), 0, *index)].reshape(1, channels_out, *([1] * len(index)))
        total = term if total is None else total + term
    if bias is not None:
        total = total + bias.reshape(1, channels_out, *([1] * len(stride)))
    return total


def _patches_product(x, weight, bias, stride, padding, dilation):
    """An ungrouped convolution as the matrix product of the input's patches, one row per output position and one
    column per (channel, tap), with the weight flattened the same way."""
    batch, channels_out = x.shape[0], weight.shape[0]
    kernel = weight.shape[2:]
    dims = len(kernel)
    patches = _padded(x, padding)
    for a in range(dims):  # windows (one view, no copy: a stack of the taps would be one kernel per tap)
        patches = patches.unfold(2 + a, dilation[a] * (kernel[a] - 1) + 1, stride[a])
        patches = patches[(..., slice(None, None, dilation[a]))]
    outputs = patches.shape[2 : 2 + dims]  # batch, channel, *outputs, *kernel
    rows = patches.permute(0, *range(2, 2 + dims), 1, *range(2 + dims, 2 + 2 * dims))
    rows = rows.reshape(batch * math.prod(outputs), -1)
    columns = weight.reshape(channels_out, -1)
    short = -rows.shape[1] % K_MULTIPLE  # zero columns, which add exact zeros to every sum
    if short:
        rows = aten.constant_pad_nd.default(rows, [0, short], 0.0)
        columns = aten.constant_pad_nd.default(columns, [0, short], 0.0)
    product = aten.mm.default(rows, columns.t())
    if bias is not None:
        product = product + bias
    channels_last = product.reshape(batch, *outputs, channels_out).permute(0, dims + 1, *range(1, dims + 1))
    return channels_last.contiguous()  # the layout PyTorch's convolution gives, which a `view` after it may need


def _taps(x, kernel, stride, padding, dilation) -> list[tuple[tuple[int, ...], torch.Tensor]]:
    """Each kernel tap's index (in `itertools.product` order) and the slice of the zero-padded input it multiplies."""
    padded = _padded(x, padding)
    sizes = padded.shape[2:]
    outputs = [(sizes[a] - dilation[a] * (kernel[a] - 1) - 1) // stride[a] + 1 for a in range(len(kernel))]
    taps = []
    for index in itertools.product(*(range(k) for k in kernel)):
        reads = [
            slice(k * dilation[a], k * dilation[a] + (outputs[a] - 1) * stride[a] + 1, stride[a])
            for a, k in enumerate(index)
        ]
        taps.append((index, padded[(slice(None), slice(None), *reads)]))
    return taps


def _padded(x, padding):
    pads = [p for a in reversed(range(len(padding))) for p in (padding[a], padding[a])]
    return aten.constant_pad_nd.default(x, pads, 0.0) if any(pads) else x


def _by_phase(x, weight, bias, stride, padding, dilation, output_padding, groups):
    """A strided transposed convolution as one stride-1 forward convolution per output phase (the outputs whose
    index plus padding is r modulo the stride), each with the kernel taps that reach that phase, interleaved and
    cropped: no multiplication by an inserted zero."""
    dims = len(stride)
    kernel = weight.shape[2:]
    sizes = x.shape[2:]
    outputs = [
        (sizes[a] - 1) * stride[a] - 2 * padding[a] + dilation[a] * (kernel[a] - 1) + output_padding[a] + 1
        for a in range(dims)
    ]
    spans = [-(-(padding[a] + outputs[a]) // stride[a]) for a in range(dims)]  # phase outputs per axis
    forward = _forward_weight(weight, groups)
    phases = []
    for phase in itertools.product(*(range(step) for step in stride)):
        plans = [_phase_plan(phase[a], stride[a], dilation[a], kernel[a], sizes[a], spans[a]) for a in range(dims)]
        phases.append(_phase(x, forward, plans, groups, spans))
    return _interleaved(phases, stride, spans, padding, outputs, bias)


def _dilated_by_phase(x, weight, bias, stride, padding, dilation, groups):
    """A dilated convolution (stride 1 along its dilated axes) as one undilated convolution per output phase (the
    outputs whose index is r modulo the dilation), each over the input elements that phase reads (every
    dilation-th one), interleaved: no multiplication by a zero between the kernel's taps."""
    dims = len(stride)
    kernel, sizes = weight.shape[2:], x.shape[2:]
    outputs = [(sizes[a] + 2 * padding[a] - dilation[a] * (kernel[a] - 1) - 1) // stride[a] + 1 for a in range(dims)]
    spans = [-(-outputs[a] // dilation[a]) for a in range(dims)]
    phases = []
    for phase in itertools.product(*(range(step) for step in dilation)):
        part, pads = x, []
        for a in range(dims):
            first = (phase[a] - padding[a]) % dilation[a]
            offset = (phase[a] - padding[a] - first) // dilation[a]
            index = [slice(None)] * x.dim()
            index[2 + a] = slice(first, None, dilation[a])
            part = part[tuple(index)]
            right = (spans[a] - 1) * stride[a] + kernel[a] - part.shape[2 + a] + offset
            pads = [-offset, right, *pads]
        part = aten.constant_pad_nd.default(part, pads, 0.0)
        zeros = [0] * dims
        phases.append(aten.convolution.default(part, weight, None, stride, zeros, [1] * dims, False, zeros, groups))
    return _interleaved(phases, dilation, spans, [0] * dims, outputs, bias)


def _interleaved(phases, steps, spans, starts, outputs, bias):
    """The full output from its phases (in `itertools.product` order over `steps`), each `spans` long per axis:
    phase r's element q lands at q * step + r, then each axis is cropped to `outputs` from `starts`."""
    dims = len(steps)
    batch, channels = phases[0].shape[:2]
    stacked = torch.stack(phases, dim=2).reshape(batch, channels, *steps, *spans)
    order = [0, 1] + [axis for a in range(dims) for axis in (2 + dims + a, 2 + a)]
    full = stacked.permute(order).reshape(batch, channels, *(spans[a] * steps[a] for a in range(dims)))
    for a in range(dims):
        full = full.narrow(2 + a, starts[a], outputs[a])
    if bias is not None:
        full = full + bias.reshape(-1, *([1] * dims))
    return full


def _phase_plan(phase: int, step: int, dilation: int, size: int, length: int, span: int):
    """For one axis and phase: (first tap, tap step, dilation, left pad, right pad) of the forward convolution that
    gives the phase's `span` outputs, or None where no tap reaches the phase."""
    taps = [k for k in range(size) if (k * dilation - phase) % step == 0]
    if not taps:
        return None
    every = step // math.gcd(dilation, step)
    spread = dilation // math.gcd(dilation, step)
    reach = (taps[0] * dilation - phase) // step + (len(taps) - 1) * spread
    return taps[0], every, spread, reach, span + spread * (len(taps) - 1) - length - reach


def _phase(x, forward, plans, groups, spans):
    """One phase's outputs: zeros where no tap reaches it, else a stride-1 forward convolution."""
    if any(plan is None for plan in plans):
        return x.new_zeros(x.shape[0], forward.shape[0], *spans)
    taps = forward
    pads: list[int] = []
    spread: list[int] = []
    for axis, (first, every, dilation, left, right) in enumerate(plans):
        index = [slice(None)] * taps.dim()
        index[2 + axis] = slice(first, None, every)
        taps = taps[tuple(index)]
        pads = [left, right, *pads]
        spread.append(dilation)
    taps = taps.flip(list(range(2, 2 + len(plans))))
    padded = aten.constant_pad_nd.default(x, pads, 0.0)
    zeros = [0] * len(plans)
    return aten.convolution.default(padded, taps, None, [1] * len(plans), zeros, spread, False, zeros, groups)


def _forward_weight(weight: torch.Tensor, groups: int) -> torch.Tensor:
    """A transposed convolution's weight (in, out / groups, ...) as a forward one's (out, in / groups, ...),
    unflipped."""
    channels_in, per_group_out = weight.shape[0], weight.shape[1]
    kernel = weight.shape[2:]
    grouped = weight.reshape(groups, channels_in // groups, per_group_out, *kernel).transpose(1, 2)
    return grouped.reshape(groups * per_group_out, channels_in // groups, *kernel)


def _as_forward(x, weight, padding, dilation, output_padding, groups):
    """The input, weight and padding of the forward convolution (same dilation) equal to a stride-1 transposed
    one; a padding below zero crops the input."""
    dims = len(padding)
    pads: list[int] = []
    for axis in reversed(range(dims)):  # constant_pad_nd takes the last dim first
        reach = dilation[axis] * (weight.shape[2 + axis] - 1) - padding[axis]
        pads += [reach, reach + output_padding[axis]]
    padded = aten.constant_pad_nd.default(x, pads, 0.0)
    return padded, _forward_weight(weight, groups).flip(list(range(2, 2 + dims))), [0] * dims


def _dilated(weight: torch.Tensor, dilation: Sequence[int]) -> torch.Tensor:
    for axis, step in enumerate(dilation):
        weight = _spaced(weight, 2 + axis, step)
    return weight


def _spaced(t: torch.Tensor, axis: int, step: int) -> torch.Tensor:
    """`t` with `step - 1` zeros between consecutive elements along `axis`."""
    if step == 1:
        return t
    length = t.shape[axis]
    moved = t.movedim(axis, -1).unsqueeze(-1)
    padded = aten.constant_pad_nd.default(moved, [0, step - 1], 0.0)
    spread = padded.reshape(*moved.shape[:-2], length * step)[..., : (length - 1) * step + 1]
    return spread.movedim(-1, axis)


def _spread(values: Sequence[int], dims: int) -> list[int]:
    values = list(values)
    return values * dims if len(values) == 1 else values
