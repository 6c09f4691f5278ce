"""Matrix times a Python float scalar, A * s (KernelBench level 1 size: 65536 x 16384, 4 GiB fp32)."""

import torch
import torch.nn as nn

M = 65536
N = 16384
scalar = 3.14


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        return A * s


def get_inputs():
    return [torch.randn(M, N), scalar]


def get_init_inputs():
    return []
