"""A model that starts from the built-in backend's best kernel (`--seed-from inductor`).

Round 1 is the built-in backend's: Inductor's kernels and templates, verified and timed. From round 2 the loop
hands over the best verified candidate so far with its measured time (`GenerationRequest.best`), and the model is
asked for a faster one; its candidates are verified and timed like any other, and the fastest correct one is
kept, whichever backend made it. The built-in backend's own repair-round fallbacks (a tf32x3 template that failed
falls back to IEEE) come first in each later round, the model's samples after them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from model_server.backends.base import Backend, Batch, GenerationRequest


class SeededBackend:
    """The `seed` backend's candidates, then `model`'s attempts to beat the best verified one."""

    improves = True

    def __init__(self, seed: Backend, model: Backend):
        self.seed, self.model = seed, model
        self.name = f"{seed.name}+{model.name}"

    def models(self) -> list[str]:
        return self.model.models()

    def generate(self, request: GenerationRequest) -> Iterator[Batch]:
        if request.round == 1:
            yield from self.seed.generate(request)
            return
        # the seed's candidates are labelled (their variant); a model's samples are not
        seed_request = replace(request, feedback=[item for item in request.feedback if item.get("label")])
        handed = 0
        for batch in self.seed.generate(seed_request):
            handed += len(batch.candidates)
            yield replace(batch, more=True)
        if request.samples > handed:
            yield from self.model.generate(replace(request, samples=request.samples - handed))
