"""The conversion loop: generate candidates, verify each, feed failures back, keep the fastest correct one.

Every step is reported through `emit` as one of the events of `api.py` (the ones `POST /v1/convert` streams),
so the command line and the server show the same progress. The loop stops early once the target speedup is reached,
when the deadline passes, or as soon as `cancelled()` says the caller went away.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, fields
from pathlib import Path

from model_server import api
from model_server.backends.base import Backend, BackendError, Generated, GenerationRequest
from verifier.errors import Cancelled, TaskError
from verifier.pool import VerifierPool
from verifier.report import Report
from verifier.verification import check_task_file

Emit = Callable[[api.Event], None]
HYBRID_MARGIN = 1.05  # a hybrid candidate is chosen over an all-Triton one only when at least this much faster


class ConvertError(Exception):
    """The conversion could not start or produced nothing to verify; the message says why."""


@dataclass
class ConvertOptions:
    """How much to try: candidates per round, repair rounds, when to stop, how hard to verify."""

    samples: int = 4
    rounds: int = 2
    target_speedup: float | None = None
    deadline: float | None = None
    trials: int = 5
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if self.samples < 1 or self.rounds < 1:
            raise ValueError(f"samples and rounds must be at least 1, got {self.samples} and {self.rounds}")
        if self.deadline is not None and self.deadline <= 0:
            raise ValueError(f"deadline must be positive seconds, got {self.deadline}")

    @classmethod
    def of(cls, source: object) -> ConvertOptions:
        """The options `source` (parsed arguments, a request body) has attributes for; the rest keep defaults."""
        return cls(**{f.name: getattr(source, f.name) for f in fields(cls) if hasattr(source, f.name)})


@dataclass
class Attempt:
    """One verified candidate."""

    round: int
    index: int
    source: str
    report: Report
    label: str = ""
    policy: str = "strict"

    @property
    def correct(self) -> bool:
        return self.report.passed

    @property
    def candidate_ms(self) -> float | None:
        return (self.report.timing or {}).get("candidate_ms")


@dataclass
class Outcome:
    """Everything that was tried, and the winner (None when no candidate was correct)."""

    attempts: list[Attempt] = field(default_factory=list)
    best: Attempt | None = None
    why: str = ""
    stopped: str = "finished"


def convert(
    task: Path,
    backend: Backend,
    pool: VerifierPool,
    options: ConvertOptions,
    emit: Emit = lambda event: None,
    cancelled: Callable[[], bool] = lambda: False,
) -> Outcome:
    """Run the loop on `task` with candidates from `backend`, verified on `pool`'s device."""
    check_task_file(task)
    started = time.monotonic()
    outcome = Outcome()
    feedback: list[dict] = []
    warming = threading.Thread(target=_warm, args=(pool,), name="warm-verifier", daemon=True)
    warming.start()  # the sandboxes start while the backend generates, instead of after it
    with tempfile.TemporaryDirectory(prefix="tritonize-convert-") as scratch:
        for round_number in range(1, options.rounds + 1):
            reason = _stop_reason(options, outcome, started, cancelled)
            if reason:
                outcome.stopped = reason
                break
            emit(api.round_started(round_number, options.samples))
            deadline = None if options.deadline is None else started + options.deadline
            request = GenerationRequest(task, options.samples, pool.device, round_number, feedback, deadline)
            generation_started = time.monotonic()
            try:
                generated = backend.generate(request)[: options.samples]
            except BackendError as exc:
                if not outcome.attempts:
                    raise ConvertError(str(exc)) from exc
                emit(api.error(str(exc), round_number))
                break
            if not generated:
                emit(api.note(round_number, f"{backend.name} has nothing new to try"))
                break
            seconds = time.monotonic() - generation_started
            emit(api.note(round_number, _generated_note(backend.name, generated, options.samples, seconds)))

            def stop() -> bool:
                return cancelled() or _past(options.deadline, started)

            warming.join()

            attempts = _verify_round(task, generated, round_number, Path(scratch), pool, options, emit, stop)
            outcome.attempts.extend(attempts)
            outcome.best, outcome.why = _choose(outcome.attempts)
            feedback = [
                {"source": a.source, "report": a.report.to_dict(), "label": a.label} for a in attempts if not a.correct
            ]
            if not feedback:
                break
        if outcome.stopped == "finished":
            outcome.stopped = _stop_reason(options, outcome, started, cancelled) or "finished"
    emit(_done_event(outcome))
    return outcome


def _warm(pool: VerifierPool) -> None:
    """Start the pool's sandboxes; a failure to start is left to the first verification to report."""
    with contextlib.suppress(Exception):
        pool.warm()


def _generated_note(backend: str, generated: list[Generated], asked: int, seconds: float) -> str:
    """What the backend made this round, each candidate's label when it has one, and why fewer than asked."""
    count = f"{len(generated)} candidate{'s' if len(generated) != 1 else ''}"
    if len(generated) < asked:
        count += f" of the {asked} asked for (all the distinct ones it has for this task)"
    labels = [f"{i}. {g.label}{' [hybrid]' if g.policy == 'hybrid' else ''}" for i, g in enumerate(generated, 1)]
    labelled = "; ".join(labels) if any(g.label for g in generated) else ""
    return f"{backend} made {count} in {seconds:.1f} s" + (f": {labelled}" if labelled else "")


def _verify_round(
    task: Path,
    generated: list[Generated],
    round_number: int,
    scratch: Path,
    pool: VerifierPool,
    options: ConvertOptions,
    emit: Emit,
    cancelled: Callable[[], bool],
) -> list[Attempt]:
    paths = []
    for index, candidate in enumerate(generated, start=1):
        path = scratch / f"candidate_r{round_number}_{index}.py"
        path.write_text(candidate.source)
        paths.append(path)
    attempts: list[Attempt] = []

    def verify(index: int, alone: bool = False) -> Report | str | None:
        """The candidate's report; the string "crowded" where the task's own run (beside another verification)
        found no device memory: only a run alone can tell the task's fault from the crowd's."""
        try:
            return _verify_unless_cancelled(
                pool, task, paths[index - 1], generated[index - 1].policy, options, cancelled
            )
        except TaskError as exc:
            if alone or not _crowded(exc):
                raise
            return "crowded"

    def record(index: int, report: Report) -> None:
        report.message = report.message.replace(f"{scratch}/", "")
        candidate = generated[index - 1]
        attempt = Attempt(round_number, index, candidate.source, report, candidate.label, candidate.policy)
        attempts.append(attempt)
        emit(_candidate_event(attempt, len(generated)))

    crowded = []
    shared = len(paths) > 1 and pool.size > 1
    with ThreadPoolExecutor(max_workers=pool.size) as executor:
        futures = {executor.submit(verify, index, not shared): index for index in range(1, len(paths) + 1)}
        for future in as_completed(futures):
            index, report = futures[future], future.result()
            if report == "crowded" or (report is not None and shared and _crowded(report)):
                crowded.append(index)
            elif report is not None:
                record(index, report)
    for index in sorted(crowded):
        note = f"candidate {index} ran out of GPU memory while another verification shared the GPU: verifying it alone"
        emit(api.note(round_number, note))
        report = verify(index, alone=True)
        if report is not None:
            record(index, report)
    return sorted(attempts, key=lambda a: a.index)


def _crowded(failure: Report | TaskError) -> bool:
    """Whether a run failed for want of device memory (which a verification alongside may have held)."""
    if isinstance(failure, TaskError):
        return "CUDA out of memory" in str(failure)
    return failure.verdict == "runtime_error" and "CUDA out of memory" in failure.message


def _verify_unless_cancelled(
    pool: VerifierPool, task: Path, path: Path, policy: str, options: ConvertOptions, cancelled: Callable[[], bool]
) -> Report | None:
    try:
        return pool.verify(
            task, path, cancelled=cancelled, trials=options.trials, timeout=options.timeout, policy=policy
        )
    except Cancelled:
        return None


def _stop_reason(options: ConvertOptions, outcome: Outcome, started: float, cancelled: Callable[[], bool]) -> str:
    if cancelled():
        return "cancelled"
    if _past(options.deadline, started):
        return "deadline"
    best = outcome.best
    if best is not None and options.target_speedup is not None:
        speedup = (best.report.timing or {}).get("speedup_vs_eager")
        if speedup is not None and speedup >= options.target_speedup:
            return "target_speedup"
    return ""


def _past(deadline: float | None, started: float) -> bool:
    return deadline is not None and time.monotonic() - started >= deadline


def _choose(attempts: list[Attempt]) -> tuple[Attempt | None, str]:
    """The candidate to write, and why: the fastest correct all-Triton one, unless a hybrid one (a library call
    plus Triton) is at least HYBRID_MARGIN faster or is the only kind that is correct."""
    strict = _fastest([a for a in attempts if a.correct and a.policy == "strict"])
    hybrid = _fastest([a for a in attempts if a.correct and a.policy == "hybrid"])
    if strict is None and hybrid is None:
        return None, ""
    if hybrid is None:
        return strict, "the fastest correct candidate" if strict.candidate_ms is not None else "correct"
    if strict is None:
        return hybrid, "hybrid (a library call does part of the work): no all-Triton candidate was correct"
    if strict.candidate_ms and hybrid.candidate_ms and strict.candidate_ms > HYBRID_MARGIN * hybrid.candidate_ms:
        ratio = strict.candidate_ms / hybrid.candidate_ms
        return (
            hybrid,
            f"hybrid (a library call does part of the work): {ratio:.2f}x faster than the fastest all-Triton candidate",
        )
    return strict, "all Triton" + (
        f"; the hybrid candidate is not {HYBRID_MARGIN:.2f}x faster" if hybrid.candidate_ms is not None else ""
    )


def _fastest(correct: list[Attempt]) -> Attempt | None:
    """The correct attempt with the lowest candidate time (the first correct one when nothing was timed)."""
    if not correct:
        return None
    return min(correct, key=lambda a: (a.candidate_ms is None, a.candidate_ms or 0.0, a.round, a.index))


def _candidate_event(attempt: Attempt, of: int) -> api.Candidate:
    report = attempt.report
    return api.candidate(
        attempt.round,
        attempt.index,
        of,
        report.verdict,
        report.reward,
        report.max_abs_error,
        report.timing or {},
        report.message,
        attempt.label,
        attempt.policy,
    )


def _done_event(outcome: Outcome) -> api.Done:
    best = outcome.best
    chosen = None
    if best is not None:
        chosen = {
            "round": best.round,
            "index": best.index,
            "source": best.source,
            "label": best.label,
            "policy": best.policy,
            "why": outcome.why,
        }
    return api.done(outcome.stopped, len(outcome.attempts), chosen, None if best is None else best.report.to_dict())
