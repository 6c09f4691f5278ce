"""Which device verification runs on."""

from __future__ import annotations

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
