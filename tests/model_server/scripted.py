"""A backend for loop tests that replays fixed candidates instead of running a model (none runs here)."""

from __future__ import annotations

from collections.abc import Iterator

from model_server.backends import Batch, Generated, GenerationRequest


class ScriptedBackend:
    """A real backend that replays fixed candidate sources per round, each with `label` (empty, as a model's
    samples are; a variant's name, as the built-in backend's are), and records every request."""

    name = "scripted"

    def __init__(self, rounds: list[list[str]], label: str = ""):
        self.rounds = rounds
        self.label = label
        self.requests: list[GenerationRequest] = []

    def models(self) -> list[str]:
        return ["scripted"]

    def generate(self, request: GenerationRequest) -> Iterator[Batch]:
        self.requests.append(request)
        sources = self.rounds[request.round - 1] if request.round <= len(self.rounds) else []
        if sources:
            yield Batch([Generated(source, label=self.label) for source in sources])
