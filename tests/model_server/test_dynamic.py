"""Kernels for other sizes (`convert --dynamic`): a real CPU capture with dynamic dimensions, the guards its
candidate writes, their refusal of a hostile capture record, and the whole command line: convert, then verify."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest
import torch

from model_server.api import ConvertRequest
from model_server.inductor.dynamic_guards import GuardError, dynamic_input_guards
from model_server.inductor.rewrite import Variant, rewrite
from tests.conftest import FIXTURES
from verifier import Task, VerifierPool

DYNAMIC = FIXTURES / "dynamic"
ROOT = FIXTURES.parents[1]


def _capture(task: str, spec: str, *flags: str) -> dict:
    command = [sys.executable, "-m", "model_server.inductor.capture", str(DYNAMIC / task), "--device", "cpu", *flags]
    done = subprocess.run([*command, "--dynamic", spec], capture_output=True, text=True, cwd=ROOT, timeout=300)
    return json.loads(done.stdout.splitlines()[-1])


def test_auto_varies_what_the_task_lets_vary_and_records_what_the_code_assumes():
    """A matmul's inner size is fixed by the weight it meets: only the rows of `a` vary."""
    captured = _capture("matmul_task.py", "auto")
    dynamic = captured["dynamic"]
    assert dynamic["dims"] == {"a": [0]}
    assert "b.shape[0] == 48" in dynamic["guards"] and "a.shape[0] >= 1" in dynamic["guards"]
    assert "a.shape[0]" in captured["graph_inputs"]


def test_a_matmul_template_with_a_dynamic_m_is_retuned_and_verifies_at_other_sizes(tmp_path):
    """The template reads M from an argument (`M = ks0`): a retuned tile launches `cdiv(M, BLOCK_M)` programs of
    the launch's M, checked against the count Inductor launched, and is correct at every other size."""
    captured = _capture("matmul_task.py", "auto", "--templates", "--configs", "1")
    tile = {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 8, "num_warps": 4, "num_stages": 2}
    source = rewrite(captured, (DYNAMIC / "matmul_task.py").read_text(), "matmul_task", Variant("retuned", tile=tile))
    assert re.search(r"_kernel_0\[\(triton\.cdiv\(s\d+, 64\) \* 1, 1, 1,\)\]", source), source
    with VerifierPool(size=1, device="cpu") as pool:
        report = pool.verify(Task.from_file(DYNAMIC / "matmul_task.py"), source, trials=2, dynamic="a:0")
    assert report.verdict == "correct", report.message
    assert "3 at other sizes along the dynamic dimensions" in report.message


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("x:0", "--dynamic x:0: dimension 0 of `x` cannot vary: the task's code fixes its size; leave it out"),
        ("x:5", "--dynamic x:5: `x` has 2 dimensions"),
        ("w:0", "--dynamic names `w`, which is not a tensor argument of forward (x, s)"),
        ("s:0", "--dynamic: dimension 0 of `s` has size 1 in the example inputs"),
        ("x:", "dynamic spec item 'x:' is neither a dimension"),
    ],
)
def test_a_dimension_that_cannot_vary_is_an_error_naming_it(spec, error):
    assert _capture("fixed_rows_task.py", spec)["error"].startswith(error)


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"guards": ["__import__('os').system('true') == 0"]}, "calls something other than abs, max, min"),
        ({"guards": ["x.sum() > 0"]}, "calls something other than"),
        ({"guards": ["max(x.shape[0], key=print) > 1"]}, "calls something other than"),
        ({"guards": ["x[0] > 0"]}, r"not arithmetic on sizes \(Subscript\)"),
        ({"guards": ["x.shape[0] > 0.5"]}, "no integer"),
        ({"guards": ["y.shape[0] > 1"]}, "reads the size of `y`, not one of forward's arguments"),
        ({"guards": ["s5 >= 2"]}, "size variable s5, which no input's size names"),
        ({"symbols": {"s1": "self.weight"}}, "not a size of forward's inputs"),
        ({"symbols": {"s1": "z.shape[0]"}}, "not a size of forward's inputs"),
    ],
)
def test_a_hostile_capture_record_is_never_written_as_code(record, problem):
    """The capture runs the task's code; what it reports is parsed, never pasted: only arithmetic and comparisons
    of the sizes of forward's own arguments become guards."""
    honest = {"symbols": {"s1": "x.shape[0]"}, "guards": ["64*x.shape[0] <= 2147483647"]}
    lines = dynamic_input_guards([("x", ["s1", "64"], ["64", "1"], "torch.float32")], honest, ["x"])
    assert "    raise unexpected_sizes('64*x.shape[0] <= 2147483647', {'x': tuple(x.shape)})" in lines
    with pytest.raises(GuardError, match=problem):
        dynamic_input_guards([("x", ["s1", "64"], ["64", "1"], "torch.float32")], {**honest, **record}, ["x"])


def test_a_request_s_spec_is_checked_and_normalised():
    assert ConvertRequest(task="x", dynamic=" x:0 , 1").dynamic == "x:0,1"
    with pytest.raises(ValueError, match="dynamic: dynamic spec item 'x;0'"):
        ConvertRequest(task="x", dynamic="x;0")


def _tritonize(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "model_server", *args], capture_output=True, text=True, cwd=ROOT, timeout=600
    )


@pytest.mark.slow
def test_convert_dynamic_writes_a_kernel_for_any_batch_that_verify_then_checks_at_other_sizes(tmp_path):
    task = tmp_path / "norm_add.py"
    task.write_text((DYNAMIC / "norm_add_task.py").read_text())
    converted = _tritonize("convert", str(task), "--dynamic", "--device", "cpu", "--samples", "1")
    assert converted.returncode == 0, converted.stderr[-3000:]
    lines = converted.stdout.strip().splitlines()
    assert lines[-2] == "sizes: any along x:0,x:1,y:0,y:1, verified at the example's and three others"
    kernel = (tmp_path / "norm_add_triton.py").read_text()
    assert kernel.splitlines()[1].startswith("# tritonize-dynamic: x:0,x:1,y:0,y:1 -- ")
    assert "refuses other dimensions, strides, dtypes, and sizes" in kernel

    verified = _tritonize("verify", str(task), str(tmp_path / "norm_add_triton.py"), "--device", "cpu")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "also at other sizes along x:0,x:1,y:0,y:1, as" in verified.stderr
    assert "3 at other sizes along the dynamic dimensions" in verified.stdout

    spec = importlib.util.spec_from_file_location("norm_add_triton", tmp_path / "norm_add_triton.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.ModelNew()
    with pytest.raises(ValueError, match=r"generated for `x` of shape \(y\.shape\[0\], \*, 64\)"):
        model(torch.randn(3, 16, 64), torch.randn(5, 16, 8))  # the kernels add them: their batches must be equal
    with pytest.raises(ValueError, match=r"got shape \(3, 16, 32\)"):
        model(torch.randn(3, 16, 32), torch.randn(3, 16, 8))
    with pytest.raises(ValueError, match=r"strides \(64 \* x\.shape\[1\], 64, 1\)"):
        model(torch.randn(16, 3, 64).transpose(0, 1), torch.randn(3, 16, 8))


def test_convert_refuses_a_spec_naming_an_argument_forward_does_not_take(tmp_path):
    task = tmp_path / "norm_add.py"
    task.write_text((DYNAMIC / "norm_add_task.py").read_text())
    refused = _tritonize("convert", str(task), "--dynamic", "z:0", "--device", "cpu")
    assert refused.returncode == 2
    assert "the dynamic spec names `z`, but" in refused.stderr and "Model.forward takes x, y" in refused.stderr
    assert not (tmp_path / "norm_add_triton.py").exists()


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize(("task", "dims"), [("norm_add_task.py", "x:0,x:1,y:0,y:1"), ("matmul_task.py", "a:0")])
def test_on_a_gpu_every_compile_is_dynamic_and_the_chosen_kernel_is_all_triton_at_other_sizes(task, dims, tmp_path):
    """The default, tuned, looped and templates compiles all take the dynamic dimensions; the kernel written is
    all Triton and verified at three other sizes, as on the CPU."""
    from model_server.backends.inductor import InductorBackend
    from model_server.loop import convert

    source = (DYNAMIC / task).read_text()
    request = ConvertRequest(task=source, task_name=task[:-3], samples=4, rounds=1, trials=2, dynamic="auto")
    with VerifierPool(size=2, device="cuda") as gpu:
        outcome = convert(request, InductorBackend(cache=tmp_path), gpu)
    verdicts = {a.label: (a.policy, a.report.verdict, a.report.message[:300]) for a in outcome.attempts}
    assert outcome.best is not None and outcome.best.policy == "strict", verdicts
    assert outcome.best.dynamic == dims
    assert "3 at other sizes along the dynamic dimensions" in outcome.best.report.message
    assert outcome.kernel.splitlines()[1].startswith(f"# tritonize-dynamic: {dims} -- ")
