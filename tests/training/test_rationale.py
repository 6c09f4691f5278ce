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
    assert (
        steps[-1]
        == f"3. In `forward`, allocate the outputs and launch `{kernel}` with BLOCK=block over the grid `(n_rows,)`."
    )


def test_a_matmul_kernel_is_described_as_one():
    steps = rationale((FIXTURES / "candidates" / "matmul_ok.py").read_text())
    assert "a tiled matrix product with tl.dot" in steps and "a loop over the reduced dimension" in steps


def test_a_module_without_kernels_gets_no_rationale():
    assert rationale("import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n") == ""


def test_the_element_counts_come_first_multiplied_out_from_the_checked_input_shapes():
    steps = rationale((FIXTURES / "inductor" / "bias_sigmoid_scale.cpu.py").read_text()).splitlines()
    assert steps[0] == (
        "1. The inputs: `x` has shape (4096, 4096), 4096 * 4096 = 16777216 elements; "
        "`y` has shape (4096,), 4096 elements."
    )
    assert steps[1].startswith("2. Write 1 Triton kernel (add_mul_sigmoid_kernel_0)")
    assert steps[-1].endswith("`add_mul_sigmoid_kernel_0` with XBLOCK=1024 over the grid `(16384,)`.")


def test_a_kernel_states_the_counts_it_is_specialised_to():
    steps = rationale((FIXTURES / "inductor" / "published_sum_reduction.cuda.py").read_text()).splitlines()
    assert steps[0] == "1. The inputs: `x` has shape (128, 4096, 4095), 128 * 4096 * 4095 = 2146959360 elements."
    assert steps[2].startswith("3. `sum_kernel_0`: programs index a 1-D grid; xnumel = 524160, r0_numel = 4096; 1 load")
    assert steps[3].endswith("`sum_kernel_0` with R0_BLOCK=64, XBLOCK=64 over the grid `(8190,)`.")
