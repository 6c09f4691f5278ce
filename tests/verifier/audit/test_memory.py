"""TRI2xx: out-of-bounds blocks, garbage in masked lanes, int32 offset overflow."""

from __future__ import annotations

from tests.verifier.audit.helpers import audit, fixed, rules

UNMASKED = """
@triton.jit
def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))
"""


def test_unmasked_block_load_and_store_are_reported():
    findings = [f for f in audit(UNMASKED) if f.rule == "TRI201"]
    assert sorted(f.message.split(" ", 1)[0] for f in findings) == ["tl.load", "tl.store"]
    assert all(f.severity == "warning" for f in findings)


def test_masked_wrapped_or_asserted_accesses_are_fine():
    masked = UNMASKED.replace("tl.load(x_ptr + offs)", "tl.load(x_ptr + offs, mask=offs < n)").replace(
        "tl.store(out_ptr + offs, ", "tl.store(out_ptr + offs, mask=offs < n, value="
    )
    assert "TRI201" not in rules(masked)
    wrapped = UNMASKED.replace("tl.arange(0, BLOCK)", "tl.arange(0, BLOCK)) % n").replace("offs = pid", "offs = (pid")
    assert "TRI201" not in rules(wrapped)
    asserted = UNMASKED.replace("    pid = ", "    tl.static_assert(n % BLOCK == 0)\n    pid = ")
    assert "TRI201" not in rules(asserted)


def test_constexpr_guarded_fast_path_is_fine():
    body = """
    @triton.jit
    def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            tl.store(out_ptr + offs, tl.load(x_ptr + offs))
        else:
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    """
    assert "TRI201" not in rules(body)


def test_row_kernels_without_program_id_blocks_are_not_reported():
    body = """
    @triton.jit
    def row(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)
    """
    assert "TRI201" not in rules(body)


MASKED_SUM = """
@triton.jit
def total(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr, tl.sum(x, axis=0))
"""


def test_masked_lanes_reaching_a_sum_are_a_warning_fixed_with_zero():
    """Triton's NVIDIA lowering fills masked-off lanes with 0 (`mov.u32 %r, 0x0` before the predicated load in
    the PTX), the sum's neutral value: right in practice, undefined by the language."""
    [finding] = [f for f in audit(MASKED_SUM) if f.rule == "TRI202"]
    assert finding.severity == "warning" and "tl.sum" in finding.message and "right here" in finding.message
    repaired = fixed(MASKED_SUM, "TRI202")
    assert "mask=offs < n, other=0.0)" in repaired
    assert "TRI202" not in rules(repaired.split("\n\n\n", 1)[1])


def test_masked_lanes_reaching_a_max_are_an_error_fixed_with_minus_infinity():
    body = MASKED_SUM.replace("tl.sum(x, axis=0)", "tl.max(x, axis=0)")
    [finding] = [f for f in audit(body) if f.rule == "TRI202"]
    assert finding.severity == "error" and "not a neutral value for tl.max" in finding.message
    assert 'other=float("-inf"))' in fixed(body, "TRI202")


def test_zero_filled_lanes_are_harmless_in_the_max_of_absolute_values():
    body = MASKED_SUM.replace("tl.sum(x, axis=0)", "tl.max(tl.abs(x), axis=0)")
    [finding] = [f for f in audit(body) if f.rule == "TRI202"]
    assert finding.severity == "warning"
    for reduction in ("tl.min(tl.abs(x), axis=0)", "tl.argmax(x, axis=0)"):
        [finding] = [f for f in audit(MASKED_SUM.replace("tl.sum(x, axis=0)", reduction)) if f.rule == "TRI202"]
        assert finding.severity == "error", reduction


def test_lanes_moved_off_zero_before_a_sum_are_an_error():
    softmax = MASKED_SUM.replace("tl.sum(x, axis=0)", "tl.sum(tl.exp(x - tl.max(x, axis=0)), axis=0)")
    [finding] = [f for f in audit(softmax) if f.rule == "TRI202"]
    assert finding.severity == "error" and "go through exp" in finding.message
    assert 'other=float("-inf"))' in fixed(softmax, "TRI202")
    divided = MASKED_SUM.replace("tl.sum(x, axis=0)", "tl.sum(1.0 / x, axis=0)")
    [finding] = [f for f in audit(divided) if f.rule == "TRI202"]
    assert finding.severity == "error" and finding.fix is None


def test_where_or_other_sanitises_masked_lanes():
    assert "TRI202" not in rules(MASKED_SUM.replace("mask=offs < n)", "mask=offs < n, other=0.0)"))
    assert "TRI202" not in rules(MASKED_SUM.replace("tl.sum(x, axis=0)", "tl.sum(tl.where(offs < n, x, 0.0), axis=0)"))
    assert "TRI202" not in rules(MASKED_SUM.replace("tl.sum(x, axis=0)", "x"))


def test_masked_lanes_multiplied_before_the_reduction_are_only_a_warning():
    body = MASKED_SUM.replace("tl.sum(x, axis=0)", "tl.sum(x * tl.load(x_ptr + offs, mask=offs < n, other=0.0))")
    [finding] = [f for f in audit(body) if f.rule == "TRI202"]
    assert finding.severity == "warning"


ROW_STRIDE = """
@triton.jit
def scale(x_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    ptrs = x_ptr + row * stride + offs
    tl.store(ptrs, tl.load(ptrs, mask=offs < n, other=0.0) * 2, mask=offs < n)
"""


def test_program_id_times_runtime_stride_is_reported_once_at_the_program_id():
    [finding] = [f for f in audit(ROW_STRIDE) if f.rule == "TRI203"]
    assert finding.line == 8 and "`row * stride`" in finding.message
    assert "row = tl.program_id(0).to(tl.int64)" in fixed(ROW_STRIDE, "TRI203")


def test_int64_program_id_and_constexpr_multipliers_are_fine():
    assert "TRI203" not in rules(ROW_STRIDE.replace("tl.program_id(0)", "tl.program_id(0).to(tl.int64)"))
    assert "TRI203" not in rules(ROW_STRIDE.replace("row * stride", "row * BLOCK"))


def test_expression_program_ids_are_cast_in_place():
    body = ROW_STRIDE.replace("row * stride", "(row + 1) * stride")
    assert "x_ptr + ((row + 1).to(tl.int64)) * stride" in fixed(body, "TRI203")


def test_an_inclusive_bound_on_a_size_is_one_past_the_end():
    body = """
    @triton.jit
    def copy(x_ptr, out_ptr, n_elements, last, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs <= n_elements
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    """
    [finding] = [f for f in audit(body) if f.rule == "TRI204"]
    assert finding.severity == "error" and "one past the end" in finding.message
    assert "mask = offs < n_elements" in fixed(body, "TRI204")
    [finding] = [f for f in audit(body.replace("offs <= n_elements", "offs <= last")) if f.rule == "TRI204"]
    assert finding.severity == "warning"
    assert "TRI204" not in rules(body.replace("offs <= n_elements", "offs <= n_elements - 1"))
    assert "TRI204" not in rules(body.replace("offs <= n_elements", "offs < n_elements"))
