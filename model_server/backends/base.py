"""What every backend provides: its models, and candidates for a task (fresh or as a repair)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


class BackendError(Exception):
    """The backend cannot produce candidates for this request; the message says why and what to do."""


@dataclass
class GenerationRequest:
    """One round of generation: the task, how many candidates, and the reports of the last round's failures."""

    task: Path
    samples: int
    device: str
    round: int = 1
    feedback: list[dict] = field(default_factory=list)
    deadline: float | None = None  # time.monotonic() by which generation must return
    # Where a backend can hand over candidates that are ready before the rest (the loop starts verifying them
    # while it generates on); `generate` then returns only the rest. Backends that cannot, ignore it.
    early: Callable[[list[Generated]], None] | None = None
    # Why the backend made fewer candidates than asked (a variant it could not make, a compile that failed),
    # one short line each, for the user's progress line; filled by `generate`.
    shortfall: list[str] = field(default_factory=list)
    # Sampling of model backends (their own defaults where None); backends without a model ignore them.
    temperature: float | None = None
    max_tokens: int | None = None

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
    of the work on purpose, so the verifier allows it, reports the Triton share and never rewards it.
    """

    source: str
    label: str = ""
    policy: str = "strict"


class Backend(Protocol):
    name: str

    def models(self) -> list[str]:
        """Model ids this backend serves (listed at /v1/models)."""
        ...

    def generate(self, request: GenerationRequest) -> list[Generated]:
        """Candidates (KernelBench `ModelNew` modules), at most `request.samples` of them."""
        ...
