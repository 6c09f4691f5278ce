"""`python -m training.data` on a CPU: real tasks, real Inductor captures, real verification in Triton's
interpreter, and the files that `datasets` reads."""

from __future__ import annotations

import json

import datasets
import pytest
import torch

from model_server import prompts
from model_server.backends.base import GenerationRequest, collect
from model_server.backends.text import TextBackend
from tests.conftest import FIXTURES
from training import data
from training.config import parse
from verifier import Task

TASKS = FIXTURES / "tasks"


class RecordingBackend(TextBackend):
    """The text backends' real prompt path, with the model replaced by a recorder (no model runs here)."""

    model_id = "recorder"

    def __init__(self, profile: str):
        self.profile = profile
        self.sent: list[object] = []

    def _chat(self, messages, n, max_tokens, temperature):
        self.sent.append(messages)
        return []

    def complete(self, prompt, n=1, max_tokens=None, temperature=None):
        self.sent.append(prompt)
        return []


@pytest.mark.parametrize("profile", prompts.PROFILES)
def test_training_prompts_are_exactly_what_serving_sends(profile):
    task = data.Task("0" * 16, "softmax", (TASKS / "softmax.py").read_text(), "x", ("softmax",), "train", "c")
    backend = RecordingBackend(profile)
    collect(backend, GenerationRequest(Task.from_file(TASKS / "softmax.py"), 1, "cpu"))[0]
    assert json.dumps(data.record(task, profile)["prompt"]) == json.dumps(backend.sent[0])


def test_shards_split_the_tasks_between_them_and_splits_are_stable(tmp_path):
    def kept(shard: str) -> list[data.Task]:
        args = data.DataArgs(output_dir=str(tmp_path), synthetic=40, shard=shard, val_fraction=0.2, test_fraction=0.2)
        return data.collect(args)[0]

    whole, first, second = kept("0/1"), kept("0/2"), kept("1/2")
    assert first and second and sorted(t.id for t in first + second) == sorted(t.id for t in whole)
    assert {t.split for t in whole} == {"train", "val", "test"}
    assert {t.id: t.split for t in first} == {t.id: t.split for t in whole if t in first}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--shard", "2/2"], "--shard must be i/n"),
        (["--profiles", "nope"], "unknown profile"),
        (["--val-fraction", "0.6", "--test-fraction", "0.5"], "add up to less than 1"),
        (["--tasks", "no/such/dir"], "--tasks: neither a directory nor a .py file: no/such/dir"),
        (["--tasks", "README.md"], "--tasks: neither a directory nor a .py file: README.md"),
        (["--improve"], "--improve orders candidates by measured time: it needs --timing and --device cuda"),
        (["--improve", "--timing", "--device", "cpu"], "it needs --timing and --device cuda"),
    ],
)
def test_bad_arguments_are_named(tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit) as exited:
        data.main(["--output-dir", str(tmp_path), *flags])
    assert exited.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the pool times candidates: see the gpu test")
def test_improve_pairs_are_refused_where_the_pool_has_no_gpu_to_time_them(tmp_path, capsys):
    """`--device auto` on a machine without a GPU: the pool verifies on the CPU, where nothing is timed."""
    argv = ["--output-dir", str(tmp_path), "--tasks", str(TASKS / "relu.py"), "--improve", "--timing"]
    assert data.main(argv) == 2
    assert "--improve orders candidates by measured time, and nothing is timed without a GPU" in capsys.readouterr().err
    assert not (tmp_path / "progress.jsonl").exists()


@pytest.mark.slow
def test_tasks_become_verified_pairs_and_prompts_that_datasets_reads(tmp_path, capsys):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("relu", "softmax", "row_sum"):
        (tasks / f"{name}.py").write_text((TASKS / f"{name}.py").read_text())
    copy = (TASKS / "relu.py").read_text().replace('"""', '"""Same task, other words. ', 1)
    (tasks / "relu_again.py").write_text(copy)
    (tasks / "helper.py").write_text("X = 1\n")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "row_sum_eval.py").write_text((TASKS / "row_sum.py").read_text().replace("8", "9"))
    out = tmp_path / "out"
    flags = ["--output-dir", str(out), "--tasks", str(tasks), "--synthetic", "2", "--seed", "2", "--device", "cpu"]
    profiles = ["autotriton", "kernelllm"]
    flags += ["--decontaminate", str(suite), "--profiles", *profiles, "--trials", "2"]
    assert data.main(flags) == 0

    sheet = json.loads((out / "datasheet.json").read_text())
    assert sheet["tasks"]["from_directories"] == 4 and sheet["tasks"]["duplicates_removed"] == 1
    assert sheet["decontamination"]["suite"]["removed"] == 1
    assert sheet["decontamination"]["suite"]["hits"][0]["closest"] == "row_sum_eval.py"
    kept = sheet["tasks"]["kept"]
    assert kept == 2 + 2 - sheet["tasks"].get("degenerate", 0)
    assert sheet["rl"]["records"] == {"autotriton": kept, "kernelllm": kept}
    pairs = {p: [json.loads(line) for line in (out / f"sft.{p}.jsonl").read_text().splitlines()] for p in profiles}
    assert sheet["sft"]["pairs"] == {p: sheet["sft"]["tasks_converted"] for p in profiles}
    assert sheet["sft"]["tasks_converted"] == len(pairs["autotriton"]) > 0
    for pair in pairs["autotriton"] + pairs["kernelllm"]:
        assert pair["report"]["verdict"] == "correct" and pair["report"]["reward"] == 1.0
        if pair["profile"] == "kernelllm":
            code = pair["completion"].removesuffix("```\n")
        else:
            code = prompts.extract_code(pair["completion"][0]["content"])
            assert pair["completion"][0]["content"].startswith("1. The inputs: `")
        assert "class ModelNew" in code and "torch._inductor" not in code
    for profile in profiles:
        sft = datasets.load_dataset("json", data_files=str(out / f"sft.{profile}.jsonl"))["train"]
        rl = datasets.load_dataset("json", data_files=str(out / f"rl.{profile}.jsonl"))["train"]
        assert sft.num_rows == len(pairs[profile]) and rl.num_rows == kept
        assert set(rl.column_names) == {"id", "task", "task_origin", "op_families", "profile", "prompt", "split"}
        assert set(sft.column_names) == set(rl.column_names) | {"kind", "completion", "report"}
        assert set(sft["kind"]) == {"convert"}, "without --improve, no improve pairs"

    capsys.readouterr()
    assert data.main(flags) == 0
    assert "SFT: 0 tasks to convert" in capsys.readouterr().err
    assert len((out / "sft.autotriton.jsonl").read_text().splitlines()) == len(pairs["autotriton"])


HELPER = (
    (TASKS / "relu.py")
    .read_text()
    .replace(
        "class Model(nn.Module):",
        "class Rectifier(nn.Module):\n    def forward(self, x):\n        return x\n\n\nclass Model(nn.Module):",
    )
)


def test_a_task_copied_under_other_names_is_a_duplicate_and_size_tiers_share_a_split(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "a.py").write_text(HELPER)
    (tasks / "b.py").write_text(HELPER.replace("Rectifier", "Rectifier2"))
    (tasks / "c.py").write_text(
        HELPER.replace("def forward(self, x):\n        return x", "def forward(self, x):\n        return -x")
    )
    args = data.DataArgs(output_dir=str(tmp_path), tasks=[str(tasks)], harvest=["torch.nn"], val_fraction=0.3)
    kept, sheet = data.collect(args)
    assert sheet["tasks"]["duplicates_removed"] == 1
    assert sorted(t.name for t in kept if t.origin.startswith(str(tasks))) == ["a", "c"]
    harvested = [t for t in kept if t.origin.startswith("harvest:")]
    assert sheet["tasks"]["distinct_computations"] == len({t.computation for t in kept}) < len(kept)
    splits: dict[str, set[str]] = {}
    for task in harvested:
        splits.setdefault(task.origin.rsplit(":", 1)[0], set()).add(task.split)
    assert len(splits) == len(harvested) // 3 and all(len(found) == 1 for found in splits.values())
    assert {split for found in splits.values() for split in found} == {"train", "val", "test"}


@pytest.mark.slow
def test_max_minutes_stops_starting_conversions_and_a_later_run_does_the_rest(tmp_path, capsys):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("relu", "add", "scale"):
        (tasks / f"{name}.py").write_text((TASKS / f"{name}.py").read_text())
    out = tmp_path / "out"
    flags = ["--output-dir", str(out), "--tasks", str(tasks), "--device", "cpu", "--trials", "1", "--workers", "1"]
    assert data.main([*flags, "--max-minutes", "0.0001"]) == 0
    first = (out / "progress.jsonl").read_text().splitlines()
    assert 1 <= len(first) < 3 and "tasks left for a later run" in capsys.readouterr().err
    assert json.loads((out / "datasheet.json").read_text())["sft"]["tasks_converted"] == len(first)
    assert data.main(flags) == 0
    done = [json.loads(line)["id"] for line in (out / "progress.jsonl").read_text().splitlines()]
    assert len(done) == len(set(done)) == 3


def _task(name: str, scale: str, split: str, body: str = "return torch.clamp(x * {scale}, -1.0, 1.0) + x.mean()"):
    source = (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        f"        y = torch.tanh(x) * 2.0 - x.abs()\n        {body.format(scale=scale)}\n\n\n"
        "def get_inputs():\n    return [torch.randn(8, 8)]\n"
    )
    return data.Task(name, name, source, "test", ("elementwise",), split, name)


def test_a_held_out_task_that_is_a_training_task_with_another_constant_moves_to_train():
    """The audit of the first training runs found held-out tasks that differed from a training task only in a
    constant: such a task measures memory. It moves to `train`, and the datasheet's record says so; a held-out task
    of other code stays."""
    tasks = [
        _task("trained", "0.5", "train"),
        _task("same_but_constant", "0.75", "test"),
        _task("other", "0.5", "val", body="return torch.softmax(x, dim=-1).cumsum(0) - torch.sigmoid(x)"),
    ]
    kept, moved = data.held_out_decontaminated(tasks, n=12, overlap=0.5)
    assert [(t.name, t.split) for t in kept] == [("trained", "train"), ("same_but_constant", "train"), ("other", "val")]
    assert [(m["id"], m["split"], m["closest"]) for m in moved] == [("same_but_constant", "test", "trained")]
    assert 0.5 <= moved[0]["share"] < 1.0
    assert data.held_out_decontaminated(tasks, n=12, overlap=1.0)[1] == []


def test_every_shard_agrees_on_the_splits_after_the_held_out_tasks_are_decontaminated():
    """Held-out tasks are checked against the training tasks of all shards, so a task's split is the same whether
    the data is built on one machine or split between two."""
    common = ["--output-dir", "unused", "--synthetic", "120", "--seed", "5000", "--families", "elementwise",
              "activation", "--max-ops", "2", "--val-fraction", "0.1", "--test-fraction", "0.2"]  # fmt: skip
    whole, sheet = data.collect(parse(data.DataArgs, common, "data"))
    halves = [data.collect(parse(data.DataArgs, [*common, "--shard", f"{i}/2"], "data"))[0] for i in range(2)]
    assert sheet["held_out_decontamination"]["moved_to_train"] > 0, "the case must move a held-out task"
    assert {(t.id, t.split) for t in whole} == {(t.id, t.split) for half in halves for t in half}


def test_tritonbench_is_decontaminated_against_by_its_tasks_reference_code():
    """`--decontaminate tritonbench-t:CLONE` once read the data folder's top-level `*.py`, of which a release has
    none, and so checked against nothing. Now each channel's tasks are read as the benchmark lists them: a softmax
    task is T's `row_softmax` by its ops."""
    bench = FIXTURES / "tritonbench"
    channel_t = data._evaluation_suite(f"tritonbench-t:{bench}", 12)
    channel_g = data._evaluation_suite(f"tritonbench-g:{bench}", 12)
    assert set(channel_t.tasks) == {"row_softmax.py", "scaled_add.py"}
    assert set(channel_g.tasks) == {"scaled_add_kernel.py", "softmax_rows_kernel.py"}
    softmax = (TASKS / "softmax.py").read_text()
    assert data._contamination(softmax, [channel_g, channel_t], 0.5) == (
        "tritonbench-t-data",
        "row_softmax.py",
        0.0,
        "ops",
    )
    assert data._contamination((TASKS / "matmul.py").read_text(), [channel_g, channel_t], 0.5) is None


def test_a_suite_with_no_task_to_check_against_is_refused(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    flags = ["--output-dir", str(tmp_path / "out"), "--tasks", str(TASKS), "--decontaminate", str(empty)]
    with pytest.raises(SystemExit) as refused:
        data.main(flags)
    assert refused.value.code == 2
    assert f"--decontaminate {empty}: no task there could be read" in capsys.readouterr().err
