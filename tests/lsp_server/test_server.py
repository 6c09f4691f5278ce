"""The language server over stdio, driven by pytest-lsp with VS Code's and Neovim's capabilities."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.conftest import FIXTURES
from tests.lsp_server.editing import apply_text_edits, column, edits_for, replace_text
from tests.verifier.audit.worst_cases import many_kernels

SOURCE = """import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, stride, n, BLOCK: tl.constexpr):
    𝛼 = 0; row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    ptrs = x_ptr + row * stride + offs
    tl.store(ptrs, tl.load(ptrs, mask=offs < n, other=0.0) * 2, mask=offs < n)


@triton.jit
def shift(x_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, 100)
    ptrs = x_ptr + row * stride + offs
    tl.store(ptrs, tl.load(ptrs, mask=offs < n, other=0.0) + 1, mask=offs < n)
"""
CLIENTS = ["visual_studio_code", "neovim"]


@pytest_lsp.fixture(params=CLIENTS, config=ClientServerConfig(server_command=[sys.executable, "-m", "lsp_server"]))
async def client(request, lsp_client: LanguageClient):
    params = types.InitializeParams(capabilities=client_capabilities(request.param))
    result = await lsp_client.initialize_session(params)
    lsp_client.encoding = result.capabilities.position_encoding or types.PositionEncodingKind.Utf16
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, tmp_path, text: str) -> str:
    uri = (tmp_path / "kernel.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return uri


@pytest.mark.asyncio
async def test_findings_become_diagnostics_with_rule_codes_and_client_units(client: LanguageClient, tmp_path):
    uri = await _open(client, tmp_path, SOURCE)
    diagnostics = client.diagnostics[uri]
    assert sorted(d.code for d in diagnostics) == ["TRI101", "TRI203", "TRI203"]
    [first] = [d for d in diagnostics if d.code == "TRI203" and d.range.start.line == 6]
    line = SOURCE.splitlines()[6]
    assert column(line, first.range.start.character, client.encoding) == line.index("tl.program_id")
    assert all(d.source == "tritonize" and d.code_description.href.endswith(d.code.lower()) for d in diagnostics)
    [context] = first.related_information
    assert context.message == "in kernel `scale`" and context.location.uri == uri
    assert context.location.range.start.line == 5 and context.location.range.start.character == len("def ")
    assert {d.severity for d in diagnostics} == {types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Warning}


@pytest.mark.asyncio
async def test_edits_are_re_audited_after_a_pause_and_close_clears(client: LanguageClient, tmp_path):
    uri = await _open(client, tmp_path, SOURCE)
    fixed = SOURCE.replace("tl.arange(0, 100)", "tl.arange(0, 128)")
    await replace_text(client, uri, 2, fixed)
    assert sorted(d.code for d in client.diagnostics[uri]) == ["TRI203", "TRI203"]
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


@pytest.mark.asyncio
async def test_quick_fixes_apply_and_fix_all_covers_the_rule(client: LanguageClient, tmp_path):
    uri = await _open(client, tmp_path, SOURCE)
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=20, character=0))
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=whole,
            context=types.CodeActionContext(diagnostics=client.diagnostics[uri]),
        )
    )
    titles = [a.title for a in actions]
    assert titles == ["Make the program id int64 (TRI203)"] * 2 + [
        "Fix all TRI203 in this file (2 findings)",
        "Suppress TRI203 on line 7 (# noqa: TRI203)",
        "Suppress TRI203 on line 15 (# noqa: TRI203)",
        "Suppress TRI101 on line 16 (# noqa: TRI101)",
        "Fix all tritonize findings in this file (2)",
    ]
    kinds = {a.title: a.kind for a in actions}
    assert kinds["Make the program id int64 (TRI203)"] == types.CodeActionKind.QuickFix
    assert kinds["Fix all tritonize findings in this file (2)"] == "source.fixAll.tritonize"
    fix_all = next(a for a in actions if a.title == "Fix all TRI203 in this file (2 findings)")
    result = apply_text_edits(SOURCE, edits_for(fix_all.edit, uri), client.encoding)
    assert result.count("tl.program_id(0).to(tl.int64)") == 2
    assert "𝛼 = 0; row = tl.program_id(0).to(tl.int64)" in result


@pytest.mark.asyncio
async def test_a_python_file_that_does_not_import_triton_gets_no_diagnostics(client: LanguageClient, tmp_path):
    """Its syntax errors are the Python language server's to report; once it imports Triton they are ours."""
    plain = "def f(x:\n    return x\n"
    uri = await _open(client, tmp_path, plain)
    assert list(client.diagnostics[uri]) == []
    await replace_text(client, uri, 2, "import triton\n" + plain)
    assert [d.code for d in client.diagnostics[uri]] == ["TRI001"]
    await replace_text(client, uri, 3, "import torch\n\nx = torch.zeros(3)\nthe triton of it = 1\n")
    assert list(client.diagnostics[uri]) == [], "a mention of triton is not an import"


@pytest.mark.asyncio
async def test_hover_on_a_finding_explains_its_rule_and_elsewhere_says_nothing(client: LanguageClient, tmp_path):
    uri = await _open(client, tmp_path, SOURCE)
    [finding] = [d for d in client.diagnostics[uri] if d.code == "TRI101"]
    inside = types.Position(line=finding.range.start.line, character=finding.range.start.character + 2)
    shown = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=inside)
    )
    assert shown.contents.kind == types.MarkupKind.Markdown
    text = shown.contents.value
    assert text.startswith("**TRI101 arange-not-power-of-two** (error)")
    assert finding.message not in text, "the editor shows the finding's message already"
    assert "Why it matters: Triton blocks are powers of two" in text
    assert "`# noqa: TRI101`" in text and text.rstrip().endswith("docs/RULES.md#tri101")
    assert shown.range == finding.range
    blank = types.Position(line=3, character=0)
    assert (
        await client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=blank)
        )
        is None
    )


@pytest.mark.asyncio
async def test_hover_on_a_document_never_opened_says_nothing(client: LanguageClient, tmp_path):
    never = (tmp_path / "never_opened.py").as_uri()
    assert (
        await client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=never), position=types.Position(0, 0))
        )
        is None
    )


async def _actions(client: LanguageClient, uri: str, only: list[str] | None = None) -> list[types.CodeAction]:
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=40, character=0))
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=whole,
            context=types.CodeActionContext(diagnostics=client.diagnostics[uri], only=only),
        )
    )


@pytest.mark.asyncio
async def test_fix_all_on_save_applies_every_fix_and_nothing_else(client: LanguageClient, tmp_path):
    """What VS Code's `editor.codeActionsOnSave: {"source.fixAll.tritonize": "explicit"}` asks for."""
    uri = await _open(client, tmp_path, SOURCE)
    [fix_all] = await _actions(client, uri, only=["source.fixAll"])
    assert fix_all.kind == "source.fixAll.tritonize"
    fixed = apply_text_edits(SOURCE, edits_for(fix_all.edit, uri), client.encoding)
    assert fixed.count("tl.program_id(0).to(tl.int64)") == 2 and "noqa" not in fixed
    await replace_text(client, uri, 2, fixed)
    assert [d.code for d in client.diagnostics[uri]] == ["TRI101"], "TRI101 has no machine-applicable fix"


@pytest.mark.asyncio
async def test_a_suppression_writes_noqa_and_the_finding_is_gone(client: LanguageClient, tmp_path):
    source = SOURCE.replace("offs = tl.arange(0, 100)", "offs = tl.arange(0, 100)  # noqa: TRI203")
    uri = await _open(client, tmp_path, source)
    actions = {a.title: a for a in await _actions(client, uri, only=["quickfix"])}
    suppress = actions["Suppress TRI101 on line 16 (# noqa: TRI101)"]
    suppressed = apply_text_edits(source, edits_for(suppress.edit, uri), client.encoding)
    assert "    offs = tl.arange(0, 100)  # noqa: TRI203, TRI101\n" in suppressed, "added to the line's noqa list"
    await replace_text(client, uri, 2, suppressed)
    assert "TRI101" not in [d.code for d in client.diagnostics[uri]]
    again = [a.title for a in await _actions(client, uri, only=["quickfix"])]
    assert not any(title.startswith("Suppress TRI101") for title in again)
    assert "Suppress TRI203 on line 7 (# noqa: TRI203)" in again


@pytest.mark.asyncio
async def test_a_finding_that_refuses_a_candidate_is_never_offered_a_noqa(client: LanguageClient, tmp_path):
    """The verifier does not read `noqa`: the comment would only hide the refusal from the editor."""
    candidate = (FIXTURES / "zoo" / "try_except_fallback.py").read_text()
    uri = await _open(client, tmp_path, candidate)
    assert "TRI303" in [d.code for d in client.diagnostics[uri]]
    titles = [a.title for a in await _actions(client, uri)]
    assert not any(title.startswith("Suppress TRI303") for title in titles), titles


def test_the_server_starts_without_importing_torch():
    code = "import sys, lsp_server.server; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


COMPILES = """import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bad = tl.reshape(offs, (3, 5))
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) + 1.0, mask=mask)


def add_one(x):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024, num_warps=4)
    return out
"""


@pytest.mark.asyncio
async def test_compile_errors_follow_a_save_in_the_background_and_go_stale_on_edit(client: LanguageClient, tmp_path):
    pytest.importorskip("triton.backends.nvidia.compiler")
    uri = await _open(client, tmp_path, COMPILES)
    static = sorted(d.code for d in client.diagnostics[uri])
    assert "TRI601" not in static
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri)))
    deadline = time.monotonic() + 120
    while "TRI601" not in [d.code for d in client.diagnostics[uri]]:
        assert time.monotonic() < deadline, "no compile diagnostics after the save"
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    diagnostics = client.diagnostics[uri]
    [compile_error] = [d for d in diagnostics if d.code == "TRI601"]
    assert compile_error.range.start.line == COMPILES.splitlines().index("    bad = tl.reshape(offs, (3, 5))")
    assert sorted(d.code for d in diagnostics if d.code != "TRI601") == static  # merged, not duplicated
    fixed = COMPILES.replace("    bad = tl.reshape(offs, (3, 5))\n", "")
    await replace_text(client, uri, 2, fixed)
    assert "TRI601" not in [d.code for d in client.diagnostics[uri]]


@pytest.mark.asyncio
async def test_editor_settings_steer_the_audit_and_bad_ones_are_named_once(client: LanguageClient, tmp_path):
    client.set_configuration(
        {"audit": {"ignore": ["TRI203"]}, "placement": "sideways", "samples": "lots", "colour": "blue"},
        section="tritonize",
    )
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    deadline = time.monotonic() + 30
    while len(client.messages) < 3:
        assert time.monotonic() < deadline, client.messages
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # room for the second change to (wrongly) repeat them
    uri = await _open(client, tmp_path, SOURCE)
    assert sorted(d.code for d in client.diagnostics[uri]) == ["TRI101"]
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert len(warnings) == 3, warnings  # the second configuration change repeats none of them
    assert any("tritonize.placement: expected one of new_file, below, replace" in w for w in warnings)
    assert any("tritonize.samples: expected a whole number" in w for w in warnings)
    assert any("tritonize.colour is not a setting" in w for w in warnings)


def _slow_file(tmp_path) -> tuple[str, str]:
    """A large generated file whose audit takes a while, with the time budget raised so it runs to the end."""
    (tmp_path / "pyproject.toml").write_text("[tool.tritonize.audit]\ntime-budget = 120\n")
    return (tmp_path / "slow.py").as_uri(), many_kernels(4000)


@pytest.mark.asyncio
async def test_requests_are_answered_while_an_audit_runs(client: LanguageClient, tmp_path):
    small = await _open(client, tmp_path, SOURCE)
    slow, text = _slow_file(tmp_path)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=slow, language_id="python", version=1, text=text))
    )
    await asyncio.sleep(0.2)  # the slow audit is under way
    here = types.Position(line=6, character=4)
    started = time.perf_counter()
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=small),
            range=types.Range(start=here, end=here),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    answered = time.perf_counter() - started
    assert any(a.title == "Make the program id int64 (TRI203)" for a in actions)
    assert slow not in client.diagnostics, "the slow audit finished first, so this proved nothing"
    assert answered < 1.0
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert slow in client.diagnostics


@pytest.mark.asyncio
async def test_an_audit_of_text_that_changed_meanwhile_is_dropped(client: LanguageClient, tmp_path):
    slow, text = _slow_file(tmp_path)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=slow, language_id="python", version=1, text=text))
    )
    await asyncio.sleep(0.2)  # the slow audit of version 1 is under way
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=slow, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=SOURCE)],
        )
    )
    first = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert (first.uri, first.version) == (slow, 2), "the audit of the old text was published"
    assert sorted(d.code for d in first.diagnostics) == ["TRI101", "TRI203", "TRI203"]


TORCH_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def scaled(x):
    return x * 2.0


def get_inputs():
    return [torch.randn(8)]
"""


async def _lenses(client: LanguageClient, path, text: str) -> list[tuple[int, str, str]]:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    found = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [(lens.range.start.line, lens.command.title, lens.command.command) for lens in found or []]


@pytest.mark.asyncio
async def test_a_convert_code_lens_sits_above_each_convertible_definition_of_pytorch_code(
    client: LanguageClient, tmp_path
):
    """The module class and the plain function, not the task's get_inputs; nothing in a file without torch; none
    when the codeLens setting is off."""
    lines = TORCH_TASK.splitlines()
    expected = [
        (lines.index("class Model(nn.Module):"), "Convert to Triton", "tritonize.convert"),
        (lines.index("def scaled(x):"), "Convert to Triton", "tritonize.convert"),
    ]
    assert await _lenses(client, tmp_path / "task.py", TORCH_TASK) == expected
    plain = TORCH_TASK.replace("import torch\nimport torch.nn as nn\n", "import numpy as np\n")
    assert await _lenses(client, tmp_path / "plain.py", plain) == []
    client.set_configuration({"codeLens": False}, section="tritonize")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    deadline = time.monotonic() + 30
    while await _lenses(client, tmp_path / "again.py", TORCH_TASK):
        assert time.monotonic() < deadline, "the codeLens setting was never read"
        await asyncio.sleep(0.1)
