"""The decomposition table of the templates capture: Inductor's own, with the convolutions and pools that
Inductor would hand to a library rewritten into ones it compiles to Triton (`convolutions.py`, `pooling.py`)."""

from __future__ import annotations

import torch

from model_server.inductor import convolutions, pooling


def templates_table() -> dict:
    """The table to give `compile_fx` in the templates capture."""
    from torch._inductor.decomposition import select_decomp_table

    return {
        **select_decomp_table(),
        torch.ops.aten.convolution.default: convolutions.convolution,
        **pooling.decompositions(),
    }
