"""Depthwise Conv2d 3x3, 64 channels, no bias (KernelBench level 1 size: 16 x 64 x 512 x 512 input)."""

import torch
import torch.nn as nn

batch_size = 16
in_channels = 64
kernel_size = 3
height = 512
width = 512


class Model(nn.Module):
    def __init__(self, in_channels, kernel_size):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size, groups=in_channels, bias=False)

    def forward(self, x):
        return self.conv2d(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, kernel_size]
