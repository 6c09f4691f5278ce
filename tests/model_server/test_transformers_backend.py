"""The transformers backend batches the requests that wait for the model into one generate call, and each caller
gets its own replies: the same as it would have got alone. A tiny random Llama built offline, on the CPU."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from model_server.backends.transformers_backend import TransformersBackend
from tests.model_server.tiny_model import build_tiny_llama

SHORT = "x = 1"
LONG = "import torch\nimport triton\n\nclass Model(torch.nn.Module):\n    def forward(self, x):"


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    model = build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))
    return TransformersBackend(str(model), "chat", device="cpu", temperature=0.0)


def generate_calls(backend, monkeypatch) -> list[int]:
    """The number of sequences of each generate call the backend makes from now on."""
    calls: list[int] = []
    generate = backend.model.generate

    def counted(**kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return generate(**kwargs)

    monkeypatch.setattr(backend.model, "generate", counted)
    return calls


def while_busy(backend, requests: list[tuple[str, int]]) -> list:
    """Send `requests` (prompt, n) from threads while the model is busy, then free it: the futures."""
    pool = ThreadPoolExecutor(len(requests))
    with backend._lock:
        futures = [pool.submit(backend.complete, prompt, n, 12) for prompt, n in requests]
        deadline = time.monotonic() + 10
        while len(backend._queue) < len(requests) and time.monotonic() < deadline:
            time.sleep(0.01)
    pool.shutdown(wait=True)
    return futures


def test_waiting_requests_share_one_generate_call_and_each_gets_what_it_would_alone(backend, monkeypatch):
    alone_short = backend.complete(SHORT, 1, 12)
    alone_long = backend.complete(LONG, 1, 12)
    assert alone_short != alone_long
    calls = generate_calls(backend, monkeypatch)
    short, long = while_busy(backend, [(SHORT, 2), (LONG, 1)])
    assert calls == [3]
    assert short.result() == alone_short * 2  # greedy: left padding changes nothing
    assert long.result() == alone_long


def test_a_batch_holds_at_most_batch_sequences(backend, monkeypatch):
    calls = generate_calls(backend, monkeypatch)
    monkeypatch.setattr(backend, "batch", 2)
    futures = while_busy(backend, [(SHORT, 1), (LONG, 1), (SHORT, 1)])
    assert sorted(calls) == [1, 2] and all(len(f.result()) == 1 for f in futures)


def test_a_failed_generate_call_fails_every_request_it_held_and_the_next_call_works(backend, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(backend.model, "generate", broken)
    futures = while_busy(backend, [(SHORT, 1), (LONG, 2)])
    for future in futures:
        with pytest.raises(RuntimeError, match="out of memory"):
            future.result()
    monkeypatch.undo()
    assert len(backend.complete(SHORT, 2, 4)) == 2
