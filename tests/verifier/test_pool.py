"""The pool reuses warm sandboxes and survives crashes and hangs without affecting the next candidate."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.sources import pair, read_pairs
from verifier import VerifierPool, verify

ADD = FIXTURES / "tasks/add.py"
GOOD = FIXTURES / "candidates/add_ok.py"


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=1, device="cpu") as pool:
        yield pool


def test_second_verification_reuses_warm_sandboxes(pool):
    first = pool.verify(*pair(ADD, GOOD), trials=2)
    second = pool.verify(*pair(ADD, GOOD), trials=2)
    assert first.verdict == second.verdict == "correct"
    assert first.phases["start_s"] > 0
    assert second.phases["start_s"] == 0


@pytest.mark.parametrize(
    ("hostile", "verdict", "timeout"),
    [("zoo/memory_bomb.py", "crashed", 8), ("zoo/hang_in_kernel.py", "timeout", 4)],  # a hang times out at any limit
)
def test_next_candidate_is_unaffected_by_a_killed_one(pool, hostile, verdict, timeout):
    bad = pool.verify(*pair(ADD, FIXTURES / hostile), trials=2, timeout=timeout, memory_limit=1024**3)
    assert bad.verdict == verdict
    good = pool.verify(*pair(ADD, GOOD), trials=2)
    assert good.verdict == "correct", good.message


def test_verify_many_keeps_input_order_and_runs_concurrently():
    pairs = [(ADD, GOOD), (ADD, FIXTURES / "zoo/wrong_op_sub.py"), (ADD, GOOD)]
    with VerifierPool(size=2, device="cpu") as pool:
        reports = pool.verify_many(read_pairs(pairs), trials=2)
    assert [r.verdict for r in reports] == ["correct", "incorrect", "correct"]


def test_seed_makes_a_run_reproducible():
    a = verify(*pair(ADD, FIXTURES / "zoo/wrong_op_sub.py"), device="cpu", seed=7, trials=2)
    b = verify(*pair(ADD, FIXTURES / "zoo/wrong_op_sub.py"), device="cpu", seed=7, trials=2)
    assert a.max_abs_error == b.max_abs_error
    assert a.seed == 7


def test_invalid_options_are_rejected_before_running():
    with pytest.raises(ValueError, match="trials"):
        verify(*pair(ADD, GOOD), device="cpu", trials=0)
    with pytest.raises(ValueError, match="device"):
        verify(*pair(ADD, GOOD), device="tpu")


def test_without_isolation_runs_still_happen_in_killable_processes_with_a_warning():
    with VerifierPool(size=1, device="cpu", isolate=False) as pool:
        good = pool.verify(*pair(ADD, GOOD), trials=2)
        hung = pool.verify(*pair(ADD, FIXTURES / "zoo/hang_at_import.py"), trials=2, timeout=3)
    assert good.verdict == "correct"
    assert good.isolation["method"] == "process"
    assert good.isolation["network"] == "host"
    assert any("isolation was turned off" in w for w in good.warnings)
    assert hung.verdict == "timeout"


def test_warming_starts_the_sandboxes_before_the_first_verification():
    with VerifierPool(size=None, device="cpu") as fresh:  # the device's default size: two on a CPU
        assert fresh.size == 2
        assert fresh.warm() > 0
        assert fresh.warm() == 0
        report = fresh.verify(*pair(ADD, GOOD), trials=1)
        assert report.verdict == "correct", report.message
        assert report.phases["start_s"] == 0


def test_a_gpu_index_names_the_device_a_child_sees(monkeypatch):
    """A trainer rank's verifier sandboxes see its own GPU alone: index i of this process's visible GPUs."""
    from verifier.device import visible_gpu

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_gpu(1) == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4, 6")
    assert visible_gpu(0) == "4" and visible_gpu(1) == "6"
    with pytest.raises(ValueError, match="GPU 2 is not visible"):
        visible_gpu(2)


def test_sandboxes_get_their_own_inductor_cache_not_the_parents(tmp_path, monkeypatch):
    """A sandbox cannot create the parent's Inductor cache dir (the GPU test beside this one shows the failure):
    a candidate's sandbox gets none from its parent, a trusted reference the writable cache it is given."""
    from verifier.host.zygote_handle import ZygoteHandle

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_parent")
    candidate = ZygoteHandle("cand-0", tmp_path, "cpu", True)._environment()
    reference = ZygoteHandle("ref-0", tmp_path, "cpu", True, writable=[str(tmp_path / "cache")])._environment()
    assert "TORCHINDUCTOR_CACHE_DIR" not in candidate
    assert reference["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache")
