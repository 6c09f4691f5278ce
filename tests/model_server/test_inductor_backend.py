"""The built-in inductor backend on CPU: real Inductor code generation, rewritten, verified in the interpreter."""

from __future__ import annotations

import pytest

from model_server.backends import BackendConfig, BackendError, GenerationRequest, create_backend
from model_server.backends.inductor import InductorBackend
from tests.conftest import FIXTURES
from verifier.audit.anti_hacking import check_candidate
from verifier.pool import VerifierPool

TASKS = FIXTURES / "tasks"


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=1, device="cpu") as pool:
        yield pool


@pytest.mark.slow
@pytest.mark.parametrize("task", ["relu", "row_sum", "softmax", "layernorm", "scale"])
def test_candidates_stand_alone_and_verify_correct(task, pool, tmp_path):
    [generated] = create_backend(BackendConfig("inductor")).generate(GenerationRequest(TASKS / f"{task}.py", 4, "cpu"))
    assert (generated.label, generated.policy) == ("Inductor's default kernels", "strict")
    source = generated.source
    assert "_inductor" not in source and "triton_heuristics" not in source
    assert "class ModelNew(nn.Module)" in source
    assert [f for f in check_candidate(source) if f.severity == "error"] == []
    candidate = tmp_path / f"{task}_triton.py"
    candidate.write_text(source)
    report = pool.verify(TASKS / f"{task}.py", candidate, trials=2)
    assert report.passed, report.summary()
    assert report.kernels and all("_kernel_" in name for name in report.kernels)


@pytest.mark.slow
def test_a_library_matmul_is_refused_with_the_op_named():
    with pytest.raises(BackendError, match=r"extern_kernels\.mm.*library call rather than a Triton kernel"):
        create_backend(BackendConfig("inductor")).generate(GenerationRequest(TASKS / "matmul.py", 4, "cpu"))


def test_unknown_backends_are_named_with_the_ones_that_exist():
    with pytest.raises(BackendError, match="unknown backend `gpt`; available: inductor, openai, transformers, vllm"):
        create_backend(BackendConfig("gpt"))


def test_repair_rounds_get_nothing_from_a_deterministic_backend():
    assert (
        create_backend(BackendConfig("inductor")).generate(GenerationRequest(TASKS / "relu.py", 4, "cpu", round=2))
        == []
    )


@pytest.mark.slow
def test_a_libdevice_function_the_interpreter_lacks_is_named(tmp_path):
    task = tmp_path / "bessel.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.special.i0(x)\n\n\ndef get_inputs():\n    return [torch.randn(16, 16)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    with pytest.raises(BackendError, match=r"needs `libdevice\.cyl_bessel_i0`.*convert this task on a GPU"):
        create_backend(BackendConfig("inductor")).generate(GenerationRequest(task, 1, "cpu"))


def test_a_task_that_never_finishes_loading_is_stopped_at_the_time_limit(tmp_path):
    task = tmp_path / "spins.py"
    task.write_text((TASKS / "relu.py").read_text() + "\nwhile True:\n    pass\n")
    with pytest.raises(BackendError, match="did not finish compiling the task within 3 s"):
        InductorBackend(timeout=3).generate(GenerationRequest(task, 4, "cpu"))
