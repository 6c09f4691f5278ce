"""Argmax over dim 1 (KernelBench level 1 size: 128 x 4096 x 4095 -> 128 x 4095 int64)."""

import torch
import torch.nn as nn

batch_size = 128
dim1 = 4096
dim2 = 4095


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return []
