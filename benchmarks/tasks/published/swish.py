"""Elementwise Swish, x * sigmoid(x), over a 6 GiB fp32 tensor (KernelBench level 1 size: 4096 x 393216)."""

import torch
import torch.nn as nn

batch_size = 4096
dim = 393216


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
