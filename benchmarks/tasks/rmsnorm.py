"""Benchmark task `rmsnorm`: x * rsqrt(mean(x^2) + eps) * weight."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * self.weight


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return [4096]
