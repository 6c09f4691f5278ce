"""What the editors' end-to-end tests share: the model server their conversions go to."""

from __future__ import annotations

import pytest

from tests.model_server import serving


@pytest.fixture(scope="module")
def model_server():
    """A `tritonize serve` on loopback (inductor backend, one conversion at a time): its URL."""
    yield from serving.start_server(["--max-conversions", "1"])
