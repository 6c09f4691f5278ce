"""The transformers backend batches the requests that wait for the model into one generate call, and each caller
gets its own replies: the same as it would have got alone. A tiny random Llama built offline, on the CPU."""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from model_server import cli
from model_server.backends.base import BackendError
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


def test_requests_of_one_burst_share_one_call_though_the_model_was_idle(backend, monkeypatch):
    """An evaluation's threads queue their tasks a few milliseconds apart: the first call waits for them all,
    rather than serving the first alone and keeping the rest waiting a whole call."""
    calls = generate_calls(backend, monkeypatch)
    pool = ThreadPoolExecutor(4)
    futures = []
    for prompt in (SHORT, LONG, SHORT, LONG):
        futures.append(pool.submit(backend.complete, prompt, 1, 12))
        time.sleep(0.05)
    pool.shutdown(wait=True)
    assert calls == [4] and all(len(f.result()) == 1 for f in futures)


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


def test_compile_decodes_with_a_static_cache_in_full_batches_and_answers_the_same(backend, monkeypatch):
    """`compile` (on a CPU: the static cache without the compile): the batch is filled up to `batch` rows and the
    prompts padded to a width bucket, so a GPU compiles once; greedy replies are those of the eager path."""
    eager = [backend.complete(SHORT, 1, 12), backend.complete(LONG, 1, 12)]
    static = TransformersBackend(backend.model_id, "chat", device="cpu", temperature=0.0, batch=4, compile=True)
    shapes, caches = [], []
    generate = static.model.generate

    def recorded(**kwargs):
        shapes.append(tuple(kwargs["input_ids"].shape))
        caches.append(kwargs["generation_config"].cache_implementation)
        return generate(**kwargs)

    monkeypatch.setattr(static.model, "generate", recorded)
    assert [static.complete(SHORT, 1, 12), static.complete(LONG, 1, 12)] == eager
    assert shapes == [(4, 256), (4, 256)] and caches == ["static", "static"]


@pytest.mark.gpu
def test_a_float32_checkpoint_is_sampled_in_bfloat16_on_a_gpu(backend):
    """As GRPO's rollout samples the policy; float32 decoding would move twice the bytes."""
    import torch

    on_gpu = TransformersBackend(backend.model_id, "chat", device="cuda", temperature=0.0, batch=4, compile=True)
    assert backend.model.dtype == torch.float32
    assert (on_gpu.model.dtype, on_gpu.model.device.type) == (torch.bfloat16, "cuda")
    replies = [on_gpu.complete(SHORT, 1, 12), on_gpu.complete(LONG, 1, 12)]  # static cache, compiled, in bf16
    assert [len(reply) for reply in replies] == [1, 1] and all(isinstance(reply[0], str) for reply in replies)


def test_an_explicit_dtype_is_what_the_model_samples_in(backend):
    """`auto` keeps a float32 checkpoint as saved on a CPU; a named dtype casts it, on any device."""
    import torch

    halved = TransformersBackend(backend.model_id, "chat", device="cpu", temperature=0.0, dtype="bfloat16")
    assert (backend.model.dtype, halved.model.dtype) == (torch.float32, torch.bfloat16)
    reply = halved.complete(SHORT, 1, 12)
    assert len(reply) == 1 and isinstance(reply[0], str)


def test_an_unknown_dtype_is_refused_before_the_model_loads(backend):
    with pytest.raises(BackendError, match="dtype must be one of auto, float32, bfloat16, float16, got 'fp8'"):
        TransformersBackend(backend.model_id, "chat", device="cpu", dtype="fp8")


@pytest.mark.parametrize("command", ["convert", "serve"])
def test_the_dtype_flag_reaches_the_backend_and_a_bad_one_is_refused(command, capsys):
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers())
    task = [] if command == "serve" else ["task.py"]
    base = [command, *task, "--backend", "transformers", "--model", "m"]
    assert cli._backend_config(parser.parse_args(base)).dtype == "auto"
    assert cli._backend_config(parser.parse_args([*base, "--dtype", "float32"])).dtype == "float32"
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--dtype", "fp8"])
    assert "argument --dtype: invalid choice: 'fp8'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["convert", "serve"])
def test_the_compile_flag_reaches_the_backend(command):
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers())
    task = [] if command == "serve" else ["task.py"]
    plain = parser.parse_args([command, *task, "--backend", "transformers", "--model", "m"])
    compiled = parser.parse_args([command, *task, "--backend", "transformers", "--model", "m", "--compile"])
    assert cli._backend_config(plain).compile is False and cli._backend_config(compiled).compile is True
