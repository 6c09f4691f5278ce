"""Where a converted kernel goes (replace, below, new file) and the WorkspaceEdit that puts it there.

The edit follows the client's capabilities: `documentChanges` with a `needsConfirmation` change annotation
where supported (VS Code shows its refactor preview), plain `changes` otherwise (Neovim, whose plugin shows
its own diff first). A new file is never written over: `x_triton.py`, then `x_triton_2.py`, and so on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace.position_codec import PositionCodec

from lsp_server.quick_fixes import document_edit
from lsp_server.snapshot import ClientFeatures, Snapshot
from lsp_server.task_source import TASK_MARKER, Target

ANNOTATION = "tritonize.convert"


@dataclass(frozen=True)
class Converted:
    """A verified kernel, and the comment block that carries its report (`report_comment`)."""

    source: str
    header: str

    @property
    def summary(self) -> str:
        """The comment's verdict line, for messages and the edit's label."""
        return self.header.splitlines()[1].lstrip("# ").strip()


@dataclass
class Proposal:
    """A converted kernel ready to go in: the target document, the span it replaces (if any) and its text."""

    uri: str
    text: str
    before: str
    range: types.Range | None
    version: int | None
    summary: str
    path: str | None = None
    redo: Callable[[], Proposal] | None = field(default=None, repr=False)

    @property
    def new_file(self) -> bool:
        return self.range is None


def report_comment(target: Target, task_file: str, report: dict, backend: str) -> str:
    """A comment block that carries the verification result with the kernel."""
    timing = report.get("timing") or {}
    error = report.get("max_abs_error")
    measured = "no timing on CPU (Triton interpreter)"
    if timing.get("candidate_ms") is not None:
        measured = (
            f"{timing['candidate_ms']:.4g} ms, {_times(timing.get('speedup_vs_eager'))} vs eager, "
            f"{_times(timing.get('speedup_vs_compile'))} vs torch.compile"
        )
    error_text = "n/a" if error is None else f"{error:.2g}"
    return (
        f"# tritonize: Triton version of {target.name} ({task_file}) from the {backend} backend,\n"
        f"#   verified {report.get('verdict')} on {report.get('device')} over {report.get('trials')} input sets: "
        f"max abs error {error_text}; {measured}\n"
        f"{TASK_MARKER} {task_file}::{target.name}\n"
    )


def propose(snapshot: Snapshot, target: Target, converted: Converted, placement: str) -> Proposal:
    """The proposal for `placement` in the snapshot's document (or beside it): the report comment, then the
    kernel (and, on replace, the old name bound to it)."""
    header, summary, lines = converted.header, converted.summary, snapshot.lines
    if placement == "replace":  # the original is gone, so there is nothing left to verify against
        header = "".join(line for line in header.splitlines(keepends=True) if not line.startswith(TASK_MARKER))
    kernel = header + converted.source.rstrip("\n") + "\n"
    if placement == "new_file":
        path = _free_sibling(Path(_fs_path(snapshot)))
        return Proposal(
            uri=from_fs_path(str(path)) or path.as_uri(),
            text=kernel,
            before="",
            range=None,
            version=None,
            summary=summary,
            path=str(path),
        )
    at_end = target.end_line >= len(lines)
    end, newline = (
        end_of(lines, snapshot.codec) if at_end else (types.Position(line=target.end_line, character=0), True)
    )
    if placement == "replace":
        start = types.Position(line=target.line - 1, character=0)
        old = "".join(lines[target.line - 1 : target.end_line])
        text = kernel + _alias(target) + ("" if newline else "\n")
        return Proposal(snapshot.uri, text, old, types.Range(start=start, end=end), snapshot.version, summary)
    text = ("\n\n" if newline else "\n\n\n") + kernel
    return Proposal(snapshot.uri, text, "", types.Range(start=end, end=end), snapshot.version, summary)


def end_of(lines: Sequence[str], codec: PositionCodec) -> tuple[types.Position, bool]:
    """The document's end in client units, and whether the text before it ends with a newline."""
    if not lines:
        return types.Position(line=0, character=0), True
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return types.Position(line=len(lines), character=0), True
    position = types.Position(line=len(lines) - 1, character=len(last))
    return codec.position_to_client_units(lines, position), False


def workspace_edit(proposal: Proposal, client: ClientFeatures) -> types.WorkspaceEdit | None:
    """The edit this client can apply, or None for a new file it cannot create (the server writes it)."""
    annotation = ANNOTATION if client.change_annotations else None
    annotations = (
        {
            ANNOTATION: types.ChangeAnnotation(
                label="Triton kernel from tritonize", needs_confirmation=True, description=proposal.summary
            )
        }
        if annotation
        else None
    )
    if proposal.new_file:
        if not client.create_files:
            return None
        origin = types.Position(line=0, character=0)
        create = types.CreateFile(
            uri=proposal.uri, options=types.CreateFileOptions(overwrite=False), annotation_id=annotation
        )
        edit = _text_edit(types.Range(start=origin, end=origin), proposal.text, annotation)
        document = types.OptionalVersionedTextDocumentIdentifier(uri=proposal.uri, version=None)
        changes = [create, types.TextDocumentEdit(text_document=document, edits=[edit])]
        return types.WorkspaceEdit(document_changes=changes, change_annotations=annotations)
    edit = _text_edit(proposal.range, proposal.text, annotation)
    result = document_edit(proposal.uri, proposal.version, client, [edit])
    result.change_annotations = annotations
    return result


def _text_edit(span: types.Range, text: str, annotation: str | None) -> types.TextEdit:
    if annotation:
        return types.AnnotatedTextEdit(range=span, new_text=text, annotation_id=annotation)
    return types.TextEdit(range=span, new_text=text)


def _alias(target: Target) -> str:
    """Keep the old name working after a replace: the class becomes ModelNew, the function calls it."""
    if target.kind == "module":
        return f"\n\n{target.name} = ModelNew\n"
    return (
        f"\n\n_{target.name}_triton = ModelNew()\n\n\n"
        f"def {target.name}(*args):\n    return _{target.name}_triton(*args)\n"
    )


def _free_sibling(path: Path) -> Path:
    candidate = path.with_name(f"{path.stem}_triton.py")
    number = 2
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}_triton_{number}.py")
        number += 1
    return candidate


def _fs_path(snapshot: Snapshot) -> str:
    if not snapshot.path:
        raise ValueError(
            f"{snapshot.uri} is not a file on disk; save it first or choose placement 'below' or 'replace'"
        )
    return snapshot.path


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"
