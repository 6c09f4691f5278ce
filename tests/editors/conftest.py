"""What the editors' end-to-end tests share: the model server their conversions go to."""

from __future__ import annotations

import pytest

from tests.model_server import serving


@pytest.fixture(scope="module")
def model_server():
    """A `tritonize serve` on loopback (inductor backend, one conversion at a time): its URL. Without spare capture
    processes: the cancel checks watch for capture processes, which idle spares would always show (a spare's
    cancel is tested in tests/model_server/test_inductor_backend.py)."""
    yield from serving.start_server(["--max-conversions", "1", "--no-spares"])
