"""The built-in inductor backend on CPU: real Inductor code generation, rewritten, verified in the interpreter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from model_server.api import ConvertRequest
from model_server.backends import BackendConfig, BackendError, GenerationRequest, collect, create_backend, inductor
from model_server.backends.inductor import InductorBackend
from model_server.inductor.rewrite import Variant, rewrite
from model_server.loop import Outcome, convert
from tests.conftest import FIXTURES
from tests.model_server.events import without_heartbeats
from tests.model_server.inductor_fixtures import FIXTURES as INDUCTOR_FIXTURES
from tests.model_server.inductor_fixtures import load
from tests.sources import pair
from verifier import Task
from verifier.audit.anti_hacking import check_candidate
from verifier.host.pool import VerifierPool

TASKS = FIXTURES / "tasks"
ROOT = FIXTURES.parents[1]


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=1, device="cpu") as pool:
        yield pool


@pytest.mark.slow
@pytest.mark.parametrize("task", ["relu", "row_sum", "softmax", "layernorm", "scale", "cumsum", "instancenorm"])
def test_candidates_stand_alone_and_verify_correct(task, pool, tmp_path):
    [generated] = collect(
        create_backend(BackendConfig("inductor")), GenerationRequest(Task.from_file(TASKS / f"{task}.py"), 4, "cpu")
    )[0]
    assert (generated.label, generated.policy) == ("Inductor's default kernels", "strict")
    source = generated.source
    assert "_inductor" not in source and "triton_heuristics" not in source
    assert "class ModelNew(nn.Module)" in source
    assert [f for f in check_candidate(source) if f.severity == "error"] == []
    candidate = tmp_path / f"{task}_triton.py"
    candidate.write_text(source)
    report = pool.verify(*pair(TASKS / f"{task}.py", candidate), trials=2)
    assert report.passed, report.summary()
    assert report.kernels and all("_kernel_" in name for name in report.kernels)


@pytest.mark.slow
def test_a_clamp_and_relu_keep_nans_with_tls_max_and_min_instead_of_inductors_helpers(pool, tmp_path):
    task = tmp_path / "clamp_relu.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(torch.clamp(x, min=-0.5, max=0.75))\n\n\ndef get_inputs():\n"
        "    x = torch.randn(8, 64)\n    x[::3, ::5] = float('nan')\n    return [x]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    [generated] = collect(InductorBackend(cache=tmp_path / "cache"), GenerationRequest(Task.from_file(task), 1, "cpu"))[
        0
    ]
    assert "propagate_nan=tl.PropagateNan.ALL" in generated.source
    assert "def maximum" not in generated.source and "def minimum" not in generated.source
    candidate = tmp_path / "clamp_relu_triton.py"
    candidate.write_text(generated.source)
    assert pool.verify(*pair(task, candidate), trials=2).passed
    dropped = tmp_path / "nans_dropped.py"
    dropped.write_text(generated.source.replace("tl.PropagateNan.ALL", "tl.PropagateNan.NONE"))
    report = pool.verify(*pair(task, dropped), trials=2)
    assert report.verdict == "incorrect" and "NaN" in report.message, report.summary()


@pytest.mark.slow
def test_on_the_cpu_a_library_matmul_becomes_inductor_s_triton_template_and_the_library_call_is_named(tmp_path):
    """Inductor's default kernels hand the matmul to a library (the whole task: no hybrid is worth making); the
    default capture with the project's matmul kernel in its place comes first (handed over while the templates
    compile), then the templates capture, one configuration and no autotuning (nothing to time it on the CPU),
    gives Inductor's Triton matmul template. Both are Triton that the interpreter runs."""
    request = GenerationRequest(Task.from_file(TASKS / "matmul.py"), 4, "cpu")
    made, not_made = collect(InductorBackend(cache=tmp_path), request)
    assert [(g.label, g.policy) for g in made] == [
        (inductor._describe_own(None, inductor.OWN_MATMUL_TILES[0]), "strict"),
        ("Inductor max-autotune Triton templates", "strict"),
    ]
    assert all("@triton.jit" in g.source and "extern_kernels" not in g.source for g in made)
    assert all("tl.dot(" in g.source for g in made)
    [refused] = not_made
    assert re.search(r"extern_kernels\.mm.*library call rather than a Triton kernel", refused), refused


def test_unknown_backends_are_named_with_the_ones_that_exist():
    with pytest.raises(BackendError, match="unknown backend `gpt`; available: inductor, openai, transformers, vllm"):
        create_backend(BackendConfig("gpt"))


def test_repair_rounds_get_nothing_from_a_deterministic_backend():
    assert (
        collect(
            create_backend(BackendConfig("inductor")),
            GenerationRequest(Task.from_file(TASKS / "relu.py"), 4, "cpu", round=2),
        )[0]
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
        collect(create_backend(BackendConfig("inductor")), GenerationRequest(Task.from_file(task), 1, "cpu"))[0]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            ("def get_inputs", "raise RuntimeError('boom')\n\n\ndef get_inputs"),
            "broken.py:15: import failed: RuntimeError: boom",
        ),
        (
            ("return torch.relu(x)", "return x.no_such()"),
            "broken.py:12: forward failed: AttributeError: 'Tensor' object",
        ),
        (
            ("return [torch.randn(8, 200)]", "return [torch.randn(8, -1)]"),
            "broken.py:16: get_inputs failed: RuntimeError",
        ),
    ],
)
def test_a_task_that_fails_on_its_own_is_named_with_its_file_line_and_stage(tmp_path, change, said):
    task = tmp_path / "broken.py"
    task.write_text((TASKS / "relu.py").read_text().replace(*change))
    assert task.read_text() != (TASKS / "relu.py").read_text()
    with pytest.raises(BackendError) as raised:
        collect(InductorBackend(cache=tmp_path / "cache"), GenerationRequest(Task.from_file(task), 4, "cpu"))
    assert str(raised.value).startswith(f"the task fails on its own: {said}"), str(raised.value)


def test_a_task_that_never_finishes_loading_is_stopped_at_the_time_limit(tmp_path):
    task = tmp_path / "spins.py"
    task.write_text((TASKS / "relu.py").read_text() + "\nwhile True:\n    pass\n")
    with pytest.raises(BackendError, match="did not finish compiling the task within 3 s"):
        collect(InductorBackend(timeout=3), GenerationRequest(Task.from_file(task), 4, "cpu"))[0]


def test_the_templates_compile_has_a_shorter_limit_than_the_default_one(tmp_path, monkeypatch):
    """Past its limit the templates capture is stopped (and `_captures` goes on with the default one's
    candidates); the default capture keeps the backend's whole timeout."""
    monkeypatch.setattr(inductor, "TEMPLATES_SECONDS", 2.0)
    task = tmp_path / "spins.py"
    task.write_text((TASKS / "relu.py").read_text() + "\nwhile True:\n    pass\n")
    backend = InductorBackend(timeout=600, cache=tmp_path)
    with pytest.raises(BackendError, match="within 2 s"):  # the task spins forever: only the limit ends it
        backend._run_capture(GenerationRequest(Task.from_file(task), 4, "cpu"), "templates", None)
    failed = inductor._failure_as_error(_failed(BackendError("late")), default_ok=True, what="max-autotune")
    assert failed["error"] == "Inductor's max-autotune compile failed: late"


def test_running_out_of_gpu_memory_is_named_and_not_cached(tmp_path):
    """The capture process itself raises it here (no GPU to exhaust): the model's forward raises PyTorch's
    OutOfMemoryError, as an allocation on a crowded GPU would."""
    task = tmp_path / "crowded.py"
    task.write_text(
        (TASKS / "relu.py")
        .read_text()
        .replace("return torch.relu(x)", 'raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4 GiB")')
    )
    assert "OutOfMemoryError" in task.read_text()
    backend = InductorBackend(cache=tmp_path / "cache")
    with pytest.raises(BackendError, match="the GPU ran out of memory: OutOfMemoryError: CUDA out of memory"):
        collect(backend, GenerationRequest(Task.from_file(task), 1, "cpu"))[0]
    assert not list((tmp_path / "cache").glob("*.json"))


def test_a_capture_out_of_gpu_memory_runs_again_with_the_gpu_alone(tmp_path, monkeypatch):
    """Which runs `_run_capture` asks for, on a GPU; each run's result is stood in for (the GPU cannot be
    crowded here). The real capture's `--alone` takes the GPU lock's exclusive side."""
    runs = []

    def run_once(self, request, mode, stop, alone):
        runs.append(alone)
        return {"error": "the GPU ran out of memory", "out_of_memory": True} if not alone else {"wrapper": "ok"}

    monkeypatch.setattr(InductorBackend, "_run_capture_once", run_once)
    backend = InductorBackend(cache=tmp_path)
    assert backend._run_capture(GenerationRequest(Task.from_file(TASKS / "relu.py"), 4, "cuda"), "templates", None) == {
        "wrapper": "ok"
    }
    assert runs == [False, True]
    runs.clear()
    backend._run_capture(GenerationRequest(Task.from_file(TASKS / "relu.py"), 4, "cpu"), "default", None)
    assert runs == [False]


def _failed(exc: Exception) -> Future:
    future = Future()
    future.set_exception(exc)
    return future


@pytest.mark.slow
def test_a_library_matmul_with_a_train_mode_batchnorm_becomes_a_correct_template_and_a_correct_hybrid(pool, tmp_path):
    task = TASKS / "linear_batchnorm_train.py"
    made, _ = collect(InductorBackend(cache=tmp_path / "cache"), GenerationRequest(Task.from_file(task), 4, "cpu"))
    by_policy = {generated.policy: generated for generated in made}
    assert sorted(by_policy) == ["hybrid", "strict"], [g.label for g in made]
    hybrid, template = by_policy["hybrid"], by_policy["strict"]
    assert "library call" in hybrid.label and "torch.addmm(" in hybrid.source
    assert "self.bn.running_mean" in hybrid.source
    verdicts = {}
    for name, generated in (("hybrid", hybrid), ("template", template)):
        candidate = tmp_path / f"{name}.py"
        candidate.write_text(generated.source)
        verdicts[name] = pool.verify(*pair(task, candidate), trials=2, policy="hybrid")
    assert verdicts["hybrid"].verdict == "correct" and verdicts["hybrid"].reward == 0.0, verdicts["hybrid"].summary()
    assert 0.0 < verdicts["hybrid"].coverage < 1.0
    assert verdicts["template"].verdict == "correct" and verdicts["template"].reward == 1.0
    assert verdicts["template"].coverage == 1.0
    # batch statistics are what the kernels compute: in eval mode the module refuses to run, never computes them
    outcome = _run_interpreted(tmp_path, EVAL_MODE.replace("MODULE", "template").replace("ARGS", "32, 48"), "(64, 32)")
    assert "ModelNew computes the task in training mode" in outcome, outcome


@pytest.mark.slow
def test_forward_refuses_shapes_and_scalars_other_than_the_examples(pool, tmp_path):
    task = tmp_path / "scaled.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x, s):\n"
        "        return x * s\n\n\ndef get_inputs():\n    return [torch.randn(8, 16), 2.5]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    [generated] = collect(InductorBackend(cache=tmp_path / "cache"), GenerationRequest(Task.from_file(task), 1, "cpu"))[
        0
    ]
    candidate = tmp_path / "scaled_triton.py"
    candidate.write_text(generated.source)
    assert pool.verify(*pair(task, candidate), trials=1).passed
    other_shape = tmp_path / "other_shape.py"
    other_shape.write_text(task.read_text().replace("torch.randn(8, 16)", "torch.randn(4, 16)"))
    report = pool.verify(*pair(other_shape, candidate), trials=1)
    assert report.verdict == "runtime_error"
    assert (
        "generated for `x` of shape (8, 16), strides (16, 1) and torch.float32, but got shape (4, 16)" in report.message
    )
    other_scalar = tmp_path / "other_scalar.py"
    other_scalar.write_text(task.read_text().replace("2.5]", "3.0]"))
    report = pool.verify(*pair(other_scalar, candidate), trials=1)
    assert report.verdict == "runtime_error" and "generated for s == 2.5, got 3.0" in report.message


CONSTRUCTED = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale, bounds=(-1.0, 1.0), relu=True, dtype=torch.float32):
        super().__init__()
        self.scale = scale
        self.low, self.high = bounds
        self.relu = relu
        self.dtype = dtype
        self.calls = 0  # changed by forward itself: not a value the kernels bake in

    def forward(self, x):
        self.calls += 1
        y = torch.clamp(x * self.scale, self.low, self.high).to(self.dtype)
        return torch.relu(y) if self.relu else y


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return [2.5]
"""
EVAL_MODE = """
import json, sys, torch
sys.path.insert(0, sys.argv[1])
from MODULE import ModelNew
model = ModelNew(ARGS)
x = torch.randn(*json.loads(sys.argv[2]))
model(x)
try:
    model.eval()(x)
    print(json.dumps("no error"))
except ValueError as exc:
    print(json.dumps(str(exc)))
"""
CHANGED_ATTRIBUTE = EVAL_MODE.replace(
    "    model.eval()(x)", "    model.eval()(x)\n    model.scale = 3.0\n    model(x)"
).replace("MODULE", "constructed_triton")


def _run_interpreted(folder, script: str, shape: str) -> str:
    """What `script` prints (its last line, JSON) when it runs a candidate module of `folder` in Triton's
    interpreter, in a process of its own; its stderr where it printed nothing."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(folder), shape.replace("(", "[").replace(")", "]")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TRITON_INTERPRET": "1"},
    )
    return json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("init_inputs", "refused"),
    [
        ("[2.5]", None),
        ("[2.5, (-1.0, 1.0), True, torch.float32]", None),  # the defaults, given: the same values
        ("[3.0]", "scale=3.0"),  # a scalar
        ("[2.5, (-2.0, 2.0)]", "bounds=(-2.0, 2.0)"),  # a tuple
        ("[2.5, (-1.0, 1.0), False]", "relu=False"),  # a flag
        ("[2.5, (-1.0, 1.0), True, torch.float64]", "dtype=torch.float64"),  # a dtype
    ],
)
def test_values_the_kernels_bake_in_from_the_constructor_are_refused_when_they_differ(
    init_inputs, refused, pool, tmp_path
):
    """The task's constructor arguments become constants in Inductor's kernels: ModelNew built with other ones
    refuses them by name instead of computing the example's result; built with the same ones, it verifies."""
    task = tmp_path / "constructed.py"
    task.write_text(CONSTRUCTED)
    request = GenerationRequest(Task.from_file(task), 1, "cpu")
    [generated] = collect(InductorBackend(cache=tmp_path / "cache"), request)[0]
    candidate = tmp_path / "constructed_triton.py"
    candidate.write_text(generated.source)
    other = tmp_path / "other.py"
    other.write_text(CONSTRUCTED.replace("return [2.5]", f"return {init_inputs}"))
    report = pool.verify(*pair(other, candidate), trials=1)
    if refused is None:
        assert report.passed, report.summary()
        return
    assert report.verdict == "runtime_error", report.summary()
    assert "ModelNew's kernels were generated for scale=2.5, bounds=(-1.0, 1.0), relu=True" in report.message
    assert f"(baked in), but got {refused}; convert the task again" in report.message


@pytest.mark.slow
def test_a_module_attribute_the_kernels_bake_in_is_refused_once_changed_and_eval_mode_runs(tmp_path):
    task = tmp_path / "constructed.py"
    task.write_text(CONSTRUCTED)
    [generated] = collect(InductorBackend(cache=tmp_path / "cache"), GenerationRequest(Task.from_file(task), 1, "cpu"))[
        0
    ]
    (tmp_path / "constructed_triton.py").write_text(generated.source)
    # eval mode computes the same here (no dropout, no batch statistics): it runs; then the changed attribute
    message = _run_interpreted(tmp_path, CHANGED_ATTRIBUTE.replace("ARGS", "2.5"), "(8, 16)")
    assert "generated for self.dtype=torch.float32, self.high=1.0" in message and "but got self.scale=3.0" in message


@pytest.mark.slow
def test_on_the_cpu_every_rewritten_convolution_becomes_triton_that_verifies(pool, tmp_path):
    """One task with each convolution the templates capture rewrites (a product of patches, a sum over taps, a
    strided transposed one by output phase, a dilated 1-D one by phase as 2-D), each with a bias (added after the
    template, which has no bias input), and a view of a convolution's output: all Triton, correct in Triton's
    interpreter."""
    task = TASKS / "conv_rewrites.py"
    made, _ = collect(InductorBackend(cache=tmp_path / "cache"), GenerationRequest(Task.from_file(task), 4, "cpu"))
    [template] = [g for g in made if g.policy == "strict"]
    assert template.label == "Inductor max-autotune Triton templates" and "extern_kernels" not in template.source
    candidate = tmp_path / "template.py"
    candidate.write_text(template.source)
    report = pool.verify(*pair(task, candidate), trials=2)
    assert report.verdict == "correct" and report.reward == 1.0, report.summary()


@pytest.mark.slow
@pytest.mark.parametrize(("name", "copies"), [("conv_gemm", 2), ("conv_transpose_gemm", 4)])
def test_on_the_cpu_library_convolutions_become_the_project_s_kernel_that_verifies(pool, tmp_path, name, copies):
    """Three convolutions that Inductor's default compile hands to the library, with a bias or without, channels
    last or first, one of them dilated; forward ones (`conv_gemm`) and transposed ones by output phase
    (`conv_transpose_gemm`). The variant with the project's implicit-GEMM kernel in their place is all Triton and
    correct in Triton's interpreter. Since it takes every library call, no templates compile starts: the default
    capture is the only one made."""
    task = TASKS / f"{name}.py"
    generator = InductorBackend(cache=tmp_path / "cache").generate(GenerationRequest(Task.from_file(task), 4, "cpu"))
    first = next(generator)
    [own] = [g for g in first.candidates if g.policy == "strict"]
    assert not first.more and own.label.startswith(inductor.OWN_CONV)
    assert [g.label for g in first.candidates if g.policy == "hybrid"] == [inductor.HYBRID]
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1
    assert "extern_kernels" not in own.source and "torch.convolution" not in own.source
    assert own.source.count("channels_last_kernel_") == 2 * copies  # each defined and launched
    assert own.source.count("convolution_gemm_kernel_") == 6
    assert own.source.count("Transposed convolution as an implicit GEMM") == (3 if "transpose" in name else 0)
    candidate = tmp_path / "own.py"
    candidate.write_text(own.source)
    report = pool.verify(*pair(task, candidate), trials=2)
    assert report.verdict == "correct" and report.reward == 1.0, report.summary()
    generator.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "kernel"), [("linear_long_k", "matmul_splits_kernel_"), ("matmul_irregular", "matmul_align_kernel_")]
)
def test_on_the_cpu_a_library_matmul_becomes_the_project_s_kernel_that_verifies(pool, tmp_path, name, kernel):
    """A linear layer whose K (2400) is split in two unequal parts over a 40 x 24 output, its bias added by the
    kernel that sums the splits (Inductor's default compile hands it to the library as `addmm`); and a 67 x 147 by
    147 x 93 product, whose operands' rows are copied to 16-byte boundaries first. The variant with the project's
    matmul kernel in place of the library call is all Triton and correct in Triton's interpreter."""
    task = TASKS / f"{name}.py"
    made, _ = collect(InductorBackend(cache=tmp_path / "cache"), GenerationRequest(Task.from_file(task), 4, "cpu"))
    [own] = [g for g in made if g.label.startswith(inductor.OWN_MATMUL)]
    assert own.policy == "strict" and "extern_kernels" not in own.source and "torch.addmm" not in own.source
    assert kernel in own.source
    candidate = tmp_path / "own.py"
    candidate.write_text(own.source)
    report = pool.verify(*pair(task, candidate), trials=2)
    assert report.verdict == "correct" and report.reward == 1.0, report.summary()


@pytest.mark.slow
def test_an_irregular_matmul_gets_tf32x3_tiles_whose_block_k_does_not_divide_k_and_they_verify(pool, tmp_path):
    """K = 147: Inductor's template masks its K loop's loads against K, so the tf32x3 tiles (BLOCK_K 32) apply,
    where before only the template as captured did; each is correct in Triton's interpreter."""
    captured, source, name = load(INDUCTOR_FIXTURES / "matmul_irregular.cpu-templates.json")
    task = tmp_path / "matmul_irregular.py"
    task.write_text(source)
    for position, tile in enumerate(inductor.TF32X3_TILES):
        candidate = tmp_path / f"tile_{position}.py"
        candidate.write_text(rewrite(captured, source, name, Variant(f"tile {position}", "tf32x3", tile)))
        report = pool.verify(*pair(task, candidate), trials=2)
        assert report.verdict == "correct", (tile, report.summary())


@pytest.mark.slow
def test_on_the_cpu_pools_inductor_hands_to_aten_become_triton_that_verifies(pool, tmp_path):
    """A 27-element overlapping average pool and an uneven adaptive one: the default capture calls ATen for both,
    the templates capture's rewrite makes them Inductor's own Triton, correct in Triton's interpreter."""
    task = TASKS / "pool3d.py"
    made, notes = collect(InductorBackend(cache=tmp_path / "cache"), GenerationRequest(Task.from_file(task), 4, "cpu"))
    assert any("torch.ops.aten.avg_pool3d.default" in note for note in notes), notes
    [rewritten] = made
    assert rewritten.label == inductor.LIBRARY_REWRITTEN and rewritten.policy == "strict"
    assert "aten." not in rewritten.source and "tl.dot" not in rewritten.source
    candidate = tmp_path / "pools.py"
    candidate.write_text(rewritten.source)
    report = pool.verify(*pair(task, candidate), trials=2)
    assert report.verdict == "correct" and report.reward == 1.0, report.summary()


def test_a_tuned_capture_needs_a_gpu():
    """Coordinate-descent tuning times configurations; the CPU capture has nothing to time them on."""
    done = subprocess.run(
        [sys.executable, "-m", "model_server.inductor.capture", str(TASKS / "relu.py"), "--device", "cpu", "--tuned"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 1
    assert json.loads(done.stdout) == {"error": "tuning times kernels on the GPU: --tuned needs --device cuda"}


def _captured(task, *flags: str) -> dict:
    """The capture of a trusted fixture task on the CPU, run as the backend runs it but outside the sandbox."""
    command = [sys.executable, "-m", "model_server.inductor.capture", str(task), "--device", "cpu", *flags]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_looped_reductions_are_a_variant_of_their_own_that_verifies(pool, tmp_path):
    """A softmax over rows of 200: Inductor's default kernel holds each row at once (a persistent reduction); the
    capture with looped reductions walks it in blocks. Its rewrite is a candidate of its own, ranked after the
    default kernels, and correct in Triton's interpreter."""
    task = TASKS / "softmax.py"
    default, looped = _captured(task), _captured(task, "--reductions", "looped")
    assert "persistent_reduction" in inductor.HEURISTIC.findall(default["wrapper"])
    assert "persistent_reduction" not in inductor.HEURISTIC.findall(looped["wrapper"])
    assert "reduction" in inductor.HEURISTIC.findall(looped["wrapper"]) and looped["reductions"] == "looped"
    assert "for r0_offset in tl.range" in looped["wrapper"] and "for r0_offset" not in default["wrapper"]
    planned = inductor._plan({"default": default, "looped": looped})
    assert [p.variant.label for p in planned] == ["Inductor's default kernels", inductor.LOOPED]
    assert inductor._plan({"default": default, "looped": default}) == planned[:1]  # the same kernels: no variant
    source = rewrite(looped, task.read_text(), task.name, planned[1].variant)
    candidate = tmp_path / "looped.py"
    candidate.write_text(source)
    report = pool.verify(*pair(task, candidate), trials=2)
    assert report.verdict == "correct" and report.reward == 1.0, report.summary()


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("layernorm_gelu.cpu.json", {"templates": inductor.NO_LIBRARY}),
        ("gelu.cpu.json", {"templates": inductor.NO_LIBRARY, "looped": inductor.NO_PERSISTENT_REDUCTION}),
        ("matmul_gelu.cpu.json", {"tuned": inductor.CALLS_LIBRARY, "looped": inductor.CALLS_LIBRARY}),
    ],
    ids=["persistent layer norm", "pointwise only", "calls a library"],
)
def test_a_looped_compile_goes_on_only_where_the_default_kernels_hold_whole_rows(fixture, expected):
    """The default capture decides which extra compiles are stopped: a layer norm over short rows keeps its looped
    compile, a GELU (pointwise kernels only) and a matmul handed to cuBLAS do not."""
    default, _, _ = load(INDUCTOR_FIXTURES / fixture)
    assert inductor._not_needed(default) == expected
    assert inductor._capture_flags("looped", "") == (["--tuned", "--reductions", "looped"], False)


def test_a_second_conversion_of_the_same_task_reads_the_cached_capture(tmp_path):
    backend = InductorBackend(cache=tmp_path / "cache")
    request = GenerationRequest(Task.from_file(TASKS / "relu.py"), 1, "cpu")
    [first] = collect(backend, request)[0]
    [cached] = list((tmp_path / "cache").glob("*.json"))
    capture = json.loads(cached.read_text())
    cached.write_text(json.dumps({**capture, "torch": "from-the-cache"}))
    [second] = collect(backend, request)[0]
    assert (
        "from-the-cache" in second.source and second.source.replace("from-the-cache", capture["torch"]) == first.source
    )


def test_a_fresh_capture_s_split_accounts_for_its_whole_wall_time(tmp_path):
    """Besides the capture's own stages, the split names the wait for the GPU, the process's start and its exit,
    so the parts add up to the wall time the progress line reports."""
    backend = InductorBackend(cache=tmp_path / "cache")
    captures, _ = _returned(backend._captures(GenerationRequest(Task.from_file(TASKS / "relu.py"), 1, "cpu")))
    default = captures["default"]
    seconds = default["seconds"]
    assert list(seconds) == ["waited", "start", "imports", "task", "compile", "exit"], seconds
    assert seconds["waited"] == 0.0 and seconds["start"] > 0 and seconds["exit"] > 0  # no GPU lock on a CPU
    assert abs(sum(seconds.values()) - default["wall_s"]) < 1.0, (seconds, default["wall_s"])
    spent = inductor._spent(captures)
    assert re.match(
        r"default compile [\d.]+ s \(start [\d.]+, imports [\d.]+, task [\d.]+, compile [\d.]+, exit", spent
    )


@pytest.mark.parametrize(
    ("task", "flags", "pooled"),
    [
        ("gpu/linear_relu.py", ["--templates", "--configs", "1"], False),
        ("gpu/matmul_long_k.py", ["--templates", "--configs", "1"], False),
        ("../../benchmarks/tasks/published/conv2d_relu_bias_add.py", ["--templates", "--configs", "1"], True),
        ("../../benchmarks/tasks/published/depthwise_conv2d.py", ["--templates", "--configs", "1"], True),
    ],
)
def test_matmul_templates_are_captured_untuned_and_convolution_templates_autotuned(task, flags, pooled):
    """The variants set a matmul template's tile themselves; a convolution template's configuration can only
    come from Inductor's autotuner (the capture lifts the cap for convolutions), which needs its pool of compile
    workers."""
    source = (FIXTURES / task).read_text()
    assert inductor._capture_flags("templates", source) == (flags, pooled)
    assert inductor._capture_flags("default", source) == ([], False)


def test_convolution_templates_are_autotuned_under_the_matmul_cap(monkeypatch):
    """Inductor's own configuration generator needs a graph being compiled for a GPU; it is stood in for by one
    that yields the cap it sees, which is what `preprocess_mm_configs` reads."""
    import torch._inductor.config as inductor_config
    from torch._inductor.choices import InductorChoices

    from model_server.inductor import capture

    def seen_cap(self, device_type="cuda"):
        def configs(*args, **kwargs):
            yield inductor_config.test_configs.max_mm_configs

        return configs

    monkeypatch.setattr(InductorChoices, "get_conv_configs", seen_cap)
    monkeypatch.setattr(inductor_config.test_configs, "max_mm_configs", 1)
    capture._convolutions_autotuned(inductor_config)
    assert list(InductorChoices().get_conv_configs("cuda")(1024, 64, 64, dtype_size=4)) == [None]
    assert inductor_config.test_configs.max_mm_configs == 1


def test_the_deadline_bounds_inductors_compile(tmp_path):
    task = tmp_path / "spins.py"
    task.write_text((TASKS / "relu.py").read_text() + "\nwhile True:\n    pass\n")
    started = time.monotonic()
    request = GenerationRequest(Task.from_file(task), 4, "cpu", deadline=started + 3)
    with pytest.raises(BackendError, match="did not finish compiling the task within 3 s"):  # spins: the deadline
        collect(InductorBackend(cache=tmp_path / "cache"), request)[0]
    with pytest.raises(BackendError, match="the deadline passed before Inductor could compile the task"):
        collect(
            InductorBackend(cache=tmp_path / "cache"),
            GenerationRequest(Task.from_file(task), 4, "cpu", deadline=started),
        )[0]


def _convert_on_gpu(task: Path, cache: Path, name: str | None = None) -> tuple[Outcome, dict[str, tuple]]:
    """`task` converted by the built-in backend on a GPU (4 candidates, one round, 2 trials), and each attempt's
    policy, verdict and message by its label."""
    request = ConvertRequest(task=task.read_text(), task_name=name or task.stem, samples=4, rounds=1, trials=2)
    with VerifierPool(size=2, device="cuda") as gpu:
        outcome = convert(request, InductorBackend(cache=cache), gpu)
    return outcome, {a.label: (a.policy, a.report.verdict, a.report.message) for a in outcome.attempts}


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_a_large_k_matmul_gets_the_project_s_split_k_kernel_and_an_all_triton_result(tmp_path):
    """Inductor's templates compile hands this matmul back to cuBLAS, so before the project's own kernel its only
    candidate was a hybrid (KernelBench L1 6, 2026-11-28). Both tf32x3 tiles of that kernel split K and verify,
    and the chosen candidate is all Triton."""
    task = FIXTURES / "gpu" / "matmul_large_k.py"
    outcome, verdicts = _convert_on_gpu(task, tmp_path)
    own = [a for a in outcome.attempts if a.label.startswith(inductor.OWN_MATMUL) and "tf32x3" in a.label]
    assert len(own) == 2 and all(a.report.verdict == "correct" and a.policy == "strict" for a in own), verdicts
    assert all("matmul_splits_kernel_" in a.source for a in own)
    assert outcome.best is not None and outcome.best.policy == "strict", verdicts


@pytest.mark.gpu
def test_on_a_gpu_the_templates_compile_is_stopped_when_the_default_kernels_call_no_library(tmp_path):
    """The tuned compile, which a task without a library call is worth, goes on and is cached; so does the looped
    one only where a reduction holds whole rows (a ReLU has none)."""
    backend = InductorBackend(cache=tmp_path)
    captures, _ = _returned(backend._captures(GenerationRequest(Task.from_file(TASKS / "relu.py"), 4, "cuda")))
    assert "error" not in captures["default"] and "error" not in captures["tuned"], captures["tuned"]
    stopped = 0
    for mode in ("templates", "looped"):  # either stopped, or it finished first: with no matmul it is quick
        stopped += bool(captures[mode].get("stopped"))
        assert captures[mode].get("stopped") or "error" not in captures[mode], captures[mode]
    assert len(list(tmp_path.glob("*.json"))) == 4 - stopped  # a stopped compile is not cached
    assert list(captures["default"]["seconds"]) == ["waited", "start", "imports", "task", "compile", "exit"]


@pytest.mark.gpu
def test_on_a_gpu_a_softmax_gets_a_looped_reductions_candidate_that_verifies(tmp_path):
    """Rows of 200 are held whole by Inductor's default kernel; the looped compile, tuned, is a candidate of its
    own, all Triton and correct."""
    task = TASKS / "softmax.py"
    outcome, verdicts = _convert_on_gpu(task, tmp_path)
    [looped] = [a for a in outcome.attempts if a.label == inductor.LOOPED]
    assert looped.report.verdict == "correct" and looped.policy == "strict", verdicts
    assert "for r0_offset in tl.range(0, r0_numel, R0_BLOCK)" in looped.source and outcome.best is not None


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_a_long_k_matmul_converts_to_an_all_triton_tf32x3_template(tmp_path):
    """Its tf32x3 candidates (Inductor's templates, the project's matmul kernel) add in another order (and more
    exactly) than cuBLAS: they miss the fp32 tolerance where outputs cancel, and verify on the float64 second
    opinion; the fastest of them is chosen."""
    task = FIXTURES / "gpu" / "matmul_long_k.py"
    request = ConvertRequest(task=task.read_text(), task_name=task.stem, samples=4, rounds=1, trials=2)
    with VerifierPool(size=2, device="cuda") as gpu:
        outcome = convert(request, InductorBackend(cache=tmp_path), gpu)
    verdicts = {a.label: (a.report.verdict, a.report.message) for a in outcome.attempts}
    tf32x3 = [a for a in outcome.attempts if "tf32x3" in a.label]  # a bare matmul has no hybrid: 3 of 4 tf32x3
    assert len(tf32x3) == 3 and all(a.report.verdict == "correct" for a in tf32x3), verdicts
    assert all("against the float64 answer" in a.report.message for a in tf32x3), verdicts
    assert outcome.best is not None and outcome.best.policy == "strict" and outcome.best.report.reward == 1.0
    assert "tf32x3" in outcome.best.label


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_a_convolution_the_templates_did_not_take_gets_verified_triton_templates(tmp_path):
    """A dilated, thinly grouped 1-D convolution (by phase, as 2-D), which the project's own kernel refuses, becomes
    a convolution Inductor's templates take: its template candidates, IEEE and tf32x3, are all Triton and correct,
    where before the only candidate was cuDNN's."""
    task = FIXTURES / "gpu" / "conv1d_dilated.py"
    outcome, verdicts = _convert_on_gpu(task, tmp_path)
    templates = [a for a in outcome.attempts if a.label.startswith("Inductor max-autotune Triton templates")]
    assert len(templates) == 2 and all(a.report.verdict == "correct" for a in templates), verdicts
    assert all(a.policy == "strict" and "extern_kernels" not in a.source for a in templates), verdicts


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_a_strided_transposed_convolution_becomes_the_project_s_kernel_by_output_phase(tmp_path):
    """A strided, grouped, padded transposed convolution, which Inductor's default compile hands to cuDNN: the
    variants with the project's transposed kernel (one program per block of an output phase) verify, all Triton,
    at both tf32x3 tiles, and the templates compile (a template per phase) is stopped as unneeded."""
    task = FIXTURES / "gpu" / "conv_transpose_strided.py"
    outcome, verdicts = _convert_on_gpu(task, tmp_path)
    own = [a for a in outcome.attempts if a.label.startswith(inductor.OWN_CONV)]
    assert sum("tf32x3" in a.label for a in own) == 2, verdicts
    assert all(a.report.verdict == "correct" and a.policy == "strict" for a in own), verdicts
    assert all("Transposed convolution as an implicit GEMM" in a.source for a in own)
    assert not any("templates" in a.label for a in outcome.attempts), verdicts
    assert outcome.best is not None and outcome.best.report.verdict == "correct", verdicts


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_few_channel_and_depthwise_convolutions_are_converted_to_verified_triton(tmp_path):
    """An RGB convolution (a product of patches, on the matmul templates) then a depthwise one (a sum over taps):
    the chosen candidate is all Triton and correct, in IEEE and tf32x3 alike."""
    task = FIXTURES / "gpu" / "conv_few_channels_depthwise.py"
    outcome, verdicts = _convert_on_gpu(task, tmp_path, "rgb_depthwise")
    strict = [a for a in outcome.attempts if a.policy == "strict"]
    assert strict and all(a.report.verdict == "correct" for a in strict), verdicts
    assert {"IEEE", "tf32x3"} <= {"tf32x3" if "tf32x3" in a.label else "IEEE" for a in strict}, verdicts
    assert outcome.best is not None and outcome.best.policy == "strict", verdicts
    assert "extern_kernels" not in outcome.best.source


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_library_convolutions_become_the_project_s_kernel_and_it_is_chosen(tmp_path):
    """A 64-channel 2-D convolution and a 32-channel 3-D one, which kept cuDNN: the variants with the project's
    implicit-GEMM kernel verify, all Triton, and one is chosen over the hybrid (it ran at 2x of cuDNN's fp32).
    The templates compile, which that kernel makes unneeded, is stopped: only the default capture is cached."""
    task = FIXTURES / "gpu" / "conv_channels.py"
    outcome, verdicts = _convert_on_gpu(task, tmp_path)
    own = [a for a in outcome.attempts if a.label.startswith(inductor.OWN_CONV)]
    assert sum("tf32x3" in a.label for a in own) == 2, verdicts
    assert all(a.report.verdict == "correct" and a.policy == "strict" for a in own), verdicts
    assert outcome.best is not None and outcome.best.label.startswith(inductor.OWN_CONV), verdicts
    assert "extern_kernels" not in outcome.best.source and "torch.convolution" not in outcome.best.source
    assert not any("templates" in a.label for a in outcome.attempts), verdicts
    assert len(list(tmp_path.glob("*.json"))) == 1


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_pools_inductor_hands_to_aten_are_converted_to_verified_triton(tmp_path):
    """A 27-element overlapping average pool and an uneven adaptive one, which torch.compile leaves to ATen (so
    before, no candidate was Triton and the task was refused): the rewrite is chosen, all Triton and correct."""
    task = FIXTURES / "gpu" / "pool3d.py"
    outcome, verdicts = _convert_on_gpu(task, tmp_path)
    assert outcome.best is not None and outcome.best.label == inductor.LIBRARY_REWRITTEN, verdicts
    assert outcome.best.policy == "strict" and outcome.best.report.reward == 1.0, verdicts
    assert "aten." not in outcome.best.source


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_the_tuned_kernels_are_a_second_candidate_and_the_faster_is_chosen(tmp_path):
    """Cross-entropy at KernelBench's size, whose reductions coordinate-descent tuning speeds up (H100: 1.40x):
    the tuned kernels and the default ones are both verified and timed, and the fastest correct candidate is
    chosen (the looped reductions' one is among them: it was the fastest on an H200, 2026-11-28)."""
    task = ROOT / "benchmarks" / "tasks" / "published" / "cross_entropy.py"
    request = ConvertRequest(task=task.read_text(), task_name="cross_entropy", samples=4, rounds=1, trials=2)
    with VerifierPool(size=2, device="cuda") as gpu:
        outcome = convert(request, InductorBackend(cache=tmp_path), gpu)
    by_label = {a.label: a for a in outcome.attempts}
    verdicts = {label: (a.report.verdict, a.report.message) for label, a in by_label.items()}
    tuned, default = by_label.get(inductor.TUNED), by_label.get("Inductor's default kernels")
    assert tuned is not None and default is not None, verdicts
    assert tuned.report.verdict == default.report.verdict == "correct", verdicts
    correct = [a for a in outcome.attempts if a.report.verdict == "correct" and a.policy == "strict"]
    fastest = min(correct, key=lambda a: a.report.timing["candidate_ms"])
    assert outcome.best is not None and outcome.best.label == fastest.label, verdicts


@pytest.mark.parametrize(
    "templates",
    [
        {"error": "Inductor's max-autotune compile failed"},
        {"library": True},
        {"library": False, "tile": None},
        {"library": False, "tile": {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}},
        {"library": False, "dot": False},
    ],
    ids=[
        "templates failed",
        "templates call a library",
        "templates without a matmul tile",
        "matmul template",
        "a pool rewritten",
    ],
)
@pytest.mark.parametrize("library", [None, "conv", "matmul"], ids=["another library op", "a library convolution",
                                                                  "a library matmul"])  # fmt: skip
def test_the_default_capture_s_early_candidates_are_never_ranked_below_the_place_that_lets_them_go_early(
    monkeypatch, templates, library
):
    """The default capture's hybrid and first own-kernel candidate are handed over before the templates compile
    ends only because `_plan` never ranks them below HYBRID_RANK, whatever that compile brings. The predicates
    that read Inductor's wrapper code are replaced by flags here: this checks the plan's order, not the reading
    of real code."""
    monkeypatch.setattr(inductor, "uses_library", lambda capture: capture.get("library", True))
    monkeypatch.setattr(inductor, "uses_library_convolution", lambda capture: capture.get("conv", False))
    monkeypatch.setattr(inductor, "uses_library_matmul", lambda capture: capture.get("matmul", False))
    monkeypatch.setattr(inductor, "matmul_tile", lambda capture: capture.get("tile"))
    monkeypatch.setattr(inductor, "uses_dot", lambda capture: capture.get("dot", True))
    default = {"library": True, "conv": library == "conv", "matmul": library == "matmul", "device": "cuda"}
    plan = inductor._plan({"default": default, "templates": templates})
    labels = [p.variant.label for p in plan]
    early = [p.variant.label for p in inductor._plan({"default": default})[: inductor.HYBRID_RANK - 1]]
    assert inductor.HYBRID in early
    assert (inductor.OWN_CONV in early[0]) == (library == "conv")
    assert (inductor.OWN_MATMUL in early[0]) == (library == "matmul")
    assert all(labels.index(label) < inductor.HYBRID_RANK for label in early), labels
    assert all(p.fallback in labels for p in plan if p.fallback), "a fallback the repair round cannot find"


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_the_hybrid_is_verified_while_the_templates_compile(tmp_path):
    """A matmul's templates now compile as fast as its default kernels (one configuration, no autotuning), so
    the templates capture is held back 15 s here, standing in for a slow one (a convolution's autotuning); the
    captures and verifications are real."""

    class SlowTemplates(InductorBackend):
        def _run_capture(self, request, mode, stop):
            if mode == "templates":
                time.sleep(15)
            return super()._run_capture(request, mode, stop)

    task = FIXTURES / "gpu" / "linear_relu.py"
    events: list[dict] = []
    with VerifierPool(size=2, device="cuda") as gpu:
        request = ConvertRequest(task=task.read_text(), task_name=task.stem, samples=4, rounds=1, policy="hybrid")
        outcome = convert(request, SlowTemplates(cache=tmp_path), gpu, events.append)
    notes = [e["text"] for e in without_heartbeats(events) if e["event"] == "note"]
    own = inductor._describe_own(None, inductor.OWN_MATMUL_TILES[0])
    assert "still generating" in notes[0] and f"1. {own}; 2. {inductor.HYBRID} [hybrid]" in notes[0], notes[0]
    assert "2 more candidates in" in notes[1], notes
    hybrid = outcome.attempts[1]
    assert hybrid.policy == "hybrid" and hybrid.report.verdict == "correct", hybrid.report.message
    assert hybrid.report.timing is not None and outcome.best is not None


def _returned(generator):
    """What a generator returns, once it has yielded everything."""
    while True:
        try:
            next(generator)
        except StopIteration as stop:
            return stop.value


class _StagedCaptures(InductorBackend):
    """The backend with each compile's result given instead of made: a GPU compile cannot run here, so stored GPU
    captures stand in for it. The default one returns at once; the others return theirs once `release` is set,
    or end as a stopped compile does when the backend stops them first (an error after 30 s of neither). The
    cache, the stopping and the planning are the backend's own."""

    def __init__(self, captures: dict[str, dict], release: threading.Event, cache):
        super().__init__(cache=cache)
        self.staged, self.release, self.stopped_because = captures, release, {}

    def _run_capture(self, request, mode, stop):
        given_up = time.monotonic() + 30  # a backend that never stops this compile fails the test, not hangs it
        while mode != "default":
            if time.monotonic() > given_up:
                return {"error": "neither released nor stopped"}
            if stop.is_set():
                self.stopped_because[mode] = stop.unneeded.reason
                return {"error": f"not needed: {stop.unneeded.reason}", "stopped": True}
            if self.release.wait(0.01):
                break
        return self.staged[mode]


def _staged_request(tmp_path, fixture: str) -> tuple[dict, GenerationRequest]:
    captured, source, name = load(INDUCTOR_FIXTURES / fixture)
    (tmp_path / name).write_text(source)
    return captured, GenerationRequest(Task.from_file(tmp_path / name), 4, "cuda")


def test_without_a_library_call_the_default_kernels_are_verified_while_the_tuned_compile_runs(tmp_path):
    """Cross-entropy's GPU capture: its default kernels are handed over as soon as they exist, the templates
    compile is stopped (nothing calls a library), so is the looped one (no kernel holds whole rows), and the
    tuned kernels, whose launch configuration differs, follow once their compile ends."""
    default, request = _staged_request(tmp_path, "cross_entropy.cuda.json")
    default["seconds"] = {"imports": 3.2, "task": 1.1, "compile": 7.9}  # as a fresh capture reports them
    tuned = json.loads(json.dumps(default))
    tuned["configs"]["triton_red_fused_prepare_softmax_online_0"]["num_warps"] = 8
    release = threading.Event()
    backend = _StagedCaptures({"default": default, "tuned": tuned}, release, tmp_path / "cache")
    generator = backend.generate(request)
    first = next(generator)
    assert first.more and [g.label for g in first.candidates] == ["Inductor's default kernels"]
    release.set()
    rest = list(generator)
    assert [g.label for batch in rest for g in batch.candidates] == [inductor.TUNED]
    assert backend.stopped_because == {"templates": inductor.NO_LIBRARY, "looped": inductor.NO_PERSISTENT_REDUCTION}
    spent = rest[-1].spent.split("; ")
    assert re.fullmatch(r"default compile \d+\.\d s \(imports 3\.2, task 1\.1, compile 7\.9\)", spent[0]), spent
    assert spent[1] == "templates compile stopped" and re.fullmatch(r"tuned compile \d+\.\d s \(.*\)", spent[2])
    assert spent[3:] == ["looped compile stopped"]


def test_where_the_project_s_kernel_takes_every_library_convolution_no_templates_candidate_is_made(tmp_path):
    """The published conv2d's GPU capture: the own-kernel variants render, so the templates compile is stopped,
    and its result is not used even where it finished (from the cache, say) before the default one was read."""
    default, request = _staged_request(tmp_path, "published_conv2d.cuda.json")
    templates, _, _ = load(INDUCTOR_FIXTURES / "published_conv2d.cuda-templates.json")
    release = threading.Event()
    backend = _StagedCaptures({"default": default, "templates": templates}, release, tmp_path / "cache")
    [batch] = list(backend.generate(request))
    labels = [g.label for g in batch.candidates]
    assert not batch.more and labels[:2] == [inductor._describe_own(inductor.OWN_CONV_TILES[0]), inductor.HYBRID]
    assert not any("templates" in label for label in labels), labels
    assert backend.stopped_because == {
        "templates": inductor.OWN_KERNELS_SUFFICE,
        "tuned": inductor.CALLS_LIBRARY,
        "looped": inductor.CALLS_LIBRARY,
    }

    release.set()  # a templates compile that is done before the default one is read changes nothing
    staged = {"default": default, "templates": templates, "tuned": default, "looped": default}
    backend = _StagedCaptures(staged, release, tmp_path / "cache2")
    [again] = list(backend.generate(request))
    assert [g.label for g in again.candidates] == labels


@pytest.mark.slow
def test_with_spares_each_capture_runs_in_a_process_started_ahead_and_close_ends_them(tmp_path):
    """A long-lived process keeps spare capture processes, their imports done: the capture runs in one (the
    progress line says so), makes the same candidate as a capture process started on demand, and is replaced
    for the next conversion; `close` ends every spare."""
    request = GenerationRequest(Task.from_file(TASKS / "relu.py"), 4, "cpu")
    [cold] = list(InductorBackend(cache=tmp_path / "cold").generate(request))
    backend = InductorBackend(cache=tmp_path / "warm")
    backend.start_spares("cpu")
    started = list(backend._spares.values())
    try:
        [warm] = list(backend.generate(request))
        assert re.match(r"default compile [\d.]+ s, in a spare process \(start [\d.]+, imports", warm.spent), warm.spent
        assert "spare" not in cold.spent
        assert [g.source for g in warm.candidates] == [g.source for g in cold.candidates]
        assert set(backend._spares) == {("cpu", "default", False), ("cpu", "templates", False)}
        replacements = [s for s in backend._spares.values() if s not in started]
        assert len(replacements) == 1 and replacements[0].alive()
    finally:
        backend.close()
    assert not any(spare.alive() for spare in started + replacements)


@pytest.mark.slow
def test_a_cancelled_conversion_ends_the_spare_its_capture_runs_in(tmp_path):
    """Once the conversion is cancelled, the spare that took its compile is killed as an on-demand capture process
    would be, and the backend says the conversion was cancelled."""
    backend = InductorBackend(cache=tmp_path / "cache")
    backend.start_spares("cpu")
    key = ("cpu", "default", False)
    spare = backend._spares[key]
    cancelled = threading.Event()
    request = GenerationRequest(Task.from_file(TASKS / "softmax.py"), 4, "cpu", stopped=cancelled.is_set)
    outcome: list[BaseException | None] = []

    def convert_it() -> None:
        try:
            list(backend.generate(request))
            outcome.append(None)
        except BackendError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=convert_it)
    try:
        worker.start()
        deadline = time.monotonic() + 60
        while backend._spares.get(key) is spare and time.monotonic() < deadline:  # not yet taken
            time.sleep(0.05)
        assert backend._spares.get(key) is not spare, "the conversion never took the spare"
        cancelled.set()
        worker.join(60)
        assert not spare.alive() and not worker.is_alive()
        assert outcome and "cancelled" in str(outcome[0])
        assert not list((tmp_path / "cache").glob("*.json")), "the compile ran on to the end and was cached"
    finally:
        cancelled.set()
        worker.join(30)
        backend.close()
