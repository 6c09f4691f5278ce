"""Benchmark task `log_softmax`: torch.log_softmax(x, dim=-1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.log_softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
