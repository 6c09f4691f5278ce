"""The whole training pipeline on a CPU, as a user runs it: the smoke commands that training/configs/*-cpu-smoke.yaml
document (data -> a model from scratch -> SFT -> GRPO -> eval), with the real verifier (Triton's interpreter) behind
the data and the rewards, and the trained model served by the product's own backend."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from model_server import prompts
from model_server.backends import BackendConfig, GenerationRequest, collect, create_backend
from tests.test_project import ROOT
from tests.training.conftest import smoke_commands
from training import data, eval, grpo, runs, scratch, sft
from verifier import Task

REWARD_CURVE = ROOT / "benchmarks" / "reward_curve.py"
MAINS = {"data": data.main, "scratch": scratch.main, "sft": sft.main, "grpo": grpo.main, "eval": eval.main}


@pytest.mark.slow
def test_the_documented_smoke_runs_and_its_grpo_steps_send_a_gradient(tmp_path, monkeypatch, capsys):
    """Before the smoke's SFT taught the scratch model one task's kernel, every GRPO reply was a compile error alike:
    every advantage was 0 and no step sent a gradient, though the run finished."""
    for name in ("tests", "training"):  # the commands' relative paths, with their outputs written under tmp_path
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    commands = smoke_commands()
    for stage in ("data", "scratch", "sft", "grpo"):
        assert MAINS[stage](commands[stage]) == 0, stage
    corpus, grpo_run = tmp_path / "data" / "smoke", tmp_path / "runs" / "grpo-cpu-smoke"
    assert json.loads((corpus / "datasheet.json").read_text())["splits"] == {"train": 1, "test": 1}
    assert (tmp_path / "runs" / "sft-cpu-smoke" / "final" / "model.safetensors").is_file()

    steps = [json.loads(line) for line in (grpo_run / grpo.STEPS_LOG).read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2]
    logged = [json.loads(line) for line in (grpo_run / runs.LOG).read_text().splitlines()]
    updates = [line for line in logged if "grad_norm" in line]
    assert len(updates) == 2 and any(u["grad_norm"] > 0 and u["reward_std"] > 0 for u in updates), updates
    verdicts = [json.loads(line)["verdict"] for line in (grpo_run / grpo.REWARDS_LOG).read_text().splitlines()]
    assert len(set(verdicts)) >= 2, f"a group's replies earned different verdicts: {verdicts}"

    curve = subprocess.run(
        [sys.executable, str(REWARD_CURVE), str(grpo_run)], capture_output=True, text=True, timeout=120, check=True
    )
    rows = [line.strip("| ").split(" | ") for line in curve.stdout.splitlines() if line[2:3].isdigit()]
    assert [row[0] for row in rows] == ["1", "2"], curve.stdout
    assert [float(row[2]) for row in rows] == pytest.approx([u["rewards/correct/mean"] for u in updates], abs=1e-3)
    assert (grpo_run / "reward_curve.png").is_file() == (importlib.util.find_spec("matplotlib") is not None)

    capsys.readouterr()
    assert MAINS["eval"](commands["eval"]) == 0
    table = capsys.readouterr().out
    totals = json.loads((tmp_path / "runs" / "eval-cpu-smoke" / "results.json").read_text())["totals"]
    assert totals["tasks"] == 1 and "| pass@1 |" in table

    record = json.loads((corpus / "rl.autotriton.jsonl").read_text().splitlines()[0])
    served = create_backend(BackendConfig(name="transformers", model=str(grpo_run / "final"), device="cpu"))
    replies = collect(served, GenerationRequest(Task(record["task"]), 1, "cpu", max_tokens=8))[0]
    assert len(replies) == 1, "the trained model serves through the product's own backend"
    assert prompts.messages("autotriton", record["task"]) == record["prompt"]


def test_the_smoke_s_outputs_are_ignored_by_git():
    """The smoke writes data/ and runs/ at the top of a checkout; git must not offer them for a commit."""
    ignored = subprocess.run(
        ["git", "check-ignore", "data/smoke/datasheet.json", "runs/grpo-cpu-smoke/log.jsonl"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ignored.stdout.split() == ["data/smoke/datasheet.json", "runs/grpo-cpu-smoke/log.jsonl"], ignored
