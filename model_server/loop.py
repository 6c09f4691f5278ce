"""The conversion loop: generate candidates, verify each, feed failures back, keep the fastest correct one.

Every step is reported through `emit` as one of the events of `api.py` (the ones `POST /v1/convert` streams),
so the command line and the server show the same progress. The loop stops early once the target speedup is reached,
when the deadline passes, or as soon as `cancelled()` says the caller went away.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from model_server import api
from model_server.api import ConvertRequest
from model_server.backends.base import Backend, BackendError, Generated, GenerationRequest
from verifier import Cancelled, Report, Task, UsageError, VerifierPool, dynamic_line, dynamic_positions, policy_line

Emit = Callable[[api.Event], None]
HEARTBEAT_SECONDS = 5.0
HYBRID_MARGIN = 1.05  # a hybrid candidate is chosen over an all-Triton one only when at least this much faster


class ConvertError(Exception):
    """The conversion could not start or produced nothing to verify; the message says why."""


@dataclass
class Attempt:
    """One verified candidate."""

    round: int
    index: int
    source: str
    report: Report
    label: str = ""
    policy: str = "strict"
    dynamic: str | None = None  # the dimensions it was verified at other sizes along

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

    @property
    def kernel(self) -> str | None:
        """The winner as it is written out: first a line naming the policy it was verified under, then, where it
        accepts other sizes, a line naming the dimensions it was verified at other sizes along."""
        if self.best is None:
            return None
        dynamic = dynamic_line(self.best.dynamic) if self.best.dynamic else ""
        return policy_line(self.best.policy, self.best.report.library_calls) + dynamic + self.best.source


def convert(
    request: ConvertRequest,
    backend: Backend,
    pool: VerifierPool,
    emit: Emit = lambda event: None,
    cancelled: Callable[[], bool] = lambda: False,
    origin: str = "",
) -> Outcome:
    """Run the loop on the request's task with candidates from `backend`, verified on `pool`'s device. `origin`
    names the task in messages (its path, where it came from a file); a task that is no task is a TaskError."""
    task = Task(request.task, request.task_name, origin)
    if request.dynamic is not None:
        try:
            dynamic_positions(request.dynamic, task.tree, task.origin)
        except UsageError as exc:
            raise ConvertError(str(exc)) from None
    run = _Run(task, request, backend, pool, emit, cancelled)
    # while the backend generates, the sandboxes start and the task's baselines are timed (on a GPU on the pool's
    # baseline slot, beside the candidates' verifications; GPU measurements never overlap other GPU work)
    threading.Thread(target=run.warm, name="warm-verifier", daemon=True).start()
    try:
        run.rounds()
    finally:
        run.over.set()
    emit(_done_event(run.outcome))
    return run.outcome


@dataclass
class _Run:
    """One conversion's state: what it was asked, what it works with, and what it has found so far."""

    task: Task
    request: ConvertRequest
    backend: Backend
    pool: VerifierPool
    emit: Emit
    cancelled: Callable[[], bool]
    started: float = field(default_factory=time.monotonic)
    outcome: Outcome = field(default_factory=Outcome)
    over: threading.Event = field(default_factory=threading.Event)  # the loop ended: background work stops
    warmed: threading.Event = field(default_factory=threading.Event)  # the sandboxes and baselines are ready

    def stop(self) -> bool:
        return self.over.is_set() or self.cancelled() or _past(self.request.deadline, self.started)

    def warm(self) -> None:
        """Start the pool's sandboxes, then time the task's baselines (on a GPU), then set `warmed`; a failure
        is left to the verifications to report."""
        try:
            with contextlib.suppress(Exception):
                self.pool.warm()
                if not self.stop():
                    self.pool.time_baseline(
                        self.task, cancelled=self.stop, trials=self.request.trials, timeout=self.request.timeout
                    )
        finally:
            self.warmed.set()

    def rounds(self) -> None:
        """Generate, verify and feed failures back, round after round, into `outcome`."""
        outcome, feedback = self.outcome, []
        for round_number in range(1, self.request.rounds + 1):
            reason = _stop_reason(self.request, outcome, self.started, self.cancelled)
            if reason:
                outcome.stopped = reason
                break
            self.emit(api.round_started(round_number, self.request.samples))
            verifier = _RoundVerifier(self, round_number)
            failure = None
            try:
                self.generate(round_number, feedback, verifier)
            except BackendError as exc:
                if self.stop():  # the backend stopped because the conversion is over for its caller
                    verifier.close()
                    break
                if not verifier.submitted and not outcome.attempts:
                    verifier.close()
                    raise ConvertError(str(exc)) from exc
                failure = str(exc)
                self.emit(api.error(failure, round_number))
            except BaseException:
                verifier.close()
                raise
            if not verifier.submitted:
                verifier.close()
                if failure is None:
                    self.emit(api.note(round_number, f"{self.backend.name} has nothing new to try"))
                break
            attempts = verifier.finish()
            outcome.attempts.extend(attempts)
            outcome.best, outcome.why = _choose(outcome.attempts, self.request.policy)
            feedback = [
                {"source": a.source, "report": a.report.to_dict(), "label": a.label} for a in attempts if not a.correct
            ]
            if failure is not None or not (feedback or self.to_improve()):
                break
        if outcome.stopped == "finished":
            outcome.stopped = _stop_reason(self.request, outcome, self.started, self.cancelled) or "finished"

    def generate(self, round_number: int, feedback: list[dict], verifier: _RoundVerifier) -> None:
        """One round's candidates, each batch submitted to `verifier` as soon as the backend has it. (A backend's
        own GPU work, such as Inductor's autotuning, holds the GPU shared: no timing runs beside it.)"""
        samples = self.request.samples
        deadline = None if self.request.deadline is None else self.started + self.request.deadline
        request = GenerationRequest(
            self.task,
            samples,
            self.pool.device,
            round_number,
            feedback,
            deadline,
            best=self.to_improve(),
            stopped=self.stop,
            dynamic=self.request.dynamic,
        )
        generation_started = time.monotonic()
        waiting = _Heartbeat(self.emit, round_number, self.backend.name, generation_started)
        try:
            for batch in self.backend.generate(request):
                waiting.stop()
                candidates = batch.candidates[: samples - len(verifier.submitted)]
                seconds = time.monotonic() - generation_started
                if batch.more:
                    if candidates:
                        note = _early_note(self.backend.name, candidates, seconds, len(verifier.submitted))
                        self.emit(api.note(round_number, note))
                    verifier.submit(candidates)
                    continue
                if candidates or verifier.submitted:
                    before = len(verifier.submitted)  # those handed over while the backend went on generating
                    note = _generated_note(self.backend.name, candidates, samples, seconds, before, batch.not_made)
                    self.emit(api.note(round_number, note + (f" [{batch.spent}]" if batch.spent else "")))
                verifier.submit(candidates)
        finally:
            waiting.stop()

    def to_improve(self) -> dict | None:
        """For a backend that improves on the best verified candidate: that candidate and its timing."""
        best = self.outcome.best
        if best is None or not getattr(self.backend, "improves", False):
            return None
        return {"source": best.source, "label": best.label, "timing": best.report.timing or {}}


class _Heartbeat:
    """A note every HEARTBEAT_SECONDS while a round waits for the backend's first candidates (Inductor compiling
    the task for 10-50 s), so the user sees the conversion is alive; `stop` once something arrives."""

    def __init__(self, emit: Emit, round_number: int, backend: str, started: float):
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # no note after `stop` returns

        def beat() -> None:
            while not self._stopped.wait(HEARTBEAT_SECONDS):
                with self._lock:
                    if not self._stopped.is_set():
                        waited = time.monotonic() - started
                        emit(api.note(round_number, f"{backend} is still generating ({waited:.0f} s)"))

        self._thread = threading.Thread(target=beat, name="tritonize-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._stopped.set()


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


class _RoundVerifier:
    """Verifies one round's candidates as they are submitted, `pool.size` at a time (fewer where the pool judges
    that fewer of the task's verifications fit in GPU memory at once), and reports each once the round's
    candidates are all known. (A run that fails for want of GPU memory while something else shared the GPU is
    verified again alone by the verifier itself.)"""

    def __init__(self, run: _Run, round_number: int):
        self.run, self.round = run, round_number
        self.submitted: list[Generated] = []
        self.futures: dict[Future, int] = {}
        self.executor = ThreadPoolExecutor(max_workers=run.pool.size)
        self.turns = threading.Condition()
        self.running = 0

    def submit(self, candidates: list[Generated]) -> None:
        """Start verifying `candidates` (more may come this round)."""
        for candidate in candidates:
            self.submitted.append(candidate)
            index = len(self.submitted)
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
        run, candidate = self.run, self.submitted[index - 1]
        with self._turn():
            try:
                return run.pool.verify(
                    run.task,
                    candidate.source,
                    cancelled=run.stop,
                    candidate_origin=f"candidate_r{self.round}_{index}.py",
                    trials=run.request.trials,
                    timeout=run.request.timeout,
                    policy=candidate.policy,
                    dynamic=_dynamic(candidate, run.request),
                )
            except Cancelled:
                return None

    @contextlib.contextmanager
    def _turn(self) -> Iterator[None]:
        """Wait until one more of the task's verifications fits beside those running (two that do not fit would
        both be lost, one to a retry)."""
        warmed = self.run.warmed
        with self.turns:
            while self.running and self.running >= self._room(warmed.is_set()):
                self.turns.wait(timeout=None if warmed.is_set() else 0.1)
            self.running += 1
        try:
            yield
        finally:
            with self.turns:
                self.running -= 1
                self.turns.notify_all()

    def _room(self, warmed: bool) -> int:
        """How many of the task's verifications may run at once: as many as fit in GPU memory (the pool's size
        where it cannot tell, as on a CPU), one fewer while the task's baseline runs beside them, and one alone
        until the pool knows the task's memory (its first measurement of the baseline, a second or two)."""
        fitting = self.run.pool.fitting(self.run.task)
        if warmed:
            return fitting or self.run.pool.size
        return 1 if fitting is None else max(1, fitting - 1)

    def _record(self, index: int, report: Report) -> Attempt:
        candidate = self.submitted[index - 1]
        attempt = Attempt(
            self.round,
            index,
            candidate.source,
            report,
            candidate.label,
            candidate.policy,
            _dynamic(candidate, self.run.request),
        )
        self.run.emit(_candidate_event(attempt, len(self.submitted)))
        return attempt


def _stop_reason(request: ConvertRequest, outcome: Outcome, started: float, cancelled: Callable[[], bool]) -> str:
    if cancelled():
        return "cancelled"
    if _past(request.deadline, started):
        return "deadline"
    best = outcome.best
    if best is not None and request.target_speedup is not None:
        speedup = (best.report.timing or {}).get("speedup_vs_eager")
        if speedup is not None and speedup >= request.target_speedup:
            return "target_speedup"
    return ""


def _past(deadline: float | None, started: float) -> bool:
    return deadline is not None and time.monotonic() - started >= deadline


def _choose(attempts: list[Attempt], policy: str) -> tuple[Attempt | None, str]:
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


def _dynamic(candidate: Generated, request: ConvertRequest) -> str | None:
    """The dimensions a candidate is verified at other sizes along: where the backend says (the inductor backend
    names those its compile let vary), its own, else the request's; none where the request asked for none."""
    if request.dynamic is None:
        return None
    return candidate.dynamic or request.dynamic


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
            "source": outcome.kernel,
            "label": best.label,
            "policy": best.policy,
            "dynamic": best.dynamic,
            "why": outcome.why,
        }
    return api.done(outcome.stopped, len(outcome.attempts), chosen, None if best is None else best.report.to_dict())
