"""A run that runs out of device memory beside other work is run again alone before its failure counts.

On a GPU shared by several verifications (and the inductor backend's compiles) a task or candidate that fits
alone can still run out of memory. The CPU cannot run out of GPU memory, so these tests make the task or the
candidate raise PyTorch's own `OutOfMemoryError` (what CUDA raises) the first time it runs in its sandbox and
work the next time, remembering through a file in its own scratch directory; everything else is the real pool.
"""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import FIXTURES
from tests.sources import pair
from verifier import TaskError, VerifierPool

RELU_TASK = (FIXTURES / "tasks/relu.py").read_text()
RELU_OK = (FIXTURES / "candidates/relu_ok.py").read_text()
OUT_OF_MEMORY = "raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 8.00 GiB')"


def _starved(source: str, marker: str | None) -> str:
    """`source` whose forward raises CUDA's out-of-memory error: only on its first run in this sandbox when a
    `marker` names the file that remembers it, else always."""
    once = f"""
        mark = os.path.join(os.environ["HOME"], "{marker}")
        if not os.path.exists(mark):
            open(mark, "w").close()
            {OUT_OF_MEMORY}
"""
    body = once if marker else f"\n        {OUT_OF_MEMORY}\n"
    starved = source.replace("    def forward(self, x):\n", "    def forward(self, x):" + body, 1)
    assert starved != source
    return "import os\n" + starved


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=1, device="cpu") as pool:
        yield pool


def test_a_task_that_fits_alone_is_verified_again_alone_and_passes(pool, tmp_path):
    task = tmp_path / "relu_task.py"
    task.write_text(_starved(RELU_TASK, f"oom-{uuid.uuid4().hex}"))
    report = pool.verify(*pair(task, FIXTURES / "candidates/relu_ok.py"), trials=2)
    assert report.verdict == "correct", report.message
    assert "the task's own run ran out of device memory beside other work: verified again alone" in report.warnings


def test_a_task_that_runs_out_of_memory_alone_too_is_reported_broken(pool, tmp_path):
    task = tmp_path / "relu_task.py"
    task.write_text(_starved(RELU_TASK, None))
    with pytest.raises(TaskError, match="OutOfMemoryError: CUDA out of memory"):
        pool.verify(*pair(task, FIXTURES / "candidates/relu_ok.py"), trials=2)


@pytest.mark.parametrize(("once", "verdict"), [(True, "correct"), (False, "runtime_error")], ids=["once", "always"])
def test_a_candidate_out_of_memory_is_judged_on_its_run_alone(pool, tmp_path, once, verdict):
    candidate = tmp_path / "relu_candidate.py"
    candidate.write_text(_starved(RELU_OK, f"oom-{uuid.uuid4().hex}" if once else None))
    report = pool.verify(*pair(FIXTURES / "tasks/relu.py", candidate), trials=2, static_checks=False)
    assert report.verdict == verdict, report.message
    assert "the candidate's run ran out of device memory beside other work: verified again alone" in report.warnings
    assert report.warnings.count(report.warnings[0]) == 1
