"""What every backend provides: its models, and candidates for a task (fresh or as a repair), yielded in
batches as they are ready."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from verifier import Task


class BackendError(Exception):
    """The backend cannot produce candidates for this request; the message says why and what to do."""


@dataclass
class GenerationRequest:
    """One round of generation: the task, how many candidates, and the reports of the last round's failures.
    `prompt`, where set, is a benchmark's own instruction (TritonBench): a model backend sends it as it is, as the
    one user message, instead of a prompt built from the task, which is then None. The `inductor` backend converts
    a task and cannot take it (`training.eval` refuses the pairing)."""

    task: Task | None
    samples: int
    device: str
    round: int = 1
    feedback: list[dict] = field(default_factory=list)
    deadline: float | None = None  # time.monotonic() by which generation must return
    # True once the conversion is over for its caller (cancelled, deadline passed): work in flight stops
    stopped: Callable[[], bool] = field(default=lambda: False, repr=False, compare=False)
    # Sampling of model backends (their own defaults where None); backends without a model ignore them.
    temperature: float | None = None
    max_tokens: int | None = None
    # For a backend that `improves`: the best verified candidate so far (source, label, its report's timing)
    best: dict | None = None
    prompt: str | None = None
    # A `verifier.dynamic` spec: the kernels must accept other sizes along these dimensions
    dynamic: str | None = None

    def seconds_left(self, limit: float) -> float:
        """How long generation may still take: `limit`, cut to what the deadline leaves."""
        if self.deadline is None:
            return limit
        return min(limit, self.deadline - time.monotonic())


@dataclass(frozen=True)
class Generated:
    """One candidate module and what it is.

    `label` says how it was made ("Inductor max-autotune template, tf32x3, BLOCK 128x128x32, 8 warps"; empty for
    a model's sample). `policy` is how it is verified: `hybrid` when a library call (cuBLAS, cuDNN, ATen) does part
    of the work on purpose, so the verifier allows it, reports the Triton share and never rewards it. `dynamic`:
    the dimensions a backend compiled it for any size along (the inductor backend's `auto` becomes those that could
    vary), verified at other sizes there.
    """

    source: str
    label: str = ""
    policy: str = "strict"
    dynamic: str | None = None  # the dimensions it accepts any size along, where it says (else the request's)


@dataclass(frozen=True)
class Batch:
    """Candidates a backend has ready. `more`: it goes on generating (the loop verifies these meanwhile).
    `not_made`: why it made fewer candidates than asked (a variant it could not make, a compile that failed),
    one short line each, for the user's progress line. `spent`: where the backend's time went ("default compile
    12.3 s"), for the same line."""

    candidates: list[Generated]
    more: bool = False
    not_made: tuple[str, ...] = ()
    spent: str = ""


class Backend(Protocol):
    """`improves` (optional, False where absent): the loop goes on after a round with no failures, handing the
    backend the best verified candidate so far (`GenerationRequest.best`) to improve on."""

    name: str

    def models(self) -> list[str]:
        """Model ids this backend serves (listed at /v1/models)."""
        ...

    def generate(self, request: GenerationRequest) -> Iterator[Batch]:
        """Candidates (KernelBench `ModelNew` modules), at most `request.samples` of them in all, in batches as
        they are ready; nothing at all when the backend has nothing new to try."""
        ...


def collect(backend: Backend, request: GenerationRequest) -> tuple[list[Generated], list[str]]:
    """All of a round's candidates at once, and why fewer were made than asked: for callers that do not verify
    while the backend generates (training's data and evaluation)."""
    candidates: list[Generated] = []
    not_made: list[str] = []
    for batch in backend.generate(request):
        candidates.extend(batch.candidates)
        not_made.extend(batch.not_made)
    return candidates[: request.samples], not_made
