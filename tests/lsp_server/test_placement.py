"""Where a converted kernel goes: replace/below/new file, as edits a client can apply (no model server needed)."""

from __future__ import annotations

import ast
import json
import os

import pytest
from lsprotocol import converters, types
from pygls.workspace.position_codec import PositionCodec

from lsp_server.placement import Converted, propose, report_comment, workspace_edit
from lsp_server.snapshot import ClientFeatures, Snapshot
from lsp_server.task_source import TASK_MARKER, parse, target_at
from tests.conftest import FIXTURES
from tests.lsp_server.editing import apply_text_edits, edits_for

SOURCE = "import torch\n\n\ndef double(x):\n    return x * 2\n\n\ndef get_inputs():\n    return [torch.randn(4)]"
KERNEL = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x + x\n"
REPORT = {
    "verdict": "correct",
    "device": "cuda",
    "trials": 5,
    "max_abs_error": 0.0,
    "timing": {"candidate_ms": 0.0123, "speedup_vs_eager": 1.5, "speedup_vs_compile": 0.98},
}
VSCODE = ClientFeatures.of(
    types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            workspace_edit=types.WorkspaceEditClientCapabilities(
                document_changes=True,
                resource_operations=[types.ResourceOperationKind.Create],
                change_annotation_support=types.ChangeAnnotationsSupportOptions(groups_on_label=True),
            )
        )
    )
)
NEOVIM = ClientFeatures.of(
    types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            workspace_edit=types.WorkspaceEditClientCapabilities(
                resource_operations=[types.ResourceOperationKind.Create]
            )
        )
    )
)


def snapshot_of(path, source: str, client: ClientFeatures = NEOVIM, version: int = 3) -> Snapshot:
    """A document as the server would see it, without a server."""
    return Snapshot(
        uri=path.as_uri(),
        path=str(path),
        version=version,
        source=source,
        lines=source.splitlines(keepends=True),
        findings=[],
        kernels=[],
        codec=PositionCodec(types.PositionEncodingKind.Utf16),
        client=client,
        parse=lambda: parse(source),
    )


def _proposal(placement: str, tmp_path, source: str = SOURCE):
    snapshot = snapshot_of(tmp_path / "ops.py", source)
    target = target_at(snapshot.tree, 4)
    converted = Converted(KERNEL, report_comment(target, "ops.py", REPORT, "inductor"))
    return snapshot.uri, propose(snapshot, target, converted, placement)


def test_the_report_comment_carries_verdict_error_and_speedups():
    header = report_comment(target_at(parse(SOURCE), 4), "ops.py", REPORT, "inductor")
    assert "verified correct on cuda over 5 input sets: max abs error 0" in header
    assert "0.0123 ms, 1.50x vs eager, 0.98x vs torch.compile" in header
    assert header.rstrip().endswith(f"{TASK_MARKER} ops.py::double")


def test_replace_keeps_the_old_name_working_and_drops_the_task_marker(tmp_path):
    uri, proposal = _proposal("replace", tmp_path)
    edit = workspace_edit(proposal, NEOVIM)
    text = apply_text_edits(SOURCE, edits_for(edit, uri), types.PositionEncodingKind.Utf16)
    ast.parse(text)
    assert "return x * 2" not in text and TASK_MARKER not in text
    assert "def double(*args):\n    return _double_triton(*args)" in text
    assert text.rstrip().endswith("return [torch.randn(4)]")


def test_below_at_the_end_of_a_file_without_a_final_newline(tmp_path):
    source = SOURCE.split("\n\n\ndef get_inputs")[0]  # the function is last and the text has no final newline
    uri, proposal = _proposal("below", tmp_path, source)
    edit = workspace_edit(proposal, VSCODE)
    assert edit.change_annotations["tritonize.convert"].needs_confirmation is True
    text = apply_text_edits(source, edits_for(edit, uri), types.PositionEncodingKind.Utf16)
    ast.parse(text)
    assert text.startswith(source + "\n\n\n# tritonize: Triton version of double")


def test_a_new_file_never_replaces_an_existing_one(tmp_path):
    (tmp_path / "ops_triton.py").write_text("# mine\n")
    _, proposal = _proposal("new_file", tmp_path)
    assert proposal.path == str(tmp_path / "ops_triton_2.py") and proposal.new_file
    create, change = workspace_edit(proposal, VSCODE).document_changes
    assert create.options.overwrite is False and create.uri == proposal.uri
    assert change.edits[0].new_text.startswith("# tritonize: Triton version of double")
    assert workspace_edit(proposal, NEOVIM) is None  # no documentChanges: the server writes the file itself


GOLDEN = FIXTURES / "placement"
UNICODE_SOURCE = SOURCE.replace("\n\n\ndef double", "\n\n# α → β, 🙂 before the target\n\ndef double").replace(
    "return x * 2", "return x * 2  # ✓"
)
VARIANTS = {"end": UNICODE_SOURCE.split("\n\n\ndef get_inputs")[0], "middle": UNICODE_SOURCE}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("placement", ["new_file", "below", "replace"])
@pytest.mark.parametrize("client", ["vscode", "neovim"])
def test_the_workspace_edit_matches_its_golden_file(variant, placement, client, tmp_path):
    """Each placement's edit for each client, in UTF-16 units, on text with non-ASCII characters; the golden
    files were written by the code before it was split into features over a snapshot."""
    features = {"vscode": VSCODE, "neovim": NEOVIM}[client]
    snapshot = snapshot_of(tmp_path / "ops.py", VARIANTS[variant], features)
    target = target_at(snapshot.tree, 5)
    converted = Converted(KERNEL, report_comment(target, "ops.py", REPORT, "inductor"))
    edit = workspace_edit(propose(snapshot, target, converted, placement), features)
    data = None if edit is None else converters.get_converter().unstructure(edit)
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False).replace(tmp_path.as_uri(), "file://{DIR}")
    golden = GOLDEN / f"{variant}-{placement}-{client}.json"
    if os.environ.get("TRITONIZE_UPDATE_GOLDEN"):
        golden.write_text(text + "\n")
    assert text + "\n" == golden.read_text()
