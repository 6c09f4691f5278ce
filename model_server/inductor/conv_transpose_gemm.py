"""The project's own Triton transposed convolution: an implicit GEMM by output phase, rendered for one convolution.

Output position `o` of a transposed convolution sums input `i` times kernel tap `k` wherever `o + pad = i * stride +
k * dilation`. Along one axis the outputs fall into `stride` phases by `(o + pad) % stride`, and every output of a
phase is reached by the same taps, every `stride / gcd(stride, dilation)`-th one from its first; reading them in
turn walks the input back one `dilation / gcd`-th step at a time. So each program takes a block of outputs of one
phase (phases of all axes combined), and its K loop runs over only the taps that reach them, tap by tap with a block
of the group's input channels at a time (at least `MIN_CHANNEL_BLOCK`), as `conv_gemm`'s forward kernel does: no
product with a zero that the convolution inserts, and no per-phase copies to interleave (Inductor's templates need
both: `convolutions.py`). The phase, its first output,
its outputs' count and its taps are worked out in the kernel from the program's id; every size, stride, padding and
dilation is a constant.
"""

from __future__ import annotations

import math

from model_server.inductor.conv_gemm import (
    MIN_CHANNEL_BLOCK,
    TAIL_BIAS,
    ConvShapeError,
    ConvSpec,
    constant_lines,
    fitted_tile,
)
from model_server.inductor.launcher import extent

AXES = "DHW"


def grid(spec: ConvSpec, tile: dict) -> tuple[int, int, int]:
    """The launch grid: (row blocks of the longest phase) x phases, column blocks of a group's outputs, groups."""
    tile = fitted_tile(spec, tile)
    phases = math.prod(spec.stride)
    return (phases * _row_blocks(spec, tile), -(-spec.group_out // tile["BLOCK_N"]), spec.groups)


def kernel_source(name: str, spec: ConvSpec, tile: dict, precision: str) -> str:
    """The `@triton.jit` kernel `name(x_ptr, w_ptr[, bias_ptr], out_ptr)` computing the transposed convolution
    `spec` in fp32, its dots at `precision` ("ieee" or "tf32x3")."""
    spec.check()
    if not spec.transposed:
        raise ConvShapeError("a forward convolution (conv_gemm renders those)")
    if spec.group_in < MIN_CHANNEL_BLOCK:
        raise ConvShapeError(
            f"{spec.group_in} input channels per group, fewer than the {MIN_CHANNEL_BLOCK} a tap's block reads"
        )
    tile = fitted_tile(spec, tile)
    as_3d = spec.as_3d()
    x_size, w_size, out_size = as_3d.x_size, as_3d.w_size, as_3d.out_size
    x_stride, w_stride, out_stride = as_3d.x_stride, as_3d.w_stride, as_3d.out_stride
    step, padding, dilation = as_3d.stride, as_3d.padding, as_3d.dilation
    constants = {
        "GROUP_IN": spec.group_in,
        "GROUP_OUT": spec.group_out,
        "BATCH": spec.x_size[0],
        "PHASES": math.prod(step),
        "ROW_BLOCKS": _row_blocks(spec, tile),
        "K_BLOCKS": -(-spec.group_in // tile["BLOCK_K"]),
    }
    for axis, size_in, size_out, kernel, stride, pad_, dil in zip(
        AXES, x_size[2:], out_size[2:], w_size[2:], step, padding, dilation
    ):
        gcd = math.gcd(stride, dil)
        constants |= {
            f"IN_{axis}": size_in,
            f"OUT_{axis}": size_out,
            f"K{axis}": kernel,
            f"STRIDE_{axis}": stride,
            f"PAD_{axis}": pad_,
            f"DIL_{axis}": dil,
            f"GCD_{axis}": gcd,
            f"TAP_STEP_{axis}": stride // gcd,  # between the taps that reach one phase
            f"BACK_{axis}": dil // gcd,  # the input step from one of those taps to the next
            f"INV_{axis}": pow(dil // gcd, -1, stride // gcd),
        }
    constants |= {f"SX_{a}": v for a, v in zip("NCDHW", x_stride)}
    constants |= {f"SW_{a}": v for a, v in zip(("CI", "CO", "D", "H", "W"), w_stride)}
    constants |= {f"SO_{a}": v for a, v in zip("NCDHW", out_stride)}
    constants |= {key: tile[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    largest = max(extent(spec.x_size, spec.x_stride), extent(spec.out_size, spec.out_stride))
    parameters = "x_ptr, w_ptr, bias_ptr, out_ptr" if spec.bias else "x_ptr, w_ptr, out_ptr"
    source = _HEAD.format(name=name, parameters=parameters, constants=constant_lines(constants, largest))
    source += "".join(_PHASE_AXIS.format(a=a.lower(), A=a) for a in AXES)
    source += _ROWS
    source += _BY_TAP.format(precision=precision)
    source += TAIL_BIAS if spec.bias else ""
    source += _TAIL
    return source


def _row_blocks(spec: ConvSpec, tile: dict) -> int:
    """Blocks of BLOCK_M rows that the phase with the most outputs needs."""
    rows = spec.x_size[0]
    for size, stride, pad in zip(spec.out_size[2:], spec.stride, spec.padding):
        rows *= max(_count(size, stride, pad, phase) for phase in range(stride))
    return max(1, -(-rows // tile["BLOCK_M"]))


def _count(size: int, stride: int, pad: int, phase: int) -> int:
    """Outputs `o` of an axis of `size` with `(o + pad) % stride == phase` (the kernel's count, in Python)."""
    return (size - 1 + pad - phase + stride) // stride - (pad - phase + stride - 1) // stride


_HEAD = '''@triton.jit
def {name}({parameters}):
    """Transposed convolution as an implicit GEMM: each program takes output positions of one phase (rows) by
    output channels (columns), K the taps that reach that phase and the group's input channels."""
{constants}
    block = tl.program_id(0) // PHASES
    phase = tl.program_id(0) % PHASES
    r_w = phase % STRIDE_W
    r_h = phase // STRIDE_W % STRIDE_H
    r_d = phase // (STRIDE_W * STRIDE_H)
'''

# Along one axis, for the phase r: the first output index j0 (output o = j * STRIDE + r - PAD), the count of
# outputs, the first tap k0 that reaches them (k0 * DIL = r modulo STRIDE; none where the gcd does not divide r),
# the count of such taps, and the input index of output j at tap k0, less j.
_PHASE_AXIS = """    j0_{a} = (PAD_{A} - r_{a} + STRIDE_{A} - 1) // STRIDE_{A}
    count_{a} = (OUT_{A} - 1 + PAD_{A} - r_{a} + STRIDE_{A}) // STRIDE_{A} - j0_{a}
    k0_{a} = (r_{a} // GCD_{A} * INV_{A}) % TAP_STEP_{A}
    taps_{a} = tl.where(r_{a} % GCD_{A} == 0, (K{A} - k0_{a} + TAP_STEP_{A} - 1) // TAP_STEP_{A}, 0)
    shift_{a} = (r_{a} - k0_{a} * DIL_{A}) // STRIDE_{A}
"""

_ROWS = """    rows_in_phase = count_d.to(INDEX) * count_h * count_w * BATCH
    local = block.to(INDEX) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = local < rows_in_phase
    along_w = tl.maximum(count_w, 1)
    along_h = tl.maximum(count_h, 1)
    along_d = tl.maximum(count_d, 1)
    jw = j0_w + local % along_w
    jh = j0_h + local // along_w % along_h
    jd = j0_d + local // (along_w * along_h) % along_d
    n = local // (along_w * along_h * along_d)
    columns = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    column_ok = columns < GROUP_OUT
    group = tl.program_id(2).to(INDEX)
    qd = jd + shift_d
    qh = jh + shift_h
    qw = jw + shift_w
    x_rows = x_ptr + n * SX_N + group * (GROUP_IN * SX_C) + qd * SX_D + qh * SX_H + qw * SX_W
    first_tap = k0_d * SW_D + k0_h * SW_H + k0_w * SW_W
    w_columns = w_ptr + group * (GROUP_IN * SW_CI) + columns * SW_CO + first_tap
    taps = taps_d * taps_h * taps_w
    live = block.to(INDEX) * BLOCK_M < rows_in_phase
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
"""

_BY_TAP = """    for step in range(tl.where(live, taps * K_BLOCKS, 0)):
        tap = step // K_BLOCKS
        channels = step % K_BLOCKS * BLOCK_K + tl.arange(0, BLOCK_K)
        tw = tap % taps_w
        th = tap // taps_w % taps_h
        td = tap // (taps_w * taps_h)
        d = qd - td * BACK_D
        h = qh - th * BACK_H
        w = qw - tw * BACK_W
        inside = (d >= 0) & (d < IN_D) & (h >= 0) & (h < IN_H) & (w >= 0) & (w < IN_W)
        channel_ok = channels < GROUP_IN
        back = td * (BACK_D * SX_D) + th * (BACK_H * SX_H) + tw * (BACK_W * SX_W)
        a_offsets = channels[None, :] * SX_C - back
        a = tl.load(x_rows[:, None] + a_offsets, mask=(row_ok & inside)[:, None] & channel_ok[None, :], other=0.0)
        later = td * (TAP_STEP_D * SW_D) + th * (TAP_STEP_H * SW_H) + tw * (TAP_STEP_W * SW_W)
        b_offsets = channels[:, None] * SW_CI + later
        b = tl.load(w_columns[None, :] + b_offsets, mask=channel_ok[:, None] & column_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="{precision}")
"""

_TAIL = """    od = jd * STRIDE_D + r_d - PAD_D
    oh = jh * STRIDE_H + r_h - PAD_H
    ow = jw * STRIDE_W + r_w - PAD_W
    out_rows = n * SO_N + od * SO_D + oh * SO_H + ow * SO_W
    out_columns = (group * GROUP_OUT + columns) * SO_C
    tl.store(out_ptr + out_rows[:, None] + out_columns[None, :], acc, mask=row_ok[:, None] & column_ok[None, :])
"""
