"""AvgPool3d over 3 x 3 x 3 windows, stride 2, padding 1 (KernelBench level 1 size: 16 x 32 x 128 x 128 x 256
input): 27-element overlapping windows, which torch.compile hands to ATen."""

import torch
import torch.nn as nn

shape = (16, 32, 128, 128, 256)


class Model(nn.Module):
    def __init__(self, kernel, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool3d(kernel, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.rand(*shape)]


def get_init_inputs():
    return [3, 2, 1]
