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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, fields
from pathlib import Path

from model_server import api
from model_server.backends.base import Backend, BackendError, Generated, GenerationRequest
from verifier.errors import Cancelled
from verifier.host.pool import VerifierPool
from verifier.host.verification import check_task_file
from verifier.report import Report

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
    policy: str = "hybrid"  # strict: only all-Triton candidates are written; hybrid: a faster hybrid one may be

    def __post_init__(self) -> None:
        if self.policy not in ("strict", "hybrid"):
            raise ValueError(f"policy must be strict or hybrid, got {self.policy!r}")
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
    over = threading.Event()

    def stop() -> bool:
        return over.is_set() or cancelled() or _past(options.deadline, started)

    # while the backend generates, the sandboxes start and the task's baselines are timed (a verification that
    # wants the slot in use waits for it; GPU measurements never overlap other GPU work, see verifier.host.gpu_lock)
    warmed = threading.Event()
    threading.Thread(target=_warm, args=(pool, task, options, stop, warmed), name="warm-verifier", daemon=True).start()
    try:
        _rounds(task, backend, pool, options, emit, cancelled, stop, started, outcome, warmed)
    finally:
        over.set()
    emit(_done_event(outcome))
    return outcome


def _rounds(
    task: Path,
    backend: Backend,
    pool: VerifierPool,
    options: ConvertOptions,
    emit: Emit,
    cancelled: Callable[[], bool],
    stop: Callable[[], bool],
    started: float,
    outcome: Outcome,
    warmed: threading.Event,
) -> None:
    """Generate, verify and feed failures back, round after round, into `outcome`."""
    feedback: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tritonize-convert-") as scratch:
        for round_number in range(1, options.rounds + 1):
            reason = _stop_reason(options, outcome, started, cancelled)
            if reason:
                outcome.stopped = reason
                break
            emit(api.round_started(round_number, options.samples))
            verifier = _RoundVerifier(task, round_number, Path(scratch), pool, options, emit, stop, warmed)
            failure = None
            try:
                _generate(backend, task, round_number, feedback, started, options, pool, emit, verifier)
            except BackendError as exc:
                if not verifier.submitted and not outcome.attempts:
                    verifier.close()
                    raise ConvertError(str(exc)) from exc
                failure = str(exc)
                emit(api.error(failure, round_number))
            except BaseException:
                verifier.close()
                raise
            if not verifier.submitted:
                verifier.close()
                if failure is None:
                    emit(api.note(round_number, f"{backend.name} has nothing new to try"))
                break
            attempts = verifier.finish()
            outcome.attempts.extend(attempts)
            outcome.best, outcome.why = _choose(outcome.attempts, options.policy)
            feedback = [
                {"source": a.source, "report": a.report.to_dict(), "label": a.label} for a in attempts if not a.correct
            ]
            if not feedback or failure is not None:
                break
        if outcome.stopped == "finished":
            outcome.stopped = _stop_reason(options, outcome, started, cancelled) or "finished"


def _warm(
    pool: VerifierPool, task: Path, options: ConvertOptions, stop: Callable[[], bool], warmed: threading.Event
) -> None:
    """Start the pool's sandboxes, then time the task's baselines (on a GPU), then set `warmed`; a failure is
    left to the verifications to report."""
    try:
        with contextlib.suppress(Exception):
            pool.warm()
            if not stop():
                pool.time_baseline(task, cancelled=stop, trials=options.trials, timeout=options.timeout)
    finally:
        warmed.set()


def _generated_note(
    backend: str, generated: list[Generated], asked: int, seconds: float, before: int = 0, shortfall: Sequence[str] = ()
) -> str:
    """What the backend made this round (after the `before` it handed over early), each candidate's label when
    it has one, and why fewer than asked (the backend's own reasons, where it gave any)."""
    total = before + len(generated)
    count = f"{len(generated)} {'more ' if before else ''}candidate{'s' if len(generated) != 1 else ''}"
    if total < asked:
        count += f" ({total} in all)" if before else ""
        why = f"; not made: {'; '.join(shortfall)}" if shortfall else ""
        count += f" of the {asked} asked for (all the distinct ones it has for this task{why})"
    return f"{backend} made {count} in {seconds:.1f} s" + _labels(generated, before)


def _early_note(backend: str, candidates: list[Generated], seconds: float, before: int) -> str:
    """Candidates the backend handed over while it goes on generating."""
    count = f"{len(candidates)} candidate{'s' if len(candidates) != 1 else ''}"
    return f"{backend} made {count} in {seconds:.1f} s and is still generating; verifying meanwhile" + _labels(
        candidates, before
    )


def _labels(generated: list[Generated], before: int) -> str:
    labels = [
        f"{i}. {g.label}{' [hybrid]' if g.policy == 'hybrid' else ''}" for i, g in enumerate(generated, before + 1)
    ]
    return ": " + "; ".join(labels) if any(g.label for g in generated) else ""


def _generate(
    backend: Backend,
    task: Path,
    round_number: int,
    feedback: list[dict],
    started: float,
    options: ConvertOptions,
    pool: VerifierPool,
    emit: Emit,
    verifier: _RoundVerifier,
) -> None:
    """One round's candidates, each submitted to `verifier` as soon as the backend has it. (A backend's own GPU
    work, such as Inductor's autotuning, holds the GPU shared: no timing runs beside it.)"""
    deadline = None if options.deadline is None else started + options.deadline
    generation_started = time.monotonic()

    def early(candidates: list[Generated]) -> None:
        candidates = candidates[: options.samples - len(verifier.submitted)]
        if not candidates:
            return
        seconds = time.monotonic() - generation_started
        emit(api.note(round_number, _early_note(backend.name, candidates, seconds, len(verifier.submitted))))
        verifier.submit(candidates)

    request = GenerationRequest(task, options.samples, pool.device, round_number, feedback, deadline, early)
    rest = backend.generate(request)[: options.samples - len(verifier.submitted)]
    if rest or verifier.submitted:
        seconds = time.monotonic() - generation_started
        before = len(verifier.submitted)
        note = _generated_note(backend.name, rest, options.samples, seconds, before, request.shortfall)
        emit(api.note(round_number, note))
    verifier.submit(rest)


class _RoundVerifier:
    """Verifies one round's candidates as they are submitted, `pool.size` at a time (fewer where the pool judges
    that fewer of the task's verifications fit in GPU memory at once), and reports each once the round's
    candidates are all known. (A run that fails for want of GPU memory while something else shared the GPU is
    verified again alone by the verifier itself.)"""

    def __init__(
        self,
        task: Path,
        round_number: int,
        scratch: Path,
        pool: VerifierPool,
        options: ConvertOptions,
        emit: Emit,
        cancelled: Callable[[], bool],
        warmed: threading.Event,
    ):
        self.task, self.round, self.scratch, self.pool, self.warmed = task, round_number, scratch, pool, warmed
        self.options, self.emit, self.cancelled = options, emit, cancelled
        self.submitted: list[Generated] = []
        self.paths: list[Path] = []
        self.futures: dict[Future, int] = {}
        self.executor = ThreadPoolExecutor(max_workers=pool.size)
        self.turns = threading.Condition()
        self.running = 0

    def submit(self, candidates: list[Generated]) -> None:
        """Start verifying `candidates` (more may come this round)."""
        for candidate in candidates:
            self.submitted.append(candidate)
            index = len(self.submitted)
            path = self.scratch / f"candidate_r{self.round}_{index}.py"
            path.write_text(candidate.source)
            self.paths.append(path)
            self.futures[self.executor.submit(self._verify, index)] = index

    def finish(self) -> list[Attempt]:
        """Every submitted candidate's attempt, in submission order, each reported as its verification ends."""
        attempts: list[Attempt] = []
        try:
            for future in as_completed(self.futures):
                index, report = self.futures[future], future.result()
                if report is not None:
                    attempts.append(self._record(index, report))
        finally:
            self.close()
        return sorted(attempts, key=lambda a: a.index)

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)

    def _verify(self, index: int) -> Report | None:
        """The candidate's report (None if the conversion was cancelled meanwhile)."""
        with self._turn():
            return _verify_unless_cancelled(
                self.pool,
                self.task,
                self.paths[index - 1],
                self.submitted[index - 1].policy,
                self.options,
                self.cancelled,
            )

    @contextlib.contextmanager
    def _turn(self) -> Iterator[None]:
        """Wait until one more of the task's verifications fits beside those running, which is known once the
        pool has the task's baseline: two that do not fit would both be lost, one to a retry. (Timing the baseline
        takes the GPU alone, so a second verification waiting for it loses no time.)"""
        with self.turns:
            while self.running and (not self.warmed.is_set() or self.running >= self._fitting()):
                self.turns.wait(timeout=None if self.warmed.is_set() else 0.1)
            self.running += 1
        try:
            yield
        finally:
            with self.turns:
                self.running -= 1
                self.turns.notify_all()

    def _fitting(self) -> int:
        return self.pool.fitting(self.task) or self.pool.size

    def _record(self, index: int, report: Report) -> Attempt:
        report.message = report.message.replace(f"{self.scratch}/", "")
        candidate = self.submitted[index - 1]
        attempt = Attempt(self.round, index, candidate.source, report, candidate.label, candidate.policy)
        self.emit(_candidate_event(attempt, len(self.submitted)))
        return attempt


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


def _choose(attempts: list[Attempt], policy: str = "hybrid") -> tuple[Attempt | None, str]:
    """The candidate to write, and why: the fastest correct all-Triton one, unless a hybrid one (a library call
    plus Triton) is at least HYBRID_MARGIN faster or is the only kind that is correct; under the strict policy
    never a hybrid one."""
    strict = _fastest([a for a in attempts if a.correct and a.policy == "strict"])
    hybrid = _fastest([a for a in attempts if a.correct and a.policy == "hybrid"])
    if policy == "strict":
        hybrid = None
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
