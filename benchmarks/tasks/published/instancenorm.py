"""InstanceNorm2d, no affine, per-instance statistics (KernelBench level 1 size: 112 x 64 x 512 x 512, 7 GiB fp32)."""

import torch
import torch.nn as nn

batch_size = 112
features = 64
dim1 = 512
dim2 = 512


class Model(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x):
        return self.inorm(x)


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
