"""RMSNorm over the channel dim, written out in PyTorch (KernelBench level 1 size: 112 x 64 x 512 x 512, 7 GiB fp32)."""

import torch
import torch.nn as nn

batch_size = 112
features = 64
dim1 = 512
dim2 = 512
eps = 1e-5


class Model(nn.Module):
    def __init__(self, num_features, eps):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x**2, dim=1, keepdim=True) + self.eps)
        return x / rms


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features, eps]
