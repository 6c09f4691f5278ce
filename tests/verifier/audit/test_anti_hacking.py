"""Static anti-hacking rules on minimal snippets: each rule fires where it should and nowhere else."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import FIXTURES
from verifier.audit.anti_hacking import check_candidate
from verifier.rules import RULES

HEADER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""


def candidate(forward_body: str, prelude: str = "", extra: str = "") -> str:
    body = textwrap.indent(textwrap.dedent(forward_body).strip(), " " * 8)
    return f"{prelude}\n{HEADER}\n{extra}\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n{body}\n"


LAUNCH = """
out = torch.empty_like(x)
k[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)
return out
"""

CASES = {
    "TRI302": [
        candidate("return torch.relu(x)"),
        candidate("return x @ x"),
        candidate("return x.sum(dim=1)"),
        candidate("return x * 2"),
        candidate("import torch.nn.functional as F\nreturn F.relu(x)"),
        candidate("return self.lin(x)"),
        candidate("return helper(x)", extra="def helper(t):\n    return t.exp()"),
        candidate("op = torch.add\nreturn op(x, x)"),
        candidate("return relu(x)", prelude="from torch import relu"),
    ],
    "TRI303": [candidate("try:\n    pass\nexcept Exception:\n    pass\n" + LAUNCH)],
    "TRI304": [candidate(LAUNCH, prelude=p) for p in ("import os", "import threading", "from ctypes import CDLL")]
    + [candidate(LAUNCH, extra="_PEEK = torch.load('/tmp/outputs.pt')")],
    "TRI305": [candidate("exec('y = 1')\n" + LAUNCH), candidate("f = getattr(torch, 'relu')\n" + LAUNCH)],
    "TRI306": [candidate("t = x.__class__\n" + LAUNCH)],
    "TRI307": [candidate(LAUNCH, extra="torch.cuda.synchronize = lambda: None")],
    "TRI308": [candidate(LAUNCH, extra="class Lazy(torch.Tensor):\n    pass")],
    "TRI309": [candidate("s = torch.cuda.Stream()\n" + LAUNCH)],
    "TRI310": [
        candidate("self.last = x\n" + LAUNCH),
        candidate("_CACHE[0] = x\n" + LAUNCH, extra="_CACHE = {}"),
        candidate("_SEEN.append(x)\n" + LAUNCH, extra="_SEEN = []"),
        candidate("global _N\n" + LAUNCH, extra="_N = 0"),
        candidate(LAUNCH, extra="import functools\n\n@functools.lru_cache\ndef grid(n):\n    return (n,)"),
    ],
    "TRI311": [candidate("torch.manual_seed(0)\n" + LAUNCH)],
    "TRI312": [candidate(LAUNCH, extra="torch.backends.cuda.matmul.allow_tf32 = True")],
    "TRI313": [candidate(LAUNCH, extra="fast = torch.compile(lambda t: t)"), candidate("y = torch._C\n" + LAUNCH)],
    "TRI314": [candidate(LAUNCH, prelude="from my_task import Model")],
    "TRI315": [candidate("print('hi')\n" + LAUNCH)],
    "TRI316": [candidate(LAUNCH, extra="@triton.jit\ndef decoy(x_ptr):\n    pass")],
}


def rules_of(source: str) -> set[str]:
    return {f.rule for f in check_candidate(source, task_module="my_task")}


@pytest.mark.parametrize(
    ("rule", "source"), [(r, s) for r, sources in CASES.items() for s in sources], ids=lambda v: str(v)[:12]
)
def test_rule_fires(rule, source):
    assert rule in rules_of(source)


def test_every_static_anti_hacking_rule_is_exercised_and_errors_reject():
    static = {rule.id: rule for rule in RULES.values() if rule.id.startswith("TRI3") and rule.stage == "static"}
    assert set(CASES) | {"TRI301"} == set(static)
    for rule in static.values():
        assert rule.rejects == (rule.severity == "error"), rule.id


def test_kernels_launched_or_called_by_other_kernels_are_not_decoys():
    helper = (
        "@triton.jit\ndef twice(v):\n    return v * 2\n\n\n@triton.jit\ndef k2(x_ptr):\n    tl.store(x_ptr, twice(1.0))"
    )
    source = candidate("k2[(1,)](x)\n" + LAUNCH, extra=helper)
    assert "TRI316" not in rules_of(source)


def test_no_kernel_is_tri301():
    assert "TRI301" in rules_of("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n")


def test_clean_launchers_have_no_errors():
    sources = [candidate(LAUNCH)]
    sources += [p.read_text() for p in sorted((FIXTURES / "candidates").glob("*.py"))]
    sources.append((FIXTURES / "zoo/allowed_constructs_correct.py").read_text())
    for source in sources:
        errors = [f for f in check_candidate(source) if f.severity == "error"]
        assert errors == [], errors


def test_shape_arithmetic_and_helpers_taking_ints_are_allowed():
    source = candidate(
        "n = x.numel()\nrows, cols = x.shape\nblock = max(16, triton.next_power_of_2(cols))\n"
        "grid = (rows * 2 // 2, size(n))\nout = torch.empty((rows, cols), device=x.device, dtype=x.dtype)\n"
        "k[grid](x, out, n, BLOCK=block)\nreturn out",
        extra="def size(n: int):\n    return n // 128 + 1",
    )
    assert [f for f in check_candidate(source) if f.severity == "error"] == []


def test_finding_points_at_the_exact_range():
    source = candidate("return torch.relu(x)")
    (finding,) = [f for f in check_candidate(source) if f.rule == "TRI302"]
    line = source.splitlines()[finding.line - 1]
    assert line[finding.column - 1 : finding.end_column - 1] == "torch.relu(x)"
    assert "ModelNew.forward" in finding.message


def test_syntax_errors_propagate():
    with pytest.raises(SyntaxError):
        check_candidate("def broken(:\n")
