"""Benchmark task `add_mul_tanh`: torch.tanh((x + y) * y - 1.0)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.tanh((x + y) * y - 1.0)


def get_inputs():
    return [torch.randn(4096, 4096), torch.randn(4096, 4096)]


def get_init_inputs():
    return []
