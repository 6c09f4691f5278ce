"""The model server over real HTTP: a `tritonize serve` process on 127.0.0.1 with the built-in backend (CPU)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from model_server import api
from tests.conftest import FIXTURES
from tests.model_server import serving
from tests.model_server.events import kinds, without_heartbeats

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RELU = (FIXTURES / "tasks" / "relu.py").read_text()


def start_server(options: list[str], token: str | None = TOKEN):
    yield from serving.start_server(options, token)


@pytest.fixture(scope="module")
def server():
    yield from start_server(["--max-conversions", "1", "--max-queued", "0"])


def _events(response: httpx.Response) -> list[dict]:
    return [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")]


def test_health_is_open_and_everything_else_needs_the_token(server):
    assert httpx.get(f"{server}/health").json()["backend"] == "inductor"
    assert httpx.get(f"{server}/v1/models").status_code == 401
    models = httpx.get(f"{server}/v1/models", headers=AUTH).json()
    assert [m["id"] for m in models["data"]] == ["inductor"]


def test_a_server_other_machines_can_reach_needs_a_token_or_the_flag_that_waives_it():
    env = {k: v for k, v in os.environ.items() if k != "TRITONIZE_TOKEN"}
    command = [sys.executable, "-m", "model_server", "serve", "--host", "0.0.0.0", "--port", str(serving.free_port())]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert refused.returncode == 2, refused.stderr
    assert "--host 0.0.0.0 is reachable from other machines: pass --token T" in refused.stderr
    assert "--allow-no-token" in refused.stderr
    waived = serving.start_server(["--host", "0.0.0.0", "--allow-no-token", "--no-spares"])
    base = next(waived)
    try:
        assert httpx.get(f"{base}/v1/models").status_code == 200
    finally:
        next(waived, None)  # past its yield: the server is stopped


PROBE = "disconnect_probe"  # the task's name: its capture's argv ends in this file name


def _captures_running() -> int:
    """Inductor capture processes at work on this test's task: a server without spares starts one only for a
    conversion. Other tests' captures (another worker's conversions, other servers' spares) are not counted."""
    count = 0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        on_probe = any(word.endswith(f"/{PROBE}.py".encode()) for word in words)
        count += b"model_server.inductor.capture" in words and on_probe
    return count


@pytest.mark.slow
def test_a_client_that_disconnects_stops_the_compile_within_seconds():
    waiting_task = RELU.replace("def get_inputs", "import time\ntime.sleep(60)\n\n\ndef get_inputs")
    assert _captures_running() == 0
    served = start_server(["--no-spares"])
    server = next(served)
    try:
        body = {"task": waiting_task, "task_name": PROBE, "trials": 2}
        with httpx.stream("POST", f"{server}/v1/convert", json=body, headers=AUTH, timeout=60) as response:
            lines = response.iter_lines()
            while "round" not in next(lines):
                pass
            deadline = time.monotonic() + 30
            while not _captures_running() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _captures_running(), "the compile never started"
        left = time.monotonic()
        while _captures_running() and time.monotonic() < left + 30:
            time.sleep(0.2)
        assert not _captures_running(), "the compile outlived the client"  # its task sleeps 60 s at import
    finally:
        next(served, None)


@pytest.mark.slow
def test_convert_streams_every_step_and_the_verified_kernel(server):
    body = {"task": RELU, "task_name": "relu", "trials": 2}
    with httpx.stream("POST", f"{server}/v1/convert", json=body, headers=AUTH, timeout=300) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = without_heartbeats(_events(response))
    assert kinds(events) == ["accepted", "round", "note", "candidate", "done"]
    assert events[3]["verdict"] == "correct" and events[3]["round"] == 1
    assert events[2]["message"].startswith("inductor made 1 candidate of the 4 asked for")
    assert events[3]["label"] == "Inductor's default kernels" and events[3]["policy"] == "strict"
    done = events[-1]
    assert done["best"]["why"] == "correct" and done["text"].endswith("chose round 1 candidate 1: correct")
    assert "class ModelNew" in done["best"]["source"] and done["report"]["verdict"] == "correct"


@pytest.mark.slow
def test_a_second_conversion_beyond_the_limit_gets_429(server):
    body = {"task": RELU, "task_name": "relu", "trials": 1}
    with httpx.stream("POST", f"{server}/v1/convert", json=body, headers=AUTH, timeout=300) as first:
        lines = first.iter_lines()
        assert json.loads(next(line for line in lines if line.startswith("data:"))[5:])["event"] == "accepted"
        second = httpx.post(f"{server}/v1/convert", json=body, headers=AUTH)
        assert second.status_code == 429 and "too many conversions" in second.json()["detail"]
        rest = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
        assert rest[-1]["event"] == "done"


def test_a_task_that_does_not_load_is_an_error_event(server):
    with httpx.stream("POST", f"{server}/v1/convert", json={"task": "import torch\n"}, headers=AUTH) as response:
        events = _events(response)
    assert response.status_code == 200 and events[-1]["event"] == "error"
    assert events[-1]["message"] == (
        "the task does not load: task.py:1: not a task: it defines no `Model`, `get_inputs`, `get_init_inputs`"
    )


def test_bad_requests_name_what_is_wrong(server):
    def post(body: dict, headers: dict | None = None) -> httpx.Response:
        return httpx.post(f"{server}/v1/convert", headers={**AUTH, **(headers or {})}, **body)

    invalid = post({"json": {"task": RELU, "samples": 0}})
    assert invalid.status_code == 422 and invalid.json()["detail"][0]["loc"] == ["body", "samples"]
    assert post({"content": b"{not json"}, {"content-type": "application/json"}).status_code == 422
    too_big = post({"content": b"x" * (2 * 1024 * 1024)}, {"content-type": "application/json"})
    assert too_big.status_code == 413
    unknown = post({"json": {"task": RELU, "backend": "vllm"}})
    assert (
        unknown.status_code == 404
        and "known backends: inductor, openai, transformers, vllm" in unknown.json()["detail"]
    )
    model = post({"json": {"task": RELU, "model": "AutoTriton-8B"}})
    assert model.status_code == 404 and "available: inductor" in model.json()["detail"]
    chat = httpx.post(
        f"{server}/v1/chat/completions",
        headers=AUTH,
        json={"model": "inductor", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert chat.status_code == 404 and "does not generate text" in chat.json()["detail"]


def test_our_endpoints_refuse_unknown_fields_and_openai_s_ignore_them(server):
    verify = httpx.post(f"{server}/v1/verify", headers=AUTH, json={"task": RELU, "candidate": RELU, "trails": 2})
    assert verify.status_code == 422
    assert verify.json()["detail"] == [
        {
            "type": "extra_forbidden",
            "loc": ["body", "trails"],
            "msg": "unknown field `trails`; /v1/verify takes task, candidate, trials, timeout, policy, sanitize, "
            "dynamic",
            "input": 2,
        }
    ]
    convert = httpx.post(f"{server}/v1/convert", headers=AUTH, json={"task": RELU, "sample": 1, "name": "x"})
    assert convert.status_code == 422
    assert [error["loc"] for error in convert.json()["detail"]] == [["body", "sample"], ["body", "name"]]
    assert convert.json()["detail"][0]["msg"].startswith("unknown field `sample`; /v1/convert takes task, task_name,")
    openai_extras = {"top_p": 1, "stream": False, "user": "someone", "presence_penalty": 0}
    chat = httpx.post(
        f"{server}/v1/chat/completions",
        headers=AUTH,
        json={"model": "inductor", "messages": [{"role": "user", "content": "hi", "name": "me"}], **openai_extras},
    )
    completion = httpx.post(
        f"{server}/v1/completions", headers=AUTH, json={"model": "inductor", "prompt": "hi", **openai_extras}
    )
    for response in (chat, completion):  # past validation: only the backend's "no text here" refuses them
        assert response.status_code == 404 and "does not generate text" in response.json()["detail"]


def test_a_task_name_that_is_not_an_identifier_is_named(server):
    for name in ("my-task", "1st", "x" * 65, "", "relu.py"):
        response = httpx.post(f"{server}/v1/convert", headers=AUTH, json={"task": RELU, "task_name": name})
        assert response.status_code == 422, name
        (error,) = response.json()["detail"]
        assert error["loc"] == ["body", "task_name"] and error["input"] == name
        assert error["msg"] == (
            "task_name must be a Python identifier (ASCII letters, digits and underscores, not starting with a "
            "digit, at most 64 characters): it names the task's module"
        )


def test_the_convert_body_is_the_convert_request(server):
    """One declaration: the schema /openapi.json gives for /v1/convert has the request's fields, defaults and
    bounds, so what the command line and the language server build is what the server takes."""
    schema = httpx.get(f"{server}/openapi.json", headers=AUTH).json()
    reference = schema["paths"]["/v1/convert"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    body = schema["components"]["schemas"][reference["$ref"].rsplit("/", 1)[1]]
    fields = dataclasses.fields(api.ConvertRequest)
    assert list(body["properties"]) == [f.name for f in fields] and body["required"] == ["task"]
    assert body["additionalProperties"] is False
    for each in fields:
        shown = body["properties"][each.name]
        assert shown["description"] == each.metadata["description"], each.name
        if each.default not in (dataclasses.MISSING, None):  # FastAPI's schema leaves out a default of null
            assert shown["default"] == each.default, each.name
    assert body["properties"]["policy"]["default"] == api.POLICY == "strict"
    assert body["properties"]["samples"]["minimum"] == 1 and body["properties"]["samples"]["maximum"] == 64
    sent = api.ConvertRequest(task=RELU, task_name="relu", samples=1, rounds=1, trials=1).to_body()
    with httpx.stream("POST", f"{server}/v1/convert", headers=AUTH, json=sent, timeout=600) as response:
        assert response.status_code == 200
        assert _events(response)[-1]["event"] == "done"


def test_a_chunked_body_over_the_limit_gets_413(server):
    chunks = iter([b" " * 64 * 1024] * 24)  # 1.5 MiB, no Content-Length
    response = httpx.post(f"{server}/v1/convert", headers={**AUTH, "content-type": "application/json"}, content=chunks)
    assert response.request.headers["transfer-encoding"] == "chunked"
    assert response.status_code == 413
    assert response.json() == {"detail": "request body over the server's limit of 1 MiB"}


@pytest.mark.slow
def test_convert_takes_the_verification_timeout(server):
    body = {"task": RELU, "task_name": "relu", "trials": 1, "rounds": 1, "timeout": 0.05}
    with httpx.stream("POST", f"{server}/v1/convert", json=body, headers=AUTH, timeout=300) as response:
        events = _events(response)
    candidate = next(e for e in events if e["event"] == "candidate")
    assert candidate["verdict"] == "timeout"
    assert candidate["message"].startswith("the candidate did not finish within the 0.05 s timeout and was killed")


def test_verify_returns_the_report(server):
    candidate = (FIXTURES / "candidates" / "relu_ok.py").read_text()
    report = httpx.post(
        f"{server}/v1/verify", headers=AUTH, json={"task": RELU, "candidate": candidate, "trials": 2}, timeout=120
    )
    assert report.status_code == 200 and report.json()["verdict"] == "correct"
    hybrid = httpx.post(
        f"{server}/v1/verify",
        headers=AUTH,
        json={"task": RELU, "candidate": candidate, "trials": 2, "policy": "hybrid"},
        timeout=120,
    )
    assert hybrid.status_code == 200 and hybrid.json()["policy"] == "hybrid"
    unknown = httpx.post(
        f"{server}/v1/verify", headers=AUTH, json={"task": RELU, "candidate": candidate, "policy": "x"}
    )
    assert unknown.status_code == 422
    broken = httpx.post(f"{server}/v1/verify", headers=AUTH, json={"task": "x = 1\n", "candidate": candidate})
    assert broken.status_code == 400
    assert broken.json()["detail"].startswith("the task does not load: task.py:1: not a task")
    unknown_argument = httpx.post(
        f"{server}/v1/verify", headers=AUTH, json={"task": RELU, "candidate": candidate, "dynamic": "y:0"}
    )
    assert unknown_argument.status_code == 400
    assert unknown_argument.json()["detail"] == "the dynamic spec names `y`, but task.py's Model.forward takes x"


def test_failing_verifications_name_no_path_of_the_server(server):
    """What the server writes the task and candidate to, and where it runs from, are its own business."""
    candidate = (FIXTURES / "candidates" / "relu_ok.py").read_text()
    failing = [
        {"task": RELU.replace("def get_inputs", "raise RuntimeError('boom')\ndef get_inputs"), "candidate": candidate},
        {"task": RELU, "candidate": "def (:\n"},
        {"task": RELU, "candidate": candidate.replace("x = x.contiguous()", "x = x.no_such()")},
        {"task": RELU, "candidate": "import torch\nraise ValueError(open('/etc/hostname').read())\n"},
    ]
    places = [tempfile.gettempdir(), str(Path(__file__).resolve().parents[2]), str(Path.home())]
    for body in failing:
        response = httpx.post(f"{server}/v1/verify", headers=AUTH, json=body | {"trials": 2}, timeout=120)
        assert response.status_code in (200, 400), response.text
        assert not [place for place in places if place in response.text], response.text


@pytest.mark.slow
def test_no_request_gets_a_server_error(server):
    """Schemathesis: generated requests (valid and not) for every operation in /openapi.json never get a 5xx.

    Driven through hypothesis directly rather than schemathesis' pytest plugin, which breaks on pytest 9.2."""
    schema = schemathesis.openapi.from_url(f"{server}/openapi.json", headers=AUTH)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.label for op in operations} >= {"POST /v1/convert", "POST /v1/verify", "GET /v1/models"}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case):
            if isinstance(case.body, dict) and "trials" in case.body:
                case.body["trials"] = 1
            response = case.call(headers=AUTH, timeout=120)
            assert response.status_code < 500, f"{case.operation.label}: {response.status_code} {response.text[:300]}"

        check()
