"""A verdict's message says each kind of problem once, a crash says what usually causes it, and the report's error
line names what each number is."""

from __future__ import annotations

from tests.conftest import FIXTURES
from verifier import Task, VerifierPool
from verifier.host.verification import said_once
from verifier.report import Report

WRONG = "{label}: {n} of 1600 values outside atol=0.0001, rtol=0.0001 (max abs error {e})"


def test_the_same_problem_in_other_calls_is_said_once_with_where_else():
    problems = [
        WRONG.format(label="trial 1", n=814, e=1.47),
        WRONG.format(label="trial 2", n=793, e=1.92),
        WRONG.format(label="enable_grad call", n=814, e=1.47),
        WRONG.format(label="trial 3 (inputs x4)", n=1600, e=6.72),
    ]
    assert said_once(problems) == (
        WRONG.format(label="trial 1", n=814, e=1.47)
        + " (likewise in trial 2, the enable_grad call and trial 3 (inputs x4))"
    )


def test_problems_of_other_kinds_are_each_said_and_the_rest_counted():
    problems = [
        "trial 1: shape (4, 4), expected (4, 5)",
        "trial 1, output 1: dtype torch.float16, expected torch.float32",
        "TRI357: trial 2 returned exactly the previous trial's output although the inputs changed",
        "trial 2: output is constant (0) while the reference varies",
        "the candidate's outputs stopped arriving after 2 calls (timeout)",
        "trial 2: shape (4, 4), expected (4, 5)",
    ]
    said = said_once(problems)
    assert said.startswith("trial 1: shape (4, 4), expected (4, 5) (likewise in trial 2); trial 1, output 1: dtype")
    assert said.endswith(
        "; TRI357: trial 2 returned exactly the previous trial's output although the inputs changed"
        " (and 2 more kinds of problem)"
    )
    assert said_once(problems[:1]) == problems[0]


def test_the_error_line_names_the_error_and_the_ratio():
    report = Report("incorrect", max_abs_error=6.72, max_rel_error=0.5, trials=5)
    assert "max abs error 6.72; max relative error 0.5 (error / the reference's largest magnitude), over 5 trials" in (
        report.summary()
    )
    assert "relative to scale" not in report.summary()


def test_a_kernel_that_crashes_reading_out_of_bounds_is_told_what_usually_causes_it_and_what_finds_it():
    relu = (FIXTURES / "candidates/relu_ok.py").read_text()
    far = relu.replace("x_ptr + offs, mask=mask", "x_ptr + offs * 100000, mask=mask")
    assert far != relu
    with VerifierPool(size=1, device="cpu") as pool:
        report = pool.verify(Task.from_file(FIXTURES / "tasks/relu.py"), far, trials=2)
    assert report.verdict == "crashed", report.message
    assert report.message.startswith("the candidate crashed: killed by signal"), report.message
    assert "reads or writes out of bounds (a grid larger than the data, a load or store without its mask)" in (
        report.message
    )
    assert "`tritonize audit` checks the masks" in report.message
