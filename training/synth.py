"""Synthetic KernelBench tasks: random, executable chains of basic ops, seeded (AutoTriton's "algorithmic
composition of basic kernels").

`generate(seed)` always returns the same task for the same seed and sizes: a module with `class Model`,
`get_inputs()` and `get_init_inputs()`, its op families, and a one-line description. A chain starts from its
input (or from an `nn.Linear`, the GEMM family), goes through elementwise ops, activations, norms and softmaxes
over the last dimension, and may end in a reduction over that dimension, which ends the chain (nothing after it
would have a dimension left to work on).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

SIZES = {
    # rows x features: small enough for Triton's interpreter on a CPU, or GPU-sized
    "small": {"rows": (8, 16, 32), "features": (32, 64, 128)},
    "large": {"rows": (1024, 2048, 4096, 8192), "features": (1024, 2048, 4096)},
}
DTYPES = ("float32", "float16", "bfloat16")
FAMILIES = ("gemm", "elementwise", "activation", "norm", "softmax", "reduction")
CHAINED = FAMILIES[1:]  # the families of the ops after the input (or the GEMM)
CHAIN_WEIGHTS = {"elementwise": 4, "activation": 4, "norm": 2, "softmax": 1, "reduction": 1}
MAX_OPS = 5
TITLE = re.compile(r'"""Synthetic task \(seed \d+\): ([\w >-]+?)\."""')  # the docstring `_module` writes

ACTIVATIONS = {
    "relu": "torch.relu(x)",
    "gelu": "F.gelu(x)",
    "silu": "F.silu(x)",
    "sigmoid": "torch.sigmoid(x)",
    "tanh": "torch.tanh(x)",
    "leaky_relu": "F.leaky_relu(x, negative_slope={slope})",
    "hardtanh": "F.hardtanh(x, min_val=-{bound}, max_val={bound})",
    "softplus": "F.softplus(x)",
    "elu": "F.elu(x)",
    "mish": "F.mish(x)",
}
ELEMENTWISE = {
    "scale": "x * {scale}",
    "shift": "x + {shift}",
    "divide": "x / {divisor}",
    "add_input": "x + y",
    "multiply_input": "x * y",
    "clamp": "torch.clamp(x, min=-{bound}, max={bound})",
    "square": "x * x",
}
NORMS = {
    "layer_norm": "F.layer_norm(x, (x.shape[-1],))",
    "rms_norm": "x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)",
    "l2_normalize": "F.normalize(x, dim=-1)",
}
SOFTMAXES = {"softmax": "torch.softmax(x, dim=-1)", "log_softmax": "torch.log_softmax(x, dim=-1)"}
REDUCTIONS = {
    "sum": "x.sum(dim=-1)",
    "mean": "x.mean(dim=-1)",
    "amax": "x.amax(dim=-1)",
    "amin": "x.amin(dim=-1)",
    "logsumexp": "torch.logsumexp(x, dim=-1)",
}
OPS = {
    "elementwise": ELEMENTWISE,
    "activation": ACTIVATIONS,
    "norm": NORMS,
    "softmax": SOFTMAXES,
    "reduction": REDUCTIONS,
}


@dataclass(frozen=True)
class SynthTask:
    """One synthetic task: its module source, the op families it uses, and what it computes."""

    seed: int
    name: str
    source: str
    op_families: tuple[str, ...]
    description: str


def generate(
    seed: int,
    sizes: str = "small",
    dtypes: tuple[str, ...] = ("float32",),
    families: tuple[str, ...] = FAMILIES,
    max_ops: int = MAX_OPS,
) -> SynthTask:
    """The synthetic task of `seed`: 1 to `max_ops` ops of the op `families` (a GEMM counts as one), shapes from
    `sizes` (`small` or `large`), a dtype from `dtypes`. Narrower families and fewer ops make shorter kernels (an
    easier curriculum); the defaults draw what they always drew for a seed."""
    check(sizes, dtypes, families, max_ops)
    rng = random.Random(seed)
    rows = rng.choice(SIZES[sizes]["rows"])
    features = rng.choice(SIZES[sizes]["features"])
    dtype = rng.choice(dtypes)
    gemm = rng.random() < 0.35 and "gemm" in families and max_ops > 1
    out_features = rng.choice(SIZES[sizes]["features"]) if gemm else features
    chained = tuple(family for family in CHAINED if family in families)
    steps = _chain(rng, 1 if gemm else min(2, max_ops), max_ops - gemm, chained)
    uses_y = any(name in ("add_input", "multiply_input") for _, name, _ in steps)
    families = tuple(dict.fromkeys((["gemm"] if gemm else []) + [family for family, _, _ in steps]))
    names = (["linear"] if gemm else []) + [name for _, name, _ in steps]
    description = " -> ".join(names)
    source = _module(seed, description, rows, features, out_features, dtype, gemm, uses_y, steps)
    return SynthTask(seed, f"synth_{seed}_{'_'.join(names)}", source, families, description)


def ops_of(source: str) -> list[str] | None:
    """The op chain a synthetic task's first line names (`generate`'s description, split); None for any other
    task. It lets an analysis group results by op from the task text alone."""
    match = TITLE.match(source.lstrip()[:500])
    return match.group(1).split(" -> ") if match else None


def check(sizes: str, dtypes: tuple[str, ...], families: tuple[str, ...] = FAMILIES, max_ops: int = MAX_OPS) -> None:
    """A ValueError naming what `generate` cannot make of these settings."""
    if sizes not in SIZES:
        raise ValueError(f"unknown sizes `{sizes}`; available: {', '.join(SIZES)}")
    unknown = [dtype for dtype in dtypes if dtype not in DTYPES]
    if unknown or not dtypes:
        raise ValueError(f"unknown dtypes {unknown or dtypes}; available: {', '.join(DTYPES)}")
    unknown = [family for family in families if family not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown op families {unknown}; available: {', '.join(FAMILIES)}")
    if not any(family in CHAINED for family in families):
        raise ValueError(f"op families {list(families)} have none besides gemm; add one of: {', '.join(CHAINED)}")
    if max_ops < 1:
        raise ValueError(f"max_ops must be at least 1, got {max_ops}")


def _chain(rng: random.Random, least: int, most: int, families: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(family, op name, expression) for each step, `least` to `most` of them (at most `MAX_OPS`, less one after a
    GEMM) from `families`; a reduction, if any, comes last."""
    weights = [CHAIN_WEIGHTS[family] for family in families]
    steps = []
    for _ in range(rng.randint(least, min(most, MAX_OPS - (least == 1)))):
        family = rng.choices(families, weights)[0]
        name = rng.choice(sorted(OPS[family]))
        if family == "reduction" and steps and steps[-1][0] == "softmax":
            name = rng.choice(("amax", "amin"))  # a softmax sums to 1 and a log-softmax's logsumexp is 0
        expression = OPS[family][name].format(
            slope=rng.choice((0.01, 0.1, 0.2)),
            bound=rng.choice((0.5, 1.0, 2.0)),
            scale=rng.choice((0.5, 2.0, 3.0)),
            shift=rng.choice((0.1, 1.0, -0.5)),
            divisor=rng.choice((2.0, 4.0, 8.0)),
        )
        steps.append((family, name, expression))
        if family == "reduction":
            break
    return steps


def _module(
    seed: int,
    description: str,
    rows: int,
    features: int,
    out_features: int,
    dtype: str,
    gemm: bool,
    uses_y: bool,
    steps: list[tuple[str, str, str]],
) -> str:
    width = out_features if gemm else features
    lines = [
        f'"""Synthetic task (seed {seed}): {description}."""',
        "",
        "import torch",
        "import torch.nn as nn",
        "import torch.nn.functional as F",
        "",
        f"rows = {rows}",
        f"features = {features}",
    ]
    if gemm:
        lines.append(f"out_features = {out_features}")
    lines += ["", "", "class Model(nn.Module):"]
    if gemm:
        lines += [
            "    def __init__(self, features, out_features):",
            "        super().__init__()",
            f"        self.linear = nn.Linear(features, out_features, dtype=torch.{dtype})",
        ]
    else:
        lines += ["    def __init__(self):", "        super().__init__()"]
    lines += ["", f"    def forward(self, x{', y' if uses_y else ''}):"]
    if gemm:
        lines.append("        x = self.linear(x)")
    lines += [f"        x = {expression}" for _, _, expression in steps]
    lines += ["        return x", "", "", "def get_inputs():"]
    inputs = [f"torch.randn(rows, features, dtype=torch.{dtype})"]
    if uses_y:
        inputs.append(f"torch.randn(rows, {width}, dtype=torch.{dtype})")
    lines += [f"    return [{', '.join(inputs)}]", "", "", "def get_init_inputs():"]
    lines.append(f"    return [{'features, out_features' if gemm else ''}]")
    return "\n".join(lines) + "\n"
