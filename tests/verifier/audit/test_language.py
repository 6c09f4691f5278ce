"""TRI1xx: each rule fires on the mistake and stays silent on the correct form."""

from __future__ import annotations

import ast

import pytest

from tests.verifier.audit.helpers import audit, fixed, rules

ADD = """
@triton.jit
def add(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
"""


def test_correct_elementwise_kernel_has_no_language_findings():
    assert not [r for r in rules(ADD) if r.startswith("TRI1")]


def test_arange_with_non_power_of_two_size_is_an_error_at_the_call():
    findings = audit(ADD.replace("tl.arange(0, BLOCK)", "tl.arange(0, 100)"))
    [finding] = [f for f in findings if f.rule == "TRI101"]
    assert finding.severity == "error"
    assert "100 elements" in finding.message and "128" in finding.message
    assert (finding.line, finding.column) == (9, 26)


def test_arange_with_module_constant_power_of_two_is_fine_and_non_power_is_not():
    assert "TRI101" not in rules("SIZE = 64\n" + ADD.replace("tl.arange(0, BLOCK)", "tl.arange(0, SIZE)"))
    assert "TRI101" in rules("SIZE = 48\n" + ADD.replace("tl.arange(0, BLOCK)", "tl.arange(0, SIZE)"))


def test_arange_bound_from_runtime_parameter_has_a_fix_that_annotates_it():
    body = ADD.replace("BLOCK: tl.constexpr", "BLOCK")
    assert "TRI102" in rules(body)
    repaired = fixed(body, "TRI102")
    assert "BLOCK: tl.constexpr" in repaired
    ast.parse(repaired)
    assert "TRI102" not in rules(repaired.split("\n\n\n", 1)[1])


def test_arange_bound_from_local_computed_from_runtime_value():
    body = """
    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        size = n * 2
        offs = tl.arange(0, size)
        tl.store(x_ptr + offs, 1.0)
    """
    [finding] = [f for f in audit(body) if f.rule == "TRI102"]
    assert "parameter `n`" in finding.message
    assert "TRI102" not in rules(body.replace("size = n * 2", "size = BLOCK * 2"))


def test_block_shape_parameter_without_constexpr_replaces_a_wrong_annotation():
    body = """
    @triton.jit
    def k(x_ptr, M: int, N: tl.constexpr):
        acc = tl.zeros((M, N), dtype=tl.float32)
        tl.store(x_ptr + tl.arange(0, N), tl.sum(acc, 0))
    """
    [finding] = [f for f in audit(body) if f.rule == "TRI103"]
    assert "`M`" in finding.message
    assert "M: tl.constexpr" in fixed(body, "TRI103")
    assert "TRI103" not in rules(body.replace("M: int", "M: tl.constexpr"))


@pytest.mark.parametrize("axis", ["3", "-1", "axis=5"])
def test_program_id_axis_outside_the_grid(axis):
    assert "TRI104" in rules(ADD.replace("tl.program_id(0)", f"tl.program_id({axis})"))


def test_program_id_axes_0_to_2_are_fine():
    for axis in ("0", "1", "axis=2"):
        assert "TRI104" not in rules(ADD.replace("tl.program_id(0)", f"tl.program_id({axis})"))


@pytest.mark.parametrize(
    ("statement", "what"),
    [
        ("try:\n        pass\n    except Exception:\n        pass", "try/except"),
        ("with open('f') as f:\n        pass", "`with`"),
        ("f = lambda v: v", "lambda"),
        ("s = {1, 2}", "set literal"),
        ("d = {'a': 1}", "dict literal"),
        ("xs = [i for i in range(4)]", "list comprehension"),
        ("global G", "`global`"),
        ("def inner():\n        pass", "nested function"),
        ("del pid", "`del`"),
        ("raise ValueError('x')", "`raise`"),
        ("for i in range(2):\n        pass\n    else:\n        pass", "`else` after a loop"),
        ("for i in range(2):\n        return", "`return` inside a loop"),
        ("for i in range(2):\n        break", "`break`"),
        ("while n > 0:\n        continue", "`continue`"),
    ],
)
def test_unsupported_constructs_inside_a_kernel(statement, what):
    body = ADD.replace("    mask = offs < n\n", f"    mask = offs < n\n    {statement}\n")
    findings = [f for f in audit(body) if f.rule == "TRI105"]
    assert findings and what in findings[0].message


def test_in_a_branch_chosen_by_constexpr_values_raise_is_fine_and_others_only_warn():
    """Triton compiles only the branch the constexpr values select; `raise` there refuses a bad value."""
    body = """
    @triton.jit
    def signal(x_ptr, SEM: tl.constexpr):
        if SEM == "release":
            tl.store(x_ptr, 1)
        elif SEM == "relaxed":
            try:
                tl.store(x_ptr, 2)
            except Exception:
                pass
        else:
            raise RuntimeError(f"unknown sem {SEM}")
    """
    [finding] = [f for f in audit(body) if f.rule == "TRI105"]
    assert finding.severity == "warning" and "try/except" in finding.message
    assert "if the launch's constexpr values select this branch" in finding.message


def test_unsupported_constructs_outside_kernels_are_not_reported():
    assert "TRI105" not in rules(
        ADD + "\n\ndef launcher():\n    try:\n        pass\n    except Exception:\n        pass\n"
    )


def test_kernel_calling_a_plain_function_gets_a_decorator_fix():
    body = """
    def twice(v):
        return v * 2


    @triton.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, twice(tl.load(x_ptr + offs)))
    """
    [finding] = [f for f in audit(body) if f.rule == "TRI106"]
    assert "`twice`" in finding.message
    repaired = fixed(body, "TRI106")
    assert "@triton.jit\ndef twice" in repaired
    assert "TRI106" not in rules(repaired.split("\n\n\n", 1)[1])


def test_calls_to_jit_helpers_and_builtins_are_fine():
    body = """
    @triton.jit
    def twice(v):
        return v * 2


    @triton.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, twice(tl.maximum(tl.load(x_ptr + offs), 0.0)) + min(1, 2))
    """
    assert "TRI106" not in rules(body)


def test_dot_on_literal_blocks_below_16():
    body = """
    @triton.jit
    def k(a_ptr, b_ptr, c_ptr):
        r = tl.arange(0, 8)
        a = tl.load(a_ptr + r[:, None] * 8 + r[None, :])
        b = tl.load(b_ptr + r[:, None] * 8 + r[None, :])
        c = tl.dot(a, b)
        tl.store(c_ptr + r[:, None] * 8 + r[None, :], c)
    """
    [finding] = [f for f in audit(body) if f.rule == "TRI107"]
    assert "M=8" in finding.message and "K=8" in finding.message and "N=8" in finding.message
    assert finding.severity == "warning", "fp32 inputs with K=8 compile on current Triton"
    half = body.replace("tl.dot(a, b)", "tl.dot(a.to(tl.float16), b.to(tl.float16))")
    assert [f.severity for f in audit(half) if f.rule == "TRI107"] == ["error"]
    tiny = body.replace("tl.arange(0, 8)", "tl.arange(0, 4)").replace("* 8", "* 4")
    assert [f.severity for f in audit(tiny) if f.rule == "TRI107"] == ["error"]
    assert "TRI107" not in rules(body.replace("tl.arange(0, 8)", "tl.arange(0, 16)").replace("* 8", "* 16"))


def test_launching_a_function_that_is_not_jit_gets_a_decorator_fix():
    body = """
    def k(x_ptr, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


    def launch(x):
        k[(1,)](x, BLOCK=128)
    """
    [finding] = [f for f in audit(body) if f.rule == "TRI108"]
    assert finding.line == 11
    repaired = fixed(body, "TRI108")
    assert "@triton.jit\ndef k(" in repaired
    assert "TRI108" not in rules(repaired.split("\n\n\n", 1)[1])


def test_launching_a_function_wrapped_by_assignment_is_fine():
    body = """
    def k(x_ptr, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


    k = triton.jit(k)


    def launch(x):
        k[(1,)](x, BLOCK=128)
    """
    assert "TRI108" not in rules(body)


def test_launching_an_autotuned_jit_kernel_is_fine():
    body = """
    @triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=[])
    @triton.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


    def launch(x):
        k[(1,)](x)
    """
    assert "TRI108" not in rules(body)
