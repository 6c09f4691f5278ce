"""ConvTranspose3d kernel 3, stride 2, padding 1, 4 groups, 32 -> 32 channels, no bias (KernelBench level 1 size:
4 x 32 x 32 x 64 x 128 input)."""

import torch
import torch.nn as nn

shape = (4, 32, 32, 64, 128)


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.up = nn.ConvTranspose3d(channels, channels, 3, stride=2, padding=1, groups=groups, bias=False)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(*shape)]


def get_init_inputs():
    return [shape[1], 4]
