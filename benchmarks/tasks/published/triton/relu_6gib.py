"""ReLU over a 6 GiB fp32 tensor (4096 x 393216) in one Triton kernel with int64 offsets."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # 1.6e9 elements: the block start must be computed in int64.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = 8192
        _relu_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=8)
        return out
