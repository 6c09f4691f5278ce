"""What text-generating backends share: which conversations a round sends, and how replies become candidates."""

from __future__ import annotations

from collections.abc import Iterator

from model_server import prompts
from model_server.backends.base import BackendError, Batch, Generated, GenerationRequest


def check_profile(profile: str) -> str:
    """`profile` if it is a known prompt profile, else BackendError listing them."""
    if profile not in prompts.PROFILES:
        raise BackendError(f"unknown prompt profile `{profile}`; available: {', '.join(prompts.PROFILES)}")
    return profile


def conversations(profile: str, task: str, request: GenerationRequest) -> list[tuple[list[dict], int]]:
    """(messages, samples) pairs for one round: the conversion prompt in round 1, then one repair
    conversation per failed candidate of the last round, the samples spread over them; where the request holds
    a verified candidate to improve on, the one conversation that asks for a faster kernel. A request's own
    `prompt` is the one conversation, whatever the round. Where the request is dynamic, each conversation's last
    message says which sizes the kernel must accept."""
    chosen = _conversations(profile, task, request)
    if request.dynamic is None or request.prompt is not None:
        return chosen
    return [(prompts.with_sizes(messages, request.dynamic), samples) for messages, samples in chosen]


def _conversations(profile: str, task: str, request: GenerationRequest) -> list[tuple[list[dict], int]]:
    if request.prompt is not None:
        return [(prompts.instruction_messages(request.prompt), request.samples)]
    if request.round > 1 and request.best is not None:
        best = request.best
        return [(prompts.improve_messages(profile, task, best["source"], best["timing"]), request.samples)]
    if request.round == 1 or not request.feedback:
        return [(prompts.messages(profile, task), request.samples)]
    failures = request.feedback[: request.samples]
    share, extra = divmod(request.samples, len(failures))
    return [
        (prompts.repair_messages(profile, task, item["source"], item["report"]), share + (i < extra))
        for i, item in enumerate(failures)
    ]


def candidates_from_replies(profile: str | None, replies: list[str]) -> list[Generated]:
    """Each reply's code block, or the reply itself when it has none: a garbage reply is still verified, so it
    gets a verdict and a report (never silently dropped). `profile` None: replies to a request's own prompt, which
    opened no code block."""
    if profile is None:
        return [Generated(prompts.extract_code(reply) or reply) for reply in replies]
    return [Generated(prompts.reply_code(profile, reply) or reply) for reply in replies]


class TextBackend:
    """A backend that samples text from a model: subclasses provide `_chat` (a conversation) and `complete`."""

    name = "text"
    model_id: str
    profile: str

    def models(self) -> list[str]:
        return [self.model_id]

    def generate(self, request: GenerationRequest) -> Iterator[Batch]:
        replies = []
        task = request.task.source if request.task is not None else ""
        for messages, count in conversations(self.profile, task, request):
            replies.extend(self.chat(messages, count, request.max_tokens, request.temperature))
        yield Batch(candidates_from_replies(self.profile if request.prompt is None else None, replies))

    def chat(self, messages: list[dict], n: int = 1, max_tokens: int | None = None, temperature: float | None = None):
        """`n` sampled replies to a conversation (the last message as a raw prompt for the `kernelllm` profile)."""
        if self.profile == "kernelllm":
            return self.complete(messages[-1]["content"], n, max_tokens, temperature)
        return self._chat(messages, n, max_tokens, temperature)

    def complete(self, prompt: str, n: int = 1, max_tokens: int | None = None, temperature: float | None = None):
        raise NotImplementedError

    def _chat(self, messages: list[dict], n: int, max_tokens: int | None, temperature: float | None) -> list[str]:
        raise NotImplementedError
