"""A task, read and checked once: its source, the module name it is loaded by, its digest, and the part of it
the candidate's sandbox may see.

Every caller (the command line, the HTTP API, the conversion loop, training) builds one `Task` and hands it on;
nothing below re-reads or re-parses it. Files exist only inside a sandbox's scratch, written from `source`.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from verifier.errors import TaskError, UsageError

REQUIRED = ("Model", "get_inputs", "get_init_inputs")


@dataclass(frozen=True)
class Task:
    """A KernelBench task module. `name` is the module name it is loaded by (a Python identifier); `origin`
    names it in messages (its path, or `name.py` for a source that came without one)."""

    MAX_NAME: ClassVar[int] = 64  # the longest module name a conversion request takes

    source: str
    name: str = "task"
    origin: str = ""
    digest: str = field(init=False)
    tree: ast.Module = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise UsageError(f"task module name {self.name!r} is not a Python identifier")
        object.__setattr__(self, "origin", self.origin or f"{self.name}.py")
        object.__setattr__(self, "tree", _parse(self.source, self.origin))
        object.__setattr__(self, "digest", hashlib.sha256(self.source.encode()).hexdigest())

    @classmethod
    def named(cls, source: str, name: str, origin: str = "") -> Task:
        """The task named `name` where that is a module name (an ASCII identifier), cut to `MAX_NAME` characters
        (some of KernelBench's file names are longer), else `task`."""
        name = name[: cls.MAX_NAME]
        return cls(source, name if name.isidentifier() and name.isascii() else "task", origin)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Task:
        """The task in `path`, named by its file's stem; UsageError if it cannot be read, TaskError naming file and
        line if it is no task."""
        path = Path(path)
        return cls.named(read_source(path, "task"), path.stem, str(path))

    @property
    def file_name(self) -> str:
        """The file the task is written to inside a sandbox."""
        return f"{self.name}.py"

    @functools.cached_property
    def inputs_source(self) -> str:
        """The source without its `Model` class (blank lines keep the line numbers): what the candidate's
        sandbox needs to draw the same inputs, and nothing that computes the reference."""
        lines = self.source.splitlines()
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "Model":
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines[first - 1 : node.end_lineno] = [""] * (node.end_lineno - first + 1)
        return "\n".join(lines) + "\n"


def read_source(path: str | os.PathLike, what: str = "candidate") -> str:
    """The text of a task or candidate file the user named; UsageError saying why it cannot be read."""
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise UsageError(f"cannot read {what} file {path}: {reason}") from exc


def syntax_error_at(origin: str, exc: SyntaxError) -> str:
    """`origin:line` of a syntax error, or the origin alone where Python names no line (a null byte, say)."""
    return f"{origin}:{exc.lineno}" if exc.lineno else origin


def _parse(source: str, origin: str) -> ast.Module:
    """The task's syntax tree, once it parses and defines what a task defines (else TaskError naming where)."""
    try:
        tree = ast.parse(source, filename=origin)
    except SyntaxError as exc:
        raise TaskError(f"{syntax_error_at(origin, exc)}: syntax error: {exc.msg}") from exc
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    missing = [name for name in REQUIRED if name not in defined]
    if missing:
        raise TaskError(f"{origin}:1: not a task: it defines no {', '.join(f'`{m}`' for m in missing)}")
    return tree
