"""The rationale says what the kernel it precedes does, read from that kernel."""

from __future__ import annotations

from tests.conftest import FIXTURES
from training.rationale import rationale


def test_the_steps_name_the_kernels_their_memory_traffic_and_the_launch():
    source = (FIXTURES / "candidates" / "softmax_ok.py").read_text()
    steps = rationale(source).splitlines()
    assert steps[0].startswith("1. Write 1 Triton kernel (")
    kernel = steps[0].split("(")[1].split(")")[0]
    assert f"`{kernel}`:" in steps[1] and "reductions (" in steps[1] and "1 store of the result" in steps[1]
    assert steps[-1].startswith(f"3. In `forward`, allocate the outputs and launch `{kernel}` over the grid `")


def test_a_matmul_kernel_is_described_as_one():
    steps = rationale((FIXTURES / "candidates" / "matmul_ok.py").read_text())
    assert "a tiled matrix product with tl.dot" in steps and "a loop over the reduced dimension" in steps


def test_a_module_without_kernels_gets_no_rationale():
    assert rationale("import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n") == ""
