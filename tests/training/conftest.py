"""What the training tests share: a tiny Llama built from scratch (no weights can be downloaded here), how a
command's exit code and error output are read, a `training.eval` output directory written by hand for the tools
that read one, and the CPU smoke's commands as its configs document them."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.model_server.tiny_model import build_tiny_llama
from tests.test_project import ROOT

SMOKE_CONFIGS = {"sft": "sft-cpu-smoke.yaml", "grpo": "grpo-cpu-smoke.yaml", "eval": "eval-cpu-smoke.yaml"}


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("model"))


def smoke_commands() -> dict[str, list[str]]:
    """The arguments of the `python -m training.X ...` commands that the smoke configs' comments give, by X (the
    first of each): data, scratch, sft, grpo and eval, in that order."""
    found: dict[str, list[str]] = {}
    for name in SMOKE_CONFIGS.values():
        for line in (ROOT / "training" / "configs" / name).read_text().splitlines():
            start = line.find("python -m training.") if line.startswith("#") else -1
            if start >= 0:
                words = shlex.split(line[start:])
                found.setdefault(words[2].removeprefix("training."), words[3:])
    return found


def outcome(main: Callable[[list[str]], int], argv: list[str], capsys) -> tuple[int, str]:
    """A command's exit code (argparse's usage errors included) and what it wrote to stderr."""
    try:
        code = main(argv)
    except SystemExit as exited:
        code = exited.code
    return code, capsys.readouterr().err


def evaluation(out: Path, tasks: dict[str, tuple[str, list[tuple[str | None, str]]]]) -> Path:
    """A training.eval output directory made elsewhere (each task's recorded path does not exist here, so its copy
    under OUT/tasks is read): task name -> (task source, [(candidate text, recorded verdict), ...]). A sample passed
    if its verdict is `correct`; one whose text is None has no file (it did not come back from that machine)."""
    (out / "tasks").mkdir(parents=True)
    records = []
    for name, (source, candidates) in tasks.items():
        (out / "tasks" / f"{name}.py").write_text(source)
        (out / "candidates" / name).mkdir(parents=True)
        samples = []
        for number, (text, verdict) in enumerate(candidates):
            path = f"candidates/{name}/sample_{number}.py"
            if text is not None:
                (out / path).write_text(text)
            samples.append({"verdict": verdict, "correct": verdict == "correct", "candidate": path})
        correct = sum(sample["correct"] for sample in samples)
        records.append(
            {"name": name, "id": name, "path": f"/elsewhere/tasks/{name}.py", "samples": samples, "correct": correct}
        )
    (out / "results.json").write_text(json.dumps({"tasks": records, "totals": {}}))
    return out
