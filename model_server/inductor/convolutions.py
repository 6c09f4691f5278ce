"""Convolutions that Inductor's Triton templates do not take, rewritten into ones they do.

Inductor's conv templates cover 2-D and 3-D forward convolutions without dilation; a transposed, dilated or 1-D
convolution goes to cuDNN, so its candidate could only be a hybrid. The templates capture (`capture.py`) hands
Inductor this decomposition of `aten.convolution`, which rewrites such a convolution exactly, in fp32, as one
the templates take:

- transposed: a forward convolution of the input with zeros inserted between its elements (the stride), padded by
  `dilation * (kernel - 1) - padding` (plus `output_padding` at the end), with the kernel flipped and its in and
  out channels exchanged within each group;
- dilated: the kernel with zeros inserted between its taps, so the dilation is 1;
- 1-D: the 2-D convolution of a height-1 image.

The inserted zeros cost work (a transposed convolution of stride 2 does 4 times the 2-D multiplications), which the
measured speed of the candidate shows; the verifier judges the result like any other.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

aten = torch.ops.aten


def decompositions() -> dict:
    """The decomposition table to give `compile_fx`: Inductor's own, with convolution rewritten."""
    from torch._inductor.decomposition import select_decomp_table

    return {**select_decomp_table(), aten.convolution.default: convolution}


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
    if not transposed and all(d == 1 for d in dilation) and dims in (2, 3):
        return NotImplemented
    if transposed:
        x, weight, padding = _as_forward(x, weight, stride, padding, dilation, output_padding, groups)
        stride = [1] * dims
    if any(d != 1 for d in dilation):
        weight = _dilated(weight, dilation)
    if dims == 1:
        flat = aten.convolution.default(
            x.unsqueeze(2), weight.unsqueeze(2), bias, [1, *stride], [0, *padding], [1, 1], False, [0, 0], groups
        )
        return flat.squeeze(2)
    return aten.convolution.default(x, weight, bias, stride, padding, [1] * dims, False, [0] * dims, groups)


def _as_forward(x, weight, stride, padding, dilation, output_padding, groups):
    """The input, weight and padding of the forward convolution (stride 1, same dilation) equal to the transposed
    one; a padding below zero crops the input."""
    dims = len(stride)
    spread = x
    for axis, step in enumerate(stride):
        spread = _spaced(spread, 2 + axis, step)
    pads: list[int] = []
    for axis in reversed(range(dims)):  # constant_pad_nd takes the last dim first
        reach = dilation[axis] * (weight.shape[2 + axis] - 1) - padding[axis]
        pads += [reach, reach + output_padding[axis]]
    spread = aten.constant_pad_nd.default(spread, pads, 0.0)
    channels_in, per_group_out = weight.shape[0], weight.shape[1]
    kernel = weight.shape[2:]
    grouped = weight.reshape(groups, channels_in // groups, per_group_out, *kernel).transpose(1, 2)
    forward = grouped.reshape(groups * per_group_out, channels_in // groups, *kernel)
    return spread, forward.flip(list(range(2, 2 + dims))), [0] * dims


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
