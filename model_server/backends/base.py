"""What every backend provides: its models, and candidate sources for a task (fresh or as a repair)."""

from __future__ import annotations

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


class Backend(Protocol):
    name: str

    def models(self) -> list[str]:
        """Model ids this backend serves (listed at /v1/models)."""
        ...

    def generate(self, request: GenerationRequest) -> list[str]:
        """Candidate module sources (KernelBench `ModelNew` files), at most `request.samples` of them."""
        ...
