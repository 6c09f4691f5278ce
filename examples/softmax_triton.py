"""Row softmax in Triton: a candidate for ``examples/softmax.py``.

A candidate defines ``ModelNew`` with the same constructor and ``forward``
signature as the task's ``Model``. All arithmetic happens inside the Triton
kernel; ``forward`` only allocates the output and launches the kernel.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    """Compute the softmax of one row; program ``i`` handles row ``i``."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    # BLOCK is the next power of two >= n_cols, so lanes past the end of the
    # row are masked off. Filling them with -inf makes them vanish from both
    # the max (max(v, -inf) = v) and the sum (exp(-inf) = 0).
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    # Subtracting the row max keeps exp() from overflowing; it cancels out in
    # the division, so the result is unchanged.
    numerator = tl.exp(x - tl.max(x, axis=0))
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, numerator / denominator, mask=mask)


class ModelNew(nn.Module):
    """Drop-in replacement for the task's ``Model``."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        # Allocate on the input's device: the same code runs on a GPU or, with
        # TRITON_INTERPRET=1, on the CPU.
        out = torch.empty_like(x)
        block = triton.next_power_of_2(n_cols)
        softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK=block)
        return out
