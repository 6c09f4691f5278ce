"""The CPU smoke run as its configs document it: the commands in their comments and the configs themselves chain
(each stage reads what the one before wrote), and the smoke data has tasks to train on and held-out tasks to
evaluate, so every documented stage has its input. The stages themselves run end to end in test_pipeline.py."""

from __future__ import annotations

import pytest
import yaml

from tests.test_project import ROOT
from tests.training.conftest import SMOKE_CONFIGS, smoke_commands
from training import data
from training.config import parse

CONFIGS = ROOT / "training" / "configs"


@pytest.fixture
def stages(monkeypatch) -> dict[str, dict]:
    """Every stage's settings as the documented commands and configs give them (the values as written: the
    commands' checks of their inputs would need the earlier stages run), and the data command's parsed arguments."""
    monkeypatch.chdir(ROOT)
    commands = smoke_commands()
    assert set(commands) == {"data", "scratch", "sft", "grpo", "eval"}, commands
    settings = {name: _flags(commands[name]) for name in ("data", "scratch")}
    for name, config in SMOKE_CONFIGS.items():
        assert commands[name] == ["--config", f"training/configs/{config}"], commands[name]
        settings[name] = yaml.safe_load((CONFIGS / config).read_text())
    settings["data_args"] = parse(data.DataArgs, commands["data"], "data")
    return settings


def _flags(argv: list[str]) -> dict[str, str]:
    """Each `--flag`'s value: the words up to the next flag, joined by a space."""
    words: dict[str, list[str]] = {}
    for word in argv:
        if word.startswith("--"):
            key = words.setdefault(word.removeprefix("--").replace("-", "_"), [])
        else:
            key.append(word)
    return {flag: " ".join(values) for flag, values in words.items()}


def test_each_stage_reads_what_the_stage_before_it_wrote(stages):
    corpus = stages["data"]["output_dir"]
    assert stages["scratch"]["data"] == stages["sft"]["data"] == stages["grpo"]["data"] == corpus
    assert stages["sft"]["model"] == stages["scratch"]["output_dir"]
    assert stages["grpo"]["model"] == f"{stages['sft']['output_dir']}/final"
    assert stages["eval"]["model"] == f"{stages['grpo']['output_dir']}/final"
    assert stages["eval"]["suite"] == f"{corpus}/rl.{stages['grpo']['profile']}.jsonl"


def test_the_smoke_data_has_one_task_to_train_on_and_a_held_out_one_to_evaluate(stages):
    """SFT teaches the scratch model the one training task's kernel, so that GRPO's replies to it sometimes parse;
    the evaluation reads split `test` (when every task drew `train`, it stopped at once)."""
    tasks, _ = data.collect(stages["data_args"])
    splits = sorted(task.split for task in tasks)
    assert stages["eval"]["split"] == "test" and splits == ["test", "train"], [(t.name, t.split) for t in tasks]
