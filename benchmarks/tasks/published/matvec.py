"""Matrix-vector product (KernelBench level 1 size: 2048 x 1048576 @ 1048576 x 1, 8 GiB fp32 matrix)."""

import torch
import torch.nn as nn

M = 2048
K = 1048576


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
