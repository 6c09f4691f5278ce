"""Shared test setup: a temporary home for the whole run, and GPU tests skipped cleanly where no CUDA device is
visible."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
HOME_VARIABLES = ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "TRITONIZE_CACHE")
_HOME = Path(tempfile.mkdtemp(prefix="tritonize-tests-home-"))


def pytest_configure(config: pytest.Config) -> None:
    """Tests leave no trace: every cache, log and config goes under a temporary home, for this process and every
    process it starts (model servers, language servers, Neovim, sandboxes)."""
    for variable in HOME_VARIABLES:
        os.environ[variable] = str(_HOME / variable.lower())


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HOME, ignore_errors=True)


def temporary_home() -> Path:
    """The temporary home of this test run."""
    return _HOME


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
