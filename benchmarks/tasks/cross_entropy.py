"""Benchmark task `cross_entropy`: F.cross_entropy(x, y)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, y):
        return F.cross_entropy(x, y)


def get_inputs():
    return [torch.randn(4096, 4096), torch.randint(0, 4096, (4096,))]


def get_init_inputs():
    return []
