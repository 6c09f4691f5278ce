"""Matrix product with a transposed operand, A.T @ B (KernelBench level 1 size: A 8192 x 2048, B 8192 x 4096)."""

import torch
import torch.nn as nn

M = 2048
K = 8192
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.T, B)


def get_inputs():
    return [torch.randn(K, M), torch.randn(K, N)]


def get_init_inputs():
    return []
