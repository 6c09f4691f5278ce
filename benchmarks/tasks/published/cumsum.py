"""Inclusive cumulative sum along rows (KernelBench level 1 size: 32768 x 32768)."""

import torch
import torch.nn as nn

batch_size = 32768
dim = 32768


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
