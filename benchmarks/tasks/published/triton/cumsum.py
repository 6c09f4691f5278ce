"""Row cumsum over 32768 x 32768 fp32 in Triton, summed in the same order as PyTorch's CUDA scan kernel."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Why the order matters: a 32768-long fp32 running sum drifts from the exact prefix sums by up to ~1.6e-3,
# well past the fp32 tolerance (1e-4 + 1e-4 * |ref|) wherever the sum comes back near zero, so an exact
# (or differently rounded) result fails against PyTorch's own fp32 result. PyTorch's CUDA kernel for a scan
# over the innermost dim (aten/src/ATen/native/cuda/ScanUtils.cuh, tensor_kernel_scan_innermost_dim) walks
# each row in chunks of 2 * num_threads_x values: it adds the running total to the chunk's first value, then
# runs a Sklansky scan over the chunk (level m adds the last value of each left half of 2^(m+1) values to
# every value of the right half). This kernel performs exactly those fp32 additions.


@triton.jit
def _cumsum_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, CHUNK: tl.constexpr, LOG_CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    idx = tl.arange(0, CHUNK)
    carry = 0.0
    for start in range(0, n_cols, CHUNK):
        mask = start + idx < n_cols
        v = tl.load(x_row + start + idx, mask=mask, other=0.0)
        # The Sklansky levels that do not involve the chunk's first value (they cannot see the carry):
        # at level m, the right half of every group of 2^(m+1) values except the first group.
        for m in tl.static_range(LOG_CHUNK):
            left_last = tl.gather(v, ((idx >> (m + 1)) << (m + 1)) + (1 << m) - 1, axis=0)
            v = tl.where((((idx >> m) & 1) == 1) & (idx >= (2 << m)), v + left_last, v)
        # The remaining additions, which chain the carry: the first value becomes e = v[0] + carry; at level m
        # the values at 2^m .. 2^(m+1) - 1 add e, and e moves on to the new last value of that range.
        e = tl.sum(tl.where(idx == 0, v, 0.0), axis=0) + carry
        res = tl.where(idx == 0, e, v)
        for m in tl.static_range(LOG_CHUNK):
            res = tl.where((idx >= (1 << m)) & (idx < (2 << m)), v + e, res)
            e = tl.sum(tl.where(idx == (2 << m) - 1, v, 0.0), axis=0) + e
        tl.store(out_row + start + idx, res, mask=mask)
        carry = e


def _torch_scan_chunk(num_rows: int, row_size: int) -> int:
    """log2 of the chunk PyTorch's CUDA scan uses for these sizes (get_log_num_threads_x_inner_scan, uint32 math)."""
    log_x = max(row_size - 1, 0).bit_length()
    log_y = max(num_rows - 1, 0).bit_length()
    diff = (log_x - log_y) & 0xFFFFFFFF
    log_threads_x = min(max(4, ((9 + diff) & 0xFFFFFFFF) // 2), 9)
    return log_threads_x + 1


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        log_chunk = _torch_scan_chunk(n_rows, n_cols)
        chunk = 1 << log_chunk
        num_warps = max(1, min(8, chunk // 128))
        _cumsum_kernel[(n_rows,)](
            x, out, n_cols, x.stride(0), out.stride(0), CHUNK=chunk, LOG_CHUNK=log_chunk, num_warps=num_warps
        )
        return out
