"""TritonBench in `training.eval`: the released layout read from a tiny copy of it (tests/fixtures/tritonbench, the
project's own tasks), and whole evaluations on the CPU whose candidates come from a scripted OpenAI-compatible
server on 127.0.0.1 and run in the verifier's sandbox, Triton in its interpreter."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch

from model_server import prompts
from model_server.backends.base import GenerationRequest
from model_server.backends.text import candidates_from_replies, conversations
from tests.conftest import FIXTURES
from tests.training.test_eval import lines
from training import eval as evaluation
from training import suites, tritonbench, tritonbench_score
from training.tritonbench import BenchTask
from training.tritonbench_run import CudaOnCpu, render

CLONE = FIXTURES / "tritonbench"
COMPARE = Path(__file__).parents[2] / "benchmarks" / "compare_evals.py"

SCALED_ADD = """Here is the kernel.

```python
import torch
import triton
import triton.language as tl


@triton.jit
def _scaled_add(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x {op} alpha * y, mask=mask)


def scaled_add(x, y, alpha=1.0):
    out = torch.empty_like(x)
    n = x.numel()
    _scaled_add[(triton.cdiv(n, 32),)](x, y, out, alpha, n, BLOCK=32)
    return out
```
"""
RAISES = """```python
def scaled_add(x, y, alpha=1.0):
    raise NotImplementedError("no kernel yet")
```"""
TORCH_ONLY = """```python
import torch


def scaled_add(x, y, alpha=1.0):
    return torch.add(x, y, alpha=alpha)
```"""
ESCAPES = """```python
import os

import torch


def scaled_add(x, y, alpha=1.0):
    attempts = (("write", lambda: open({host_file!r}, "w").write("out")), ("read", lambda: os.listdir({out!r})))
    for attempt, action in attempts:
        try:
            action()
            print(f"{{attempt}}: done", file=__import__("sys").stderr)
        except Exception as exc:
            print(f"{{attempt}}: {{type(exc).__name__}}", file=__import__("sys").stderr)
    return torch.add(x, y, alpha=alpha)
```"""
SOFTMAX = """```python
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + offsets, e / {denominator}, mask=mask)


def {name}(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    _softmax[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out
{extra}```"""


class ScriptedServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers a chat request whose message names a task with the
    task's scripted replies (cycled to n), and keeps every request body."""

    def __init__(self, replies: dict[str, list[str]]):
        self.replies = replies
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                text = body["messages"][-1]["content"]
                (scripted,) = [r for marker, r in server.replies.items() if marker in text]
                choices = [{"index": i, "message": {"content": scripted[i % len(scripted)]}} for i in range(body["n"])]
                answer = json.dumps({"choices": choices}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def scripted():
    servers = []

    def start(replies: dict[str, list[str]]) -> ScriptedServer:
        servers.append(ScriptedServer(replies))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def clone(tmp_path: Path) -> tuple[Path, str]:
    """The fixture copied into a git repository, as a clone is; its commit."""
    root = tmp_path / "TritonBench"
    shutil.copytree(CLONE, root)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tasks"], check=True)
    return root, subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def flags(suite: str, server: ScriptedServer, out: Path, samples: int) -> list[str]:
    return [
        *("--suite", suite, "--backend", "openai", "--model", "scripted", "--base-url", server.url),
        *("--samples", str(samples), "--device", "cpu", "--timeout", "120", "--output-dir", str(out)),
    ]


# ---------------------------------------------------------------- the released layout


def test_both_channels_are_read_from_the_clone_or_its_data_folder(tmp_path):
    root, commit = clone(tmp_path)
    for kind, names in (
        ("tritonbench-t", ["row_softmax", "scaled_add"]),
        ("tritonbench-g", ["scaled_add_kernel", "softmax_rows_kernel"]),
    ):
        suite = suites.parse(f"{kind}:{root}")
        assert suite == suites.parse(f"{kind}:{root}/data")
        assert suite.source == {"kind": kind, "channel": kind[-1].upper(), "path": str(root / "data"), "commit": commit}
        tasks = tritonbench.discover(kind, suite.path, "simple")
        assert [t.name for t in tasks] == names
        for task in tasks:
            assert task.reference.lstrip().startswith("import torch") and "def test_" in task.test
            assert task.test.rstrip().endswith("()") and tritonbench.SEPARATOR not in task.reference + task.test
    simple = {t.name: t for t in tritonbench.discover("tritonbench-t", root / "data", "simple")}
    complex_ = {t.name: t for t in tritonbench.discover("tritonbench-t", root / "data", "complex")}
    # The simple instructions are stored in the opposite order: they are matched by what they quote.
    assert "Functional Description: Adds the second tensor" in simple["scaled_add"].instruction
    assert "Math: out = x + alpha * y" in complex_["scaled_add"].instruction
    assert "Math:" not in simple["scaled_add"].instruction and simple["scaled_add"].id != complex_["scaled_add"].id


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / "TritonBench_T_comp_alpac_v1.json").unlink(), "lacks TritonBench_T_comp_alpac_v1.json"),
        (lambda d: (d / "TritonBench_T_v1.jsonl").unlink(), "lacks TritonBench_T_v1.jsonl or TritonBench_T_v1.json"),
        (lambda d: shutil.rmtree(d / "TritonBench_T_v1"), "lacks TritonBench_T_v1/"),
    ],
)
def test_a_clone_missing_a_part_is_named(tmp_path, damage, message):
    root, _ = clone(tmp_path)
    damage(root / "data")
    with pytest.raises(suites.SuiteError) as raised:
        suites.parse(f"tritonbench-t:{root}")
    assert message in str(raised.value) and "give a clone of thunlp/TritonBench" in str(raised.value)


def test_a_task_without_test_code_or_instruction_is_named(tmp_path):
    root, _ = clone(tmp_path)
    data = root / "data"
    (data / "TritonBench_T_v1" / "scaled_add.py").write_text("import torch\n")
    with pytest.raises(suites.SuiteError, match=r"scaled_add.py: no line of 146 '#' followed by test code"):
        suites.tritonbench_tasks(suites.parse(f"tritonbench-t:{root}"), "simple")
    shutil.copy(CLONE / "data" / "TritonBench_T_v1" / "scaled_add.py", data / "TritonBench_T_v1")
    (data / "TritonBench_T_simp_alpac_v1.json").write_text(
        json.dumps([{"instruction": "x", "input": "", "output": ""}])
    )
    with pytest.raises(
        suites.SuiteError, match=r"TritonBench_T_simp_alpac_v1.json: 0 instructions quote the description of"
    ):
        suites.tritonbench_tasks(suites.parse(f"tritonbench-t:{root}"), "simple")


def test_an_unknown_instruction_kind_is_refused(tmp_path, capsys):
    argv = ["--suite", f"tritonbench-t:{CLONE}", "--output-dir", str(tmp_path), "--tritonbench-instruction", "long"]
    with pytest.raises(SystemExit):
        evaluation.main(argv)
    assert "--tritonbench-instruction must be simple or complex, got 'long'" in capsys.readouterr().err


def test_a_benchmark_instruction_is_sent_as_it_is_under_every_profile():
    request = GenerationRequest(None, 3, "cpu", round=2, feedback=[{"source": "x", "report": {}}], prompt="Write f.")
    for profile in prompts.PROFILES:
        assert conversations(profile, "", request) == [([{"role": "user", "content": "Write f."}], 3)]
    reply = "Sure:\n```python\ndef f():\n    return 1\n```\nDone."
    candidates = candidates_from_replies(None, [reply, "no code"])
    assert [c.source for c in candidates] == ["def f():\n    return 1\n", "no code"]


# ---------------------------------------------------------------- the runner and the rules


def test_on_a_cpu_the_tests_cuda_tensors_are_made_on_the_cpu():
    with CudaOnCpu():
        made = [
            torch.randn(3, device="cuda"),
            torch.tensor([1.0], device=torch.device("cuda", 0)),
            torch.ones(2).cuda(),
            torch.ones(2).to("cuda:0"),
            torch.zeros(2).to(torch.device("cuda"), torch.float64),
        ]
    assert all(t.device.type == "cpu" for t in made) and made[-1].dtype == torch.float64


def test_results_render_as_print_shows_their_values_alone():
    value = {"a": torch.ones(2, requires_grad=True) * 2, "b": [torch.tensor([0.5]), 3]}
    torch.set_printoptions(precision=1)
    try:
        assert render(value) == "{'a': tensor([2., 2.]), 'b': [tensor([0.5000]), 3]}"
    finally:
        torch.set_printoptions(profile="default")


def test_channel_g_keeps_imports_and_function_definitions_only():
    code = "import torch\nSCALE = 2\nraise SystemExit(3)\n\n\ndef f(x):\n"
    code += "    def g(y):\n        return y\n    return g(x)\n"
    kept = tritonbench_score.kept_definitions(code)
    assert "SystemExit" not in kept and "SCALE" not in kept
    assert kept.startswith("import torch\n\ndef f(x):") and kept.endswith("def g(y):\n    return y")
    assert tritonbench_score.kept_definitions("def (:") == "def (:"


def test_the_audit_reads_what_the_test_code_calls():
    test = "def test_it():\n    return {'a': f(1), 'b': Fn.apply(2), 'c': len([])}\n\ntest_results = test_it()\n"
    code = "import torch\n\n\ndef f(x):\n    return torch.relu(x)\n\n\nclass Fn(torch.autograd.Function):\n    pass\n"
    assert tritonbench_score.entry_points(code, test) == ["f", "Fn.apply"]
    findings, kernels = tritonbench_score.audit_view(code, test)
    assert kernels == 0 and {"TRI301", "TRI302"} <= {f["rule"] for f in findings}
    assert all(f["line"] <= len(code.splitlines()) for f in findings)


@pytest.mark.slow
def test_a_reference_runs_twice_and_is_kept(tmp_path):
    test = "def test_it():\n    return {'x': VALUE}\n\n\ntest_results = test_it()\n"
    stable = BenchTask("stable", Path("stable.py"), "s1", "VALUE = 1\n", test, "", "T")
    moving = BenchTask("moving", Path("moving.py"), "m1", "import time\n\nVALUE = time.time_ns()\n", test, "", "T")
    first = tritonbench_score.reference_run(stable, "cpu", 60, tmp_path)
    assert first["call"] and first["reproducible"] and first["results"] == "{'x': 1}\n"
    assert tritonbench_score.reference_run(moving, "cpu", 60, tmp_path)["reproducible"] is False
    kept = tmp_path / "tritonbench_reference" / "cpu" / "stable-s1.json"
    kept.write_text(json.dumps(first | {"results": "kept"}))
    assert tritonbench_score.reference_run(stable, "cpu", 60, tmp_path)["results"] == "kept"


# ---------------------------------------------------------------- whole evaluations


def test_the_inductor_backend_is_refused_before_any_work(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--suite", f"tritonbench-t:{CLONE}", "--backend", "inductor", "--device", "cpu", "--output-dir", str(out)]
    assert evaluation.main(argv) == 2
    err = capsys.readouterr().err
    assert "training.eval: the inductor backend converts PyTorch modules; TritonBench tasks need a model backend" in err
    assert not (out / "tasks.jsonl").exists()


@pytest.mark.slow
def test_channel_t_scores_call_and_exec_in_the_sandbox_and_a_rerun_resumes(tmp_path, scripted, capsys):
    root, commit = clone(tmp_path)
    out, host_file = tmp_path / "out", tmp_path / "escaped.txt"
    server = scripted(
        {
            "Adds the second tensor": [
                SCALED_ADD.format(op="+"),
                SCALED_ADD.format(op="-"),
                RAISES,
                TORCH_ONLY,
                ESCAPES.format(host_file=str(host_file), out=str(out)),
            ],
            "Normalises each row": [
                SOFTMAX.format(denominator="tl.sum(e, axis=0)", name="row_softmax", extra=""),
                "I cannot write that kernel.",
            ],
        }
    )
    argv = flags(f"tritonbench-t:{root}", server, out, samples=5)
    assert evaluation.main(argv) == 0

    results = json.loads((out / "results.json").read_text())
    tasks = {t["name"]: t for t in results["tasks"]}
    added = [(s["call"], s["exec"]) for s in tasks["scaled_add"]["samples"]]
    assert added == [(True, True), (True, False), (False, False), (True, True), (True, True)]
    assert [s["verdict"] for s in tasks["scaled_add"]["samples"]][:3] == ["passed", "wrong_output", "failed"]
    assert "NotImplementedError: no kernel yet" in tasks["scaled_add"]["samples"][2]["stderr_tail"]
    softmax = [(s["call"], s["exec"]) for s in tasks["row_softmax"]["samples"]]
    assert softmax == [(True, True), (False, False)] * 2 + [(True, True)]

    correct, _, _, torch_only, escaped = tasks["scaled_add"]["samples"]
    assert correct["audit_errors"] == [] and correct["kernels"] == 1
    # The benchmark's rule passes PyTorch doing the work; the project's audit says so.
    assert torch_only["exec"] and torch_only["kernels"] == 0 and "TRI301" in torch_only["audit_errors"]
    # The sandbox kept the candidate from the host's files: nothing written, the output folder not there.
    assert not host_file.exists()
    assert "write: " in escaped["stderr_tail"] and "write: done" not in escaped["stderr_tail"]
    assert "read: FileNotFoundError" in escaped["stderr_tail"] and escaped["audit_errors"]

    assert all(task["reference_reproducible"] for task in tasks.values())
    totals = results["totals"]
    assert totals["suite"]["commit"] == commit and totals["tasks"] == 2 and totals["samples"] == 10
    bench = totals["tritonbench"]
    assert (bench["channel"], bench["instruction"]) == ("T", "simple")
    assert bench["call_accuracy"] == pytest.approx((4 / 5 + 3 / 5) / 2)
    assert bench["exec_accuracy"] == pytest.approx((3 / 5 + 3 / 5) / 2) == totals["pass@k"]["1"]
    assert bench["exec_audit_clean"] == pytest.approx((1 / 5 + 3 / 5) / 2)
    assert totals["pass@k"]["5"] == 1.0

    # The model got the benchmark's own instruction as it is, as the one message.
    instructions = {t.name: t.instruction for t in tritonbench.discover("tritonbench-t", root / "data", "simple")}
    assert sorted(r["messages"][0]["content"] for r in server.requests) == sorted(instructions.values())
    assert all(len(r["messages"]) == 1 and r["messages"][0]["role"] == "user" for r in server.requests)

    printed = capsys.readouterr().out
    assert "| scaled_add | 4/5 | 3/5 |" in printed and "| execution accuracy (TritonBench) | 0.600 |" in printed
    assert "| call accuracy (TritonBench) | 0.700 |" in printed
    assert sorted(t["name"] for t in lines(out / "tasks.jsonl")) == ["row_softmax", "scaled_add"]
    cached = sorted(p.name.split("-")[0] for p in (out / "tritonbench_reference" / "cpu").iterdir())
    assert cached == ["row_softmax", "scaled_add"]

    asked = len(server.requests)
    assert evaluation.main(argv) == 0
    assert len(server.requests) == asked
    assert "0 tasks to evaluate (2 finished in an earlier run)" in capsys.readouterr().err
    assert json.loads((out / "results.json").read_text())["totals"]["tritonbench"] == bench

    beside = subprocess.run(
        [sys.executable, str(COMPARE), "--published", str(out)], capture_output=True, text=True, timeout=60
    )
    assert beside.returncode == 0, beside.stderr
    assert (
        f"| openai scripted | TritonBench-T @{commit[:7]} | 2 | 0.600 (call 0.700) | n/a (not timed) |" in beside.stdout
    )
    assert "| AutoTriton 8B | TritonBench-T |" in beside.stdout


@pytest.mark.slow
def test_channel_g_runs_only_the_candidates_definitions(tmp_path, scripted):
    out = tmp_path / "out"
    top_level_exit = "\nraise SystemExit(3)\n"  # run as it is, the program would exit 3; G's rule drops it
    server = scripted(
        {
            "adds y times alpha": [SCALED_ADD.format(op="+").replace("def scaled_add(", "def scaled_add_launch(")],
            "softmax of each row": [
                SOFTMAX.format(denominator="1.0", name="softmax_rows", extra=top_level_exit),
            ],
        }
    )
    argv = [*flags(f"tritonbench-g:{CLONE}", server, out, samples=1), "--tritonbench-instruction", "simple"]
    assert evaluation.main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    tasks = {t["name"]: t["samples"][0] for t in results["tasks"]}
    assert (tasks["scaled_add_kernel"]["call"], tasks["scaled_add_kernel"]["exec"]) == (True, True)
    assert (tasks["softmax_rows_kernel"]["call"], tasks["softmax_rows_kernel"]["exec"]) == (True, False)
    bench = results["totals"]["tritonbench"]
    assert (bench["channel"], bench["call_accuracy"], bench["exec_accuracy"]) == ("G", 1.0, 0.5)
