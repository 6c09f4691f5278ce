"""BatchNorm2d in training mode (64 x 64 x 512 x 512, 64 features): two-pass batch statistics and a normalize pass."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _plane_sum_kernel(x_ptr, sum_ptr, C, N, HW, BLOCK: tl.constexpr):
    # One program per (n, c) plane of H*W contiguous values: sum[c, n] = sum of the plane.
    plane = tl.program_id(0).to(tl.int64)
    n = plane // C
    c = plane % C
    base = x_ptr + plane * HW
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, HW, BLOCK):
        acc += tl.load(base + start + offs, mask=start + offs < HW, other=0.0)
    tl.store(sum_ptr + c * N + n, tl.sum(acc, axis=0))


@triton.jit
def _plane_sqdev_kernel(x_ptr, sum_ptr, sqdev_ptr, C, N, HW, count, BLOCK: tl.constexpr, BLOCK_N: tl.constexpr):
    # One program per (n, c) plane: sqdev[c, n] = sum over the plane of (x - mean[c])^2, mean from the first pass.
    plane = tl.program_id(0).to(tl.int64)
    n = plane // C
    c = plane % C
    idx = tl.arange(0, BLOCK_N)
    mean = tl.sum(tl.load(sum_ptr + c * N + idx, mask=idx < N, other=0.0), axis=0) / count
    base = x_ptr + plane * HW
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, HW, BLOCK):
        mask = start + offs < HW
        d = tl.where(mask, tl.load(base + start + offs, mask=mask, other=0.0) - mean, 0.0)
        acc += d * d
    tl.store(sqdev_ptr + c * N + n, tl.sum(acc, axis=0))


@triton.jit
def _finalize_kernel(sum_ptr, sqdev_ptr, weight_ptr, mean_ptr, scale_ptr, N, count, eps, BLOCK_N: tl.constexpr):
    # One program per channel: the batch mean and scale = weight / sqrt(var + eps).
    c = tl.program_id(0).to(tl.int64)
    idx = tl.arange(0, BLOCK_N)
    mean = tl.sum(tl.load(sum_ptr + c * N + idx, mask=idx < N, other=0.0), axis=0) / count
    var = tl.sum(tl.load(sqdev_ptr + c * N + idx, mask=idx < N, other=0.0), axis=0) / count  # biased
    scale = tl.load(weight_ptr + c) / tl.sqrt(var + eps)
    tl.store(mean_ptr + c, mean)
    tl.store(scale_ptr + c, scale)


@triton.jit
def _normalize_kernel(x_ptr, out_ptr, mean_ptr, scale_ptr, bias_ptr, C, HW, BLOCK: tl.constexpr):
    # Axis 0: (n, c) plane; axis 1: block of the plane. y = (x - mean) * scale + bias.
    plane = tl.program_id(0).to(tl.int64)
    c = plane % C
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    x = tl.load(x_ptr + plane * HW + offs, mask=mask)
    y = (x - tl.load(mean_ptr + c)) * tl.load(scale_ptr + c) + tl.load(bias_ptr + c)
    tl.store(out_ptr + plane * HW + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.num_features = num_features
        self.eps = 1e-5
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        assert self.num_features == C, "channel count differs from num_features"
        HW = H * W
        out = torch.empty_like(x)
        sums = torch.empty((C, N), dtype=torch.float32, device=x.device)
        sqdevs = torch.empty((C, N), dtype=torch.float32, device=x.device)
        mean = torch.empty((C,), dtype=torch.float32, device=x.device)
        scale = torch.empty((C,), dtype=torch.float32, device=x.device)
        block_n = triton.next_power_of_2(N)
        count = float(N * HW)  # values per channel
        _plane_sum_kernel[(N * C,)](x, sums, C, N, HW, BLOCK=4096, num_warps=8)
        _plane_sqdev_kernel[(N * C,)](x, sums, sqdevs, C, N, HW, count, BLOCK=4096, BLOCK_N=block_n, num_warps=8)
        _finalize_kernel[(C,)](sums, sqdevs, self.weight, mean, scale, N, count, self.eps, BLOCK_N=block_n)
        block = 4096
        grid = (N * C, triton.cdiv(HW, block))
        _normalize_kernel[grid](x, out, mean, scale, self.bias, C, HW, BLOCK=block, num_warps=8)
        return out
