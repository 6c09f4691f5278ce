"""Batched fp32 matrix product (KernelBench level 1 size: 128 x 512 x 1024 @ 128 x 1024 x 2048)."""

import torch
import torch.nn as nn

batch_size = 128
m = 512
k = 1024
n = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
