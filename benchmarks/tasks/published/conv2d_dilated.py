"""Conv2d with a 5 x 9 kernel dilated (2, 3), padding (2, 4), 32 -> 64 channels, no bias (KernelBench level 1 size:
8 x 32 x 512 x 512 input)."""

import torch
import torch.nn as nn

shape = (8, 32, 512, 512)


class Model(nn.Module):
    def __init__(self, channels_in, channels_out):
        super().__init__()
        self.conv = nn.Conv2d(channels_in, channels_out, (5, 9), padding=(2, 4), dilation=(2, 3), bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(*shape)]


def get_init_inputs():
    return [shape[1], 64]
