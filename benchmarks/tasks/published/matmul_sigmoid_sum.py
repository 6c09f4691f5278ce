"""Linear, sigmoid, row sum (KernelBench level 2 size: 128 x 32768 -> 32768, a 4 GiB fp32 weight)."""

import torch
import torch.nn as nn

batch_size = 128
input_size = 32768
hidden_size = 32768


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        x = torch.sigmoid(self.linear(x))
        return torch.sum(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size]
