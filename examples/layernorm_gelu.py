"""LayerNorm followed by GELU: a KernelBench-style task for `tritonize convert`.

``Model`` holds a learnable ``nn.LayerNorm`` (weight and bias); the converted
``ModelNew`` keeps the same parameters and fuses the normalisation, the affine
step and the GELU into one Triton kernel. Shapes are small so the conversion
and its verification finish quickly on a CPU (in Triton's interpreter).

    tritonize convert examples/layernorm_gelu.py
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """y = gelu(layer_norm(x)) over the last dimension."""

    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        return F.gelu(self.norm(x))


def get_inputs():
    return [torch.randn(64, 512)]


def get_init_inputs():
    return [512]
