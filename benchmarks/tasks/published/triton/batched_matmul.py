"""Batched fp32 matmul (128 x 512 x 1024 @ 128 x 1024 x 2048): tiled Triton GEMM per batch, plain fp32 (ieee) dots."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bmm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_ab,
    stride_am,
    stride_ak,
    stride_bb,
    stride_bk,
    stride_bn,
    stride_cb,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # Axis 0: output tile in grouped order (GROUP_M row tiles share a column tile of B in L2); axis 1: batch.
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * tiles_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * stride_ab + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + batch * stride_bb + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k < K) & (offs_n[None, :] < N), other=0.0)
        # "ieee": the sequential fp32 FMA chain over k that cuBLAS runs for the reference. 3xTF32 is as accurate
        # but rounds differently, and 128 x 512 x 2048 outputs make a few near-zero ones miss the 1e-4 tolerance
        # (measured on the H100: 1-3 per call, max abs error 3e-4).
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + batch * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A = A.contiguous()
        B = B.contiguous()
        batch, M, K = A.shape
        batch2, K2, N = B.shape
        assert batch == batch2 and K == K2, "shapes do not match"
        C = torch.empty((batch, M, N), dtype=A.dtype, device=A.device)
        block_m = 128
        block_n = 128
        grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n), batch)
        _bmm_kernel[grid](
            A,
            B,
            C,
            M,
            N,
            K,
            A.stride(0),
            A.stride(1),
            A.stride(2),
            B.stride(0),
            B.stride(1),
            B.stride(2),
            C.stride(0),
            C.stride(1),
            C.stride(2),
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            BLOCK_K=16,
            GROUP_M=8,
            num_warps=8,
            num_stages=4,
        )
        return C
