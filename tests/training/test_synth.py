"""Synthetic tasks: the same seed gives the same task, and every task runs as a KernelBench module."""

from __future__ import annotations

import collections
import itertools
import re
import types

import pytest
import torch

from tests.conftest import FIXTURES
from training import synth


def _run(source: str) -> torch.Tensor:
    module = types.ModuleType("task")
    exec(compile(source, "task", "exec"), module.__dict__)
    with torch.no_grad():
        return module.Model(*module.get_init_inputs())(*module.get_inputs())


def test_a_seed_always_gives_the_same_task_and_seeds_differ():
    assert synth.generate(7) == synth.generate(7)
    assert len({synth.generate(seed).source for seed in range(50)}) == 50


def test_every_task_runs_and_the_families_are_all_drawn():
    families = collections.Counter()
    for seed in range(150):
        task = synth.generate(seed, dtypes=("float32", "bfloat16"))
        output = _run(task.source)
        rows = int(task.source.split("rows = ")[1].split("\n")[0])
        assert output.shape[0] == rows, task.description
        assert ("reduction" in task.op_families) == (output.dim() == 1), task.description
        families.update(task.op_families)
        assert task.name.startswith(f"synth_{seed}_") and task.description in task.source
    assert set(families) == set(synth.FAMILIES), families


def test_a_reduction_ends_the_chain_and_never_follows_a_softmax_with_a_constant():
    for seed in range(300):
        description = synth.generate(seed).description.split(" -> ")
        reductions = [i for i, name in enumerate(description) if name in synth.REDUCTIONS]
        assert reductions in ([], [len(description) - 1]), description
        for before, after in itertools.pairwise(description):
            assert (before, after) not in {("softmax", "sum"), ("log_softmax", "logsumexp")}, description


def test_large_sizes_and_dtypes_are_honoured():
    task = synth.generate(3, sizes="large", dtypes=("bfloat16",))
    assert "torch.bfloat16" in task.source and "torch.float32" not in task.source
    rows = int(task.source.split("rows = ")[1].split("\n")[0])
    assert rows in synth.SIZES["large"]["rows"]


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"sizes": "huge"}, "unknown sizes"), ({"dtypes": ("int8",)}, "unknown dtypes")]
)
def test_bad_sizes_and_dtypes_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        synth.generate(0, **kwargs)


def test_families_and_max_ops_narrow_the_chains_and_the_defaults_draw_as_before():
    assert synth.generate(11) == synth.generate(11, families=synth.FAMILIES, max_ops=synth.MAX_OPS)
    for seed in range(200):
        task = synth.generate(seed, families=("elementwise", "activation"), max_ops=2)
        assert set(task.op_families) <= {"elementwise", "activation"}, task.description
        assert len(task.description.split(" -> ")) <= 2
        _run(task.source)
    gemms = [synth.generate(seed, families=("gemm", "softmax"), max_ops=2) for seed in range(60)]
    assert {"gemm", "softmax"} == {family for task in gemms for family in task.op_families}
    assert all(task.description.split(" -> ")[0] == "linear" for task in gemms if "gemm" in task.op_families)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"families": ("gemm",)}, "none besides gemm"),
        ({"families": ("convolution",)}, "unknown op families ['convolution']"),
        ({"max_ops": 0}, "max_ops must be at least 1"),
    ],
)
def test_bad_families_and_max_ops_are_named(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        synth.generate(0, **kwargs)


def test_the_op_chain_is_read_back_from_the_task_text():
    for seed in range(40):
        task = synth.generate(seed)
        assert synth.ops_of(task.source) == task.description.split(" -> "), task.source.splitlines()[0]
    assert synth.ops_of((FIXTURES / "tasks" / "add.py").read_text()) is None
    assert synth.ops_of('"""Synthetic task (seed 1): relu."""\n'.replace("relu", "relu; import os")) is None
