"""Improve pairs: the prompt of `--seed-from inductor` ("this kernel is verified and runs in T ms; write a faster
one"), answered by a faster verified kernel of the same task.

`training.data --improve` verifies and times every all-Triton candidate the built-in backend makes for a task, on a
GPU. The seed is the first candidate that verifies, Inductor's default kernels where they verify: the compiler's
own choice. The reply is the fastest correct candidate. A pair is written only where that reply is at least
`MIN_SPEEDUP` times faster than the seed. So a model trained on the pairs learns what goes past the compiler (a
template, a tile, a tuned reduction), not to copy back the kernel it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from model_server import prompts

MIN_SPEEDUP = 1.05  # below it, the difference is within the run-to-run spread of one timing


@dataclass(frozen=True)
class Timed:
    """A verified candidate: how the backend labelled it, its module, and its report's timing."""

    label: str
    source: str
    timing: dict

    @property
    def ms(self) -> float | None:
        return self.timing.get("candidate_ms")


def choose(verified: list[Timed]) -> tuple[Timed, Timed] | None:
    """(seed, faster) from a task's verified candidates in the order the backend made them; None where fewer than
    two were timed or none of the later ones is `MIN_SPEEDUP` faster than the first."""
    timed = [candidate for candidate in verified if candidate.ms]
    if len(timed) < 2:
        return None
    seed = timed[0]
    fastest = min(timed[1:], key=lambda candidate: candidate.ms)
    return (seed, fastest) if seed.ms >= MIN_SPEEDUP * fastest.ms else None


def prompt(profile: str, task: str, seed: Timed) -> list[dict[str, str]] | str:
    """What serving shows the model for `--seed-from inductor`: chat messages, or `kernelllm`'s raw text."""
    messages = prompts.improve_messages(profile, task, seed.source, seed.timing)
    return messages[0]["content"] if profile == "kernelllm" else messages


def summary(seed: Timed, fastest: Timed) -> dict:
    """What a pair records beside its prompt and completion."""
    return {
        "seed_label": seed.label,
        "seed_ms": seed.ms,
        "label": fastest.label,
        "candidate_ms": fastest.ms,
        "speedup_over_seed": seed.ms / fastest.ms,
    }
