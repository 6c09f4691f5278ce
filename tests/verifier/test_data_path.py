"""The trial data path: every sandbox draws the same inputs from the seed, and outputs much larger than the
channel's ring cross to the comparer chunk by chunk, with the error found wherever it falls."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.sources import pair
from verifier import VerifierPool
from verifier.host.verification import CHANNEL_SLOT_BYTES

RELU = (FIXTURES / "candidates/relu_ok.py").read_text()
ELEMENTS = 3_000_001  # 12 MB of fp32: a dozen frames through the CPU ring, the last one partial


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=1, device="cpu") as pool:
        yield pool


def wide_task(tmp_path):
    task = tmp_path / "wide_relu.py"
    task.write_text((FIXTURES / "tasks/relu.py").read_text().replace("torch.randn(8, 200)", f"torch.randn({ELEMENTS})"))
    return task


def test_an_output_many_times_the_ring_verifies_correct(pool, tmp_path):
    assert 10 * CHANNEL_SLOT_BYTES["cpu"] < ELEMENTS * 4
    candidate = tmp_path / "relu_wide.py"
    candidate.write_text(RELU.replace("BLOCK=256", "BLOCK=1 << 20").replace("cdiv(n, 256)", "cdiv(n, 1 << 20)"))
    report = pool.verify(*pair(wide_task(tmp_path), candidate), trials=2)
    assert report.verdict == "correct", report.message
    assert report.max_abs_error == 0


def test_one_wrong_value_in_the_last_partial_chunk_is_found(pool, tmp_path):
    candidate = tmp_path / "relu_last_wrong.py"
    candidate.write_text(
        RELU.replace("BLOCK=256", "BLOCK=1 << 20")
        .replace("cdiv(n, 256)", "cdiv(n, 1 << 20)")
        .replace("tl.maximum(x, 0.0)", "tl.where(offs == n - 1, tl.abs(x) + 1.0, tl.maximum(x, 0.0))")
    )
    report = pool.verify(*pair(wide_task(tmp_path), candidate), trials=2)
    assert report.verdict == "incorrect"
    assert f"1 of {ELEMENTS} values outside" in report.message, report.message
