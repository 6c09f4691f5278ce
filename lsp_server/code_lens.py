"""The "Convert to Triton" code lens above each convertible definition of a PyTorch file: a module class with a
`forward`, or a plain function, as the Convert code action finds them. Off with the `codeLens` setting."""

from __future__ import annotations

from lsprotocol import types

from lsp_server import task_source
from lsp_server.commands import CONVERT
from lsp_server.snapshot import Snapshot

TITLE = "Convert to Triton"


def code_lenses(snapshot: Snapshot) -> list[types.CodeLens]:
    """One lens on the `def`/`class` line of each convertible top-level definition; none outside PyTorch code."""
    tree = snapshot.tree
    if tree is None or not task_source.uses_torch(tree):
        return []
    lenses = []
    for target in task_source.targets(tree):
        line = target.node.lineno - 1
        here = types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0))
        arguments = [{"uri": snapshot.uri, "line": line}]
        command = types.Command(title=TITLE, command=CONVERT, arguments=arguments)
        lenses.append(types.CodeLens(range=here, command=command))
    return lenses
