"""The last trials draw the task's inputs scaled up and down, so a kernel that is wrong only where the task's own
random inputs rarely go (a clamp left out) is caught, and the trial that caught it is named."""

from __future__ import annotations

import types

import pytest
import torch

from tests.conftest import FIXTURES
from tests.sources import pair
from verifier import VerifierPool
from verifier.sandbox.task_code import trial_inputs

SCALED = FIXTURES / "scaled"


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=1, device="cpu") as pool:
        yield pool


def test_a_clamp_left_out_is_caught_by_the_scaled_trial(pool):
    for seed in (1, 2, 3):
        left_out = pool.verify(*pair(SCALED / "clamp_task.py", SCALED / "copy.py"), trials=5, seed=seed)
        assert left_out.verdict == "incorrect", left_out.message
        assert left_out.message.startswith("trial 3 (inputs x4): "), left_out.message  # trials 1-2 pass it
    honest = pool.verify(*pair(SCALED / "clamp_task.py", SCALED / "clamp_ok.py"), trials=5, seed=1)
    assert honest.verdict == "correct", honest.message
    assert "on 5 trials (3 with the inputs scaled: x4, x0.25, x-1) plus an enable_grad call" in honest.message


def test_with_the_task_s_own_inputs_alone_the_left_out_clamp_would_pass(pool):
    """What the scaled trials add: two trials (both the task's own inputs) miss it."""
    report = pool.verify(*pair(SCALED / "clamp_task.py", SCALED / "copy.py"), trials=2, seed=1)
    assert report.verdict == "correct", report.message
    assert "on 2 trials plus" in report.message


def test_a_scaled_trial_where_the_task_overflows_is_skipped_and_said(pool):
    report = pool.verify(*pair(SCALED / "exp_task.py", SCALED / "exp_ok.py"), trials=5, seed=1)
    assert report.verdict == "correct", report.message
    assert "trial 3 (inputs x4) skipped: the task's own output is not finite there" in report.message
    assert "trial 4 (inputs x0.25) skipped" not in report.message


def test_an_abs_left_out_is_caught_by_the_negated_trial(pool):
    report = pool.verify(*pair(SCALED / "abs_task.py", SCALED / "copy.py"), trials=5, seed=1)
    assert report.verdict == "incorrect", report.message
    assert report.message.startswith("trial 5 (inputs x-1): "), report.message


def test_scaling_leaves_a_tensor_the_task_hands_out_every_call_unchanged():
    module = types.ModuleType("constant_input")
    module.X = torch.linspace(-6, 6, 2048)
    module.get_inputs = lambda: [module.X, torch.arange(3), 2.0]
    scaled = trial_inputs(module, 7, torch.device("cpu"), 4.0)
    assert torch.equal(module.X, torch.linspace(-6, 6, 2048)), "the task's own tensor was scaled in place"
    assert torch.equal(scaled[0], 4 * module.X)
    assert torch.equal(scaled[1], torch.arange(3)) and scaled[2] == 2.0, "only floating-point tensors are scaled"


def test_a_scaled_trial_where_the_task_itself_raises_is_skipped_and_the_rest_still_compared(tmp_path, pool):
    """The task refuses values past 8 (its x4 trial raises); the candidate's outputs of that trial are read and
    dropped, so the trials after it still line up, and a kernel wrong on them is still caught."""
    task = tmp_path / "bounded.py"
    relu = (FIXTURES / "tasks/relu.py").read_text()
    guarded = (
        "        if x.abs().max() > 8:\n"
        '            raise ValueError("inputs out of range")\n'
        "        return torch.relu(x)"
    )
    task.write_text(relu.replace("        return torch.relu(x)", guarded))
    assert "out of range" in task.read_text()
    honest = pool.verify(*pair(task, FIXTURES / "candidates/relu_ok.py"), trials=5, seed=1)
    assert honest.verdict == "correct", honest.message
    assert "trial 3 (inputs x4) skipped: the task's own forward failed there (ValueError)" in honest.message
    wrong = pool.verify(*pair(task, SCALED / "copy.py"), trials=5, seed=1)
    assert wrong.verdict == "incorrect" and wrong.message.startswith("trial 1: "), wrong.message
    # trials 4 and 5, compared after the skip, are wrong the same way as trial 1; trial 3 was never compared
    assert "trial 3" not in wrong.message, wrong.message
    assert "trial 4 (inputs x0.25) and trial 5 (inputs x-1))" in wrong.message, wrong.message


def test_a_task_that_refuses_scaled_inputs_only_skips_those_trials(pool):
    """Binary cross-entropy raises on predictions outside [0, 1]: the x4 and x-1 trials are skipped, the x0.25
    trial is still compared."""
    report = pool.verify(*pair(SCALED / "bce_task.py", SCALED / "bce_ok.py"), trials=5, seed=1)
    assert report.verdict == "correct", report.message
    assert "trial 3 (inputs x4) skipped: the task's own forward failed there (RuntimeError)" in report.message
    assert "trial 5 (inputs x-1) skipped" in report.message
    assert "trial 4 (inputs x0.25) skipped" not in report.message


@pytest.mark.gpu
def test_a_device_side_assert_in_a_scaled_trial_is_not_the_candidate_s_fault(tmp_path):
    """On a GPU the same refusal is a device-side assert, after which the reference's CUDA context is lost: the
    trial and those after it are skipped (their outputs drained without the device), and the verdict stands on
    the trials before; a wrong kernel is still caught there."""
    with VerifierPool(size=1, device="cuda") as gpu:
        honest = gpu.verify(*pair(SCALED / "bce_task.py", SCALED / "bce_ok.py"), trials=5, seed=1, timing=False)
        assert honest.verdict == "correct", honest.message
        assert "trial 3 (inputs x4) skipped: the task's own forward failed there" in honest.message
        assert (
            "trial 4 (inputs x0.25) skipped: the device was lost in an earlier scaled or resized trial"
            in honest.message
        )
        wrong_kernel = tmp_path / "bce_wrong.py"
        wrong_kernel.write_text((SCALED / "bce_ok.py").read_text().replace("(1.0 - t) * log_q", "t * log_q"))
        wrong = gpu.verify(*pair(SCALED / "bce_task.py", wrong_kernel), trials=5, seed=1, timing=False)
        assert wrong.verdict == "incorrect" and wrong.message.startswith("trial 1: "), wrong.message
        again = gpu.verify(*pair(SCALED / "bce_task.py", SCALED / "bce_ok.py"), trials=3, seed=2, timing=False)
        assert again.verdict == "correct", again.message
