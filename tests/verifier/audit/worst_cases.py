"""Generated Triton kernels that are hard on a static analysis: names reassigned in branches inside loops
(`acc += tl.dot(a, b)` between them), long `tl.where` chains, names built from the two before them, deep
nesting, many masked loads, many kernels, a candidate with many helpers. Used by the audit's time tests and
`benchmarks/audit_worst_cases.py`.
"""

from __future__ import annotations

from collections.abc import Callable

HEAD = """import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, y_ptr, n, K, BLOCK: tl.constexpr, FLAG: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
"""
TAIL = "    tl.store(y_ptr + offs, x, mask=mask)\n"


def reassigned_in_branches(size: int) -> str:
    """The pattern of fused matmul/attention kernels that once made the audit run for minutes."""
    lines = [
        "    a = tl.load(x_ptr + offs[:, None] + offs[None, :])",
        "    b = a",
        "    c = a",
        "    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)",
        "    for i in range(0, K):",
    ]
    for step in range(size):
        lines += [
            "        if FLAG:",
            f"            a = a * {step + 1} + b",
            "            b = b + c",
            "        else:",
            "            c = c + a",
            "            a = c - b",
            "        acc += tl.dot(a, b)",
        ]
    lines.append("    x = tl.sum(a + b + c + acc, axis=1)")
    return HEAD + "\n".join(lines) + "\n" + TAIL


def where_chain(size: int) -> str:
    """`size` statements, each a `tl.where` nested 40 deep (Python's parser stops at about 200)."""
    expression = "x"
    for step in range(40):
        expression = f"tl.where(x > {step}.0, {expression}, x * {step}.0)"
    return HEAD + f"    x = {expression}\n" * size + TAIL


def where_names_in_loop(size: int) -> str:
    lines = ["    w0 = x", "    w1 = x * 2.0", "    for i in range(0, K):"]
    for step in range(2, size + 2):
        back = (step + 3) % (size + 2)
        load = f"tl.load(x_ptr + offs + w{back}.to(tl.int32), mask=mask)"
        lines.append(f"        w{step} = tl.where(w{step - 1} > w{step - 2}, w{step - 1}, {load})")
    lines.append(f"        x = x + tl.sum(tl.exp(w{size + 1}), axis=0)")
    return HEAD + "\n".join(lines) + "\n" + TAIL


def fibonacci_names(size: int) -> str:
    lines = ["    v0 = x", "    v1 = x * 2.0", "    for i in range(0, K):"]
    for step in range(2, size + 2):
        lines.append(f"        v{step} = v{step - 1} + v{step - 2} + v{(step + 1) % (size + 2)}")
    lines.append(f"    x = v{size + 1}")
    return HEAD + "\n".join(lines) + "\n" + TAIL


def nested(size: int) -> str:
    """Loops and branches nested as deep as Python allows (20 blocks), repeated `size` times."""
    lines = []
    for repeat in range(size):
        indent = "    "
        for level in range(18):
            lines.append(indent + ("if FLAG:" if level % 2 else f"for i{repeat}_{level} in range(0, K):"))
            indent += "    "
            lines.append(indent + f"x = tl.where(x > {level}.0, x + {level}.0, x)")
    return HEAD + "\n".join(lines) + "\n" + TAIL


def masked_loads(size: int) -> str:
    lines = ["    acc = tl.zeros((BLOCK,), dtype=tl.float32)", "    for i in range(0, K):"]
    for step in range(size):
        lines += [
            f"        m{step} = offs + {step} < n",
            f"        t{step} = tl.load(x_ptr + offs + {step}, mask=m{step})",
            f"        acc += tl.exp(t{step} - tl.max(t{step}, axis=0))",
        ]
    lines.append("    x = acc")
    return HEAD + "\n".join(lines) + "\n" + TAIL


def many_kernels(size: int) -> str:
    source = "import triton\nimport triton.language as tl\n"
    for number in range(size):
        source += f"""

@triton.jit
def kernel_{number}(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, tl.sum(x, axis=0))
"""
    return source


def candidate_helpers(size: int) -> str:
    """A `ModelNew` candidate (the anti-hacking allowlist reads it) whose forward calls `size` helpers, each
    calling the one before it, each with a long arithmetic chain on sizes and a launch."""
    lines = [HEAD + TAIL, "import torch", "import torch.nn as nn", ""]
    for step in range(size):
        chain = " + ".join(f"(n * {k} // 2 - {k})" for k in range(12))
        call = f"helper_{step - 1}(x, n)" if step else "0"
        lines += [
            f"def helper_{step}(x, n):",
            f"    m = {chain}",
            "    out = torch.empty_like(x)",
            "    kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), m, BLOCK=128, FLAG=True)",
            f"    return {call} + m if m > 0 else out.view(-1)",
            "",
        ]
    lines += ["class ModelNew(nn.Module):", "    def forward(self, x):"]
    lines.append(f"        return helper_{size - 1}(x, x.numel())")
    return "\n".join(lines) + "\n"


WORST_CASES: dict[str, Callable[[int], str]] = {
    f.__name__: f
    for f in (
        reassigned_in_branches,
        where_chain,
        where_names_in_loop,
        fibonacci_names,
        nested,
        masked_loads,
        many_kernels,
        candidate_helpers,
    )
}
