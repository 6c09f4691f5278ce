"""The verifier under CUDA: the whole zoo, real GPU faults in a shared pool, and timing that is true."""

from __future__ import annotations

import statistics
import threading
import time

import pytest
import torch

from tests.conftest import FIXTURES
from tests.sources import pair, read_pairs
from tests.verifier.zoo_cases import zoo_cases
from verifier import Task, VerifierPool
from verifier.host import gpu_lock
from verifier.host.pool import VERIFICATION_FOOTPRINT

pytestmark = pytest.mark.gpu
CASES = zoo_cases()
ADD = FIXTURES / "tasks/add.py"
GOOD = FIXTURES / "candidates/add_ok.py"


@pytest.fixture(scope="module")
def gpu_pool():
    with VerifierPool(size=2, device="cuda") as pool:
        yield pool


@pytest.fixture(scope="module")
def gpu_reports(gpu_pool):
    pairs = [(c.task, c.candidate) for c in CASES]
    reports = gpu_pool.verify_many(read_pairs(pairs), timeout=30, memory_limit=8 * 1024**3, trials=3, timing=False)
    return dict(zip([c.id for c in CASES], reports))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_zoo_verdict_on_gpu(case, gpu_reports):
    report = gpu_reports[case.id]
    assert report.verdict == case.verdict, report.message
    assert set(case.rules) <= {v["rule"] for v in report.violations}
    assert report.device == "cuda"
    assert report.interpreter is False


@pytest.mark.parametrize(
    ("hostile", "verdict"), [("gpu/illegal_access.py", "runtime_error"), ("zoo/hang_in_kernel.py", "timeout")]
)
def test_gpu_fault_then_correct_in_the_same_pool(gpu_pool, hostile, verdict):
    bad = gpu_pool.verify(*pair(ADD, FIXTURES / hostile), trials=2, timeout=20, timing=False)
    assert bad.verdict == verdict, bad.message
    good = gpu_pool.verify(*pair(ADD, GOOD), trials=2, timing=False)
    assert good.verdict == "correct", good.message


def test_a_parent_that_asked_inductor_for_its_cache_dir_still_starts_sandboxes(tmp_path, monkeypatch):
    """Inductor writes its cache dir into the asking process's environment (trl's imports ask): a sandbox that
    inherited it failed to start, since it cannot create that directory."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "parent-inductor-cache"))
    with VerifierPool(size=1, device="cuda") as pool:
        report = pool.verify(*pair(ADD, GOOD), trials=2, timing=False)
    assert report.verdict == "correct", report.message


def test_timing_reports_all_three_medians(gpu_pool):
    report = gpu_pool.verify(*pair(FIXTURES / "tasks/softmax.py", FIXTURES / "candidates/softmax_ok.py"), trials=2)
    assert report.verdict == "correct", report.message
    timing = report.timing
    assert timing["candidate_ms"] > 0 and timing["eager_ms"] > 0
    assert timing["compile_ms"] is None or timing["compile_ms"] > 0
    assert timing["speedup_vs_eager"] == pytest.approx(timing["eager_ms"] / timing["candidate_ms"])


def test_copy_bound_kernel_reaches_70_percent_of_copy_bandwidth(gpu_pool):
    import torch

    report = gpu_pool.verify(
        *pair(FIXTURES / "gpu/copy.py", FIXTURES / "gpu/copy_triton.py"), trials=1, compile_baseline=False, timeout=300
    )
    assert report.verdict == "correct", report.message
    moved = 2 * 64 * 1024 * 1024 * 4
    kernel_bandwidth = moved / (report.timing["candidate_ms"] / 1e3)
    device_bandwidth = _copy_bandwidth(torch, 64 * 1024 * 1024)
    print(f"kernel {kernel_bandwidth / 1e12:.2f} TB/s, torch copy {device_bandwidth / 1e12:.2f} TB/s")
    assert kernel_bandwidth >= 0.7 * device_bandwidth


def _copy_bandwidth(torch, n: int) -> float:
    """Bytes read plus written per second by a device-to-device copy, median of 50."""
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    times = []
    for _ in range(50):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return 2 * n * 4 / statistics.median(times)


@pytest.mark.slow
def test_a_6_gib_task_verifies_under_a_4_gib_host_memory_limit(gpu_pool):
    """KernelBench's ReLU size (4096 x 393216 fp32): inputs are drawn on the device in each sandbox and outputs
    stream to the comparer, so the sandboxes' host memory stays far below the task's data."""
    published = FIXTURES.parent.parent / "benchmarks/tasks/published"
    report = gpu_pool.verify(
        *pair(published / "relu_6gib.py", published / "triton/relu_6gib.py"),
        memory_limit=4 * 1024**3,
        compile_baseline=False,
    )
    assert report.verdict == "correct", report.message
    assert report.max_abs_error == 0
    assert report.timing["candidate_ms"] > 0


@pytest.mark.slow
def test_the_baseline_tells_how_many_verifications_of_a_task_fit_at_once():
    """A tiny task leaves room for several verifications beside each other; one whose eager run holds 12 GiB
    (relu_6gib) leaves room for fewer, and for one only where two would need more than the GPU has."""
    add, huge = Task.from_file(ADD), Task.from_file(FIXTURES.parent.parent / "benchmarks/tasks/published/relu_6gib.py")
    with VerifierPool(size=1, device="cuda") as pool:
        assert pool.fitting(add) is None and pool.fitting(huge) is None, "nothing is known before a baseline"
        for task in (add, huge):
            pool.time_baseline(task, compile_baseline=False)
        total = torch.cuda.get_device_properties(0).total_memory
        assert pool.fitting(add) >= 2
        assert pool.fitting(huge) < pool.fitting(add)
        assert pool.fitting(huge) * VERIFICATION_FOOTPRINT * 12 * 2**30 <= total


def test_the_baseline_compiles_beside_other_gpu_work_and_only_its_timing_waits_for_the_gpu_alone(tmp_path, monkeypatch):
    """torch.compile's compile of the task takes seconds: it shares the GPU (with a capture's compile, say), so
    nothing waits for it; the timing run that follows finds it in Inductor's cache and waits for the GPU alone."""
    monkeypatch.setenv("TRITONIZE_CACHE", str(tmp_path))  # an empty Inductor cache, and a lock of the test's own
    task = Task.from_file(ADD)
    with VerifierPool(size=1, device="cuda") as pool:
        pool.warm()
        timed = threading.Thread(target=pool.time_baseline, args=(task,), daemon=True)
        with gpu_lock.sharing():
            timed.start()
            deadline = time.monotonic() + 120
            while not any((tmp_path / "inductor" / "fxgraph").rglob("*")) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert any((tmp_path / "inductor" / "fxgraph").rglob("*")), "the compile waited for the GPU alone"
            time.sleep(1.0)
            assert timed.is_alive() and not pool.shared.baselines, "the timing ran while the GPU was shared"
        timed.join(120)
        [baseline] = pool.shared.baselines.values()
        assert baseline["eager"]["median_ms"] > 0 and baseline["compiled"]["median_ms"] > 0, baseline


def test_a_baseline_runs_on_a_slot_of_its_own_and_tells_the_task_s_memory_before_its_compile(tmp_path, monkeypatch):
    """A conversion's candidates verify beside its baseline: the baseline does not wait for a verification's slot
    (here the pool's only one is held throughout), and the pool can tell how many of the task's verifications
    fit once its one eager call has run, seconds before the compile (cold here) and the timings are done."""
    monkeypatch.setenv("TRITONIZE_CACHE", str(tmp_path))
    task = Task.from_file(ADD)
    with VerifierPool(size=1, device="cuda") as pool, pool._slot():
        timed = threading.Thread(target=pool.time_baseline, args=(task,), daemon=True)
        timed.start()
        known_at = None
        deadline = time.monotonic() + 180
        while timed.is_alive() and time.monotonic() < deadline:
            if known_at is None and pool.fitting(task) is not None:
                known_at = time.monotonic()
            time.sleep(0.05)
        done_at = time.monotonic()
        assert not timed.is_alive(), "the baseline waited for the verification slot"
        [baseline] = pool.shared.baselines.values()
        assert baseline["compiled"]["median_ms"] > 0, baseline
        assert known_at is not None and done_at - known_at > 1.0, (known_at, done_at)
        assert pool.fitting(task) >= 2


def test_verifications_of_one_task_at_once_compile_and_time_its_baselines_once(tmp_path, monkeypatch):
    """The second waits for the first one's baselines instead of compiling the task again beside it."""
    monkeypatch.setenv("TRITONIZE_CACHE", str(tmp_path))
    with VerifierPool(size=2, device="cuda") as pool:
        reports = pool.verify_many(read_pairs([(ADD, GOOD), (ADD, GOOD)]), trials=2)
    assert all(r.verdict == "correct" for r in reports), [r.message for r in reports]
    assert ["baseline_compile_s" in r.phases for r in reports].count(True) == 1, [r.phases for r in reports]
    assert sorted(r.timing["baseline_cached"] for r in reports) == [False, True]


def test_sanitize_sees_an_out_of_bounds_read_that_guard_zones_cannot(gpu_pool):
    task, candidate = FIXTURES / "tasks/relu.py", FIXTURES / "gpu/reads_past_end.py"
    plain = gpu_pool.verify(*pair(task, candidate), trials=2, timing=False)
    assert plain.verdict == "correct", plain.message
    report = gpu_pool.verify(*pair(task, candidate), trials=2, timing=False, sanitize=True)
    assert report.verdict == "incorrect", report.message
    assert report.message.startswith("TRI359: compute-sanitizer memcheck found"), report.message
    found = [v["message"] for v in report.violations if v["rule"] == "TRI359"]
    assert found and "read" in found[0] and "_relu_kernel" in found[0], found
    assert report.reward == 0.0


def test_sanitize_passes_a_correct_kernel_and_says_so(gpu_pool):
    report = gpu_pool.verify(
        *pair(FIXTURES / "tasks/relu.py", FIXTURES / "candidates/relu_ok.py"), trials=2, timing=False, sanitize=True
    )
    assert report.verdict == "correct", (report.message, report.warnings)
    assert report.message.endswith("compute-sanitizer memcheck saw no memory errors")
    assert not report.warnings, report.warnings
    assert report.phases["sanitize_s"] > 0


def test_hybrid_coverage_on_the_gpu_is_tritons_share_of_kernel_time(gpu_pool):
    hybrid = gpu_pool.verify(
        *pair(FIXTURES / "hybrid/linear_relu.py", FIXTURES / "hybrid/linear_relu_hybrid.py"),
        trials=2,
        timing=False,
        policy="hybrid",
    )
    assert hybrid.verdict == "correct" and hybrid.reward == 0, hybrid.message
    assert 0 < hybrid.coverage < 1, hybrid.coverage  # the GEMM's kernels take part of the time
    assert hybrid.library_calls == ["torch.nn.functional.linear"]
    assert "of the kernel time in Triton (hybrid policy)" in hybrid.summary(), hybrid.summary()
    triton_only = gpu_pool.verify(*pair(ADD, GOOD), trials=2, timing=False)
    assert triton_only.coverage == 1.0, triton_only.warnings


def test_every_sandbox_layer_is_there_on_the_gpu_box(gpu_pool):
    """Bubblewrap's namespaces and read-only view, the seccomp filter and a memory cgroup, with CUDA working."""
    report = gpu_pool.verify(*pair(ADD, GOOD), trials=2, timing=False)
    assert report.verdict == "correct", report.message
    assert report.isolation["method"] == "bubblewrap" and report.isolation["missing"] == [], report.isolation


CROWDING_TASK = """
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        total = torch.cuda.get_device_properties(x.device).total_memory
        scratch = torch.ones(int(0.55 * total), dtype=torch.uint8, device=x.device)  # more than half the GPU
        time.sleep(1.0)  # long enough that two verifications' runs meet
        return x * 2 + scratch[0].float() * 0


def get_inputs():
    return [torch.randn(1024, 1024)]


def get_init_inputs():
    return []
"""
DOUBLING = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _double[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""


def test_a_task_that_fits_alone_is_not_blamed_for_the_pools_crowding(tmp_path):
    """Two verifications of a task that takes more than half the GPU: side by side one runs out of memory; it
    is verified again alone, and both are correct (the task is not reported broken)."""
    task, candidate = tmp_path / "big_task.py", tmp_path / "double.py"
    task.write_text(CROWDING_TASK)
    candidate.write_text(DOUBLING)
    with VerifierPool(size=2, device="cuda") as pool:
        reports = pool.verify_many(
            read_pairs([(task, candidate), (task, candidate)]), trials=3, timing=False, timeout=120
        )
    assert [r.verdict for r in reports] == ["correct", "correct"], [r.message for r in reports]
    alone = "the task's own run ran out of device memory beside other work: verified again alone"
    assert any(alone in r.warnings for r in reports), [r.warnings for r in reports]
