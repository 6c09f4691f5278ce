"""TRI4xx: unshifted exponentials, low-precision accumulators, implicit TF32."""

from __future__ import annotations

from tests.verifier.audit.helpers import audit, fixed, rules

SOFTMAX = """
@triton.jit
def softmax(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + offs, e / tl.sum(e, axis=0), mask=offs < n)
"""


def test_shifted_softmax_is_fine():
    assert not [r for r in rules(SOFTMAX) if r.startswith("TRI4")]


def test_unshifted_exp_summed_is_reported_at_the_exp():
    [finding] = [f for f in audit(SOFTMAX.replace("tl.exp(x - tl.max(x, axis=0))", "tl.exp(x)")) if f.rule == "TRI401"]
    assert finding.line == 10 and finding.severity == "warning"


def test_exp_that_is_not_summed_is_fine():
    body = SOFTMAX.replace("tl.exp(x - tl.max(x, axis=0))", "tl.exp(x)").replace("e / tl.sum(e, axis=0)", "e")
    assert "TRI401" not in rules(body)


MATMUL = """
@triton.jit
def mm(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        a = tl.load(a_ptr + r[:, None] * K + (k + r)[None, :])
        b = tl.load(b_ptr + (k + r)[:, None] * BLOCK + r[None, :])
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], acc)
"""


def test_fp32_accumulator_with_stated_precision_is_fine():
    assert not [r for r in rules(MATMUL) if r.startswith("TRI4")]


def test_fp16_accumulator_updated_in_a_loop_is_fixed_to_fp32():
    body = MATMUL.replace("dtype=tl.float32", "dtype=tl.float16")
    [finding] = [f for f in audit(body) if f.rule == "TRI402"]
    assert "`acc`" in finding.message
    assert "dtype=tl.float32" in fixed(body, "TRI402")


def test_fp16_buffer_that_is_not_accumulated_is_fine():
    body = """
    @triton.jit
    def fill(x_ptr, BLOCK: tl.constexpr):
        z = tl.zeros((BLOCK,), dtype=tl.float16)
        tl.store(x_ptr + tl.arange(0, BLOCK), z)
    """
    assert "TRI402" not in rules(body)


def test_dot_with_low_precision_out_dtype():
    body = MATMUL.replace('input_precision="ieee"', 'input_precision="ieee", out_dtype=tl.float16')
    assert "TRI402" in rules(body)


def test_dot_without_stated_precision_is_info_in_a_library_and_warning_in_a_candidate():
    body = MATMUL.replace(', input_precision="ieee"', "")
    [finding] = [f for f in audit(body) if f.rule == "TRI403"]
    assert finding.severity == "info"
    assert 'tl.dot(a, b, input_precision="ieee")' in fixed(body, "TRI403")
    candidate = body + "\n\nclass ModelNew:\n    pass\n"
    [finding] = [f for f in audit(candidate) if f.rule == "TRI403"]
    assert finding.severity == "warning"


def test_dot_of_explicitly_fp16_operands_is_fine():
    body = MATMUL.replace(', input_precision="ieee"', "").replace(
        "tl.dot(a, b", "tl.dot(a.to(tl.float16), b.to(tl.float16)"
    )
    assert "TRI403" not in rules(body)
