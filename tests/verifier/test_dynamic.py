"""Verification at other sizes (`--dynamic`): the spec, the other sizes' inputs, and what they catch that the
example's sizes cannot: a kernel that accepts any shape but still computes the example's."""

from __future__ import annotations

import random
import subprocess
import sys
import time
import types

import pytest
import torch

from tests.conftest import FIXTURES
from tests.sources import pair
from verifier import Task, UsageError, VerifierPool
from verifier.dynamic import declared_dynamic, dynamic_line, dynamic_positions, parse_dynamic
from verifier.host.verification import _calls, _with_resized_calls
from verifier.sandbox.reference import _receive_call
from verifier.sandbox.task_code import call_inputs
from verifier.wire.channel import Channel
from verifier.wire.resize import other_size

DYNAMIC = FIXTURES / "dynamic"


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=1, device="cpu") as pool:
        yield pool


@pytest.mark.parametrize(
    ("text", "normal"),
    [("auto", "auto"), ("0", "0"), (" x:0, y:-1 ", "x:0,y:-1"), ("0,0,x:1", "0,x:1")],
)
def test_a_spec_is_read_and_written_back_the_same(text, normal):
    assert str(parse_dynamic(text)) == normal


@pytest.mark.parametrize("text", ["", "x", "x:", ":0", "x:0;y:1", "0.5", "x:0,,1", ",".join(["0"] * 65)])
def test_a_spec_that_cannot_be_read_is_refused_quoting_it(text):
    with pytest.raises(UsageError, match="dynamic spec"):
        parse_dynamic(text)


def test_a_name_forward_does_not_take_is_refused_with_the_names_it_takes():
    task = Task.from_file(DYNAMIC / "relu_task.py")
    assert dynamic_positions("x:0,1", task.tree, task.origin) == [[0, 0], [None, 1]]
    with pytest.raises(UsageError, match=r"names `y`, but .*relu_task.py's Model.forward takes x"):
        dynamic_positions("y:0", task.tree, task.origin)


def test_the_written_line_is_read_back_only_among_the_first_lines():
    kernel = "# tritonize-policy: strict -- ...\n" + dynamic_line("x:0,y:0") + "import torch\n"
    assert declared_dynamic(kernel) == "x:0,y:0"
    assert declared_dynamic("\n" * 10 + dynamic_line("x:0")) is None
    assert declared_dynamic("import torch\n") is None


@pytest.mark.parametrize("size", [2, 3, 4, 5, 16, 17, 100, 4096])
def test_the_other_sizes_differ_from_the_example_and_the_smaller_one_is_odd(size):
    smaller, larger, one = (other_size(size, step) for step in ("smaller", "larger", "one"))
    assert len({size, smaller, larger, one}) == 4
    assert smaller >= 2 and larger > size and one == 1
    if smaller < size:
        assert smaller % 2 == 1


def _task(get_inputs) -> types.ModuleType:
    module = types.ModuleType("task")
    module.get_inputs = get_inputs
    return module


def test_a_larger_input_gets_fresh_values_never_a_copy_of_the_example_s():
    module = _task(lambda: [torch.randn(16, 8), torch.randn(16, 8)])
    resize = {"dims": [[0, 0]], "auto": False, "step": "larger"}
    example = call_inputs(module, {"seed": 3, "grad": False, "label": "t"}, torch.device("cpu"))
    larger = call_inputs(module, {"seed": 3, "grad": False, "label": "t", "resize": resize}, torch.device("cpu"))
    assert larger[0].shape == (25, 8) and larger[1].shape == (16, 8)  # only input 0 was named
    assert torch.equal(larger[0][:16], example[0])
    grown = larger[0][16:]
    assert not any(torch.equal(grown[i], example[0][j]) for i in range(9) for j in range(16))
    again = call_inputs(module, {"seed": 3, "grad": False, "label": "t", "resize": resize}, torch.device("cpu"))
    assert torch.equal(again[0], larger[0]), "both sandboxes must draw the same inputs"


def test_auto_resizes_every_dimension_but_the_innermost_and_keeps_a_transposed_input_transposed():
    module = _task(lambda: [torch.randn(6, 10, 4), torch.randn(8, 12).t(), torch.randn(5), 3])
    resize = {"dims": [], "auto": True, "step": "smaller"}
    inputs = call_inputs(module, {"seed": 0, "grad": False, "label": "t", "resize": resize}, torch.device("cpu"))
    assert inputs[0].shape == (3, 5, 4) and inputs[0].is_contiguous()
    assert inputs[1].shape == (7, 8) and inputs[1].t().is_contiguous()
    assert inputs[2].shape == (5,) and inputs[3] == 3


def test_a_size_one_input_is_strided_as_a_new_tensor():
    module = _task(lambda: [torch.randn(4, 3, 8)])
    resize = {"dims": [[None, 0], [None, 1]], "auto": False, "step": "one"}
    (one,) = call_inputs(module, {"seed": 0, "grad": False, "label": "t", "resize": resize}, torch.device("cpu"))
    assert one.shape == (1, 1, 8) and one.stride() == (8, 8, 1)


def test_the_resized_calls_come_after_the_task_s_own_trials_and_the_grad_call_and_are_named():
    task = Task.from_file(DYNAMIC / "relu_task.py")
    calls = _with_resized_calls(_calls([11, 12, 13, 14, 15]), "0", task, random.Random(1))
    labels = [c["label"] for c in calls]
    assert labels == [
        "trial 1",
        "trial 2",
        "enable_grad call",
        "trial 3 (dynamic dims smaller: 0)",
        "trial 4 (dynamic dims larger: 0)",
        "trial 5 (dynamic dims one: 0)",
        "trial 6 (inputs x4)",
        "trial 7 (inputs x0.25)",
        "trial 8 (inputs x-1)",
    ]
    assert all(c["resize"]["dims"] == [[None, 0]] for c in calls[3:6])


def test_a_kernel_for_any_size_passes_at_the_other_sizes(pool):
    report = pool.verify(*pair(DYNAMIC / "relu_task.py", DYNAMIC / "relu_any_size.py"), seed=1, dynamic="auto")
    assert report.verdict == "correct", report.message
    assert "(3 at other sizes along the dynamic dimensions; 3 with the inputs scaled" in report.message


def test_a_kernel_that_still_computes_the_example_s_rows_passes_alone_and_is_caught_at_a_larger_size(pool):
    """The attack the other sizes exist for: any shape accepted, the example's size baked in."""
    task_and_kernel = pair(DYNAMIC / "relu_task.py", DYNAMIC / "relu_example_rows.py")
    assert pool.verify(*task_and_kernel, seed=1).verdict == "correct"
    report = pool.verify(*task_and_kernel, seed=1, dynamic="0")
    assert report.verdict == "incorrect", report.message
    assert report.message.startswith("trial 4 (dynamic dims larger: 0)"), report.message


def test_a_specialised_kernel_asked_for_other_sizes_fails_with_its_own_words(pool):
    report = pool.verify(*pair(DYNAMIC / "relu_task.py", DYNAMIC / "relu_example_only.py"), seed=1, dynamic="x:0")
    assert report.verdict == "incorrect", report.message
    assert report.message.startswith("trial 3 (dynamic dims smaller: x:0): the candidate's forward failed there")
    assert "ValueError: generated for shape (16, 64), got (9, 64)" in report.message


def test_a_kernel_that_refuses_a_size_the_task_cannot_run_either_is_not_blamed(pool):
    """A convolution's kernels refuse an input smaller than its filter, and so does the task: that size is
    skipped. A size the task runs and the kernel refuses is its failure (the test above)."""
    report = pool.verify(*pair(DYNAMIC / "few_rows_task.py", DYNAMIC / "relu_min_rows.py"), seed=1, dynamic="0")
    assert report.verdict == "correct", report.message
    assert "trial 5 (dynamic dims one: 0) skipped: the task's own forward failed there" in report.message
    refused = pool.verify(*pair(DYNAMIC / "relu_task.py", DYNAMIC / "relu_min_rows.py"), seed=1, dynamic="0")
    assert refused.verdict == "incorrect", refused.message
    assert "trial 5 (dynamic dims one: 0): the candidate's forward failed there" in refused.message


def test_the_spec_is_read_by_the_options_and_a_bad_one_is_refused_before_anything_runs(pool):
    with pytest.raises(UsageError, match="dynamic spec item 'x:'"):
        pool.verify(*pair(DYNAMIC / "relu_task.py", DYNAMIC / "relu_any_size.py"), dynamic="x:")
    with pytest.raises(UsageError, match="names `z`"):
        pool.verify(*pair(DYNAMIC / "relu_task.py", DYNAMIC / "relu_any_size.py"), dynamic="z:0")


def test_a_size_the_task_itself_cannot_run_is_skipped_and_said(pool):
    report = pool.verify(*pair(DYNAMIC / "few_rows_task.py", DYNAMIC / "relu_any_size.py"), seed=1, dynamic="0")
    assert report.verdict == "correct", report.message
    assert "trial 5 (dynamic dims one: 0) skipped: the task's own forward failed there (ValueError)" in report.message


def test_a_kernel_compared_at_fewer_than_two_other_sizes_is_not_shown_correct(pool):
    report = pool.verify(*pair(DYNAMIC / "even_rows_task.py", DYNAMIC / "relu_any_size.py"), seed=1, dynamic="0")
    assert report.verdict == "runtime_error", report.message
    assert report.message.startswith("the kernel was compared at only 0 other size(s) along the dynamic dimensions 0")
    assert "leave out the dimensions the task cannot vary" in report.message


def test_a_refusal_where_the_task_fails_too_does_not_hide_what_forward_did_before_it(pool):
    """The forgiven call is still watched: a write into its input before the refusal is flagged."""
    task_and_kernel = pair(DYNAMIC / "few_rows_task.py", DYNAMIC / "relu_min_rows_writes_input.py")
    report = pool.verify(*task_and_kernel, seed=1, dynamic="0")
    assert report.verdict != "correct" and report.reward == 0.0, report.message
    assert any(v["rule"] == "TRI354" for v in report.violations), report.violations


def test_inputs_whose_sizes_depend_on_the_seed_cannot_be_grown_and_say_so():
    module = _task(lambda: [torch.randn(int(torch.randint(8, 12, ())), 4)])
    resize = {"dims": [[0, 0]], "auto": False, "step": "larger"}
    with pytest.raises(ValueError, match=r"its sizes must not depend on the seed"):
        for seed in range(20):  # some pair of draws differs in size
            call_inputs(module, {"seed": seed, "grad": False, "label": "t", "resize": resize}, torch.device("cpu"))


FORGER = """
import sys, torch
from verifier.wire.channel import Channel
channel = Channel(int(sys.argv[1]))
channel.send_json({"structure": None, "leaves": [], "failed": "ValueError: not my size"})
"""


def test_a_forged_failed_frame_where_the_task_ran_is_the_candidate_s_failure():
    """The candidate's process is hostile and may send a `failed` frame for any call, from its own code rather than
    the harness: where the reference computed the task's output, that frame is a failure, never a skip."""
    channel = Channel.create(1024)
    writer = subprocess.Popen([sys.executable, "-c", FORGER, str(channel.fd)], pass_fds=[channel.fd])
    structure = {"kind": "leaf", "index": 0}
    check, fingerprint, missed = _receive_call(
        channel, "trial 1", structure, [torch.ones(4)], {}, torch.device("cpu"), time.monotonic() + 60
    )
    assert writer.wait(timeout=60) == 0
    channel.close()
    assert check.problems == ["trial 1: the candidate's forward failed there (ValueError: not my size)"]
    assert fingerprint is None and missed == []
