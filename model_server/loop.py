"""The conversion loop: generate candidates, verify each, feed failures back, keep the fastest correct one.

Every step is reported through `emit` as one of the events of `api.py` (the ones `POST /v1/convert` streams),
so the command line and the server show the same progress. The loop stops early once the target speedup is reached,
when the deadline passes, or as soon as `cancelled()` says the caller went away.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, fields
from pathlib import Path

from model_server import api
from model_server.backends.base import Backend, BackendError, GenerationRequest
from verifier.errors import Cancelled
from verifier.pool import VerifierPool
from verifier.report import Report
from verifier.verification import check_task_file

Emit = Callable[[api.Event], None]


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
    with tempfile.TemporaryDirectory(prefix="tritonize-convert-") as scratch:
        for round_number in range(1, options.rounds + 1):
            reason = _stop_reason(options, outcome, started, cancelled)
            if reason:
                outcome.stopped = reason
                break
            emit(api.round_started(round_number, options.samples))
            request = GenerationRequest(task, options.samples, pool.device, round_number, feedback)
            try:
                sources = backend.generate(request)[: options.samples]
            except BackendError as exc:
                if not outcome.attempts:
                    raise ConvertError(str(exc)) from exc
                emit(api.error(str(exc), round_number))
                break
            if not sources:
                emit(api.note(round_number, f"{backend.name} has nothing new to try"))
                break

            def stop() -> bool:
                return cancelled() or _past(options.deadline, started)

            attempts = _verify_round(task, sources, round_number, Path(scratch), pool, options, emit, stop)
            outcome.attempts.extend(attempts)
            outcome.best = _fastest([a for a in outcome.attempts if a.correct]) or outcome.best
            feedback = [{"source": a.source, "report": a.report.to_dict()} for a in attempts if not a.correct]
            if not feedback:
                break
        if outcome.stopped == "finished":
            outcome.stopped = _stop_reason(options, outcome, started, cancelled) or "finished"
    emit(_done_event(outcome))
    return outcome


def _verify_round(
    task: Path,
    sources: list[str],
    round_number: int,
    scratch: Path,
    pool: VerifierPool,
    options: ConvertOptions,
    emit: Emit,
    cancelled: Callable[[], bool],
) -> list[Attempt]:
    paths = []
    for index, source in enumerate(sources, start=1):
        path = scratch / f"candidate_r{round_number}_{index}.py"
        path.write_text(source)
        paths.append(path)
    attempts: list[Attempt] = []
    with ThreadPoolExecutor(max_workers=pool.size) as executor:
        futures = {
            executor.submit(_verify_unless_cancelled, pool, task, path, options, cancelled): index
            for index, path in enumerate(paths, start=1)
        }
        for future in as_completed(futures):
            index = futures[future]
            report = future.result()
            if report is None:
                continue
            report.message = report.message.replace(f"{scratch}/", "")
            attempt = Attempt(round_number, index, sources[index - 1], report)
            attempts.append(attempt)
            emit(_candidate_event(attempt, len(sources)))
    return sorted(attempts, key=lambda a: a.index)


def _verify_unless_cancelled(
    pool: VerifierPool, task: Path, path: Path, options: ConvertOptions, cancelled: Callable[[], bool]
) -> Report | None:
    try:
        return pool.verify(task, path, cancelled=cancelled, trials=options.trials, timeout=options.timeout)
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
    )


def _done_event(outcome: Outcome) -> api.Done:
    best = outcome.best
    return api.done(
        outcome.stopped,
        len(outcome.attempts),
        None if best is None else {"round": best.round, "index": best.index, "source": best.source},
        None if best is None else best.report.to_dict(),
    )
