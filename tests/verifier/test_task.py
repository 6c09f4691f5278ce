"""A task is read and checked once: its module name, digest and the part the candidate's sandbox sees, and a clear
error naming file and line for what is no task."""

from __future__ import annotations

import ast
import hashlib

import pytest

from tests.conftest import FIXTURES
from verifier import Task, TaskError, UsageError, read_source, verify


def test_the_candidate_sandbox_gets_the_task_without_its_model():
    task = Task.from_file(FIXTURES / "tasks/layernorm.py")
    stripped = task.inputs_source
    assert len(stripped.splitlines()) == len(task.source.splitlines())
    names = {n.name for n in ast.parse(stripped).body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assert names == {"get_inputs", "get_init_inputs"}
    for number, line in enumerate(task.source.splitlines()):
        if line.startswith("def get_inputs"):
            assert stripped.splitlines()[number] == line


def test_a_task_file_is_named_by_its_stem_and_its_path():
    path = FIXTURES / "tasks/relu.py"
    task = Task.from_file(path)
    assert (task.name, task.origin, task.file_name) == ("relu", str(path), "relu.py")
    assert task.digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_source_without_a_file_is_named_by_its_module(tmp_path):
    source = (FIXTURES / "tasks/relu.py").read_text()
    assert Task(source).origin == "task.py" and Task(source, "relu6").origin == "relu6.py"
    odd = tmp_path / "19-ReLU.py"
    odd.write_text(source)
    assert Task.from_file(odd).name == "task", "a file name that is no identifier loads as `task`"
    long = tmp_path / "l1_77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__.py"
    long.write_text(source)
    assert Task.from_file(long).name == long.stem[:64], "KernelBench's longest names are cut to the API's 64"
    accented = tmp_path / "relu_é.py"
    accented.write_text(source)
    assert Task.from_file(accented).name == "task", "the API takes ASCII names only"


def test_a_candidate_cannot_reach_a_long_named_task_through_its_cut_name(tmp_path):
    """The cut name is the module the task's sandbox loads; a candidate that imports it to call the reference is
    refused before it runs, as under a short name."""
    long = tmp_path / ("relu_" + "x" * 80 + ".py")
    long.write_text((FIXTURES / "tasks/relu.py").read_text())
    task = Task.from_file(long)
    assert len(task.name) == Task.MAX_NAME
    candidate = f"import torch.nn as nn\nimport {task.name}\n\n\nclass ModelNew({task.name}.Model):\n    pass\n"
    report = verify(task, candidate, device="cpu", trials=1)
    assert report.verdict == "rejected" and "TRI314" in {v["rule"] for v in report.violations}, report.message


def test_what_is_no_task_is_named_with_file_and_line(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\n\ndef get_inputs(:\n")
    with pytest.raises(TaskError, match=rf"^{broken}:3: syntax error"):
        Task.from_file(broken)
    with pytest.raises(TaskError, match=r"^task\.py:1: not a task: it defines no `Model`, `get_init_inputs`"):
        Task("def get_inputs():\n    return []\n")
    with pytest.raises(UsageError, match=r"cannot read task file .*missing\.py"):
        Task.from_file(tmp_path / "missing.py")
    with pytest.raises(UsageError, match="is not a Python identifier"):
        Task((FIXTURES / "tasks/relu.py").read_text(), "my-task")


def test_an_unreadable_candidate_file_is_a_usage_error(tmp_path):
    binary = tmp_path / "candidate.py"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UsageError, match=f"cannot read candidate file {binary}"):
        read_source(binary)
