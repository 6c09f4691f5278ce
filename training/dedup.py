"""Task identity, duplicates and contamination: what makes two tasks the same, and a task too close to an
evaluation suite's.

A task's id is the hash of its normalised AST: comments, docstrings and formatting do not change it, any
change of code does. What a task computes is its `Model` class and every class and function of its module that the
`Model` reaches by name: a harvested block's code is the library's, which the `Model` only wraps. Two tasks are
duplicates when their modules differ only in the names of those classes and functions (one library's block copied
under another model family's name), and one computation when that code is the same whatever its sizes or config
(the size tiers of one block). Contamination is measured on that code, with the module's own names read alike: the
share of a task's token n-grams found in one task of a suite; and by op signature, the set of ops it computes with,
however spelt: `nn.Conv2d`, `F.conv2d` and `torch.conv2d` are one op, so a library's `nn.LayerNorm` block is the same
task as a benchmark's `F.layer_norm` problem.
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from pathlib import Path

ID_LENGTH = 16
MODEL = "Model"
ENTRY_POINTS = frozenset({MODEL, "get_inputs", "get_init_inputs"})
OWN_NAME = "OWN"  # how a name the module defines reads in n-grams
# Calls that say nothing of what a task computes: construction, shape queries and plumbing.
NOT_OPS = frozenset(
    {
        "super",
        "init",
        "size",
        "dim",
        "numel",
        "contiguous",
        "range",
        "len",
        "int",
        "float",
        "tuple",
        "list",
        "isinstance",
        "getattr",
        "hasattr",
        "setattr",
    }
)
Definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


def task_id(source: str) -> str:
    """A stable id for the task: the hash of its AST without docstrings, written back as source (raises
    SyntaxError). `ast.unparse` rather than `ast.dump`: the dump lists every node field, and fields come with new
    Python versions (3.12's `type_params`), which would give the same task another id, and another split, on a
    machine with another Python."""
    return _hash(_without_docstrings(ast.parse(source)))


def duplicate_key(source: str) -> str:
    """The same for two tasks whose modules differ only in docstrings, layout and the names of the classes and
    functions they define (raises SyntaxError)."""
    tree = _without_docstrings(ast.parse(source))
    return _hash(_renamed(tree, _own_names(tree)))


def computation_id(source: str) -> str:
    """The same for two tasks whose `Model` and the code it reaches are the same up to the names the module defines,
    whatever their sizes, configs and inputs (the module's other statements): one block at each size tier."""
    tree = _without_docstrings(ast.parse(source))
    code = ast.Module(body=_reached(tree), type_ignores=[])
    return _hash(_renamed(code, _own_names(tree)))


def model_ngrams(source: str, n: int) -> set[tuple[str, ...]]:
    """Token n-grams of the statements in the task's `Model` methods and in the classes and functions it reaches
    (its whole module where it has no `Model`), with each name the module defines read as one token, and without
    the lines every task shares (`def forward(self, x):`, `super().__init__()`) and comments. A body shorter than
    `n` tokens is one gram of all of them, so tiny tasks are compared whole."""
    tree = ast.parse(source)
    reached = _reached(tree)
    if not reached:
        text = source
    else:
        statements = [
            statement
            for definition in reached
            for function in _functions(definition)
            for statement in function.body
            if not _is_docstring(statement) and "super()" not in ast.unparse(statement)
        ]
        text = "\n".join(ast.unparse(statement) for statement in statements)
    own = _own_names(tree)
    tokens = [
        OWN_NAME if token.type == tokenize.NAME and token.string in own else token.string
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
        and token.string
    ]
    if len(tokens) < n:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def op_signature(source: str) -> frozenset[str]:
    """The ops called in the task's `Model` and the code it reaches (its module's functions where it has no
    `Model`), each named by its last attribute, lowercased, without underscores or a trailing `loss`:
    `nn.CrossEntropyLoss` and `F.cross_entropy` are both `crossentropy`. Calls of the model's own attributes
    (`self.block(x)`), of the module's own classes and functions and of local names are left out: what they compute
    is in the code they name, which is read too."""
    tree = ast.parse(source)
    scope = _reached(tree) or [tree]
    own = _own_names(tree)
    local = {
        node.id if isinstance(node, ast.Name) else node.arg
        for part in scope
        for node in ast.walk(part)
        if isinstance(node, ast.arg) or (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))
    }
    ops = set()
    for part in scope:
        for node in ast.walk(part):
            if not isinstance(node, ast.Call):
                continue
            function = node.func
            base = function.value if isinstance(function, ast.Attribute) else function
            if isinstance(base, ast.Name) and (base.id == "self" or base.id in own):
                continue
            if isinstance(function, ast.Name) and function.id in local:
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


def _reached(tree: ast.Module) -> list[Definition]:
    """The module's `Model` class and every module-level class and function it reaches by name, in source order;
    empty where the module has no `Model`."""
    defined = {node.name: node for node in tree.body if isinstance(node, Definition)}
    if MODEL not in defined:
        return []
    reached, todo = {MODEL}, [defined[MODEL]]
    while todo:
        for node in ast.walk(todo.pop()):
            name = node.id if isinstance(node, ast.Name) else None
            if name in defined and name not in reached:
                reached.add(name)
                todo.append(defined[name])
    return [node for node in tree.body if isinstance(node, Definition) and node.name in reached]


def _own_names(tree: ast.Module) -> set[str]:
    """The classes and functions the module defines, but for the entry points every task has."""
    return {node.name for node in tree.body if isinstance(node, Definition)} - ENTRY_POINTS


def _functions(definition: Definition) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """A function itself, or a class's methods."""
    if isinstance(definition, ast.ClassDef):
        return [node for node in definition.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    return [definition]


def _renamed(tree: ast.Module, own: set[str]) -> ast.Module:
    """`tree` with each of the module's own names replaced by one numbered by where it is first defined (in place:
    every caller parses its own tree)."""
    order = dict.fromkeys(node.name for node in tree.body if isinstance(node, Definition) and node.name in own)
    names = {name: f"_own{number}" for number, name in enumerate(order)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]
        elif isinstance(node, Definition) and node.name in names:
            node.name = names[node.name]
    return tree


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            node.body = body[1:] or [ast.Pass()]
    return tree


def _hash(tree: ast.Module) -> str:
    return hashlib.sha256(ast.unparse(tree).encode()).hexdigest()[:ID_LENGTH]
