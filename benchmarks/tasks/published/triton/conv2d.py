"""Conv2d 3x3, 16 -> 128 channels, no bias, on 16 x 16 x 1024 x 1024: implicit GEMM in Triton with 3xTF32 dots."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _conv2d_kernel(
    x_ptr,
    w_ptr,
    out_ptr,
    C,
    H,
    W,
    OC,
    OH,
    OW,
    K,
    KH: tl.constexpr,
    KW: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    # Implicit GEMM, stride 1, no padding: out[n, oc, oh, ow] = sum_k x[n, c, oh + kh, ow + kw] * w[oc, k]
    # with k = (c, kh, kw) flattened (K = C * KH * KW, the layout of the weight's last three dims).
    # Axis 0: one output row (n, oh); axis 1: a block of BLOCK_M output columns; axis 2: a block of channels.
    row = tl.program_id(0).to(tl.int64)
    n = row // OH
    oh = row % OH
    ow = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    oc = tl.program_id(2) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = ow < OW
    mask_n = oc < OC

    # Offset of x[n, 0, oh, ow] for every output column of the block (contiguous along ow).
    x_base = x_ptr + n * C * H * W + oh * W + ow
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        mask_k = k < K
        c = k // (KH * KW)
        kh = (k // KW) % KH
        kw = k % KW
        k_off = c * H * W + kh * W + kw
        a = tl.load(x_base[:, None] + k_off[None, :], mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        b = tl.load(w_ptr + oc[None, :] * K + k[:, None], mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        # 3xTF32: fp32-level accuracy on tensor cores, accumulated in fp32.
        acc = tl.dot(a, b, acc, input_precision="tf32x3")

    # out[n, oc, oh, ow]: 16 x 128 x 1022 x 1022 is past 2^31 elements, so the offsets are int64.
    out_offs = n * OC * OH * OW + oc[None, :].to(tl.int64) * (OH * OW) + oh * OW + ow[:, None]
    tl.store(out_ptr + out_offs, acc, mask=mask_m[:, None] & mask_n[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        # Built exactly like the task's layer, so the same seed gives the same weight; only its tensor is used.
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, bias=False)

    def forward(self, x):
        conv = self.conv2d
        assert conv.stride == (1, 1) and conv.padding == (0, 0) and conv.dilation == (1, 1) and conv.groups == 1
        x = x.contiguous()
        weight = conv.weight.contiguous()
        N, C, H, W = x.shape
        OC, C2, KH, KW = weight.shape
        assert C == C2, "input channels differ from the weight's"
        OH = H - KH + 1
        OW = W - KW + 1
        out = torch.empty((N, OC, OH, OW), dtype=x.dtype, device=x.device)
        block_m = 128
        block_n = 64
        grid = (N * OH, triton.cdiv(OW, block_m), triton.cdiv(OC, block_n))
        _conv2d_kernel[grid](
            x,
            weight,
            out,
            C,
            H,
            W,
            OC,
            OH,
            OW,
            C * KH * KW,
            KH=KH,
            KW=KW,
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            BLOCK_K=16,
            num_warps=8,
            num_stages=3,
        )
        return out
