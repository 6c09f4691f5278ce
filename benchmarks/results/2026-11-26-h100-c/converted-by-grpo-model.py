"""Triton kernels for `synth_5287_multiply_input_sigmoid.py`: Inductor's default kernels.

Derived from TorchInductor's code for the Triton interpreter (CPU) by `tritonize convert --backend inductor` (torch
2.13.0+cpu) and rewritten to stand alone. The kernels are specialised to the task's example
inputs: `forward` refuses inputs of any other shape, stride or dtype."""


import torch
import torch.nn as nn
import triton
import triton.language as tl


rows = 32
features = 128


def unexpected_input(name, tensor, shape, stride, dtype):
    """The kernels are specialised to the example inputs' shapes, strides and dtypes; any other input is refused."""
    return ValueError(
        f"ModelNew was generated for `{name}` of shape {shape}, strides {stride} and {dtype}, but got shape "
        f"{tuple(tensor.shape)}, strides {tensor.stride()} and {tensor.dtype}; convert the task again for these inputs"
    )


@triton.jit
def sigmoid_kernel_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + x0, None)
    tmp2 = tl.load(in_ptr1 + x0, None)
    tmp3 = tl.full([1], 20.0, tl.float32)
    tmp4 = tmp0 * tmp2
    tmp5 = tl.sigmoid(tmp4)
    tl.store(out_ptr0 + x0, tmp5, None)


class ModelNew(nn.Module):
    """Drop-in replacement for the task's `Model`: same parameters, Triton compute."""

    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        if x.shape != (32, 128) or x.stride() != (128, 1) or x.dtype != torch.float32:
            raise unexpected_input('x', x, (32, 128), (128, 1), torch.float32)
        if y.shape != (32, 128) or y.stride() != (128, 1) or y.dtype != torch.float32:
            raise unexpected_input('y', y, (32, 128), (128, 1), torch.float32)
        device = x.device
        buf0 = torch.empty_strided((32, 128), (128, 1), dtype=torch.float32, device=device)
        sigmoid_kernel_0[(16,)](x, y, buf0, 4096, XBLOCK=256, num_warps=4, num_stages=1)
        return buf0
