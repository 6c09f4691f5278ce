"""The code actions beyond quick fixes: Convert to Triton, Add example inputs, Verify this Triton kernel.

They are offered from the AST alone (no model server round trip), so the menu opens at once; the slow work
happens in the command the action carries (`commands.py`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lsprotocol import types

from lsp_server import task_source
from lsp_server.commands import CONVERT, VERIFY
from lsp_server.placement import end_of
from lsp_server.quick_fixes import document_edit
from lsp_server.snapshot import Snapshot

CONVERT_KIND = "refactor.rewrite.tritonize"
INPUTS_KIND = "refactor.tritonize.inputs"  # adds code; it fixes no diagnostic, so it is not a quick fix
VERIFY_KIND = "source.tritonize.verify"
KINDS = [
    types.CodeActionKind.QuickFix,
    types.CodeActionKind.Refactor,
    types.CodeActionKind.RefactorRewrite,
    types.CodeActionKind.Source,
    types.CodeActionKind.SourceFixAll,
]


def editor_actions(snapshot: Snapshot, line: int) -> list[types.CodeAction]:
    """Actions for 0-based `line`: convert/add-inputs on PyTorch code, verify on a file defining ModelNew."""
    tree = snapshot.tree
    if tree is None:
        return []
    actions = []
    names = task_source.defined_names(tree)
    target = task_source.target_at(tree, line + 1)
    if target is not None and task_source.uses_torch(tree):
        title = f"Convert {target.name} to Triton"
        arguments = [{"uri": snapshot.uri, "line": line}]
        actions.append(
            types.CodeAction(
                title=title,
                kind=CONVERT_KIND,
                command=types.Command(title=title, command=CONVERT, arguments=arguments),
            )
        )
        if "get_inputs" not in names:
            edits = _inputs_edits(snapshot, tree, target)
            actions.append(
                types.CodeAction(
                    title=f"Add example inputs for {target.name} (get_inputs)",
                    kind=INPUTS_KIND,
                    edit=document_edit(snapshot.uri, snapshot.version, snapshot.client, edits),
                )
            )
    if "ModelNew" in names:
        reference = task_source.task_reference(snapshot.source, snapshot.path)
        if reference is not None:
            task_file, name = reference
            title = f"Verify this Triton kernel against {task_file.rsplit('/', 1)[-1]}::{name}"
            actions.append(
                types.CodeAction(
                    title=title,
                    kind=VERIFY_KIND,
                    command=types.Command(title=title, command=VERIFY, arguments=[{"uri": snapshot.uri}]),
                )
            )
    return actions


def wanted(action: types.CodeAction, only: Sequence[str] | None) -> bool:
    """LSP's `context.only` filter: a kind matches its own prefix kinds (`refactor` covers `refactor.rewrite`)."""
    if not only:
        return True
    kind = action.kind or ""
    return any(kind == prefix or kind.startswith(f"{prefix}.") for prefix in only)


def _inputs_edits(snapshot: Snapshot, tree: ast.Module, target: task_source.Target) -> list[types.TextEdit]:
    template = task_source.example_inputs(tree, target)
    lines = snapshot.lines
    end, newline = end_of(lines, snapshot.codec)
    separator = "" if not lines else "\n\n" if newline else "\n\n\n"
    edits = [types.TextEdit(range=types.Range(start=end, end=end), new_text=separator + template)]
    if not task_source.binds_torch(tree):
        at = types.Position(line=_import_line(tree), character=0)
        edits.insert(0, types.TextEdit(range=types.Range(start=at, end=at), new_text="import torch\n"))
    return edits


def _import_line(tree: ast.Module) -> int:
    """0-based line for a new import: before the first ordinary import, else after docstring and __future__."""
    after = 0
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            after = node.end_lineno or node.lineno
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            return node.lineno - 1
        elif index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            after = node.end_lineno or node.lineno
    return after
