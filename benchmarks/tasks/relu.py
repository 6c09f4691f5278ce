"""Benchmark task `relu`: torch.relu(x)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
