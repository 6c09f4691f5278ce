"""TRI5xx: performance hints (severity info)."""

from __future__ import annotations

from tests.verifier.audit.helpers import audit, rules

LOOP = """
@triton.jit
def rowsum(x_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        w = tl.load(w_ptr + offs)
        acc += tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0) * w
    tl.store(out_ptr + offs, acc)


def launch(x, w, out):
    rowsum[(1,)](x, w, out, x.numel(), BLOCK=256)
"""


def test_loop_invariant_load_is_reported_and_loop_varying_one_is_not():
    findings = [f for f in audit(LOOP) if f.rule == "TRI503"]
    assert [f.line for f in findings] == [11]
    assert findings[0].severity == "info"


def test_volatile_or_rewritten_addresses_are_not_invariant():
    assert "TRI503" not in rules(LOOP.replace("tl.load(w_ptr + offs)", "tl.load(w_ptr + offs, volatile=True)"))
    rewritten = LOOP.replace("        acc +=", "        tl.store(w_ptr + offs, w + 1)\n        acc +=")
    assert "TRI503" not in rules(rewritten)


def test_loads_in_the_range_of_a_for_loop_run_once_and_are_not_invariant_loads():
    """`for entry in range(tl.load(starts + row), tl.load(starts + row + 1))`: a CSR row's bounds, read once."""
    ranged = LOOP.replace("range(0, n, BLOCK)", "range(tl.load(w_ptr), tl.load(w_ptr + 1), BLOCK)")
    assert [f.line for f in audit(ranged) if f.rule == "TRI503"] == [11]


def test_untuned_looping_kernel_is_hinted_unless_num_warps_or_autotune():
    [finding] = [f for f in audit(LOOP) if f.rule == "TRI501"]
    assert finding.line == 7 and (finding.column, finding.end_column) == (5, 11)
    assert "TRI501" not in rules(LOOP.replace("BLOCK=256)", "BLOCK=256, num_warps=8)"))


def test_strided_innermost_offsets():
    body = """
    @triton.jit
    def every_other(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs * 2))
    """
    assert "TRI502" in rules(body)
    assert "TRI502" not in rules(body.replace("offs * 2", "offs * 1"))
    rows = body.replace("tl.load(x_ptr + offs * 2)", "tl.sum(tl.load(x_ptr + offs[:, None] * 4 + offs[None, :]), 1)")
    assert "TRI502" not in rules(rows)


def test_the_slow_index_of_a_flattened_row_major_block_is_not_innermost():
    """Inductor's own pattern (and the tool's convert output): `x1 = xindex // 512`, then `x0 + 512 * x1`."""
    body = """
    @triton.jit
    def copy(in_ptr, out_ptr, xnumel, XBLOCK: tl.constexpr):
        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
        xmask = xindex < xnumel
        x0 = xindex % 512
        x1 = xindex // 512
        tl.store(out_ptr + xindex, tl.load(in_ptr + (x0 + 512 * x1), xmask), xmask)
    """
    assert "TRI502" not in rules(body)
    assert "TRI502" in rules(body.replace("(x0 + 512 * x1)", "(x0 * 512 + x1)"))
