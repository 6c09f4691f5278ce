"""The sandboxed harness frees each call's data before the next call: at published sizes (6 GiB per output) a
tensor kept alive for a few calls more is the difference between verifying and running out of memory."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import weakref

import torch

from tests.conftest import FIXTURES
from tests.sources import pair
from verifier import VerifierPool
from verifier.sandbox import task_code

# Run in a child process: `run_candidate` installs the watch's hooks (thread starts, launches) for good, as it
# may in the sandbox, and they must not leak into this test process.
CANDIDATE_RUN = textwrap.dedent(
    """
    import gc, sys, threading, time
    import torch
    from verifier.sandbox import candidate as candidate_side
    from verifier.wire.channel import Channel

    gc.disable()  # only the harness's own collections may free the candidate's cycles
    task, candidate = sys.argv[1], sys.argv[2]
    channel = Channel.create(1 << 20)

    def drain():
        while True:
            header = channel.receive_json(time.monotonic() + 60)
            for leaf in header["leaves"]:
                size = 4 * torch.Size(leaf["shape"]).numel()
                for _ in channel.receive_bytes(size, torch.device("cpu"), time.monotonic() + 60):
                    pass

    threading.Thread(target=drain, daemon=True).start()
    calls = [{"seed": s, "grad": False, "label": f"trial {s}"} for s in range(5)]
    calls.append({"seed": 9, "grad": True, "label": "enable_grad call"})
    job = {"device": "cpu", "channel_fd": channel.fd, "inputs_source": task, "source": candidate,
           "module_name": "cyclic_candidate", "calls": calls, "init_seed": 1}
    candidate_side.run_candidate(job)
    seen = sys.modules["cyclic_candidate"].SEEN
    print(sum(ref() is not None for ref in seen), len(seen))
    """
)

TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2

def get_inputs():
    return [torch.randn(4096, 4096)]  # 64 MiB: large enough that the harness collects after each call

def get_init_inputs():
    return []
"""

# Every output sits in a reference cycle, as Triton's interpreter leaves one per launch.
CYCLIC_CANDIDATE = """
import weakref
import torch
import torch.nn as nn

SEEN = []

class ModelNew(nn.Module):
    def forward(self, x):
        out = x * 2
        holder = {"out": out}
        holder["self"] = holder
        SEEN.append(weakref.ref(out))
        return out
"""


def test_flatten_leaves_no_reference_cycle_behind():
    output = (torch.ones(4), [torch.zeros(2), 3.0])
    alive = weakref.ref(output[0])
    gc.disable()
    try:
        structure, leaves = task_code.flatten(output)
        assert structure == {
            "kind": "tuple",
            "items": [
                {"kind": "leaf", "index": 0},
                {"kind": "list", "items": [{"kind": "leaf", "index": 1}, {"kind": "leaf", "index": 2}]},
            ],
        }
        assert leaves[2] == 3.0
        del output, leaves
        assert alive() is None, "the first output is still alive after its last reference went"
    finally:
        gc.enable()


def test_a_candidates_reference_cycles_do_not_keep_earlier_calls_outputs_alive(tmp_path):
    task, candidate = tmp_path / "double.py", tmp_path / "cyclic.py"
    task.write_text(TASK)
    candidate.write_text(CYCLIC_CANDIDATE)
    run = subprocess.run(
        [sys.executable, "-c", CANDIDATE_RUN, str(task), str(candidate)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=FIXTURES.parent.parent,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    alive, outputs = map(int, run.stdout.split()[-2:])
    assert outputs == 7  # 6 compared calls and the coverage call
    # Only the coverage call's output may still wait in its cycle: nothing collects after that last call.
    assert alive <= 1, f"{alive} of {outputs} outputs still alive"


EXACT = FIXTURES / "exact"


def test_a_kernel_more_exact_than_the_fp32_reference_is_judged_against_float64():
    """The task's fp32 result is up to 4 off the exact answer; a kernel that computes in float64 misses it by that
    much, and passes only because the harness runs the task again in float64 and finds the kernel exact."""
    with VerifierPool(size=1, device="cpu") as pool:
        exact = pool.verify(*pair(EXACT / "offset_roundtrip.py", EXACT / "offset_roundtrip_float64.py"), trials=2)
        biased = pool.verify(*pair(EXACT / "offset_roundtrip.py", EXACT / "offset_roundtrip_biased.py"), trials=2)
    assert exact.verdict == "correct" and exact.reward == 1.0, exact.message
    assert exact.max_abs_error > 1.0  # its distance from the fp32 reference, as measured
    assert "trial 1: missed the fp32 tolerance, but against the float64 answer it is off by up to 0 " in exact.message
    assert "(likewise 2 more times)" in exact.message  # trial 2 and the enable_grad call
    assert biased.verdict == "incorrect" and biased.reward == 0
    assert "against the float64 answer it is off by up to 10" in biased.message
    assert "at most 4x the larger is allowed" in biased.message


def test_a_tensor_the_task_draws_at_import_is_the_same_on_both_sides(tmp_path):
    """`X = torch.randn(...)` at the top of a task: each sandbox imports the task right after the same seed, so the
    reference's X and the candidate's are one tensor (before, every candidate of such a task was incorrect)."""
    task = tmp_path / "drawn_at_import.py"
    relu = (FIXTURES / "tasks/relu.py").read_text()
    task.write_text(
        relu.replace(
            "def get_inputs():\n    return [torch.randn(8, 200)]",
            "X = torch.randn(8, 200)\n\n\ndef get_inputs():\n    return [X]",
        )
    )
    assert "return [X]" in task.read_text()
    with VerifierPool(size=1, device="cpu") as pool:
        report = pool.verify(*pair(task, FIXTURES / "candidates/relu_ok.py"), trials=2)
    assert report.verdict == "correct", report.message


def test_the_allclose_tolerance_comes_from_the_trials_on_the_task_s_own_inputs(tmp_path):
    """A ReLU off by 0.004 everywhere needs that tolerance; a ReLU capped at 10 never meets `randn` inputs that
    reach the cap, so the benchmarks' allclose passes it (0), while the verifier's scaled trials (x4) catch it."""
    relu = (FIXTURES / "candidates/relu_ok.py").read_text()
    offset, capped = tmp_path / "offset.py", tmp_path / "capped.py"
    offset.write_text(relu.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.0) + 0.004"))
    capped.write_text(relu.replace("tl.maximum(x, 0.0)", "tl.minimum(tl.maximum(x, 0.0), 10.0)"))
    with VerifierPool(size=1, device="cpu") as pool:
        off = pool.verify(*pair(FIXTURES / "tasks/relu.py", offset), trials=5)
        cap = pool.verify(*pair(FIXTURES / "tasks/relu.py", capped), trials=5)
        right = pool.verify(*pair(FIXTURES / "tasks/relu.py", FIXTURES / "candidates/relu_ok.py"), trials=2)
    assert off.verdict == "incorrect" and abs(off.allclose_tolerance - 0.004) < 1e-6, (off.message, off)
    assert cap.verdict == "incorrect" and "trial" in cap.message, cap.message
    assert cap.allclose_tolerance == 0.0
    assert right.verdict == "correct" and right.allclose_tolerance == 0.0
    assert right.to_dict()["allclose_tolerance"] == 0.0
