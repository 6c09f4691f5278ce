"""`benchmarks/element_counts.py`: which kernels of an evaluation state their task's element count, read from a
real synthetic task and kernel texts that differ only in the count they state."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from training import synth

COUNTS = Path(__file__).parents[2] / "benchmarks" / "element_counts.py"

KERNEL = """import triton
import triton.language as tl


@triton.jit
def relu_kernel_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xnumel = {count}
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    tl.store(out_ptr0 + xindex, tl.maximum(tl.load(in_ptr0 + xindex, xindex < xnumel), 0.0), xindex < xnumel)
"""


def evaluation(out: Path, task_source: str, candidates: list[tuple[str, bool]]) -> Path:
    """A training.eval output directory of one task whose samples are `candidates` (text, passed)."""
    (out / "tasks").mkdir(parents=True)
    (out / "tasks" / "task.py").write_text(task_source)
    (out / "candidates" / "task").mkdir(parents=True)
    samples = []
    for number, (text, passed) in enumerate(candidates):
        (out / "candidates" / "task" / f"sample_{number}.py").write_text(text)
        verdict = "correct" if passed else "incorrect"
        samples.append({"verdict": verdict, "correct": passed, "candidate": f"candidates/task/sample_{number}.py"})
    task = {"name": "task", "id": "x", "path": "/elsewhere/tasks/task.py", "samples": samples, "correct": 0}
    (out / "results.json").write_text(json.dumps({"tasks": [task], "totals": {}}))
    return out


def test_sorts_the_kernels_by_whether_they_state_the_task_element_count(tmp_path):
    task = synth.generate(5001, families=("activation",), max_ops=1)
    rows = int(task.source.split("rows = ")[1].split("\n")[0])
    features = int(task.source.split("features = ")[1].split("\n")[0])
    out = evaluation(
        tmp_path / "eval",
        task.source,
        [
            (KERNEL.format(count=rows * features), True),
            (KERNEL.format(count=rows * features), False),
            (KERNEL.format(count=rows * features * 2), False),
            ("def broken(:\n", False),
        ],
    )
    result = subprocess.run([sys.executable, str(COUNTS), str(out)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"| {out} | 4 | 2 (1) | 1 (0) | 1 (0) | 0 |" in result.stdout


def test_a_task_whose_shape_cannot_be_read_is_unknown(tmp_path):
    source = "import torch\n\n\ndef get_inputs():\n    return [torch.randn(*SHAPE)]\n"
    out = evaluation(tmp_path / "eval", source, [(KERNEL.format(count=8), True)])
    result = subprocess.run([sys.executable, str(COUNTS), str(out)], capture_output=True, text=True, timeout=60)
    assert f"| {out} | 1 | 0 (0) | 0 (0) | 0 (0) | 1 |" in result.stdout


def test_a_directory_that_is_no_evaluation_is_named(tmp_path):
    result = subprocess.run([sys.executable, str(COUNTS), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert f"{tmp_path / 'results.json'} does not exist" in result.stderr
