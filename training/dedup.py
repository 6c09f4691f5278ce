"""Task identity, duplicates and contamination: what makes two tasks the same, and a task too close to an
evaluation suite's.

A task's id is the hash of its normalised AST: comments, docstrings and formatting do not change it, any
change of code does. Contamination is measured on the code that defines the computation (the statements of the
`Model` class's methods): the share of a task's token n-grams found in one task of a suite; and by op signature,
the set of ops it computes with, however spelt: `nn.Conv2d`, `F.conv2d` and `torch.conv2d` are one op, so a
library's `nn.LayerNorm` block is the same task as a benchmark's `F.layer_norm` problem.
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from pathlib import Path

ID_LENGTH = 16
# Calls that say nothing of what a task computes: construction, shape queries and plumbing.
NOT_OPS = frozenset(
    {"super", "init", "size", "dim", "numel", "contiguous", "range", "len", "int", "float", "tuple", "list"}
)


def task_id(source: str) -> str:
    """A stable id for the task: the hash of its AST without docstrings, written back as source (raises
    SyntaxError). `ast.unparse` rather than `ast.dump`: the dump lists every node field, and fields come with new
    Python versions (3.12's `type_params`), which would give the same task another id, and another split, on a
    machine with another Python."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.unparse(tree).encode()).hexdigest()[:ID_LENGTH]


def model_ngrams(source: str, n: int) -> set[tuple[str, ...]]:
    """Token n-grams of the statements in the task's `Model` methods (its whole module where it has no `Model`),
    without the lines every task shares (`def forward(self, x):`, `super().__init__()`) and comments. A body
    shorter than `n` tokens is one gram of all of them, so tiny tasks are compared whole."""
    tree = ast.parse(source)
    model = next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Model"), None)
    statements = [
        statement
        for method in (model.body if model is not None else [])
        if isinstance(method, ast.FunctionDef)
        for statement in method.body
        if not _is_docstring(statement) and "super()" not in ast.unparse(statement)
    ]
    text = "\n".join(ast.unparse(statement) for statement in statements) if model is not None else source
    tokens = [
        token.string
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
        and token.string
    ]
    if len(tokens) < n:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def op_signature(source: str) -> frozenset[str]:
    """The ops the task's `Model` methods call (its module's functions where it has no `Model`), each named by its
    last attribute, lowercased, without underscores or a trailing `loss`: `nn.CrossEntropyLoss` and
    `F.cross_entropy` are both `crossentropy`. Calls of the model's own attributes (`self.block(x)`) are left out:
    what they compute is in the constructor that made them."""
    tree = ast.parse(source)
    model = next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Model"), None)
    scope = model if model is not None else tree
    ops = set()
    for node in ast.walk(scope):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) and function.value.id == "self":
            continue
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        op = name.lower().replace("_", "")
        op = op.removesuffix("loss") if len(op) > len("loss") else op
        if op and op not in NOT_OPS:
            ops.add(op)
    return frozenset(ops)


class Suite:
    """An evaluation suite's tasks, as n-gram sets and op signatures, to check training tasks against: the task
    modules of a directory, or (`sources`) each task's name and code."""

    def __init__(self, directory: Path, n: int, name: str | None = None, sources: dict[str, str] | None = None):
        self.name = name or directory.name
        self.n = n
        self.tasks: dict[str, set[tuple[str, ...]]] = {}
        self.signatures: dict[frozenset[str], str] = {}
        if sources is None:
            sources = {}
            for path in sorted(directory.glob("*.py")):
                try:
                    sources[path.name] = path.read_text()
                except (OSError, UnicodeDecodeError):
                    continue
        for task, source in sources.items():
            try:
                self.tasks[task] = model_ngrams(source, n)
                self.signatures.setdefault(op_signature(source), task)
            except (SyntaxError, tokenize.TokenError):
                continue
        self.signatures.pop(frozenset(), None)

    def same_ops(self, source: str) -> str | None:
        """The first suite task (by name) that computes with exactly the ops `source` does, or None."""
        return self.signatures.get(op_signature(source))

    def closest(self, source: str) -> tuple[str | None, float]:
        """The suite task sharing the largest share of `source`'s n-grams, and that share (0 to 1)."""
        grams = model_ngrams(source, self.n)
        if not grams:
            return None, 0.0
        best, share = None, 0.0
        for name, theirs in self.tasks.items():
            overlap = len(grams & theirs) / len(grams)
            if overlap > share:
                best, share = name, overlap
        return best, share


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
