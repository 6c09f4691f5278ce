"""Benchmark task `matmul_bias_relu`: torch.relu(x @ y + 1.0)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x @ y + 1.0)


def get_inputs():
    return [torch.randn(2048, 2048), torch.randn(2048, 2048)]


def get_init_inputs():
    return []
