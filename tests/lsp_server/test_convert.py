"""Convert to Triton, Verify and Add example inputs through the language server, against a real model server.

`tritonize serve` (built-in inductor backend, CPU) is started by the module fixture; pytest-lsp drives the
language server with VS Code's and Neovim's capabilities. The client side of `workspace/applyEdit` is the
test's: it records the edit and says it was applied, as an editor would.
"""

from __future__ import annotations

import ast
import asyncio
import sys
import time
from pathlib import Path

import httpx
import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.lsp_server.editing import apply_text_edits, edits_for, replace_text
from tests.model_server import serving

ROOT = Path(__file__).resolve().parents[2]
TASK = (ROOT / "examples" / "layernorm_gelu.py").read_text()
FUNCTION = """import torch


def scaled_tanh(x: torch.Tensor, y: torch.Tensor):
    return torch.tanh(x) * y + 1.0
"""
CLIENTS = ["visual_studio_code", "neovim"]


@pytest.fixture(scope="module")
def model_server():
    yield from serving.start_server(["--max-conversions", "1"])


@pytest_lsp.fixture(params=CLIENTS, config=ClientServerConfig(server_command=[sys.executable, "-m", "lsp_server"]))
async def client(request, lsp_client: LanguageClient, model_server):
    lsp_client.applied = []
    lsp_client.started_servers = []
    lsp_client.set_configuration(
        {"serverUrl": model_server, "autoStart": False, "samples": 1, "rounds": 1, "trials": 2},
        section="tritonize",
    )

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        lsp_client.applied.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    params = types.InitializeParams(capabilities=client_capabilities(request.param))
    result = await lsp_client.initialize_session(params)
    lsp_client.encoding = result.capabilities.position_encoding or types.PositionEncodingKind.Utf16
    lsp_client.name = request.param
    yield
    await lsp_client.shutdown_session()
    for url in lsp_client.started_servers:  # a model server the language server started dies with it
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/health", timeout=2)


async def _open(client: LanguageClient, path: Path, text: str) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return uri


async def _actions(client: LanguageClient, uri: str, line: int) -> dict[str, types.CodeAction]:
    here = types.Position(line=line, character=4)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=here, end=here),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return {action.title: _code_action(action) for action in actions}


def _code_action(item: types.CodeAction | types.Command) -> types.CodeAction:
    """Undo a client-side parsing bug: lsprotocol 2025.0.0 reads any code action that carries a command as a
    `Command` whose `command` is the repr of the real one (its union hook only looks for a "command" key)."""
    if isinstance(item, types.CodeAction):
        return item
    raw = ast.literal_eval(item.command)
    return types.CodeAction(title=item.title, command=types.Command(**raw))


async def _run(client: LanguageClient, command: types.Command, **extra) -> dict:
    arguments = [{**command.arguments[0], **extra}] if extra else command.arguments
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=arguments)
    )


@pytest.mark.slow
@pytest.mark.asyncio
async def test_convert_a_module_writes_a_verified_kernel_file_and_shows_it(client: LanguageClient, tmp_path):
    uri = await _open(client, tmp_path / "layernorm_gelu.py", TASK)
    line = TASK.splitlines().index("class Model(nn.Module):")
    action = (await _actions(client, uri, line))["Convert Model to Triton"]
    result = await _run(client, action.command)
    assert result["status"] == "applied", result
    assert result["report"]["verdict"] == "correct"
    written = tmp_path / "layernorm_gelu_triton.py"
    assert result["uri"] == written.as_uri()
    if client.name == "visual_studio_code":  # documentChanges: the client creates the file, after a preview
        [edit] = client.applied
        create, change = edit.document_changes
        assert isinstance(create, types.CreateFile) and create.uri == written.as_uri()
        assert edit.change_annotations["tritonize.convert"].needs_confirmation is True
        text = change.edits[0].new_text
        assert not written.exists()
    else:  # Neovim has no documentChanges: the server writes the new file itself
        assert client.applied == []
        text = written.read_text()
    assert [d.uri for d in client.shown_documents] == [written.as_uri()]
    assert "class ModelNew" in text and "@triton.jit" in text
    assert '"""Triton kernels for `layernorm_gelu.py`: ' in text  # the file, as `tritonize convert` names it
    assert "# tritonize-task: layernorm_gelu.py::Model" in text
    assert "verified correct on cpu" in text
    reports = [r for updates in client.progress_reports.values() for r in updates]
    messages = [getattr(r, "message", None) for r in reports]
    assert "round 1: candidate 1/1 correct (max err" in " ".join(m for m in messages if m)
    assert "round 1: compiling the task with Inductor (its kernels become the candidates)" in messages
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].cancellable
    assert reports[0].percentage is None, "nothing is known to be done at the start"
    known = [(r.message, r.percentage) for r in reports[1:-1] if r.percentage is not None]
    assert [percentage for _, percentage in known] == [99], "a percentage only once candidates are verified (1 of 1)"
    assert known[0][0].startswith("round 1: candidate 1/1 correct")
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_the_dynamic_setting_converts_for_any_batch_and_the_kernel_says_so(client: LanguageClient, tmp_path):
    client.set_configuration("0", section="tritonize.dynamic")
    uri = await _open(client, tmp_path / "layernorm_gelu.py", TASK)
    action = (await _actions(client, uri, TASK.splitlines().index("class Model(nn.Module):")))[
        "Convert Model to Triton"
    ]
    result = await _run(client, action.command)
    assert result["status"] == "applied", result
    assert "3 at other sizes along the dynamic dimensions" in result["report"]["message"]
    if client.name == "visual_studio_code":
        [edit] = client.applied
        text = edit.document_changes[1].edits[0].new_text
    else:
        text = (tmp_path / "layernorm_gelu_triton.py").read_text()
    assert "# tritonize-dynamic: x:0 -- " in "".join(text.splitlines(keepends=True)[:5])  # where verify reads it


@pytest.mark.slow
@pytest.mark.asyncio
async def test_convert_a_function_below_after_a_preview_then_verify_it(client: LanguageClient, tmp_path):
    client.set_configuration("below", section="tritonize.placement")
    text = FUNCTION + "\n\ndef get_inputs():\n    return [torch.randn(8, 64), torch.randn(8, 64)]\n"
    uri = await _open(client, tmp_path / "act.py", text)
    action = (await _actions(client, uri, 3))["Convert scaled_tanh to Triton"]
    proposed = await _run(client, action.command, preview=True)
    assert proposed["status"] == "proposed" and client.applied == []
    preview = proposed["preview"]
    assert preview["uri"] == uri and preview["new_file"] is False and "class ModelNew" in preview["after"]
    typed = "# typed while the preview was open\n\n" + text  # the kernel must still land below the function
    await replace_text(client, uri, 2, typed)
    applied = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="tritonize.applyProposal", arguments=[{"proposal": proposed["proposal"]}])
    )
    assert applied["status"] == "applied"
    [edit] = client.applied
    if client.name == "neovim":
        assert edit.document_changes is None
    else:
        assert edit.change_annotations["tritonize.convert"].needs_confirmation is True
        assert edit.document_changes[0].text_document.version == 2
    new_text = apply_text_edits(typed, edits_for(edit, uri), client.encoding)
    ast.parse(new_text)
    assert new_text.startswith(typed.split("def scaled_tanh")[0])
    assert new_text.index("def scaled_tanh") < new_text.index("class ModelNew") < new_text.index("def get_inputs")
    assert "return torch.tanh(x) * y + 1.0\n\n\n# tritonize: Triton version of scaled_tanh" in new_text
    assert "# tritonize-task: act.py::scaled_tanh" in new_text

    (tmp_path / "act.py").write_text(new_text)
    await replace_text(client, uri, 3, new_text)
    verify = (await _actions(client, uri, 0))["Verify this Triton kernel against act.py::scaled_tanh"]
    verified = await _run(client, verify.command)
    report = verified["report"]
    assert verified["status"] == "verified" and report["verdict"] == "correct", report["message"]
    assert any("is correct against scaled_tanh" in m.message for m in client.messages)


@pytest.mark.asyncio
async def test_add_example_inputs_makes_a_function_convertible(client: LanguageClient, tmp_path):
    uri = await _open(client, tmp_path / "act.py", FUNCTION)
    actions = await _actions(client, uri, 3)
    result = await _run(client, actions["Convert scaled_tanh to Triton"].command)
    assert result["status"] == "error" and "Add example inputs" in result["message"]
    add = actions["Add example inputs for scaled_tanh (get_inputs)"]
    new_text = apply_text_edits(FUNCTION, edits_for(add.edit, uri), client.encoding)
    namespace: dict = {}
    exec(compile(new_text, "act.py", "exec"), namespace)
    x, y = namespace["get_inputs"]()
    assert tuple(x.shape) == tuple(y.shape) == (16, 256)
    assert namespace["get_init_inputs"]() == []


@pytest.mark.slow
@pytest.mark.asyncio
async def test_cancel_request_stops_the_conversion_on_the_model_server(client: LanguageClient, tmp_path):
    uri = await _open(client, tmp_path / "layernorm_gelu.py", TASK)
    action = (await _actions(client, uri, TASK.splitlines().index("class Model(nn.Module):")))[
        "Convert Model to Triton"
    ]
    server_url = client.get_configuration(section="tritonize.serverUrl")
    running = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command=action.command.command, arguments=action.command.arguments),
            msg_id="convert-1",
        )
    )
    await _until(lambda: httpx.get(f"{server_url}/health").json()["conversions"] == 1, "the conversion to start")
    if client.name == "neovim":  # one client cancels the request, the other the progress bar
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="convert-1"))
        with pytest.raises(Exception, match="cancel"):
            await running
    else:
        [token] = client.progress_reports
        client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token))
        assert (await running)["status"] == "cancelled"
    await _until(lambda: httpx.get(f"{server_url}/health").json()["conversions"] == 0, "the server to stop")
    assert client.applied == [] and not (tmp_path / "layernorm_gelu_triton.py").exists()


@pytest.mark.asyncio
async def test_an_unreachable_model_server_gives_one_clear_message(client: LanguageClient, tmp_path):
    client.set_configuration(f"http://127.0.0.1:{serving.free_port()}", section="tritonize.serverUrl")
    uri = await _open(client, tmp_path / "layernorm_gelu.py", TASK)
    action = (await _actions(client, uri, TASK.splitlines().index("class Model(nn.Module):")))[
        "Convert Model to Triton"
    ]
    result = await _run(client, action.command)
    assert result["status"] == "error" and "is not reachable" in result["message"]
    errors = [m for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1 and "tritonize serve" in errors[0].message


async def _until(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(condition):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_verify_starts_a_local_model_server_when_none_answers(client: LanguageClient, tmp_path):
    port = serving.free_port()
    client.set_configuration(f"http://127.0.0.1:{port}", section="tritonize.serverUrl")
    client.set_configuration(True, section="tritonize.autoStart")
    client.set_configuration("cpu", section="tritonize.device")
    (tmp_path / "softmax.py").write_text((ROOT / "examples" / "softmax.py").read_text())
    kernel = (ROOT / "examples" / "softmax_triton.py").read_text()
    uri = await _open(client, tmp_path / "softmax_triton.py", kernel)
    verify = (await _actions(client, uri, 0))["Verify this Triton kernel against softmax.py::Model"]
    result = await _run(client, verify.command)
    assert result["status"] == "verified" and result["report"]["verdict"] == "correct", result
    messages = [getattr(r, "message", "") or "" for updates in client.progress_reports.values() for r in updates]
    assert any(m.startswith("starting the model server") for m in messages)
    assert httpx.get(f"http://127.0.0.1:{port}/health").json()["backend"] == "inductor"
    client.started_servers.append(f"http://127.0.0.1:{port}")  # the fixture checks it stops with the session


@pytest.mark.slow
@pytest.mark.asyncio
async def test_the_policy_setting_decides_whether_a_hybrid_kernel_verifies(client: LanguageClient, tmp_path):
    hybrid = ROOT / "tests" / "fixtures" / "hybrid"
    (tmp_path / "linear_relu.py").write_text((hybrid / "linear_relu.py").read_text())
    kernel = "# tritonize-task: linear_relu.py::Model\n" + (hybrid / "linear_relu_hybrid.py").read_text()
    uri = await _open(client, tmp_path / "linear_relu_hybrid.py", kernel)
    verify = (await _actions(client, uri, 0))["Verify this Triton kernel against linear_relu.py::Model"]
    verdicts = {}
    for policy in ("strict", "hybrid"):
        client.set_configuration(policy, section="tritonize.policy")
        result = await _run(client, verify.command)
        verdicts[policy] = (result["report"]["verdict"], result["report"]["policy"])
    assert verdicts == {"strict": ("rejected", "strict"), "hybrid": ("correct", "hybrid")}
    correct = [m for m in client.messages if "is correct against Model" in m.message]
    assert [m.type for m in correct] == [types.MessageType.Info]


@pytest.mark.slow
@pytest.mark.asyncio
async def test_convert_places_a_hybrid_kernel_only_under_the_hybrid_policy(client: LanguageClient, tmp_path):
    """Inductor keeps a float64 linear layer's matmul as a library call (its Triton templates take fp32, fp16 and
    bf16 only): its only kernel is hybrid."""
    task = (ROOT / "tests" / "fixtures" / "hybrid" / "linear_relu_float64.py").read_text()
    uri = await _open(client, tmp_path / "linear_relu_float64.py", task)
    convert = (await _actions(client, uri, task.splitlines().index("class Model(nn.Module):")))[
        "Convert Model to Triton"
    ]
    refused = await _run(client, convert.command)
    assert refused["status"] == "not_correct" and 'set tritonize.policy to "hybrid"' in refused["message"]
    assert client.applied == [] and not (tmp_path / "linear_relu_float64_triton.py").exists()
    client.set_configuration("hybrid", section="tritonize.policy")
    placed = await _run(client, convert.command)
    assert placed["status"] == "applied" and placed["report"]["policy"] == "hybrid", placed
