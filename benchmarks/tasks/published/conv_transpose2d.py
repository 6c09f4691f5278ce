"""ConvTranspose2d kernel 3, stride 1, 64 -> 64 channels, no bias (KernelBench level 1 size: 8 x 64 x 1024 x 1024
input)."""

import torch
import torch.nn as nn

batch_size = 8
channels = 64
kernel_size = 3
side = 1024


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.up = nn.ConvTranspose2d(channels, channels, kernel_size, bias=False)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(batch_size, channels, side, side)]


def get_init_inputs():
    return [channels, kernel_size]
