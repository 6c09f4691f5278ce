"""Benchmark task `layernorm`: nn.LayerNorm over the last dimension (weight and bias are parameters)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return [4096]
