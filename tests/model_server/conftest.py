"""The HTTP tests need the server's dependencies (the `serve` and `dev` extras); the GPU machine has only torch and
Triton, so there they are left out of collection instead of failing it. `pool`: a CPU verifier pool of two slots,
one per test module (a module may define its own)."""

from __future__ import annotations

import importlib.util

import pytest

from verifier.host.pool import VerifierPool

SERVER_DEPENDENCIES = ("fastapi", "httpx", "schemathesis")
HTTP_TESTS = ["test_app.py", "test_text_backends.py"]

collect_ignore = [] if all(importlib.util.find_spec(name) for name in SERVER_DEPENDENCIES) else HTTP_TESTS


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=2, device="cpu") as pool:
        yield pool
