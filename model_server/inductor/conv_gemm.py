"""The project's own Triton convolution: an implicit GEMM, rendered for one convolution's shapes and layouts.

Inductor's default compile hands a forward convolution to cuDNN, with its layouts chosen around the call (often
channels last) and the bias and any pointwise epilogue fused into Triton kernels after it. The rewrite swaps the
library call for a launch of the kernel rendered here, so the candidate is all Triton and the rest of Inductor's
kernels stay as they are. Rows of the product are output positions, columns output channels, and K runs over
the kernel's taps and the group's input channels: tap by tap with a block of channels at a time where a group
has at least `MIN_CHANNEL_BLOCK` channels (the loads then follow the channels, contiguous in a channels-last
input), and over the flattened (channel, tap) index otherwise, so a 3-channel image still fills K. Every size,
stride, padding and dilation is a constant of the kernel; its input, weight and output may have any strides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from model_server.inductor.launcher import extent

MIN_CHANNEL_BLOCK = 16  # tl.dot's smallest K
INT32_LIMIT = 2**31
RELAYOUT_BLOCK = (64, 32)  # positions x channels per program of the channels-last copy


class ConvShapeError(ValueError):
    """The convolution is not one the template takes; the message says why."""


@dataclass(frozen=True)
class ConvSpec:
    """One convolution: sizes and strides (in elements) of input, weight and output, and its geometry. A transposed
    one's weight is (input channels, output channels per group, taps...), as PyTorch holds it."""

    x_size: tuple[int, ...]
    x_stride: tuple[int, ...]
    w_size: tuple[int, ...]
    w_stride: tuple[int, ...]
    out_size: tuple[int, ...]
    out_stride: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    bias: bool
    transposed: bool = False

    @property
    def dims(self) -> int:
        return len(self.x_size) - 2

    @property
    def group_in(self) -> int:
        """Input channels of one group."""
        return self.w_size[0] // self.groups if self.transposed else self.w_size[1]

    @property
    def group_out(self) -> int:
        """Output channels of one group."""
        return self.w_size[1] if self.transposed else self.w_size[0] // self.groups

    def as_3d(self) -> ConvSpec:
        """The same convolution with leading spatial dims of size 1 (kernel 1, stride 1, no padding) up to three,
        so that the kernels treat every convolution as a 3-D one."""
        pad = 3 - self.dims
        return replace(
            self,
            x_size=spatial3(self.x_size, 1, pad),
            x_stride=spatial3(self.x_stride, 0, pad),
            w_size=spatial3(self.w_size, 1, pad),
            w_stride=spatial3(self.w_stride, 0, pad),
            out_size=spatial3(self.out_size, 1, pad),
            out_stride=spatial3(self.out_stride, 0, pad),
            stride=(1,) * pad + tuple(self.stride),
            padding=(0,) * pad + tuple(self.padding),
            dilation=(1,) * pad + tuple(self.dilation),
        )

    def check(self) -> None:
        """Raise ConvShapeError unless the sizes agree with each other as the convolution's must."""
        dims = self.dims
        if dims not in (1, 2, 3):
            raise ConvShapeError(f"a convolution of {dims} spatial dims (1-3 supported)")
        lengths = {len(self.x_stride), len(self.w_size), len(self.w_stride), len(self.out_size), len(self.out_stride)}
        if lengths != {dims + 2} or {len(self.stride), len(self.padding), len(self.dilation)} != {dims}:
            raise ConvShapeError("the input, weight, output and geometry disagree on the number of dims")
        if min(self.stride) < 1 or min(self.dilation) < 1 or min(self.padding) < 0:
            raise ConvShapeError(
                f"stride {self.stride}, dilation {self.dilation}, padding {self.padding}: strides and dilations "
                "start at 1, paddings at 0"
            )
        batch, channels = self.x_size[:2]
        weight_channels = self.w_size[0] if self.transposed else self.w_size[1] * self.groups
        if self.groups < 1 or channels != weight_channels or self.w_size[0] % self.groups:
            weight = f"of {self.w_size[0]} input channels" if self.transposed else f"of {self.w_size[1]} per group"
            raise ConvShapeError(f"{channels} input channels, weight {weight}, {self.groups} groups")
        expected = [batch, self.group_out * self.groups]
        geometry = zip(self.x_size[2:], self.w_size[2:], self.stride, self.padding, self.dilation)
        for size, kernel, step, pad, dil in geometry:
            if self.transposed:
                expected.append((size - 1) * step - 2 * pad + dil * (kernel - 1) + 1)
            else:
                expected.append((size + 2 * pad - dil * (kernel - 1) - 1) // step + 1)
        if self.transposed:  # the output may be longer by an output padding, less than the stride or dilation
            extra = [out - size for out, size in zip(self.out_size[2:], expected[2:])]
            limits = [max(step, dil) for step, dil in zip(self.stride, self.dilation)]
            if tuple(self.out_size[:2]) == tuple(expected[:2]) and all(0 <= e < m for e, m in zip(extra, limits)):
                return
        if tuple(expected) != tuple(self.out_size):
            raise ConvShapeError(
                f"output of size {tuple(self.out_size)}, where the convolution gives {tuple(expected)}"
            )


def fitted_tile(spec: ConvSpec, tile: dict) -> dict:
    """`tile` with BLOCK_N and BLOCK_K no wider than a group's output and input channels need (at least 16)."""
    group_in, group_out = spec.group_in, spec.group_out
    block_n = min(tile["BLOCK_N"], max(MIN_CHANNEL_BLOCK, next_power_of_2(group_out)))
    block_k = tile["BLOCK_K"]
    if group_in >= MIN_CHANNEL_BLOCK:
        block_k = min(block_k, next_power_of_2(group_in))
    return {**tile, "BLOCK_N": block_n, "BLOCK_K": block_k}


def grid(spec: ConvSpec, tile: dict) -> tuple[int, int, int]:
    """The launch grid of a forward convolution: row blocks, column blocks (output channels of one group), groups."""
    tile = fitted_tile(spec, tile)
    rows = spec.out_size[0] * math.prod(spec.out_size[2:])
    columns = spec.group_out
    return (-(-rows // tile["BLOCK_M"]), -(-columns // tile["BLOCK_N"]), spec.groups)


def kernel_source(name: str, spec: ConvSpec, tile: dict, precision: str) -> str:
    """The `@triton.jit` kernel `name(x_ptr, w_ptr[, bias_ptr], out_ptr)` computing `spec` in fp32, its dots
    at `precision` ("ieee" or "tf32x3"). A transposed convolution is `conv_transpose_gemm`'s."""
    spec.check()
    if spec.transposed:
        raise ConvShapeError("a transposed convolution (conv_transpose_gemm renders those)")
    tile = fitted_tile(spec, tile)
    as_3d = spec.as_3d()
    x_size, w_size, out_size = as_3d.x_size, as_3d.w_size, as_3d.out_size
    x_stride, w_stride, out_stride = as_3d.x_stride, as_3d.w_stride, as_3d.out_stride
    step, padding, dilation = as_3d.stride, as_3d.padding, as_3d.dilation
    group_in, group_out = spec.group_in, spec.group_out
    taps = math.prod(w_size[2:])
    by_tap = group_in >= MIN_CHANNEL_BLOCK
    block_k = tile["BLOCK_K"]
    k_steps = -(-group_in // block_k) if by_tap else -(-(group_in * taps) // block_k)
    largest = max(extent(spec.x_size, spec.x_stride), extent(spec.out_size, spec.out_stride))
    constants = {
        "GROUP_IN": group_in,
        "GROUP_OUT": group_out,
        "IN_D": x_size[2],
        "IN_H": x_size[3],
        "IN_W": x_size[4],
        "OUT_D": out_size[2],
        "OUT_H": out_size[3],
        "OUT_W": out_size[4],
        "KD": w_size[2],
        "KH": w_size[3],
        "KW": w_size[4],
        "ROWS": out_size[0] * math.prod(out_size[2:]),
        "K_STEPS": k_steps * (taps if by_tap else 1),
        "K_BLOCKS": k_steps,
    }
    constants |= {
        f"{axis}_{d}": v
        for axis, values in (("STRIDE", step), ("PAD", padding), ("DIL", dilation))
        for d, v in zip("DHW", values)
    }
    constants |= {f"SX_{a}": v for a, v in zip("NCDHW", x_stride)}
    constants |= {f"SW_{a}": v for a, v in zip("OIDHW", w_stride)}
    constants |= {f"SO_{a}": v for a, v in zip("NCDHW", out_stride)}
    constants |= {key: tile[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    body = _BY_TAP if by_tap else _FLAT
    padded = any(padding)
    parameters = "x_ptr, w_ptr, bias_ptr, out_ptr" if spec.bias else "x_ptr, w_ptr, out_ptr"
    source = _HEAD.format(name=name, parameters=parameters, constants=constant_lines(constants, largest))
    source += body.format(
        precision=precision,
        inside=_INSIDE_BY_TAP if padded and by_tap else "",
        inside_flat=_INSIDE_FLAT if padded and not by_tap else "",
    )
    source += TAIL_BIAS if spec.bias else ""
    source += _TAIL
    return source


def channels_last(size: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a contiguous tensor of `size` with its channels (dim 1) innermost."""
    channels, spatial = size[1], math.prod(size[2:])
    strides = [spatial * channels, 1]
    inner = channels
    for length in reversed(size[2:]):
        strides.insert(2, inner)
        inner *= length
    return tuple(strides)


def relayout_source(name: str, size: tuple[int, ...], stride: tuple[int, ...]) -> str:
    """The `@triton.jit` kernel `name(x_ptr, y_ptr)` copying a tensor of `size` and `stride` into a channels-last
    one, in tiles that read along the input's positions and write along its channels."""
    pad = 5 - len(size)
    size5, stride5 = spatial3(size, 1, pad), spatial3(stride, 0, pad)
    positions = math.prod(size5[2:])
    constants = {"CHANNELS": size5[1], "POSITIONS": positions, "ROWS": size5[0] * positions}
    constants |= {f"{a}": v for a, v in zip(("D", "H", "W"), size5[2:])}
    constants |= {f"SX_{a}": v for a, v in zip("NCDHW", stride5)}
    constants |= {"BLOCK_P": RELAYOUT_BLOCK[0], "BLOCK_C": RELAYOUT_BLOCK[1]}
    largest = max(extent(size, stride), math.prod(size))
    return _RELAYOUT.format(name=name, constants=constant_lines(constants, largest))


def relayout_grid(size: tuple[int, ...]) -> tuple[int, int]:
    rows = size[0] * math.prod(size[2:])
    return (-(-rows // RELAYOUT_BLOCK[0]), -(-size[1] // RELAYOUT_BLOCK[1]))


def constant_lines(constants: dict[str, int], largest: int) -> str:
    """The kernel's constants as `tl.constexpr` lines, and INDEX: 64-bit where an offset can reach `largest`."""
    lines = [f"    {key}: tl.constexpr = {value}" for key, value in constants.items()]
    lines.append(f"    INDEX: tl.constexpr = {'tl.int64' if largest >= INT32_LIMIT else 'tl.int32'}")
    return "\n".join(lines)


def spatial3(values: tuple[int, ...], fill: int, pad: int) -> tuple[int, ...]:
    return (*values[:2], *([fill] * pad), *values[2:])


def next_power_of_2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


_HEAD = '''@triton.jit
def {name}({parameters}):
    """Implicit-GEMM convolution: rows are output positions, columns output channels, K the kernel's taps and
    the group's input channels."""
{constants}
    rows = tl.program_id(0).to(INDEX) * BLOCK_M + tl.arange(0, BLOCK_M)
    columns = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    group = tl.program_id(2)
    ow = rows % OUT_W
    oh = rows // OUT_W % OUT_H
    od = rows // (OUT_W * OUT_H) % OUT_D
    n = rows // (OUT_W * OUT_H * OUT_D)
    row_ok = rows < ROWS
    column_ok = columns < GROUP_OUT
    d0 = od * STRIDE_D - PAD_D
    h0 = oh * STRIDE_H - PAD_H
    w0 = ow * STRIDE_W - PAD_W
    x_rows = x_ptr + n * SX_N + group * (GROUP_IN * SX_C) + d0 * SX_D + h0 * SX_H + w0 * SX_W
    w_columns = w_ptr + (group * GROUP_OUT + columns) * SW_O
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
'''

_BY_TAP = """    for step in range(K_STEPS):
        tap = step // K_BLOCKS
        channels = step % K_BLOCKS * BLOCK_K + tl.arange(0, BLOCK_K)
        kw = tap % KW
        kh = tap // KW % KH
        kd = tap // (KW * KH)
        channel_ok = channels < GROUP_IN
        a_ok = row_ok[:, None] & channel_ok[None, :]
{inside}        a_offsets = (kd * DIL_D * SX_D + kh * DIL_H * SX_H + kw * DIL_W * SX_W) + channels[None, :] * SX_C
        a = tl.load(x_rows[:, None] + a_offsets, mask=a_ok, other=0.0)
        b_offsets = channels[:, None] * SW_I + (kd * SW_D + kh * SW_H + kw * SW_W)
        b = tl.load(w_columns[None, :] + b_offsets, mask=channel_ok[:, None] & column_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="{precision}")
"""

_INSIDE_BY_TAP = """        d = d0 + kd * DIL_D
        h = h0 + kh * DIL_H
        w = w0 + kw * DIL_W
        inside = (d >= 0) & (d < IN_D) & (h >= 0) & (h < IN_H) & (w >= 0) & (w < IN_W)
        a_ok = a_ok & inside[:, None]
"""

_FLAT = """    for step in range(K_STEPS):
        k = step * BLOCK_K + tl.arange(0, BLOCK_K)
        channel = k // (KD * KH * KW)
        kw = k % KW
        kh = k // KW % KH
        kd = k // (KW * KH) % KD
        k_ok = channel < GROUP_IN
        a_ok = row_ok[:, None] & k_ok[None, :]
{inside_flat}        a_offsets = channel * SX_C + kd * (DIL_D * SX_D) + kh * (DIL_H * SX_H) + kw * (DIL_W * SX_W)
        a_offsets = a_offsets[None, :]
        a = tl.load(x_rows[:, None] + a_offsets, mask=a_ok, other=0.0)
        b_offsets = (channel * SW_I + kd * SW_D + kh * SW_H + kw * SW_W)[:, None]
        b = tl.load(w_columns[None, :] + b_offsets, mask=k_ok[:, None] & column_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="{precision}")
"""

_INSIDE_FLAT = """        d = d0[:, None] + (kd * DIL_D)[None, :]
        h = h0[:, None] + (kh * DIL_H)[None, :]
        w = w0[:, None] + (kw * DIL_W)[None, :]
        a_ok = a_ok & (d >= 0) & (d < IN_D) & (h >= 0) & (h < IN_H) & (w >= 0) & (w < IN_W)
"""

TAIL_BIAS = """    acc += tl.load(bias_ptr + group * GROUP_OUT + columns, mask=column_ok, other=0.0)[None, :]
"""

_TAIL = """    out_rows = n * SO_N + od * SO_D + oh * SO_H + ow * SO_W
    out_columns = (group * GROUP_OUT + columns) * SO_C
    tl.store(out_ptr + out_rows[:, None] + out_columns[None, :], acc, mask=row_ok[:, None] & column_ok[None, :])
"""

_RELAYOUT = '''@triton.jit
def {name}(x_ptr, y_ptr):
    """Copy into channels last: one tile of positions by channels per program."""
{constants}
    rows = tl.program_id(0).to(INDEX) * BLOCK_P + tl.arange(0, BLOCK_P)
    channels = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    n = rows // POSITIONS
    w = rows % W
    h = rows // W % H
    d = rows // (W * H) % D
    mask = (rows < ROWS)[:, None] & (channels < CHANNELS)[None, :]
    source = (n * SX_N + d * SX_D + h * SX_H + w * SX_W)[:, None] + channels[None, :] * SX_C
    values = tl.load(x_ptr + source, mask=mask)
    tl.store(y_ptr + rows[:, None] * CHANNELS + channels[None, :], values, mask=mask)
'''
