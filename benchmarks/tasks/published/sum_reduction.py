"""Sum over dim 1, keepdim (KernelBench level 1 size: 128 x 4096 x 4095, 8 GiB fp32 -> 128 x 1 x 4095)."""

import torch
import torch.nn as nn

batch_size = 128
dim1 = 4096
dim2 = 4095
reduce_dim = 1


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
