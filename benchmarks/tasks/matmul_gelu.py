"""Benchmark task `matmul_gelu`: F.gelu(x @ y)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, y):
        return F.gelu(x @ y)


def get_inputs():
    return [torch.randn(2048, 2048), torch.randn(2048, 2048)]


def get_init_inputs():
    return []
