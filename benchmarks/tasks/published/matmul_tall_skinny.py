"""Tall-skinny matrix product (KernelBench level 1 size: 32768 x 32 @ 32 x 32768 -> 32768 x 32768, 4 GiB out)."""

import torch
import torch.nn as nn

M = 32768
N = 32


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, N), torch.randn(N, M)]


def get_init_inputs():
    return []
