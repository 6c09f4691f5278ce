"""Hinge loss with +-1 targets broadcast over the last dim (KernelBench level 1 size: 32768 x 32768 predictions)."""

import torch
import torch.nn as nn

batch_size = 32768
dim = 32768


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randint(0, 2, (dim,)).float() * 2 - 1]


def get_init_inputs():
    return []
