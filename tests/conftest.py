"""Shared test setup: GPU tests are skipped cleanly where no CUDA device is visible."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@functools.cache
def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    skip_slow = pytest.mark.skip(reason="slow; set TRITONIZE_SKIP_SLOW= (empty) to run")
    for item in items:
        if "gpu" in item.keywords and not cuda_available():
            item.add_marker(skip_gpu)
        if "slow" in item.keywords and os.environ.get("TRITONIZE_SKIP_SLOW"):
            item.add_marker(skip_slow)
