"""Which device verification runs on."""

from __future__ import annotations

import os

DEVICES = ("auto", "cuda", "cpu")


def resolve_device(device: str) -> str:
    """`auto` becomes `cuda` when a GPU is visible, else `cpu` (kernels then run in Triton's interpreter)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cpu":
        return "cpu"
    import torch

    available = torch.cuda.is_available()
    if device == "cuda" and not available:
        raise ValueError("--device cuda was requested but no CUDA GPU is visible")
    return "cuda" if available else "cpu"


def visible_gpu(index: int) -> str:
    """The CUDA_VISIBLE_DEVICES entry that makes this process's GPU `index` the only one a child sees (a trainer
    rank's own GPU, for its verifier's sandboxes)."""
    if index < 0:
        raise ValueError(f"a GPU index is at least 0, got {index}")
    visible = [entry.strip() for entry in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if entry.strip()]
    if not visible:
        return str(index)
    if index >= len(visible):
        raise ValueError(f"GPU {index} is not visible (CUDA_VISIBLE_DEVICES={','.join(visible)})")
    return visible[index]
