"""The HTTP tests need the server's dependencies (the `serve` and `dev` extras); the GPU machine has only torch and
Triton, so there they are left out of collection instead of failing it."""

from __future__ import annotations

import importlib.util

SERVER_DEPENDENCIES = ("fastapi", "httpx", "schemathesis")
HTTP_TESTS = ["test_app.py", "test_text_backends.py"]

collect_ignore = [] if all(importlib.util.find_spec(name) for name in SERVER_DEPENDENCIES) else HTTP_TESTS
