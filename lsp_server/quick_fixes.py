"""Code actions on the audit's findings: each machine-applicable fix, "fix all" per rule, every fix of the file at
once (`source.fixAll.tritonize`, what VS Code runs on save through `editor.codeActionsOnSave`), and a `# noqa`
comment that suppresses a rule on one line."""

from __future__ import annotations

from lsprotocol import types

from lsp_server.diagnostics import to_range
from lsp_server.snapshot import ClientFeatures, Snapshot
from verifier import RULES, Finding
from verifier.audit import NOQA, named_codes

FIX_ALL_KIND = "source.fixAll.tritonize"


def code_actions(snapshot: Snapshot, wanted: types.Range) -> list[types.CodeAction]:
    """Quick fixes for the fixable findings that touch `wanted`, plus one "fix all" per rule with several."""
    fixable = [f for f in snapshot.findings if f.fix and f.fix.get("edits")]
    actions = []
    for finding in fixable:
        if not _touches(finding, wanted):
            continue
        edits = [_text_edit(snapshot, edit) for edit in finding.fix["edits"]]
        actions.append(
            types.CodeAction(
                title=f"{finding.fix['message']} ({finding.rule})",
                kind=types.CodeActionKind.QuickFix,
                edit=document_edit(snapshot.uri, snapshot.version, snapshot.client, edits),
                is_preferred=True,
            )
        )
    for rule in sorted({f.rule for f in fixable if _touches(f, wanted)}):
        same = [f for f in fixable if f.rule == rule]
        if len(same) < 2:
            continue
        edits = _without_overlaps([_text_edit(snapshot, e) for f in same for e in f.fix["edits"]])
        actions.append(
            types.CodeAction(
                title=f"Fix all {rule} in this file ({len(same)} findings)",
                kind=types.CodeActionKind.QuickFix,
                edit=document_edit(snapshot.uri, snapshot.version, snapshot.client, edits),
            )
        )
    actions += _suppressions(snapshot, wanted)
    if fixable:
        edits = _without_overlaps([_text_edit(snapshot, e) for f in fixable for e in f.fix["edits"]])
        actions.append(
            types.CodeAction(
                title=f"Fix all tritonize findings in this file ({len(fixable)})",
                kind=FIX_ALL_KIND,
                edit=document_edit(snapshot.uri, snapshot.version, snapshot.client, edits),
            )
        )
    return actions


def _suppressions(snapshot: Snapshot, wanted: types.Range) -> list[types.CodeAction]:
    """A "Suppress TRIxxx on this line" action for each rule found on a line of `wanted`: a `# noqa: TRIxxx`
    comment, or the code added to the line's `# noqa:` list. Not offered for a rule that refuses a candidate: the
    verifier does not read `noqa`, so the comment would only hide the refusal from the editor."""
    actions = []
    seen = set()
    for finding in snapshot.findings:
        key = (finding.line, finding.rule)
        if key in seen or not _touches(finding, wanted) or _refuses(finding.rule):
            continue
        seen.add(key)
        edit = _noqa_edit(snapshot, finding.line - 1, finding.rule)
        if edit is None:
            continue
        actions.append(
            types.CodeAction(
                title=f"Suppress {finding.rule} on line {finding.line} (# noqa: {finding.rule})",
                kind=types.CodeActionKind.QuickFix,
                edit=document_edit(snapshot.uri, snapshot.version, snapshot.client, [edit]),
            )
        )
    return actions


def _noqa_edit(snapshot: Snapshot, index: int, rule: str) -> types.TextEdit | None:
    """The edit that makes 0-based line `index` suppress `rule`; None where it already does."""
    if index >= len(snapshot.lines):
        return None
    text = snapshot.lines[index].rstrip("\r\n")
    comment = NOQA.search(text)
    named = named_codes(comment) if comment is not None else set()
    if named is None or rule in named:
        return None
    if comment is None:
        start = end = len(text)
        new_text = f"  # noqa: {rule}"
    else:
        start, end = comment.span()
        new_text = f"# noqa: {comment.group('codes')}, {rule}"
    span = to_range(snapshot.codec, snapshot.lines, index + 1, start + 1, index + 1, end + 1)
    return types.TextEdit(range=span, new_text=new_text)


def _refuses(rule_id: str) -> bool:
    rule = RULES.get(rule_id)
    return rule is not None and rule.rejects


def _touches(finding: Finding, wanted: types.Range) -> bool:
    first, last = finding.line - 1, (finding.end_line or finding.line) - 1
    return first <= wanted.end.line and last >= wanted.start.line


def _text_edit(snapshot: Snapshot, edit: dict) -> types.TextEdit:
    span = to_range(snapshot.codec, snapshot.lines, edit["line"], edit["column"], edit["end_line"], edit["end_column"])
    return types.TextEdit(range=span, new_text=edit["text"])


def _without_overlaps(edits: list[types.TextEdit]) -> list[types.TextEdit]:
    """Edits in document order, dropping any that overlaps one already kept (LSP forbids overlapping edits)."""
    kept: list[types.TextEdit] = []
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character)):
        if kept and _before(edit.range.start, kept[-1].range.end):
            continue
        kept.append(edit)
    return kept


def _before(a: types.Position, b: types.Position) -> bool:
    return (a.line, a.character) < (b.line, b.character)


def document_edit(
    uri: str, version: int | None, client: ClientFeatures, edits: list[types.TextEdit]
) -> types.WorkspaceEdit:
    """Edits of one document: `documentChanges` with its version when the client supports them, plain
    `changes` otherwise (Neovim)."""
    if client.document_changes:
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})
