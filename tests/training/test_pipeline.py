"""The whole training pipeline on a CPU, as a user runs it: data -> a model from scratch -> SFT -> GRPO -> eval,
each through its command, with the real verifier (Triton's interpreter) behind the data and the rewards."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from model_server import prompts
from model_server.backends import BackendConfig, GenerationRequest, collect, create_backend
from training import data, eval, grpo, runs, scratch, sft, synth
from verifier import Task

REWARD_CURVE = Path(__file__).parents[2] / "benchmarks" / "reward_curve.py"
SEED = 37  # synthetic tasks 37 and 38: one lands in the train split, the other in the held-out test split


@pytest.mark.slow
def test_data_sft_grpo_and_eval_run_end_to_end_on_a_cpu(tmp_path, capsys):
    corpus, model, sft_run, grpo_run, results = (tmp_path / name for name in ("data", "model", "sft", "grpo", "eval"))
    common = ["--val-fraction", "0", "--test-fraction", "0.2", "--seed", str(SEED)]
    assert (
        data.main(["--output-dir", str(corpus), "--synthetic", "2", "--device", "cpu", "--trials", "2", *common]) == 0
    )
    sheet = json.loads((corpus / "datasheet.json").read_text())
    assert sheet["splits"] == {"train": 1, "test": 1}
    assert sheet["sft"]["pairs"]["autotriton"] >= 1, sheet

    assert scratch.main(["--output-dir", str(model), "--data", str(corpus), "--max-length", "8192"]) == 0

    short = ["--logging-steps", "1", "--save-steps", "1", "--learning-rate", "1e-3", "--max-steps", "2"]
    sft_flags = ["--data", str(corpus), "--model", str(model), "--output-dir", str(sft_run), "--max-length", "8192"]
    assert sft.main([*sft_flags, *short, "--gradient-accumulation", "1"]) == 0
    assert (sft_run / "final" / "model.safetensors").is_file()

    grpo_flags = ["--data", str(corpus), "--model", str(sft_run / "final"), "--output-dir", str(grpo_run)]
    grpo_flags += ["--num-generations", "2", "--per-device-batch-size", "2", "--max-completion-length", "24"]
    assert grpo.main([*grpo_flags, *short, "--verify-device", "cpu", "--trials", "2"]) == 0
    steps = [json.loads(line) for line in (grpo_run / grpo.STEPS_LOG).read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2]
    verified = [json.loads(line) for line in (grpo_run / grpo.REWARDS_LOG).read_text().splitlines()]
    assert verified and all(line["verdict"] != "correct" for line in verified), "a scratch model writes no kernel"
    logged = [json.loads(line) for line in (grpo_run / runs.LOG).read_text().splitlines()]
    assert any("rewards/correct/mean" in line for line in logged)
    curve = subprocess.run(
        [sys.executable, str(REWARD_CURVE), str(grpo_run)], capture_output=True, text=True, timeout=120, check=True
    )
    rows = [line.strip("| ").split(" | ") for line in curve.stdout.splitlines() if line[2:3].isdigit()]
    assert [row[0] for row in rows] == ["1", "2"], curve.stdout
    assert [row[2] for row in rows] == ["0.000", "0.000"], "no reply of a scratch model is verified correct"
    trained_ops = {
        op
        for line in (corpus / "rl.autotriton.jsonl").read_text().splitlines()
        if json.loads(line)["split"] == "train"
        for op in synth.ops_of(json.loads(line)["task"])
    }
    op_table = curve.stdout.split("| op | replies, first half | share correct |", 1)[1].split("\n\n")[0]
    op_rows = [line.strip("| ").split(" | ") for line in op_table.splitlines()[2:]]
    assert op_rows and {row[0] for row in op_rows} <= trained_ops, "the replies counted per op of their tasks"
    assert all(row[2] in ("0.000", "-") and row[4] in ("0.000", "-") for row in op_rows), curve.stdout
    assert (grpo_run / "reward_curve.png").is_file() == (importlib.util.find_spec("matplotlib") is not None)

    eval_flags = ["--suite", str(corpus / "rl.autotriton.jsonl"), "--backend", "transformers"]
    eval_flags += ["--model", str(grpo_run / "final"), "--samples", "2", "--max-tokens", "24", "--device", "cpu"]
    capsys.readouterr()
    assert eval.main([*eval_flags, "--output-dir", str(results)]) == 0
    table = capsys.readouterr().out
    totals = json.loads((results / "results.json").read_text())["totals"]
    assert totals["tasks"] == 1 and totals["pass@k"] == {"1": 0.0, "2": 0.0}
    assert "| pass@1 | 0.000 |" in table

    served = create_backend(BackendConfig(name="transformers", model=str(grpo_run / "final"), device="cpu"))
    task = Task(json.loads((corpus / "rl.autotriton.jsonl").read_text().splitlines()[0])["task"])
    replies = collect(served, GenerationRequest(task, 1, "cpu", max_tokens=8))[0]
    assert len(replies) == 1, "the trained model serves through the product's own backend"
    assert (
        prompts.messages("autotriton", task.source)
        == json.loads((corpus / "rl.autotriton.jsonl").read_text().splitlines()[0])["prompt"]
    )
