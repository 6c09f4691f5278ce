"""Mean cross-entropy loss (KernelBench level 1 size: 32768 x 4096 logits, int64 targets)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 32768
num_classes = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.cross_entropy(predictions, targets)


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
