"""The project's own Triton matmul, rendered for one library matmul's shapes and layouts.

Inductor's default compile hands `mm`, `addmm` and `bmm` to cuBLAS. The rewrite swaps such a call for a launch of the
kernel rendered here, so the candidate is all Triton with the rest of Inductor's kernels as they are. Every size and
stride is a constant of the kernel, and rows and columns past a tile's end wrap around, so only the stores and one step
at K's tail are masked: any M, N and K verify, not only multiples of the tile. Where the output has too few tiles to
fill the GPU (a large K over a small M x N), K is split: each split writes its partial product to a workspace and a
second kernel adds the splits in a fixed order, so the result is deterministic. An operand whose rows do not start on
16-byte boundaries (a row of 3001 floats) is first copied into rows padded to a multiple of four elements, and its
columns wrap around at that padded width: read in place, or wrapped at an odd width, every load is a scalar one (H200,
`benchmarks/matmul_gemm.py`: 0.35x of cuBLAS on a 4099 x 2053 x 3001 product against 1.04-1.13x on aligned ones).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from model_server.inductor.conv_gemm import constant_lines
from model_server.inductor.launcher import extent

# Two waves of an H100's or H200's 132 SMs: a split K aims for about this many programs.
TARGET_PROGRAMS = 264
MIN_SPLIT_CHUNK = 1024  # fewer K elements per split would cost more in partial sums than the split gains
MAX_WORKSPACE_BYTES = 256 * 2**20
REDUCE_BLOCK = 1024
ALIGNMENT = 4  # elements of fp32 in 16 bytes: a row that starts elsewhere cannot be read with vector loads
COPY_BLOCK = (32, 128)  # rows x columns per program of the aligned copy


class MatmulShapeError(ValueError):
    """The matmul is not one the template takes; the message says why."""


@dataclass(frozen=True)
class MatmulSpec:
    """out[b] = alpha * a[b] @ b[b] + beta * bias[b], sizes and strides (in elements, batch first) of each operand.

    A 2-D matmul has batch 1 and batch strides 0; `bias_stride` is None without a bias (a broadcast bias has
    stride 0 along the dims it repeats)."""

    batch: int
    m: int
    n: int
    k: int
    a_stride: tuple[int, int, int]
    b_stride: tuple[int, int, int]
    out_stride: tuple[int, int, int]
    bias_stride: tuple[int, int, int] | None = None
    alpha: float = 1.0
    beta: float = 1.0
    b_padded: bool = False  # b is `copy_source`'s copy: its rows' padding can be read (into masked columns only)

    def check(self) -> None:
        if min(self.batch, self.m, self.n, self.k) < 1:
            raise MatmulShapeError(f"an empty matmul ({self.batch} x {self.m} x {self.n} x {self.k})")

    @property
    def largest(self) -> int:
        """One past the largest element offset any operand reaches."""
        sizes = {
            "a": ((self.batch, self.m, self.k), self.a_stride),
            "b": ((self.batch, self.k, self.n), self.b_stride),
            "out": ((self.batch, self.m, self.n), self.out_stride),
        }
        return max(extent(size, stride) for size, stride in sizes.values())


def split_of(spec: MatmulSpec, tile: dict) -> int:
    """How many parts K is split into: a power of two that brings the programs near TARGET_PROGRAMS, each part at
    least MIN_SPLIT_CHUNK long, the workspace within MAX_WORKSPACE_BYTES; 1 where the output's tiles suffice."""
    programs = _tiles(spec, tile) * spec.batch
    split = 1
    while (
        programs * split * 2 <= TARGET_PROGRAMS
        and spec.k // (split * 2) >= MIN_SPLIT_CHUNK
        and split * 2 * spec.batch * spec.m * spec.n * 4 <= MAX_WORKSPACE_BYTES
    ):
        split *= 2
    return split


def grid(spec: MatmulSpec, tile: dict, split: int) -> tuple[int, int, int]:
    """The launch grid of the product: output tiles, K splits, batch."""
    return (_tiles(spec, tile), split, spec.batch)


def kernel_source(name: str, spec: MatmulSpec, tile: dict, precision: str, split: int) -> str:
    """The `@triton.jit` kernel `name(a_ptr, b_ptr[, bias_ptr], out_ptr)` computing `spec` in fp32, its dots at
    `precision` ("ieee" or "tf32x3"); with `split` > 1, `name(a_ptr, b_ptr, work_ptr)` writing each split's
    partial product to a contiguous (split, batch, M, N) workspace, which `reduce_source`'s kernel completes."""
    spec.check()
    chunk = -(-spec.k // (split * tile["BLOCK_K"])) * tile["BLOCK_K"]
    wrap_n = _wrap_n(spec)
    constants = {
        "M": spec.m,
        "N": spec.n,
        "WRAP_N": wrap_n,
        "K": spec.k,
        "BATCH": spec.batch,
        "TILES_M": -(-spec.m // tile["BLOCK_M"]),
        "TILES_N": -(-spec.n // tile["BLOCK_N"]),
        "K_CHUNK": chunk,
        "K_STEPS": chunk // tile["BLOCK_K"],
    }
    constants |= {f"SA_{a}": v for a, v in zip("BMK", spec.a_stride)}
    constants |= {f"SB_{a}": v for a, v in zip("BKN", spec.b_stride)}
    constants |= {key: tile[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    largest = max(spec.largest, split * spec.batch * spec.m * spec.n, spec.batch * spec.k * wrap_n)
    k_masked = split * chunk != spec.k
    if split > 1:
        parameters, tail = "a_ptr, b_ptr, work_ptr", _TAIL_PARTIAL
    else:
        constants |= _epilogue_constants(spec)
        parameters = "a_ptr, b_ptr, bias_ptr, out_ptr" if spec.bias_stride else "a_ptr, b_ptr, out_ptr"
        tail = _epilogue(spec, "acc", "rows_out[:, None]", "columns_out[None, :]", "batch") + _TAIL_STORE
    source = _HEAD.format(name=name, parameters=parameters, constants=constant_lines(constants, largest))
    source += (_LOOP_PEELED if k_masked else _LOOP).format(precision=precision)
    return source + tail


def reduce_source(name: str, spec: MatmulSpec, split: int) -> str:
    """The `@triton.jit` kernel `name(work_ptr[, bias_ptr], out_ptr)` adding the splits of the workspace in order,
    with `spec`'s alpha and bias, into the output."""
    constants = {"M": spec.m, "N": spec.n, "TOTAL": spec.batch * spec.m * spec.n, "SPLIT": split}
    constants |= _epilogue_constants(spec) | {"BLOCK": REDUCE_BLOCK}
    largest = max(spec.largest, split * spec.batch * spec.m * spec.n)
    parameters = "work_ptr, bias_ptr, out_ptr" if spec.bias_stride else "work_ptr, out_ptr"
    source = _REDUCE.format(name=name, parameters=parameters, constants=constant_lines(constants, largest))
    return source + _epilogue(spec, "acc", "m", "n", "b") + _REDUCE_STORE


def aligned(size: tuple[int, int, int], stride: tuple[int, int, int]) -> bool:
    """Whether a (batch, rows, columns) operand of this size and these strides can be read with vector loads: one
    of its matrix dims is contiguous and every other stride it steps by is a multiple of ALIGNMENT (a dim of size
    1 is never stepped along, whatever its stride)."""
    (batch, rows, columns), (batch_stride, row, column) = size, stride
    if batch > 1 and batch_stride % ALIGNMENT:
        return False
    row_major = (columns == 1 or column == 1) and (rows == 1 or row % ALIGNMENT == 0)
    column_major = (rows == 1 or row == 1) and (columns == 1 or column % ALIGNMENT == 0)
    return row_major or column_major


def _wrap_n(spec: MatmulSpec) -> int:
    """What the columns of a tile past N wrap around to. N itself, except where B's rows are contiguous and padded:
    then the padded width, a multiple of ALIGNMENT, so that the compiler still sees runs of contiguous columns and
    reads them with vector loads (wrapping at an odd N leaves it none). The columns read past N feed only output
    columns the store masks."""
    row_major = spec.b_stride[2] == 1 and spec.n > 1
    return padded_stride((spec.batch, spec.k, spec.n))[1] if spec.b_padded and row_major else spec.n


def with_padded_copy(spec: MatmulSpec, operand: str) -> MatmulSpec:
    """`spec` with operand `a` or `b` read from `copy_source`'s padded copy instead of in place."""
    size = (spec.batch, spec.m, spec.k) if operand == "a" else (spec.batch, spec.k, spec.n)
    return replace(spec, **{f"{operand}_stride": padded_stride(size)}, b_padded=spec.b_padded or operand == "b")


def padded_stride(size: tuple[int, int, int]) -> tuple[int, int, int]:
    """The strides of a row-major (batch, rows, columns) copy whose rows are padded to a multiple of ALIGNMENT."""
    _, rows, columns = size
    padded = -(-columns // ALIGNMENT) * ALIGNMENT
    return (rows * padded, padded, 1)


def copy_source(name: str, size: tuple[int, int, int], stride: tuple[int, int, int]) -> str:
    """The `@triton.jit` kernel `name(x_ptr, y_ptr)` copying a (batch, rows, columns) tensor of any strides into a
    row-major one of `padded_stride(size)`; the padding is left unwritten (the product never reads it)."""
    batch, rows, columns = size
    constants = {"ROWS": batch * rows, "MATRIX_ROWS": rows, "COLUMNS": columns}
    constants |= {f"SX_{a}": v for a, v in zip("BRC", stride)}
    constants |= {"PADDED": padded_stride(size)[1], "BLOCK_R": COPY_BLOCK[0], "BLOCK_C": COPY_BLOCK[1]}
    largest = max(extent(size, stride), batch * rows * constants["PADDED"])
    return _COPY.format(name=name, constants=constant_lines(constants, largest))


def copy_grid(size: tuple[int, int, int]) -> tuple[int, int]:
    batch, rows, columns = size
    return (-(-(batch * rows) // COPY_BLOCK[0]), -(-columns // COPY_BLOCK[1]))


def reduce_grid(spec: MatmulSpec) -> int:
    return -(-(spec.batch * spec.m * spec.n) // REDUCE_BLOCK)


def _tiles(spec: MatmulSpec, tile: dict) -> int:
    return math.ceil(spec.m / tile["BLOCK_M"]) * math.ceil(spec.n / tile["BLOCK_N"])


def _epilogue_constants(spec: MatmulSpec) -> dict[str, int]:
    constants = {f"SO_{a}": v for a, v in zip("BMN", spec.out_stride)}
    if spec.bias_stride:
        constants |= {f"SC_{a}": v for a, v in zip("BMN", spec.bias_stride)}
    return constants


def _epilogue(spec: MatmulSpec, acc: str, rows: str, columns: str, batch: str) -> str:
    """Lines applying alpha and the bias to `acc` (the scalars are Python literals, exact in the source)."""
    lines = []
    if spec.alpha != 1.0:
        lines.append(f"    {acc} = {acc} * {spec.alpha!r}")
    if spec.bias_stride:
        bias = f"tl.load(bias_ptr + {batch} * SC_B + {rows} * SC_M + {columns} * SC_N, mask=mask, other=0.0)"
        lines.append(f"    {acc} += {bias}" if spec.beta == 1.0 else f"    {acc} += {spec.beta!r} * {bias}")
    return "".join(line + "\n" for line in lines)


_HEAD = '''@triton.jit
def {name}({parameters}):
    """One output tile of the matmul over one split of K: tiles run GROUP_M rows of tiles at a time, so the
    programs running together share their operands' blocks in the cache."""
{constants}
    tile = tl.program_id(0)
    split = tl.program_id(1)
    batch = tl.program_id(2).to(INDEX)
    group_size = GROUP_M * TILES_N
    first_m = tile // group_size * GROUP_M
    group_rows = tl.minimum(TILES_M - first_m, GROUP_M)
    tile_m = first_m + tile % group_size % group_rows
    tile_n = tile % group_size // group_rows
    rows_out = tile_m.to(INDEX) * BLOCK_M + tl.arange(0, BLOCK_M)
    columns_out = tile_n.to(INDEX) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = rows_out % M
    columns = columns_out % WRAP_N
    ks = split.to(INDEX) * K_CHUNK + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * SA_B + rows[:, None] * SA_M + ks[None, :] * SA_K
    b_ptrs = b_ptr + batch * SB_B + ks[:, None] * SB_K + columns[None, :] * SB_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
'''

_STEP = """        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc, input_precision="{precision}")
        a_ptrs += BLOCK_K * SA_K
        b_ptrs += BLOCK_K * SB_K
"""
_MASK = """    mask = (rows_out < M)[:, None] & (columns_out < N)[None, :]
"""
_LOOP = "    for _ in range(K_STEPS):\n" + _STEP + _MASK
# Where K is no multiple of the splits' steps, the steps wholly inside K load unmasked (a mask on every step would
# keep the compiler from vector loads), and one masked step reads the tail.
_LOOP_PEELED = (
    "    whole = tl.minimum(K_STEPS, (K - split.to(INDEX) * K_CHUNK) // BLOCK_K)\n"
    "    for _ in range(whole):\n"
    + _STEP
    + """    if whole < K_STEPS:
        ks += tl.maximum(whole, 0) * BLOCK_K
        a = tl.load(a_ptrs, mask=ks[None, :] < K, other=0.0)
        b = tl.load(b_ptrs, mask=ks[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="{precision}")
"""
    + _MASK
)

_TAIL_STORE = """    out_offsets = batch * SO_B + rows_out[:, None] * SO_M + columns_out[None, :] * SO_N
    tl.store(out_ptr + out_offsets, acc, mask=mask)
"""

_TAIL_PARTIAL = """    work_offsets = ((split * BATCH + batch) * M + rows_out[:, None]) * N + columns_out[None, :]
    tl.store(work_ptr + work_offsets, acc, mask=mask)
"""

_REDUCE = '''@triton.jit
def {name}({parameters}):
    """Add the matmul's K splits in order, then its epilogue."""
{constants}
    offsets = tl.program_id(0).to(INDEX) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < TOTAL
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for part in range(SPLIT):
        acc += tl.load(work_ptr + part * TOTAL + offsets, mask=mask, other=0.0)
    n = offsets % N
    m = offsets // N % M
    b = offsets // (M * N)
'''

_REDUCE_STORE = """    tl.store(out_ptr + b * SO_B + m * SO_M + n * SO_N, acc, mask=mask)
"""

_COPY = '''@triton.jit
def {name}(x_ptr, y_ptr):
    """Copy into rows that start on 16-byte boundaries: one tile of rows by columns per program."""
{constants}
    rows = tl.program_id(0).to(INDEX) * BLOCK_R + tl.arange(0, BLOCK_R)
    columns = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows < ROWS)[:, None] & (columns < COLUMNS)[None, :]
    source = (rows // MATRIX_ROWS * SX_B + rows % MATRIX_ROWS * SX_R)[:, None] + columns[None, :] * SX_C
    values = tl.load(x_ptr + source, mask=mask)
    tl.store(y_ptr + rows[:, None] * PADDED + columns[None, :], values, mask=mask)
'''
