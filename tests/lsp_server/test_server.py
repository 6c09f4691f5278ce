"""The language server over stdio, driven by pytest-lsp with VS Code's and Neovim's capabilities."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.lsp_server.editing import apply_text_edits, column, edits_for

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
    assert {d.severity for d in diagnostics} == {types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Warning}


@pytest.mark.asyncio
async def test_edits_are_re_audited_after_a_pause_and_close_clears(client: LanguageClient, tmp_path):
    uri = await _open(client, tmp_path, SOURCE)
    fixed = SOURCE.replace("tl.arange(0, 100)", "tl.arange(0, 128)")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
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
    assert titles == ["Make the program id int64 (TRI203)"] * 2 + ["Fix all TRI203 in this file (2 findings)"]
    fix_all = next(a for a in actions if a.title == "Fix all TRI203 in this file (2 findings)")
    result = apply_text_edits(SOURCE, edits_for(fix_all.edit, uri), client.encoding)
    assert result.count("tl.program_id(0).to(tl.int64)") == 2
    assert "𝛼 = 0; row = tl.program_id(0).to(tl.int64)" in result


def test_the_server_starts_without_importing_torch():
    code = "import sys, lsp_server.server; print('torch' in sys.modules)"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
    assert time.perf_counter() - started < 5
