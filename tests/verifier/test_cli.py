"""`tritonize verify` as a user runs it: a real subprocess, real exit codes, nothing else on stdout."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from verifier.cli import version

REQUIRED_KEYS = {
    "verdict", "reward", "violations", "max_abs_error", "max_rel_error", "trials", "device", "isolation", "timing",
    "policy", "coverage",
}  # fmt: skip
ROOT = Path(__file__).resolve().parents[2]


def tritonize(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verifier", *args], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


def test_correct_candidate_exits_zero_with_the_contract_json():
    result = tritonize(
        "verify", str(FIXTURES / "tasks/add.py"), str(FIXTURES / "candidates/add_ok.py"), "--json", "--device", "cpu"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report.keys() >= REQUIRED_KEYS
    assert report["verdict"] == "correct"
    assert report["reward"] == 1.0
    assert report["trials"] == 5
    assert report["device"] == "cpu"
    assert report["timing"] is None
    assert report["violations"] == []
    assert 0 <= report["max_abs_error"] <= 1e-4
    assert report["policy"] == "strict" and report["coverage"] == 1.0


def test_a_hybrid_kernel_exits_zero_under_the_hybrid_policy_only():
    args = ("verify", str(FIXTURES / "hybrid/linear_relu.py"), str(FIXTURES / "hybrid/linear_relu_hybrid.py"))
    strict = tritonize(*args, "--trials", "2")
    assert strict.returncode == 1 and "the strict policy requires Triton" in strict.stdout
    hybrid = tritonize(*args, "--trials", "2", "--policy", "hybrid", "--json")
    assert hybrid.returncode == 0, hybrid.stderr
    report = json.loads(hybrid.stdout)
    assert (report["verdict"], report["reward"], report["policy"]) == ("correct", 0.0, "hybrid")
    assert report["library_calls"] == ["torch.nn.functional.linear"]


def test_the_seed_is_always_reported_so_a_run_can_be_repeated_exactly():
    args = ("verify", str(FIXTURES / "tasks/scale.py"), str(FIXTURES / "zoo/scale_ignores_alpha.py"), "--json")
    first = json.loads(tritonize(*args, "--trials", "2").stdout)
    assert isinstance(first["seed"], int)
    again = json.loads(tritonize(*args, "--trials", "2", "--seed", str(first["seed"])).stdout)
    assert again["seed"] == first["seed"]
    assert (again["verdict"], again["max_abs_error"]) == (first["verdict"], first["max_abs_error"])


def test_hostile_candidate_output_never_reaches_stdout():
    result = tritonize(
        "verify", str(FIXTURES / "tasks/add.py"), str(FIXTURES / "zoo/fake_json_stdout.py"), "--json", "--trials", "2"
    )
    assert result.returncode == 1
    report = json.loads(result.stdout)  # exactly one JSON object: the real report
    assert report["verdict"] == "incorrect"
    assert report["reward"] == 0.0
    assert '"verdict": "correct"' in report["candidate_output"]["stdout"]


@pytest.mark.parametrize(
    ("candidate", "verdict"), [("zoo/torch_in_forward.py", "rejected"), ("zoo/syntax_error.py", "compile_error")]
)
def test_failing_verdicts_exit_one(candidate, verdict):
    result = tritonize("verify", str(FIXTURES / "tasks/add.py"), str(FIXTURES / candidate), "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["verdict"] == verdict


def test_text_output_names_the_verdict_and_rule():
    result = tritonize("verify", str(FIXTURES / "tasks/add.py"), str(FIXTURES / "zoo/torch_in_forward.py"))
    assert result.returncode == 1
    assert "verdict: rejected" in result.stdout
    assert "TRI302" in result.stdout


def test_broken_task_exits_two_naming_file_and_line(tmp_path):
    task = tmp_path / "broken_task.py"
    task.write_text("import torch\n\nclass Model(torch.nn.Module)\n    pass\n")
    result = tritonize("verify", str(task), str(FIXTURES / "candidates/add_ok.py"), "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"{task}:3: syntax error" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_candidate_python_cannot_read_at_all_is_a_compile_error_naming_the_file(tmp_path):
    candidate = tmp_path / "null_byte.py"
    candidate.write_text("import torch\x00\n")
    result = tritonize("verify", str(FIXTURES / "tasks/add.py"), str(candidate))
    assert result.returncode == 1
    assert f"{candidate}: syntax error: source code string cannot contain null bytes" in result.stdout


def test_task_failing_at_run_time_exits_two_naming_the_line(tmp_path):
    task = tmp_path / "raising_task.py"
    source = (FIXTURES / "tasks/add.py").read_text()
    task.write_text(source + "\n\ndef get_inputs():\n    raise ValueError('no inputs today')\n")
    line = len(task.read_text().splitlines())
    result = tritonize("verify", str(task), str(FIXTURES / "candidates/add_ok.py"))
    assert result.returncode == 2
    assert f"{task}:{line}: get_inputs failed: ValueError: no inputs today" in result.stderr


def test_missing_files_and_bad_options_exit_two(tmp_path):
    missing = tritonize("verify", str(tmp_path / "nope.py"), str(FIXTURES / "candidates/add_ok.py"))
    assert missing.returncode == 2
    assert "cannot read task file" in missing.stderr
    bad = tritonize("verify", str(FIXTURES / "tasks/add.py"), str(FIXTURES / "candidates/add_ok.py"), "--trials", "0")
    assert bad.returncode == 2
    assert "--trials" in bad.stderr
    assert tritonize().returncode == 2


def test_no_gpu_means_cuda_request_is_a_usage_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    result = tritonize(
        "verify", str(FIXTURES / "tasks/add.py"), str(FIXTURES / "candidates/add_ok.py"), "--device", "cuda"
    )
    assert result.returncode == 2
    assert "no CUDA GPU" in result.stderr


def test_one_command_holds_every_package_s_commands_in_stack_order():
    """`tritonize` is assembled from the installed packages' parsers (the entry points in pyproject.toml)."""
    listed = tritonize("--help").stdout.split("COMMAND", 2)[-1]
    commands = re.findall(r"^\s{4}(\w+)\s", listed, flags=re.MULTILINE)
    assert commands == ["verify", "audit", "rule", "convert", "serve", "lsp"]
    assert tritonize("lsp", "--help").stdout.startswith("usage: tritonize lsp [-h] [--tcp HOST:PORT]")


def test_a_candidate_past_the_timeout_is_told_the_limit_and_what_to_do():
    result = tritonize(
        "verify", str(FIXTURES / "tasks/add.py"), str(FIXTURES / "zoo/hang_in_kernel.py"), "--device", "cpu",
        "--trials", "1", "--timeout", "3", "--json",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report.keys() >= REQUIRED_KEYS
    assert report["verdict"] == "timeout"
    assert report["message"] == (
        "the candidate did not finish within the 3 s timeout and was killed; on the CPU its kernels run in "
        "Triton's interpreter, which is slow at large shapes: raise --timeout, shrink the task's get_inputs(), "
        "or verify on a GPU (--device cuda)"
    )


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf", "soon"])
def test_a_timeout_that_is_not_a_positive_number_is_named(seconds):
    result = tritonize("verify", str(FIXTURES / "tasks/add.py"), str(FIXTURES / "candidates/add_ok.py"),
                       "--timeout", seconds)  # fmt: skip
    assert result.returncode == 2
    assert "argument --timeout" in result.stderr and "Traceback" not in result.stderr


def test_version_is_the_installed_one_else_pyproject_s():
    declared = re.search(r'^version = "(.+)"$', ROOT.joinpath("pyproject.toml").read_text(), re.MULTILINE).group(1)
    result = tritonize("--version")
    assert result.returncode == 0
    assert result.stdout == f"tritonize {declared}\n"
    assert version("tritonize-not-installed-anywhere") == declared


def test_require_isolation_runs_where_every_layer_is_there_and_names_the_one_missing():
    from verifier.host import isolation

    if isolation.missing():
        pytest.skip(f"this host lacks a layer: {isolation.missing()}")
    args = ["verify", str(FIXTURES / "tasks/add.py"), str(FIXTURES / "candidates/add_ok.py"), "--device", "cpu"]
    result = tritonize(*args, "--require-isolation", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["isolation"]["missing"] == []
    # A host without libseccomp, as the check sees it (this one has it): the run is refused before anything starts.
    script = (
        "import sys; from verifier.host import isolation; from verifier.cli import main\n"
        "isolation.layers.cache_clear()\n"
        "isolation.layers = lambda: {'namespaces': None, 'seccomp': 'libseccomp is not usable', "
        "'memory_cgroup': None}\n"
        f"sys.exit(main({[*args, '--require-isolation']!r}))\n"
    )
    refused = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert refused.returncode == 2
    assert "isolation required, but this host lacks: seccomp: libseccomp is not usable" in refused.stderr
