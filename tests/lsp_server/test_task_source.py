"""From buffer text to a KernelBench task: targets, wrapping, and guessed example inputs (AST only)."""

from __future__ import annotations

import ast

import pytest

from lsp_server.task_source import TaskSourceError, build_task, example_inputs, parse, target_at

MODULE = """import torch
import torch.nn as nn


@some_decorator
class Gate(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x: Float[Tensor, "batch 1024"], ids: "Int[Tensor, 'batch']", scale: float):
        return self.proj(x) * scale


def helper(a, b=2):
    return a * b
"""


def test_the_target_is_the_top_level_definition_under_the_cursor_decorators_included():
    tree = parse(MODULE)
    gate = target_at(tree, 5)
    assert (gate.name, gate.kind, gate.line, gate.end_line) == ("Gate", "module", 5, 12)
    assert target_at(tree, 11).name == "Gate"
    assert target_at(tree, 16).kind == "function"
    assert target_at(tree, 1) is None and target_at(tree, 14) is None


def test_example_inputs_follow_annotations_and_cover_the_constructor():
    tree = parse(MODULE)
    template = example_inputs(tree, target_at(tree, 6))
    namespace = {"torch": pytest.importorskip("torch")}
    exec(compile(template, "inputs", "exec"), namespace)
    x, ids, scale = namespace["get_inputs"]()
    assert tuple(x.shape) == (16, 1024) and tuple(ids.shape) == (16,) and not ids.is_floating_point()
    assert scale == 0.5
    assert namespace["get_init_inputs"]() == [256]  # eps has a default, so it is left out
    assert example_inputs(tree, target_at(tree, 16)).count("torch.randn(16, 256)") == 1


def test_build_task_wraps_a_function_and_names_what_is_missing():
    source = MODULE + "\n\ndef get_inputs():\n    return [torch.randn(4)]\n"
    tree = parse(source)
    task = build_task(source, tree, target_at(tree, 16))
    assert "class Model(_tritonize_nn.Module)" in task and "return helper(*args)" in task
    assert "def get_init_inputs():\n    return []" in task
    ast.parse(task)
    with pytest.raises(TaskSourceError, match=r"Gate.__init__ takes arguments .* get_init_inputs\(\)"):
        build_task(source, tree, target_at(tree, 6))
    with pytest.raises(TaskSourceError, match=r"helper has no example inputs"):
        build_task(MODULE, parse(MODULE), target_at(parse(MODULE), 16))
    complete = source + "\n\ndef get_init_inputs():\n    return [8]\n"
    aliased = build_task(complete, parse(complete), target_at(parse(complete), 6))
    assert aliased.rstrip().endswith("Model = Gate")
