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


ROWS = """
@triton.jit
def rows(x_ptr, out_ptr, n_rows, n_cols, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + r[:, None] * stride + c[None, :], mask=MASK)
    tl.store(out_ptr + r, REDUCED, mask=r < n_rows)
"""


def _rows(mask: str, reduced: str) -> list:
    return [f for f in audit(ROWS.replace("MASK", mask).replace("REDUCED", reduced)) if f.rule == "TRI202"]


def test_a_mask_that_does_not_vary_along_the_reduced_axis_mixes_no_lanes():
    """Whole rows masked off, reduced along the row: a masked row's result is never mixed with a loaded one (and
    is not stored); reduced across rows, or with the columns masked, the lanes meet."""
    assert _rows("r[:, None] < n_rows", "tl.max(x, axis=1)") == []
    assert _rows("r[:, None] < n_rows", "tl.max(x, 1) - tl.min(x, axis=-1)") == []
    [finding] = _rows("r[:, None] < n_rows", "tl.max(x, axis=0)")
    assert finding.severity == "error"
    [finding] = _rows("c[None, :] < n_cols", "tl.max(x, axis=1)")
    assert finding.severity == "error"
    [finding] = _rows("(r[:, None] < n_rows) & (c[None, :] < n_cols)", "tl.max(x, axis=1)")
    assert finding.severity == "error"
    [finding] = _rows("c[None, :] < n_cols", "tl.max(tl.max(x, axis=0))")  # a mixing reduction, then any
    assert finding.severity == "error"


def test_what_follows_a_reduction_is_not_the_masked_lanes_fault():
    """`mean = tl.sum(x) / n`: the division comes after the lanes were summed (0 is neutral there); `x - mean`
    squared into a variance is an error, since the masked lanes then add mean² each."""
    body = MASKED_SUM.replace("tl.sum(x, axis=0)", "tl.max(tl.abs(tl.load(x_ptr + offs) - tl.sum(x, axis=0) / n))")
    [finding] = [f for f in audit(body) if f.rule == "TRI202"]
    assert finding.severity == "warning"
    variance = MASKED_SUM.replace("tl.sum(x, axis=0)", "tl.sum((x - tl.sum(x, axis=0) / n) * (x - 1.5), axis=0)")
    [finding] = [f for f in audit(variance) if f.rule == "TRI202"]
    assert finding.severity == "error" and "x - mean" in finding.message and finding.fix is None


def test_a_name_masked_again_in_the_same_block_is_clean_after_it():
    """Flow-sensitive where the code is straight: `d = tl.where(mask, d, 0.0)` guards the uses after it."""
    body = """
    @triton.jit
    def var(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        d = x - tl.sum(x, axis=0) / n
        GUARD
        tl.store(out_ptr, tl.sum(d * d, axis=0))
    """
    assert [f.severity for f in audit(body.replace("GUARD", "")) if f.rule == "TRI202"] == ["error"]
    guarded = audit(body.replace("GUARD", "d = tl.where(offs < n, d, 0.0)"))
    assert [f.severity for f in guarded if f.rule == "TRI202"] == ["warning"]  # the mean's own sum of x
    guarded_in_branch = "if n > 4:\n            d = tl.where(offs < n, d, 0.0)"
    assert [f.severity for f in audit(body.replace("GUARD", guarded_in_branch)) if f.rule == "TRI202"] == ["error"]


ATTENTION = """
@triton.jit
def scores(q_ptr, k_ptr, out_ptr, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr):
    m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    j = tl.arange(0, BLOCK_N)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + m[:, None] * D + d[None, :], mask=m[:, None] < n)
    k = tl.load(k_ptr + j[None, :] * D + d[:, None], mask=j[None, :] < n)
    s = tl.dot(q, k)
    GUARD
    p = tl.exp(s - tl.max(s, 1)[:, None])
    tl.store(out_ptr + m, tl.sum(p, 1), mask=m < n)
"""


def test_masked_keys_through_a_dot_are_guarded_by_an_additive_mask():
    """q's masked rows stay rows of the scores (reduced along the row: fine); k's masked columns become the scores'
    columns, which the row max and sum mix, unless `s += tl.where(keep, 0, -inf)` drops them first."""
    [finding] = [f for f in audit(ATTENTION.replace("GUARD", "")) if f.rule == "TRI202"]
    key_load = 5 + ATTENTION.splitlines().index(next(x for x in ATTENTION.splitlines() if x.lstrip().startswith("k =")))
    assert finding.severity == "error" and finding.line == key_load
    for guard in ('s += tl.where(j[None, :] < n, 0, float("-inf"))', 's = tl.where(j[None, :] < n, s, -float("inf"))'):
        assert [f for f in audit(ATTENTION.replace("GUARD", guard)) if f.rule == "TRI202"] == [], guard


def test_lanes_moved_off_zero_that_a_dot_adds_up_are_an_error():
    """A zero times anything adds nothing to a dot product; `exp(0 - m)` does."""
    body = """
    @triton.jit
    def weighted(p_ptr, v_ptr, out_ptr, n, BLOCK: tl.constexpr, D: tl.constexpr):
        j = tl.arange(0, BLOCK)
        d = tl.arange(0, D)
        s = tl.load(p_ptr + j[None, :] + d[:, None] * 0, mask=j[None, :] < n)
        v = tl.load(v_ptr + j[:, None] * D + d[None, :], mask=j[:, None] < n, other=0.0)
        tl.store(out_ptr + d[:, None] * D + d[None, :], tl.dot(P, v))
    """
    assert [f for f in audit(body.replace("P", "s")) if f.rule == "TRI202"] == []
    [finding] = [f for f in audit(body.replace("P", "tl.exp(s - 1.0)")) if f.rule == "TRI202"]
    assert finding.severity == "error" and "tl.dot" in finding.message


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


def test_none_is_no_mask_and_no_other():
    """`mask=None` loads every lane (nothing is masked); `other=None` is Triton's default, no value for them."""
    assert "TRI202" not in rules(MASKED_SUM.replace("mask=offs < n)", "mask=None)"))
    [finding] = [
        f for f in audit(MASKED_SUM.replace("mask=offs < n)", "mask=offs < n, other=None)")) if f.rule == "TRI202"
    ]
    assert finding.severity == "warning"


def test_the_method_form_of_a_reduction_reads_its_tensor_not_its_axis():
    """`x.max(0)`: the tensor is the receiver; the positional 0 is the axis (it was once read as the operand)."""
    [finding] = [f for f in audit(MASKED_SUM.replace("tl.sum(x, axis=0)", "x.max(0)")) if f.rule == "TRI202"]
    assert finding.severity == "error"
