"""`benchmarks/failure_modes.py`: which kernels of an evaluation state their task's element count, and pass@1 per op,
read from real synthetic tasks and kernel texts that differ only in what is measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.training.conftest import evaluation
from training import synth

FAILURE_MODES = Path(__file__).parents[2] / "benchmarks" / "failure_modes.py"


KERNEL = """import triton
import triton.language as tl


@triton.jit
def relu_kernel_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xnumel = {count}
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    tl.store(out_ptr0 + xindex, tl.maximum(tl.load(in_ptr0 + xindex, xindex < xnumel), 0.0), xindex < xnumel)
"""


def run(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(FAILURE_MODES), str(out)], capture_output=True, text=True, timeout=60)


def test_sorts_the_kernels_by_whether_they_state_the_task_element_count(tmp_path):
    task = synth.generate(5001, families=("activation",), max_ops=1)
    rows = int(task.source.split("rows = ")[1].split("\n")[0])
    features = int(task.source.split("features = ")[1].split("\n")[0])
    candidates = [
        (KERNEL.format(count=rows * features), "correct"),
        (KERNEL.format(count=rows * features), "incorrect"),
        (KERNEL.format(count=rows * features * 2), "incorrect"),
        ("def broken(:\n", "compile_error"),
    ]
    out = evaluation(tmp_path / "eval", {"task": (task.source, candidates)})
    result = run(out)
    assert result.returncode == 0, result.stderr
    assert f"| {out} | 4 | 2 (1) | 1 (0) | 1 (0) | 0 |" in result.stdout


def test_a_task_whose_shape_cannot_be_read_is_unknown(tmp_path):
    source = "import torch\n\n\ndef get_inputs():\n    return [torch.randn(*SHAPE)]\n"
    out = evaluation(tmp_path / "eval", {"task": (source, [(KERNEL.format(count=8), "correct")])})
    result = run(out)
    assert f"| {out} | 1 | 0 (0) | 0 (0) | 0 (0) | 1 |" in result.stdout


def ops(task: synth.SynthTask) -> list[str]:
    return task.description.split(" -> ")


def test_each_sample_counts_for_every_op_of_its_task(tmp_path):
    one, two = (synth.generate(seed, families=("elementwise", "activation"), max_ops=2) for seed in (5001, 5002))
    assert not set(ops(one)) & set(ops(two)) and len(ops(one)) == len(ops(two)) == 2
    tasks = {
        "one": (one.source, [("", "correct"), ("", "incorrect")]),
        "two": (two.source, [("", "incorrect")]),
        "other": ("import torch\n", [("", "correct")]),
    }
    out = evaluation(tmp_path / "eval", tasks)
    result = run(out)
    assert result.returncode == 0, result.stderr
    for op in ops(one):
        assert f"| {op} | 1/2 |" in result.stdout
    for op in ops(two):
        assert f"| {op} | 0/1 |" in result.stdout
    assert f"{out}: 1 samples left out, their task is not a synthetic one" in result.stderr


def test_a_directory_that_is_no_evaluation_is_named(tmp_path):
    result = run(tmp_path)
    assert result.returncode == 2
    assert f"{tmp_path / 'results.json'} does not exist" in result.stderr


def test_a_tritonbench_evaluation_is_named_as_such(tmp_path):
    """A TritonBench evaluation's samples are the benchmark's programs, scored by its test code: there is no
    KernelBench-style task to read counts from, so the tool says what the folder is instead of misreading it."""
    sample = {"verdict": "correct", "call": True, "exec": True, "correct": True, "candidate": "candidates/t/s0.py"}
    record = {"name": "row_softmax", "path": "data/TritonBench_T_v1/row_softmax.py", "samples": [sample], "correct": 1}
    (tmp_path / "results.json").write_text(json.dumps({"tasks": [record], "totals": {}}))
    result = run(tmp_path)
    assert result.returncode == 2
    assert f"{tmp_path} is a TritonBench evaluation" in result.stderr
