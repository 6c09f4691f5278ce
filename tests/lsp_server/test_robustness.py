"""The server under abuse: random edits (hypothesis), broken frames and bad requests get JSON-RPC errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lsp_server.rpc import RawServer

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "examples" / "softmax_triton.py").read_text()
URI = "file:///fuzz/kernel.py"


@pytest.fixture(scope="module")
def server():
    raw = RawServer()
    raw.initialize()
    raw.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}},
    )
    yield raw
    raw.close()


position = st.fixed_dictionaries({"line": st.integers(0, 80), "character": st.integers(0, 120)})
change = st.one_of(
    st.fixed_dictionaries(
        {"range": st.fixed_dictionaries({"start": position, "end": position}), "text": st.text(max_size=40)}
    ),
    st.fixed_dictionaries({"text": st.text(max_size=300)}),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(change, min_size=1, max_size=6))
def test_random_edits_never_break_the_server(server, changes):
    server.version = getattr(server, "version", 1) + 1
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": URI, "version": server.version}, "contentChanges": changes},
    )
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 10_000, "character": 0}}
    request = server.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": URI}, "range": everything, "context": {"diagnostics": []}},
    )
    answer = server.response(request)
    assert "result" in answer, answer
    assert server.process.poll() is None


def test_bad_requests_get_json_rpc_errors_and_the_server_carries_on(server):
    unknown = server.request("tritonize/noSuchMethod", {})
    assert server.response(unknown)["error"]["code"] == -32601
    wrong = server.request("textDocument/codeAction", {"textDocument": 42})
    assert server.response(wrong)["error"]["code"] == -32602
    command = server.request("workspace/executeCommand", {"command": "tritonize.nope", "arguments": []})
    assert server.response(command)["error"]["code"] == -32602
    bad_args = server.request("workspace/executeCommand", {"command": "tritonize.convert", "arguments": ["x"]})
    assert server.response(bad_args)["result"]["status"] == "error"
    server.send_bytes(b"{not json")
    assert server.wait_for(lambda m: "error" in m)["error"]["code"] == -32700
    server.send({"method": "textDocument/didChange", "params": {"textDocument": {"uri": "file:///never-opened.py"}}})
    alive = server.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": URI},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}},
            "context": {"diagnostics": []},
        },
    )
    assert "result" in server.response(alive)


def test_a_client_without_workspace_configuration_is_configured_by_initialization_options():
    raw = RawServer()
    try:
        options = {"tritonize": {"samples": 0, "audit": {"ignore": ["TRI1"]}}}
        raw.response(
            raw.request("initialize", {"processId": None, "capabilities": {}, "initializationOptions": options})
        )
        raw.notify("initialized", {})
        warning = raw.wait_for(lambda m: m.get("method") == "window/showMessage")
        assert (
            warning["params"]["message"]
            == "tritonize: tritonize.samples: expected a whole number from 1 to 64; using 4"
        )
        text = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x):\n    offs = tl.arange(0, 100)\n"
        raw.notify(
            "textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": text}}
        )
        published = raw.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        assert [d["code"] for d in published["params"]["diagnostics"]] == []  # TRI101 is ignored
    finally:
        raw.close()


def test_requests_about_a_document_never_opened_get_answers_not_tracebacks(server):
    never = "file:///nowhere/never_opened.py"
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 10, "character": 0}}
    actions = server.request(
        "textDocument/codeAction", {"textDocument": {"uri": never}, "range": everything, "context": {"diagnostics": []}}
    )
    assert server.response(actions)["result"] == []
    for command in ("tritonize.convert", "tritonize.verify"):
        asked = server.request(
            "workspace/executeCommand", {"command": command, "arguments": [{"uri": never, "line": 0}]}
        )
        result = server.response(asked)["result"]
        assert result == {
            "status": "error",
            "message": "/nowhere/never_opened.py is not open in the editor; open it, then try again",
        }


def test_a_handler_that_fails_answers_with_one_message_and_no_traceback(monkeypatch):
    """pygls would put the Python traceback in the error's data, which editors show as is."""
    import sys

    from pygls.exceptions import JsonRpcInternalError

    from lsp_server.server import server as language_server

    sent = []
    monkeypatch.setattr(language_server.protocol, "_send_data", sent.append)
    try:
        raise FileNotFoundError("/nowhere/x.py")
    except FileNotFoundError:
        error = JsonRpcInternalError.of(sys.exc_info()).to_response_error()
    assert "traceback" in error.data
    language_server.protocol._send_response(7, error=error)
    [response] = sent
    assert response.error.code == -32603 and response.error.data is None
    assert response.error.message == (
        "tritonize's language server failed on this request: FileNotFoundError: /nowhere/x.py (see its log)"
    )
