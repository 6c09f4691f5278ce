"""Mean of 1 - cosine similarity over dim 1 (KernelBench level 1 size: two 16384 x 16384 tensors)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16384
dim = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        cosine_sim = F.cosine_similarity(predictions, targets, dim=1)
        return torch.mean(1 - cosine_sim)


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
