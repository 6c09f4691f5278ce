"""`model_server.inductor.construction`: the task code a candidate's constructor needs, reduced to what construction
runs, in forms the verifier's allowlist accepts, building the same parameters as the task."""

from __future__ import annotations

import ast
import types

import torch

from model_server.inductor.construction import construction_code
from verifier.audit.anti_hacking import check_candidate

# A library block as a harvested task carries it: a config namespace, a helper its constructor calls, a norm class
# reached through another class, a forward that computes in PyTorch, and code the constructor never reaches.
TASK = '''"""A carried block."""

import logging
import math
import warnings
from collections.abc import Callable
from types import SimpleNamespace

import torch
from torch import nn


logger = logging.getLogger(__name__)


def inverse_frequencies(dim, base):
    return 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)


class Norm(nn.Module):
    """A norm."""

    def __init__(self, size, eps=1e-06):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.offset = nn.Buffer(torch.zeros(size), persistent=False)
        self.eps = eps

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class Block(nn.Module):
    scale_by = 2

    def __init__(self, config: SimpleNamespace) -> None:
        super().__init__()
        self.head_dim = getattr(config, "head_dim", config.hidden_size // 2)
        if self.head_dim > 64:
            logger.warning("a wide head")
            warnings.warn("still wide")
        self.bias = getattr(config, "use_bias")
        self.proj = nn.Linear(config.hidden_size, config.hidden_size, bias=self.bias)
        self.norm = Norm(config.hidden_size)
        make: Callable = self.frequencies
        self.register_buffer("inv_freq", make(config), persistent=False)

    def frequencies(self, config) -> torch.Tensor:
        kind: str
        return inverse_frequencies(self.head_dim, config.rope_theta)

    def forward(self, x):
        return self.norm(self.proj(x)) * math.sqrt(self.scale_by)

    def unused(self):
        return Unreached()


class Unreached(nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)


config = SimpleNamespace(hidden_size=16, use_bias=True, rope_theta=10000.0)
B = 2
size = (B, 16)  # a module value of the name `Norm` takes as an argument


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(config)

    def forward(self, x):
        return self.block(x)


def get_inputs():
    return [torch.randn(B, 16)]


def get_init_inputs():
    return []
'''


def _construction(source: str) -> str:
    tree = ast.parse(source)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    return "\n\n\n".join(construction_code(tree, model))


def test_only_what_construction_runs_is_carried_in_source_order():
    code = _construction(TASK)
    tree = ast.parse(code)
    assert [n.name for n in tree.body] == ["inverse_frequencies", "Norm", "Block", "config"]
    methods = {n.name: [m.name for m in n.body if isinstance(m, ast.FunctionDef)] for n in tree.body}
    assert methods["Norm"] == ["__init__"] and methods["Block"] == ["__init__", "frequencies"]
    assert "scale_by = 2" in code  # class-level values stay: a constructor may read them
    assert "forward" not in code and "Unreached" not in code and "A norm." not in code
    assert "B = 2" not in code  # plain constants are the rewrite's to copy, once
    assert "size = (B, 16)" not in code  # the constructor's `size` is its argument


def test_the_config_and_getattr_take_forms_the_allowlist_accepts_with_the_same_values():
    code = _construction(TASK)
    assert "getattr" not in code and "SimpleNamespace" not in code and "Callable" not in code
    assert "make = self.frequencies" in code and "kind" not in code and "->" not in code
    assert "logg" not in code and "warn" not in code and "if self.head_dim > 64:\n            pass" in code
    assert "self.head_dim = config.head_dim if hasattr(config, 'head_dim') else config.hidden_size // 2" in code
    assert "self.bias = config.use_bias" in code
    assert "class config:" in code
    candidate = "import torch\nfrom torch import nn\n\n\n" + code
    assert [f.rule for f in check_candidate(candidate)] == ["TRI301"]  # no kernel yet: nothing else
    assert {"TRI304", "TRI305", "TRI317"} <= {f.rule for f in check_candidate(TASK)}  # the task's own forms


def test_the_candidate_s_constructor_draws_the_same_parameters_as_the_task():
    task, carried = types.ModuleType("task"), types.ModuleType("carried")
    exec(compile(TASK, "task", "exec"), task.__dict__)
    model_source = TASK[TASK.index("class Model") : TASK.index("def get_inputs")]
    exec(
        compile(f"import torch\nfrom torch import nn\n{_construction(TASK)}\n{model_source}", "carried", "exec"),
        carried.__dict__,
    )
    torch.manual_seed(7)
    expected = dict(task.Model().named_parameters()) | dict(task.Model().named_buffers())
    torch.manual_seed(7)
    got = dict(carried.Model().named_parameters()) | dict(carried.Model().named_buffers())
    assert (
        list(got)
        == list(expected)
        == [
            "block.proj.weight",
            "block.proj.bias",
            "block.norm.weight",
            "block.inv_freq",
            "block.norm.offset",
        ]
    )
    assert all(torch.equal(got[name], expected[name]) for name in expected)
    assert carried.Model().block.head_dim == 8


def test_a_task_whose_model_builds_from_torch_nn_alone_carries_nothing():
    relu = TASK[TASK.index("class Model") :].replace("Block(config)", "nn.Linear(16, 16)")
    assert _construction("import torch\nfrom torch import nn\n" + relu) == ""
