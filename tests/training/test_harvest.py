"""`training.harvest`: the building blocks of torch.nn as KernelBench tasks, each one a task the verifier reads and
runs, with where it came from; and the same tasks as training data, converted and verified for real."""

from __future__ import annotations

import json
import types

import pytest
import torch

from training import data, harvest
from verifier import Task


def test_every_small_torch_nn_task_is_a_task_that_runs_and_says_where_it_came_from(tmp_path):
    paths = harvest.write(tmp_path, ["torch.nn"], ["small"])
    assert len(paths) == len(harvest.CATALOGUE["torch.nn"]) >= 80
    version = torch.__version__
    for path in paths:
        task = Task.from_file(path)
        source = path.read_text()
        assert f"from torch {version} (BSD-3-Clause), at the `small` sizes" in source, path.name
        module = types.ModuleType(path.stem)
        exec(compile(source, str(path), "exec"), module.__dict__)
        torch.manual_seed(0)
        output = module.Model(*module.get_init_inputs())(*module.get_inputs())
        leaves = output if isinstance(output, tuple) else (output,)
        assert all(isinstance(x, torch.Tensor) and x.numel() for x in leaves if x is not None), path.name
        assert task.digest


def test_size_tiers_change_the_shapes_and_nothing_else(tmp_path):
    small, large = (harvest.write(tmp_path / size, ["torch.nn"], [size])[0] for size in ("small", "large"))
    assert small.name == "torch_nn_ReLU_small.py" and large.name == "torch_nn_ReLU_large.py"
    assert "C = 4" in small.read_text() and "C = 64" in large.read_text()
    drop = [line for line in small.read_text().splitlines() if " = " not in line and "sizes" not in line]
    keep = [line for line in large.read_text().splitlines() if " = " not in line and "sizes" not in line]
    assert drop == keep


def test_training_data_counts_harvested_tasks_by_library_and_names_their_origin(tmp_path):
    args = data.DataArgs(output_dir=str(tmp_path), harvest=["torch.nn"], harvest_sizes=["small", "medium"], sft=False)
    tasks, sheet = data.collect(args)
    assert sheet["tasks"]["harvested"] == 2 * len(harvest.CATALOGUE["torch.nn"])
    assert sheet["harvested_by_library"] == {"torch.nn": sheet["tasks"]["harvested"]}
    origins = {t.origin for t in tasks}
    assert "harvest:torch.nn.LayerNorm:medium" in origins and "harvest:torch.nn.Conv2d:small" in origins
    conv = next(t for t in tasks if t.origin == "harvest:torch.nn.Conv2d:small")
    assert conv.op_families == ("conv",)
    pool = next(t for t in tasks if t.origin == "harvest:torch.nn.MaxPool2d:small")
    assert pool.op_families == ("pool",)  # the catalogue's family, not a guess from the source's words


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--harvest", "nolib"], "--harvest: no catalogue for nolib; known: torch.nn, transformers, timm, torchvision"),
        (["--harvest", "torch.nn", "--harvest-sizes", "huge"], "--harvest-sizes must be among small, medium, large"),
    ],
)
def test_bad_harvest_flags_are_named(tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit) as exited:
        data.main(["--output-dir", str(tmp_path), *flags])
    assert exited.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.slow
def test_harvested_tasks_become_verified_pairs(tmp_path):
    """A few harvested tasks through the real pipeline: Inductor's kernels, verified in Triton's interpreter."""
    picked = tmp_path / "picked"
    picked.mkdir()
    for path in harvest.write(tmp_path / "all", ["torch.nn"], ["small"]):
        if path.stem in ("torch_nn_GELU_small", "torch_nn_LayerNorm_small", "torch_nn_MSELoss_small"):
            (picked / path.name).write_text(path.read_text())
    out = tmp_path / "out"
    flags = ["--output-dir", str(out), "--tasks", str(picked), "--device", "cpu", "--trials", "2"]
    assert data.main([*flags, "--profiles", "autotriton", "--test-fraction", "0", "--val-fraction", "0"]) == 0
    pairs = [json.loads(line) for line in (out / "sft.autotriton.jsonl").read_text().splitlines()]
    assert sorted(p["task_origin"].rsplit("/", 1)[-1] for p in pairs) == sorted(x.name for x in picked.iterdir())
    assert all(p["report"]["verdict"] == "correct" and p["report"]["reward"] == 1.0 for p in pairs)


def test_harvested_blocks_that_a_kernelbench_problem_computes_are_dropped_by_their_ops(tmp_path):
    level = tmp_path / "KernelBench" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    relu = harvest.write(tmp_path / "one", ["torch.nn"], ["small"])[0].read_text()
    task = relu.replace("        self.block = nn.ReLU()\n", "")
    assert task != relu
    (level / "19_ReLU.py").write_text(task.replace("self.block(x0)", "torch.relu(x0)"))
    (level / "40_LayerNorm.py").write_text(
        task.replace("self.block(x0)", "nn.functional.layer_norm(x0, x0.shape[-1:])")
    )
    spec = f"kernelbench:{tmp_path}/KernelBench/level1"
    args = data.DataArgs(output_dir=str(tmp_path), harvest=["torch.nn"], harvest_sizes=["small"], decontaminate=[spec])
    tasks, sheet = data.collect(args)
    hits = sheet["decontamination"]["kernelbench-level1"]["hits"]
    assert {(h["origin"], h["closest"], h["by"]) for h in hits} == {
        ("harvest:torch.nn.ReLU:small", "19_ReLU.py", "ops"),
        ("harvest:torch.nn.LayerNorm:small", "40_LayerNorm.py", "ops"),
    }
    assert len(tasks) == len(harvest.CATALOGUE["torch.nn"]) - 2
    with pytest.raises(SystemExit):
        data.main(["--output-dir", str(tmp_path), "--decontaminate", f"kernelbench:{tmp_path}/nowhere/level1"])
