"""The CPU smoke run as its configs document it: the commands in their comments and the configs themselves chain
(each stage reads what the one before wrote), and the smoke data has tasks to train on and held-out tasks to
evaluate, so every documented stage has its input. The stages themselves run end to end in test_pipeline.py."""

from __future__ import annotations

import shlex

import pytest
import yaml

from tests.test_project import ROOT
from training import data
from training.config import parse

CONFIGS = ROOT / "training" / "configs"
STAGES = {"sft": "sft-cpu-smoke.yaml", "grpo": "grpo-cpu-smoke.yaml", "eval": "eval-cpu-smoke.yaml"}


def _documented() -> dict[str, list[str]]:
    """The `python -m training.X ...` commands the smoke configs' comments give, by X (the first of each)."""
    found: dict[str, list[str]] = {}
    for name in STAGES.values():
        for line in (CONFIGS / name).read_text().splitlines():
            start = line.find("python -m training.") if line.startswith("#") else -1
            if start >= 0:
                words = shlex.split(line[start:])
                found.setdefault(words[2].removeprefix("training."), words[3:])
    return found


@pytest.fixture
def stages(monkeypatch) -> dict[str, dict]:
    """Every stage's settings as the documented commands and configs give them (the values as written: the
    commands' checks of their inputs would need the earlier stages run), and the data command's parsed arguments."""
    monkeypatch.chdir(ROOT)
    commands = _documented()
    assert set(commands) == {"data", "scratch", "sft", "grpo", "eval"}, commands
    settings = {name: _flags(commands[name]) for name in ("data", "scratch")}
    for name, config in STAGES.items():
        assert commands[name] == ["--config", f"training/configs/{config}"], commands[name]
        settings[name] = yaml.safe_load((CONFIGS / config).read_text())
    settings["data_args"] = parse(data.DataArgs, commands["data"], "data")
    return settings


def _flags(argv: list[str]) -> dict[str, str]:
    return {flag.removeprefix("--").replace("-", "_"): value for flag, value in zip(argv[::2], argv[1::2])}


def test_each_stage_reads_what_the_stage_before_it_wrote(stages):
    corpus = stages["data"]["output_dir"]
    assert stages["scratch"]["data"] == stages["sft"]["data"] == stages["grpo"]["data"] == corpus
    assert stages["sft"]["model"] == stages["scratch"]["output_dir"]
    assert stages["grpo"]["model"] == f"{stages['sft']['output_dir']}/final"
    assert stages["eval"]["model"] == f"{stages['grpo']['output_dir']}/final"
    assert stages["eval"]["suite"] == f"{corpus}/rl.{stages['grpo']['profile']}.jsonl"


def test_the_smoke_data_has_tasks_to_train_on_and_held_out_tasks_to_evaluate(stages):
    """Before `--test-fraction 0.25`, every one of the 16 fixture tasks drew the train split and the documented
    evaluation stopped at once: no records of split `test`."""
    tasks, _ = data.collect(stages["data_args"])
    splits = {task.split for task in tasks}
    assert stages["eval"]["split"] == "test" and {"train", "test"} <= splits, [(t.name, t.split) for t in tasks]
