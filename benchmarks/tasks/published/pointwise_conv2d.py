"""Pointwise (1x1) Conv2d, 64 -> 128 channels, no bias (KernelBench level 1 size: 16 x 64 x 1024 x 1024 input)."""

import torch
import torch.nn as nn

batch_size = 16
in_channels = 64
out_channels = 128
height = 1024
width = 1024


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=False)

    def forward(self, x):
        return self.conv2d(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
