"""`python -m training.grpo` on a CPU: a from-scratch tiny Llama trained for a few steps on RL prompts in
training.data's format, rewarded by the real verifier (Triton's interpreter), resuming, and the errors it names.
The whole pipeline, data to eval, is tests/training/test_pipeline.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from tests.conftest import FIXTURES
from tests.test_project import ROOT
from tests.training.conftest import outcome
from training import config, data, grpo, improve, runs

CONFIGS = ROOT / "training" / "configs"
FAST = ["--num-generations", "2", "--per-device-batch-size", "2", "--max-completion-length", "16"]
FAST += ["--verify-device", "cpu", "--trials", "2", "--logging-steps", "1", "--save-steps", "1"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """RL records as training.data writes them: three train prompts and a test one."""
    directory = tmp_path_factory.mktemp("data")
    with data.records_path(directory, "rl", "autotriton").open("w") as f:
        for number, (name, split) in enumerate(
            [("relu", "train"), ("add", "train"), ("scale", "train"), ("row_sum", "test")]
        ):
            source = (FIXTURES / "tasks" / f"{name}.py").read_text()
            task = data.Task(f"{number:016x}", name, source, name, ("elementwise",), split, name)
            f.write(json.dumps(data.record(task, "autotriton")) + "\n")
    return directory


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_steps_are_rewarded_by_the_verifier_logged_and_resumed(model_dir, data_dir, tmp_path):
    run = tmp_path / "run"
    argv = ["--model", str(model_dir), "--data", str(data_dir), "--output-dir", str(run), *FAST]
    assert grpo.main([*argv, "--max-steps", "1"]) == 0
    assert (run / runs.FINAL / "model.safetensors").is_file() and (run / "checkpoint-1").is_dir()
    [logged] = [line for line in lines(run / runs.LOG) if "reward" in line]
    assert {"rewards/correct/mean", "rewards/speedup/mean", "rewards/well_formed/mean"} <= set(logged)
    assert any(key.startswith("verdicts/") for key in logged), "the verdicts' shares are among the metrics"
    [step] = lines(run / grpo.STEPS_LOG)
    assert step["step"] == 1 and step["generation_s"] > 0
    assert step["seconds"] >= step["generation_s"] + step["reward_s"]
    verified = lines(run / grpo.REWARDS_LOG)
    assert len(verified) == 2 and all(not line["passed"] for line in verified)

    assert grpo.main([*argv, "--max-steps", "2"]) == 0
    assert [line["step"] for line in lines(run / grpo.STEPS_LOG)] == [1, 2], "the re-run resumed at step 1"
    state = json.loads((run / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2


def test_the_learning_rate_schedule_is_the_one_asked_for(model_dir, data_dir, tmp_path):
    """trl decays the rate linearly to 0 over the epochs by default; a run cut short by --max-minutes would
    train at a fraction of it, so a constant schedule keeps every step at --learning-rate."""
    rates = {}
    for schedule in ("constant", "linear"):
        run = tmp_path / schedule
        argv = ["--model", str(model_dir), "--data", str(data_dir), "--output-dir", str(run), *FAST]
        assert grpo.main([*argv, "--max-steps", "2", "--learning-rate", "3e-6", "--lr-scheduler", schedule]) == 0
        rates[schedule] = [line["learning_rate"] for line in lines(run / runs.LOG) if "learning_rate" in line]
    assert rates["constant"] == [3e-6, 3e-6]
    assert rates["linear"][0] > rates["linear"][1]


def test_bad_inputs_are_named_in_one_line(model_dir, data_dir, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    only_test = tmp_path / "only-test"
    only_test.mkdir()
    test_rows = [line for line in (data_dir / "rl.autotriton.jsonl").read_text().splitlines() if '"test"' in line]
    (only_test / "rl.autotriton.jsonl").write_text("\n".join(test_rows) + "\n")
    base = ["--model", str(model_dir), "--output-dir", str(tmp_path / "run")]
    cases = [
        ([*base, "--data", str(empty)], "no rl.autotriton.jsonl in"),
        ([*base, "--data", str(only_test)], "no rows in the train split (rows per split: {'test': 1})"),
        ([*base, "--data", str(data_dir), "--num-generations", "3"], "must be a multiple of --num-generations (3)"),
        ([*base, "--data", str(data_dir), "--num-generations", "1"], "--num-generations must be at least 2"),
        ([*base, "--data", str(data_dir), "--scale-rewards", "std"], "--scale-rewards must be group, batch or none"),
        ([*base, "--data", str(data_dir), "--reward-runs", "-1"], "the --reward-* weights must be >= 0"),
        ([*base, "--data", str(data_dir), "--lr-scheduler", "wsd"], "--lr-scheduler must be one of cosine, linear"),
        ([*base, "--data", str(data_dir), "--prompts", "faster"], "--prompts must be one of convert, improve, both"),
        (
            [*base, "--data", str(data_dir), "--prompts", "both", "--reward-speedup", "1"],
            "needs --reward-speedup above 0 and replies verified on a GPU",
        ),
        (
            ["--model", str(tmp_path / "nowhere"), "--data", str(data_dir), "--output-dir", str(tmp_path / "r")],
            "nowhere",
        ),
    ]
    for argv, message in cases:
        code, err = outcome(grpo.main, [*argv, "--verify-device", "cpu"], capsys)
        assert code == 2 and message in err, (argv, err)
        assert "Traceback" not in err


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("grpo-*.yaml")), ids=lambda p: p.name)
def test_every_grpo_config_is_read_by_the_command(path, data_dir, tmp_path):
    """The YAML keys are the dataclass's fields (unknown ones are refused); data and output are the user's."""
    args = config.parse(
        grpo.GRPOArgs, ["--config", str(path), "--data", str(data_dir), "--output-dir", str(tmp_path)], ""
    )
    assert args.model and yaml.safe_load(path.read_text())["output_dir"].startswith("runs/")


def test_fast_generation_samples_the_replies_from_the_policy_copy(model_dir, data_dir, tmp_path, monkeypatch):
    """`--fast-generation`: trl's own generation is never called (it fails here); each step's replies come from the
    static-cache copy, are rewarded, and their time is measured."""
    from trl import GRPOTrainer

    def trl_generation(*args, **kwargs):
        raise AssertionError("trl's own generation was called")

    monkeypatch.setattr(GRPOTrainer, "_generate_single_turn", trl_generation)
    run = tmp_path / "run"
    argv = ["--model", str(model_dir), "--data", str(data_dir), "--output-dir", str(run), *FAST]
    assert grpo.main([*argv, "--max-steps", "2", "--fast-generation"]) == 0
    steps = lines(run / grpo.STEPS_LOG)
    assert [step["step"] for step in steps] == [1, 2]
    assert all(0 < step["generation_s"] <= step["seconds"] for step in steps), steps  # counted once, in the step
    assert len(lines(run / grpo.REWARDS_LOG)) == 4


def _with_improve_prompts(data_dir: Path, tmp_path: Path) -> Path:
    """A copy of `data_dir` with improve prompts as training.data --improve writes them: two train tasks seeded with
    their fixture kernels, as if timed."""
    directory = tmp_path / "improve-data"
    directory.mkdir()
    rl = data.records_path(data_dir, "rl", "autotriton")
    (directory / rl.name).write_text(rl.read_text())
    with data.records_path(directory, data.IMPROVE_RL, "autotriton").open("w") as f:
        for number, name in enumerate(["relu", "add"]):
            source = (FIXTURES / "tasks" / f"{name}.py").read_text()
            task = data.Task(f"{number:016x}", name, source, name, ("elementwise",), "train", name)
            seed = improve.Timed("a fixture kernel", (FIXTURES / "candidates" / f"{name}_ok.py").read_text(), {})
            seed = improve.Timed(seed.label, seed.source, {"candidate_ms": 0.5 + number})
            f.write(json.dumps(data._improve_prompt(task, "autotriton", seed)) + "\n")
    return directory


def test_improve_prompts_are_read_with_their_seeds_beside_the_convert_prompts(data_dir, tmp_path):
    directory = _with_improve_prompts(data_dir, tmp_path)
    rows = {}
    for kind in ("convert", "improve", "both"):
        argv = ["--data", str(directory), "--output-dir", str(tmp_path / kind), "--prompts", kind]
        args = config.parse(grpo.GRPOArgs, [*argv, "--model", "m", "--reward-speedup", "1"], "")
        rows[kind] = grpo.load_prompts(args)
    assert rows["convert"].num_rows == 3 and "seed" not in rows["convert"].column_names
    assert rows["improve"].num_rows == 2 and all(rows["improve"]["seed"])
    assert "faster" in rows["improve"][0]["prompt"][-1]["content"], "the prompt asks for a faster kernel"
    assert "0.5 ms" in rows["improve"][0]["prompt"][-1]["content"], "and shows the seed's time"
    both = rows["both"]
    assert both.num_rows == 5 and sorted(bool(seed) for seed in both["seed"]) == [False] * 3 + [True] * 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU machine the replies would be timed")
def test_improve_prompts_are_refused_where_nothing_would_be_timed(model_dir, data_dir, tmp_path, capsys):
    directory = _with_improve_prompts(data_dir, tmp_path)
    base = ["--model", str(model_dir), "--output-dir", str(tmp_path / "run"), "--reward-speedup", "1"]
    code, err = outcome(grpo.main, [*base, "--data", str(data_dir), "--prompts", "improve"], capsys)
    assert code == 2 and "rl-improve.autotriton.jsonl does not exist" in err and "Traceback" not in err
    code, err = outcome(grpo.main, [*base, "--data", str(directory), "--prompts", "improve"], capsys)
    assert code == 2 and "this machine verifies replies on the CPU, where nothing is timed" in err, err
    assert not (tmp_path / "run" / runs.FINAL).exists()
