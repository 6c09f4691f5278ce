"""Row softmax: a KernelBench-style task.

A task file describes *what* to compute, in plain PyTorch:

- ``Model`` is the reference implementation; ``forward`` takes the tensors
  returned by ``get_inputs()``.
- ``get_inputs()`` returns fresh random inputs each time it is called.
- ``get_init_inputs()`` returns the arguments for ``Model(...)`` (none here).

Here every row of a (16, 384) matrix is turned into a probability
distribution: ``softmax(x)[i, j] = exp(x[i, j]) / sum_k exp(x[i, k])``.
The shapes are small so the check runs quickly on a CPU.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over dim=1 of a 2-D tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(16, 384)]


def get_init_inputs():
    return []
