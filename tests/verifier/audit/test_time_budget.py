"""The audit never hangs: every rule finishes well inside the per-file time budget on generated worst cases,
and a file that does run out of time gets what was found plus one TRI003 naming where it stopped."""

from __future__ import annotations

import gc
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.verifier.audit.worst_cases import WORST_CASES, reassigned_in_branches
from verifier.audit import budget
from verifier.audit.config import AuditConfig, ConfigError, from_mapping
from verifier.audit.engine import audit_source

DEFAULT = AuditConfig()


def timed_audit(source: str, config: AuditConfig = DEFAULT) -> tuple[list, float]:
    """The findings and the CPU seconds they took (what the budget counts). The collector is off meanwhile: a
    collection of whatever earlier tests in this process left would weigh more than the audit of a small file, and
    whether one falls inside a run is luck."""
    gc.collect()
    gc.disable()
    try:
        started = time.thread_time()
        findings = audit_source(source, "worst.py", config)
        return findings, time.thread_time() - started
    finally:
        gc.enable()


def test_reassignments_in_branches_around_a_dot_no_longer_explode():
    """One round of `a`, `b`, `c` reassigned in an `if` inside a loop with `acc += tl.dot(a, b)` used to take
    minutes: every use re-explored every assignment, 30 levels deep."""
    findings, seconds = timed_audit(reassigned_in_branches(1))
    assert seconds < DEFAULT.time_budget
    assert "TRI003" not in {f.rule for f in findings}


@pytest.mark.parametrize("name", sorted(WORST_CASES))
def test_each_worst_case_grows_about_as_fast_as_its_size(name):
    """Finished inside the budget at size 100, and no more than 8x the time at four times the size: a linear
    rule takes 4x, a quadratic one 16x, so the margin absorbs a busy machine's noise without hiding a quadratic
    rule (the two sizes are timed in turn, three times each, so a load that comes and goes weighs on both, and
    the fastest run of each counts; benchmarks/audit_worst_cases.py prints the whole table)."""
    small, _ = timed_audit(WORST_CASES[name](100))
    assert "TRI003" not in {f.rule for f in small}, f"{name} ran out of its budget"
    sources = WORST_CASES[name](100), WORST_CASES[name](400)
    runs = [(timed_audit(sources[0])[1], timed_audit(sources[1], AuditConfig(time_budget=60))[1]) for _ in range(3)]
    small_seconds, large_seconds = (min(times) for times in zip(*runs, strict=True))
    assert large_seconds < 8 * max(small_seconds, 0.01), (small_seconds, large_seconds)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(WORST_CASES)), st.integers(min_value=1, max_value=150))
def test_generated_kernels_are_audited_within_the_budget(name, size):
    findings, seconds = timed_audit(WORST_CASES[name](size))
    assert "TRI003" not in {f.rule for f in findings}
    assert seconds < 2 * DEFAULT.time_budget


def test_running_out_of_time_keeps_what_was_found_and_says_where_it_stopped():
    source = WORST_CASES["many_kernels"](400)
    complete, _ = timed_audit(source)
    partial, seconds = timed_audit(source, AuditConfig(time_budget=0.005))
    [stopped] = [f for f in partial if f.rule == "TRI003"]
    assert stopped.severity == "info"
    assert "0.005 s time budget" in stopped.message and "kernel `kernel_" in stopped.message
    kept = [f for f in partial if f.rule != "TRI003"]
    assert 0 < len(kept) < len(complete) and all(f in complete for f in kept)
    assert seconds < 1.0


def test_the_budget_counts_the_threads_work_not_the_wall_clock():
    """Time the analysing thread spends off the CPU (the machine busy with other processes, another thread holding
    the GIL) does not use up the budget, so a busy machine does not turn a clean file into a TRI003; work does."""
    with budget.limit(0.05):
        time.sleep(0.2)
        budget.check_now()
        with pytest.raises(budget.OutOfTime):
            while True:
                budget.check()


def test_the_budget_is_a_setting():
    config = from_mapping({"time-budget": 2.5}, "pyproject.toml")
    assert config.time_budget == 2.5
    with pytest.raises(ConfigError, match="time-budget must be a positive number"):
        from_mapping({"time-budget": 0}, "pyproject.toml")
