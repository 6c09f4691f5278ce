"""Static anti-hacking rules on minimal snippets: each rule fires where it should and nowhere else, and what is on
no allowlist is refused rather than assumed safe."""

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

# state kept in a closure made at construction, and a forward bound from a module-level function
CLOSURE = textwrap.dedent(
    """
    def _make():
        seen = []
        def f(t):
            seen.append(t)
            return t
        return f


    remember = _make()
    """
)
LAUNCH_FN = "def _fwd(self, x):\n    _SEEN.append(x)\n    return x\n\n\n_SEEN = []"
BOUND_FORWARD = "    forward = _fwd\n\n    def unused(self, x):"

CASES = {
    "TRI302": [
        candidate("return torch.relu(x)"),
        candidate("return x @ x"),
        candidate("return x.sum(dim=1)"),
        candidate("return x * 2"),
        candidate("import torch.nn.functional as F\nreturn F.relu(x)"),
        candidate("return self.lin(x)", extra="class Holder:\n    lin = None"),
        candidate("return helper(x)", extra="def helper(t):\n    return t.exp()"),
        candidate("op = torch.add\nreturn op(x, x)"),
        candidate("return relu(x)", prelude="from torch import relu"),
    ],
    "TRI303": [candidate("try:\n    pass\nexcept Exception:\n    pass\n" + LAUNCH)],
    "TRI304": [candidate(LAUNCH, prelude=p) for p in ("import os", "import threading", "from ctypes import CDLL")]
    + [candidate(LAUNCH, extra="_PEEK = torch.load('/tmp/outputs.pt')")],
    "TRI305": [candidate("exec('y = 1')\n" + LAUNCH), candidate("f = getattr(torch, 'relu')\n" + LAUNCH)],
    "TRI306": [
        candidate("t = x.__class__\n" + LAUNCH),
        candidate("g = (lambda: (yield))()\nf = g.gi_frame\n" + LAUNCH),
        candidate(LAUNCH).replace("class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n    __call__ = None\n"),
    ],
    "TRI307": [candidate(LAUNCH, extra="torch.cuda.synchronize = lambda: None")],
    "TRI308": [candidate(LAUNCH, extra="class Lazy(torch.Tensor):\n    pass")],
    "TRI309": [candidate("s = torch.cuda.Stream()\n" + LAUNCH)],
    "TRI310": [
        candidate("self.last = x\n" + LAUNCH),
        candidate("_CACHE[0] = x\n" + LAUNCH, extra="_CACHE = {}"),
        candidate("_SEEN.append(x)\n" + LAUNCH, extra="_SEEN = []"),
        candidate("global _N\n" + LAUNCH, extra="_N = 0"),
        candidate(LAUNCH, extra="import functools\n\n@functools.lru_cache\ndef grid(n):\n    return (n,)"),
        candidate(LAUNCH).replace("def forward(self, x):", "def forward(self, x, _seen={}):"),
        candidate("self.buf.copy_(x)\n" + LAUNCH),
        candidate("type(self).cache.update(last=x)\n" + LAUNCH),
        candidate("return remember(x)", extra=CLOSURE),
        candidate(LAUNCH, extra=LAUNCH_FN).replace(
            "    def forward(self, x):", "    forward = _fwd\n\n    def unused(self, x):"
        ),
    ],
    "TRI311": [candidate("torch.manual_seed(0)\n" + LAUNCH)],
    "TRI312": [candidate(LAUNCH, extra="torch.backends.cuda.matmul.allow_tf32 = True")],
    "TRI313": [candidate(LAUNCH, extra="fast = torch.compile(lambda t: t)"), candidate("y = torch._C\n" + LAUNCH)],
    "TRI314": [candidate(LAUNCH, prelude="from my_task import Model")],
    "TRI315": [candidate("print('hi')\n" + LAUNCH)],
    "TRI316": [candidate(LAUNCH, extra="@triton.jit\ndef decoy(x_ptr):\n    pass")],
    "TRI317": [
        candidate("import operator\nreturn operator.matmul(x, x)"),
        candidate("import operator\nf = operator.methodcaller('sum')\n" + LAUNCH),
        candidate(LAUNCH, extra="import functools\n_SUM = functools.partial(torch.sum)"),
        candidate("m = torch.sys.modules\n" + LAUNCH),
        candidate("torch.os.system('true')\n" + LAUNCH),
        candidate("p = torch.ctypes.pointer\n" + LAUNCH),
        candidate("s = torch.inspect.stack()\n" + LAUNCH),
        candidate("b = torch.builtins\n" + LAUNCH),
        candidate("return _OPS['relu'](x)", extra="_OPS = {'relu': None}"),
        candidate("values = x.tolist()\n" + LAUNCH),
        candidate("v = x[0].item()\nw = v * 2\n" + LAUNCH),
        candidate("data = [1.0] * x.numel()\nreturn torch.tensor(data)"),
        candidate("m = torch\n" + LAUNCH),
    ],
    "TRI318": [
        candidate(LAUNCH) + "\n\nclass Other(nn.Module):\n    pass\n\n\nModelNew = Other\n",
        candidate(LAUNCH).replace("class ModelNew(nn.Module):", "if True:\n  class ModelNew(nn.Module):", 1),
        candidate(LAUNCH).replace("class ModelNew(nn.Module):", "@staticmethod\nclass ModelNew(nn.Module):", 1),
        candidate(LAUNCH).replace("class ModelNew(nn.Module):", "class ModelNew(nn.Module, metaclass=type):", 1),
        candidate(LAUNCH).replace("class ModelNew(nn.Module):", "class ModelNew(dict):", 1),
        candidate(LAUNCH, prelude="from my_other import Thing as ModelNew"),
    ],
}


def rules_of(source: str) -> set[str]:
    return {f.rule for f in check_candidate(source, task_module="my_task")}


def findings_of(source: str) -> list[str]:
    return [f"{f.rule}: {f.message}" for f in check_candidate(source, task_module="my_task")]


def errors_of(source: str) -> list[str]:
    return [f"{f.rule}: {f.message}" for f in check_candidate(source, task_module="my_task") if f.severity == "error"]


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


def test_pytorch_compute_is_an_explanation_and_what_runs_decides():
    """TRI302 is a warning: whether the compute ran is the sandbox's call (TRI360). A CPU fallback that never runs
    on a GPU is not refused here."""
    assert RULES["TRI302"].severity == "warning" and not RULES["TRI302"].rejects
    fallback = candidate("if not x.is_cuda:\n    return torch.relu(x)\n" + LAUNCH)
    assert errors_of(fallback) == []
    assert any(f.startswith("TRI302") and "`torch.relu`" in f for f in findings_of(fallback))


def test_kernels_launched_or_called_by_other_kernels_are_not_decoys():
    helper = (
        "@triton.jit\ndef twice(v):\n    return v * 2\n\n\n@triton.jit\ndef k2(x_ptr):\n    tl.store(x_ptr, twice(1.0))"
    )
    source = candidate("k2[(1,)](x)\n" + LAUNCH, extra=helper)
    assert "TRI316" not in rules_of(source)


def test_no_kernel_is_tri301():
    assert "TRI301" in rules_of("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n")


def test_clean_launchers_have_no_findings_and_honest_kernels_no_errors():
    assert findings_of(candidate(LAUNCH)) == []
    sources = [p.read_text() for p in sorted((FIXTURES / "candidates").glob("*.py"))]
    sources += [p.read_text() for p in sorted((FIXTURES / "honest").glob("*/candidate.py"))]
    sources.append((FIXTURES / "zoo/allowed_constructs_correct.py").read_text())
    assert len(sources) > 45
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
    assert findings_of(source) == []


def test_finding_points_at_the_exact_range():
    source = candidate("return torch.relu(x)")
    (finding,) = [f for f in check_candidate(source) if f.rule == "TRI302"]
    line = source.splitlines()[finding.line - 1]
    assert line[finding.column - 1 : finding.end_column - 1] == "torch.relu"
    assert "(in `forward`)" in finding.message


def test_syntax_errors_propagate():
    with pytest.raises(SyntaxError):
        check_candidate("def broken(:\n")


@pytest.mark.parametrize(
    "glue",
    [
        "x = x.cuda() if torch.cuda.is_available() else x\nx = x.cpu().contiguous()",
        "x = x.to(self.device)",
        "targets = x.long().int()",
        "n = x.numel()\nblock = 1 << (n - 1).bit_length()\nwarps = 4 if block < 2048 else 8",
        "rows = x.numel() // x.shape[-1]\nbits = (x.shape[1] - 1).bit_length()",
        "grid = lambda meta: (triton.cdiv(x.numel(), meta['BLOCK']),)",
        "assert x.is_cuda and x.dtype == torch.float32, f'{x.dtype}'",
        "x = x.view(-1).contiguous()\ny = x.new_empty(x.shape)\nz = x.data",
    ],
)
def test_device_moves_integer_casts_and_python_int_arithmetic_are_launch_glue(glue):
    assert errors_of(candidate(glue + "\n" + LAUNCH)) == []


def test_the_value_of_a_parameter_passed_to_a_kernel_is_fine_but_host_arithmetic_on_it_is_refused():
    read = "alpha = self.alpha.item()\nk[(1,)](x, x, alpha, BLOCK=128)\n"
    assert errors_of(candidate(read + "k[(1,)](x, x, self.alpha.item(), BLOCK=128)\n" + LAUNCH)) == []
    assert any("`.item()`" in e for e in errors_of(candidate("s = x[0].item() + x[1].item()\n" + LAUNCH)))
    assert any("`.item()`" in e for e in errors_of(candidate("v = float(x[0])\nw = v * 2\n" + LAUNCH)))


def test_moved_or_cast_data_that_is_then_computed_on_is_explained():
    assert any("`.sum()`" in f for f in findings_of(candidate("y = x.cpu().sum()\n" + LAUNCH)))
    assert any("arithmetic on a tensor" in f for f in findings_of(candidate("y = x.int() + 1\n" + LAUNCH)))


def test_a_parameter_named_like_a_builtin_is_the_parameter():
    source = candidate(LAUNCH).replace("def forward(self, x):", "def forward(self, input):")
    source = source.replace(
        "        out = torch.empty_like(x)", "        x = input.contiguous()\n        out = torch.empty_like(x)"
    )
    assert errors_of(source) == []
    assert "TRI305" in rules_of(source.replace("def forward(self, input):", "def forward(self, input, f=input):"))
    assert "TRI305" in rules_of(candidate("input('?')\n" + LAUNCH))


def test_construction_may_build_parameters_the_way_pytorchs_layers_do():
    init = """
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, n) / math.sqrt(n))
        self.bias = nn.Parameter(torch.empty(n))
        self.proj = nn.Linear(n, n)
        self._reset()

    def _reset(self):
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(self.weight)
        nn.init.uniform_(self.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
"""
    source = candidate(LAUNCH, prelude="import math").replace("\nclass ModelNew(nn.Module):\n", init + "\n", 1)
    assert findings_of(source) == []
    assert "TRI313" in rules_of(candidate("y = torch._C._nn\n" + LAUNCH))
    assert "TRI313" in rules_of(candidate("y = torch._dynamo.optimize\n" + LAUNCH))
    assert "TRI302" in rules_of(source.replace("        return out", "        return self.proj(out)"))


def test_a_buffer_is_a_container_and_the_compute_it_wraps_is_still_found():
    """`nn.Buffer` is allowed as `nn.Parameter` is (construction marks a tensor with it); PyTorch work wrapped in one
    while `forward` runs is PyTorch work all the same."""
    source = candidate(LAUNCH).replace("    def forward(self, x):", BUFFER_INIT + "\n    def forward(self, x):", 1)
    assert findings_of(source) == []
    assert "TRI302" in rules_of(candidate("return nn.Buffer(x.exp())"))


BUFFER_INIT = """    def __init__(self):
        super().__init__()
        self.offset = nn.Buffer(torch.zeros(4), persistent=False)
"""


@pytest.mark.parametrize(
    "hidden",
    [
        "def helper(t):\n    def inner(u):\n        return u.exp()\n    return inner(t)",  # a nested def
        "def helper(t, op=torch.exp):\n    return op(t)",  # a default argument
        "class Box:\n    def view(self, t):\n        return t.exp()\n\n\ndef helper(t):\n    return Box().view(t)",
    ],
)
def test_compute_is_found_wherever_it_hides(hidden):
    assert "TRI302" in rules_of(candidate("return helper(x)", extra=hidden))


def test_kernels_may_only_name_tritons_language():
    escape = "@triton.jit\ndef k3(x_ptr):\n    m = torch.sys\n    tl.store(x_ptr, 1.0)"
    source = candidate("k3[(1,)](x)\n" + LAUNCH, extra=escape)
    assert "TRI317" in rules_of(source)
    handle = "@triton.jit\ndef k4(x_ptr):\n    h = x_ptr.handle\n    tl.store(x_ptr, 1.0)"
    assert "TRI317" in rules_of(candidate("k4[(1,)](x)\n" + LAUNCH, extra=handle))
