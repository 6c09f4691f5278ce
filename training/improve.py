"""Improve pairs: the prompt of `--seed-from inductor` ("this kernel is verified and runs in T ms; write a faster
one"), answered by a faster verified kernel of the same task.

`training.data --improve` verifies and times every all-Triton candidate the built-in backend makes for a task, on a
GPU. The seed is the first candidate that verifies, Inductor's default kernels where they verify: the compiler's
own choice. The reply is the fastest correct candidate. A pair is written only where that reply is at least
`MIN_SPEEDUP` times faster than the seed. So a model trained on the pairs learns what goes past the compiler (a
template, a tile, a tuned reduction), not to copy back the kernel it is shown. Every task with a timed seed also
gets an improve prompt for GRPO (no faster kernel needed: the policy searches), whose reward is the reply's
verified speed over that seed, both timed in the same run (`training.rewards`).
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


def seed_of(verified: list[Timed]) -> Timed | None:
    """The seed among a task's verified candidates in the order the backend made them: the first one timed."""
    return next((candidate for candidate in verified if candidate.ms), None)


def choose(verified: list[Timed]) -> tuple[Timed, Timed] | None:
    """(seed, faster) from a task's verified candidates in the order the backend made them; None where fewer than
    two were timed or none of the later ones is `MIN_SPEEDUP` faster than the seed."""
    seed = seed_of(verified)
    later = [candidate for candidate in verified[verified.index(seed) + 1 :] if candidate.ms] if seed else []
    if not later:
        return None
    fastest = min(later, key=lambda candidate: candidate.ms)
    return (seed, fastest) if seed.ms >= MIN_SPEEDUP * fastest.ms else None


def prompt(profile: str, task: str, seed: Timed) -> list[dict[str, str]] | str:
    """What serving shows the model for `--seed-from inductor`: chat messages, or `kernelllm`'s raw text."""
    messages = prompts.improve_messages(profile, task, seed.source, seed.timing)
    return messages[0]["content"] if profile == "kernelllm" else messages


def seed_columns(seed: Timed) -> dict:
    """What an improve prompt records of its seed: its module (GRPO times it beside the replies), label and time."""
    return {"seed": seed.source, "seed_label": seed.label, "seed_ms": seed.ms}


def summary(seed: Timed, fastest: Timed) -> dict:
    """What a pair records beside its prompt and completion."""
    return {
        "seed_label": seed.label,
        "seed_ms": seed.ms,
        "label": fastest.label,
        "candidate_ms": fastest.ms,
        "speedup_over_seed": seed.ms / fastest.ms,
    }
