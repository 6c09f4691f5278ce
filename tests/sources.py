"""Tasks and candidates read from the fixtures' files, as the command line reads the user's."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from verifier import Task


def pair(task: str | os.PathLike, candidate: str | os.PathLike) -> tuple[Task, str]:
    """The task in `task`'s file and the candidate source in `candidate`'s."""
    return Task.from_file(task), Path(candidate).read_text()


def read_pairs(files: Iterable[tuple[str | os.PathLike, str | os.PathLike]]) -> list[tuple[Task, str]]:
    return [pair(task, candidate) for task, candidate in files]
