"""What the training tests share: a tiny Llama built from scratch (no weights can be downloaded here), and how a
command's exit code and error output are read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.model_server.tiny_model import build_tiny_llama


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("model"))


def outcome(main: Callable[[list[str]], int], argv: list[str], capsys) -> tuple[int, str]:
    """A command's exit code (argparse's usage errors included) and what it wrote to stderr."""
    try:
        code = main(argv)
    except SystemExit as exited:
        code = exited.code
    return code, capsys.readouterr().err
