"""Synthetic tasks: the same seed gives the same task, and every task runs as a KernelBench module."""

from __future__ import annotations

import collections
import itertools
import types

import pytest
import torch

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
