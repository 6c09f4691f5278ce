"""`python -m training.sft` on a CPU: a from-scratch tiny Llama fine-tuned for a few steps on records in
training.data's format, the run directory it leaves, resuming, LoRA merging, and the errors it names."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch
import yaml

from model_server.backends.transformers_backend import TransformersBackend
from tests.conftest import FIXTURES
from tests.test_project import ROOT
from tests.training.conftest import outcome
from training import config, data, runs, scratch, sft
from training.config import default_of, shown

CONFIGS = ROOT / "training" / "configs"
CANDIDATE = (
    "import torch\nimport triton\nimport triton.language as tl\n\n\nclass ModelNew(torch.nn.Module):\n"
    "    def forward(self, x):\n        return torch.relu(x)\n"
)
SPLITS = {"relu": "train", "add": "train", "scale": "train", "row_sum": "train", "softmax": "val"}
FAST = ["--gradient-accumulation", "1", "--max-length", "1100", "--logging-steps", "1", "--save-steps", "2"]
FAST += ["--learning-rate", "1e-2", "--lr-scheduler", "constant", "--warmup", "0"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """SFT records as training.data writes them, for two profiles: four train rows, one val row, and one train row
    too long for `--max-length 1100`."""
    directory = tmp_path_factory.mktemp("data")
    for profile in ("autotriton", "kernelllm"):
        with data.records_path(directory, "sft", profile).open("w") as f:
            for number, (name, split) in enumerate([*SPLITS.items(), ("cumsum", "train")]):
                source = (FIXTURES / "tasks" / f"{name}.py").read_text()
                task = data.Task(f"{number:016x}", name, source, str(name), ("elementwise",), split, str(name))
                pair = data.record(task, profile)
                pair["completion"] = data.completion(profile, CANDIDATE * (40 if name == "cumsum" else 1), False)
                pair["report"] = {"verdict": "correct", "reward": 1.0}
                f.write(json.dumps(pair) + "\n")
    return directory


def flags(model_dir: Path, data_dir: Path, run: Path, *more: str) -> list[str]:
    return ["--model", str(model_dir), "--data", str(data_dir), "--output-dir", str(run), *FAST, *more]


def log_lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / runs.LOG).read_text().splitlines()]


def generates(directory: Path, prompt: list[dict] | str) -> bool:
    """Whether the model and tokenizer in `directory` load with plain transformers and extend `prompt`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory)
    if isinstance(prompt, str):
        inputs = tokenizer(prompt, return_tensors="pt")
    else:
        inputs = tokenizer.apply_chat_template(
            prompt, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
    output = model.generate(**inputs, max_new_tokens=4, do_sample=False)
    return output.shape[1] > inputs["input_ids"].shape[1]


def weights(directory: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(directory / "model.safetensors")


def test_fine_tune_writes_a_model_transformers_loads_and_resumes_from_its_checkpoint(
    model_dir, data_dir, tmp_path, capsys
):
    run = tmp_path / "run"
    assert sft.main(flags(model_dir, data_dir, run, "--max-steps", "2")) == 0
    err = capsys.readouterr().err
    assert "5 train rows, 1 val rows" in err
    assert "train: dropped 1 of 5 rows longer than --max-length 1100 tokens" in err
    assert yaml.safe_load((run / config.CONFIG_FILE).read_text())["model"] == str(model_dir)
    first = log_lines(run)
    losses = [line for line in first if "loss" in line]
    assert [line["step"] for line in losses] == [1, 2] and all(math.isfinite(line["loss"]) for line in losses)
    assert any("eval_loss" in line for line in first)
    assert (run / "checkpoint-2").is_dir()
    prompt = data.prompt("autotriton", (FIXTURES / "tasks" / "relu.py").read_text())
    assert generates(run / runs.FINAL, prompt)
    trained, base = weights(run / runs.FINAL), weights(model_dir)
    assert any(not torch.equal(trained[name], base[name]) for name in base)

    assert sft.main(flags(model_dir, data_dir, run, "--max-steps", "4")) == 0
    assert f"resuming from {run / 'checkpoint-2'} (step 2)" in capsys.readouterr().err
    resumed = [line["step"] for line in log_lines(run)[len(first) :] if "loss" in line]
    assert resumed == [3, 4]  # steps 1 and 2 came from the checkpoint, not from training again
    state = json.loads((run / "checkpoint-4" / "trainer_state.json").read_text())
    assert state["global_step"] == 4 and [e["step"] for e in state["log_history"] if "loss" in e] == [1, 2, 3, 4]


def test_max_minutes_stops_at_the_first_step_past_the_limit_and_still_writes_final(
    model_dir, data_dir, tmp_path, capsys
):
    run = tmp_path / "run"
    assert sft.main(flags(model_dir, data_dir, run, "--max-steps", "50", "--max-minutes", "0.000001")) == 0
    assert "--max-minutes 1e-06 reached at step 1: stopping" in capsys.readouterr().err
    assert [line["step"] for line in log_lines(run) if "loss" in line] == [1]
    assert (run / runs.FINAL / "config.json").is_file()


def test_lora_is_merged_into_a_full_model_or_kept_as_an_adapter(model_dir, data_dir, tmp_path):
    run = tmp_path / "lora"
    assert sft.main(flags(model_dir, data_dir, run, "--profile", "kernelllm", "--lora", "--max-steps", "2")) == 0
    final = run / runs.FINAL
    assert not (final / "adapter_config.json").exists() and (run / runs.ADAPTER / "adapter_config.json").is_file()
    merged, base = weights(final), weights(model_dir)
    assert set(merged) == set(base)  # no LoRA tensors: a plain model, loaded without peft
    assert not torch.equal(
        merged["model.layers.0.self_attn.q_proj.weight"], base["model.layers.0.self_attn.q_proj.weight"]
    )
    assert generates(final, data.prompt("kernelllm", (FIXTURES / "tasks" / "relu.py").read_text()))

    adapter_only = tmp_path / "adapter-only"
    more = ("--profile", "kernelllm", "--lora", "--no-merge-lora", "--max-steps", "1")
    assert sft.main(flags(model_dir, data_dir, adapter_only, *more)) == 0
    assert (adapter_only / runs.FINAL / "adapter_config.json").is_file()
    assert not (adapter_only / runs.FINAL / "model.safetensors").exists()


@pytest.mark.parametrize("profile", ["autotriton", "kernelllm"])
def test_training_sees_the_tokens_serving_sends_and_learns_only_the_completion(model_dir, data_dir, tmp_path, profile):
    args = sft.SFTArgs(output_dir=str(tmp_path), data=str(data_dir), model=str(model_dir), profile=profile)
    train_rows, val_rows = sft.load_rows(args)
    model, tokenizer = runs.load_model(args)
    trainer = sft.build_trainer(args, model, tokenizer, train_rows, val_rows)
    row, record = trainer.train_dataset[0], train_rows[0]
    served = TransformersBackend(model=str(model_dir), profile=profile, device="cpu")
    prompt_ids = served.encode(record["prompt"])["input_ids"][0].tolist()  # what serving gives the model
    completion = record["completion"] if profile == "kernelllm" else record["completion"][0]["content"]
    assert row["input_ids"][: len(prompt_ids)] == prompt_ids
    labels = row["labels"]
    assert set(labels[: len(prompt_ids)]) == {-100}
    assert labels[len(prompt_ids) :] == row["input_ids"][len(prompt_ids) :]
    assert tokenizer.decode(labels[len(prompt_ids) :]).startswith(completion + scratch.EOS)


def test_bad_inputs_are_named_in_one_line(model_dir, data_dir, tmp_path, capsys):
    empty, empty_file, only_val = (tmp_path / name for name in ("empty", "empty-file", "only-val"))
    for directory in (empty, empty_file, only_val):
        directory.mkdir()
    (empty_file / "sft.autotriton.jsonl").write_text("")
    val = [line for line in (data_dir / "sft.autotriton.jsonl").read_text().splitlines() if '"split": "val"' in line]
    (only_val / "sft.autotriton.jsonl").write_text("\n".join(val) + "\n")
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    cases = [
        ("--data", tmp_path / "nope", 2, f"--data: not a directory: {tmp_path / 'nope'}"),
        ("--data", empty, 2, f"no sft.autotriton.jsonl in {empty} (SFT files there: none"),
        ("--data", empty_file, 2, "sft.autotriton.jsonl is empty"),
        ("--data", only_val, 2, "no rows in the train split (rows per split: {'val': 1})"),
        ("--model", tmp_path / "missing", 2, f"cannot load model {tmp_path / 'missing'}: no such directory"),
        ("--model", not_a_model, 2, f"cannot load model {not_a_model}: no config.json in that directory"),
        ("--max-length", 8, 2, "--max-length must be at least 16"),
    ]
    for flag, value, code, message in cases:
        base = {"--data": str(data_dir), "--model": str(model_dir), "--max-length": "1024"}
        base[flag] = str(value)
        argv = [item for pair in base.items() for item in pair] + ["--output-dir", str(tmp_path / "run")]
        got, err = outcome(sft.main, argv, capsys)
        assert (got, message in err, "Traceback" in err) == (code, True, False), (flag, value, err)


def test_help_lists_every_argument_with_its_help_and_default(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")
    with pytest.raises(SystemExit) as exited:
        sft.main(["--help"])
    text = capsys.readouterr().out
    assert exited.value.code == 0
    for field in dataclasses.fields(sft.SFTArgs):
        flag = "--" + field.name.replace("_", "-")
        assert f"{field.metadata['help']} (default: {shown(default_of(field))})" in text and flag in text


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("sft-*.yaml")), ids=lambda p: p.name)
def test_every_sft_config_is_read_by_the_command(path, data_dir, tmp_path):
    """The YAML keys are the dataclass's fields (unknown ones are refused); data and output are the user's."""
    args = config.parse(
        sft.SFTArgs, ["--config", str(path), "--data", str(data_dir), "--output-dir", str(tmp_path)], ""
    )
    assert args.model and yaml.safe_load(path.read_text())["output_dir"].startswith("runs/")


@pytest.mark.parametrize(
    ("name", "kind"),
    [("accelerate-ddp.yaml", "MULTI_GPU"), ("accelerate-fsdp.yaml", "FSDP"), ("accelerate-zero2.yaml", "DEEPSPEED")],
)
def test_accelerate_configs_name_only_what_accelerate_launch_reads(name, kind):
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import launch_command_parser

    loaded = load_config_from_file(str(CONFIGS / name))  # refuses unknown top-level keys
    assert loaded.distributed_type.value == kind and loaded.mixed_precision == "bf16"
    launch_flags = {action.dest for action in launch_command_parser()._actions}
    nested = {**(loaded.fsdp_config or {}), **(loaded.deepspeed_config or {})}
    assert set(nested) <= launch_flags
    if kind == "FSDP":
        assert loaded.fsdp_config["fsdp_state_dict_type"] == "FULL_STATE_DICT"  # else final/ is not a model
