"""`--seed-from inductor`: the built-in backend's kernels first, then a model asked to beat the best verified one.

No model runs here: `ScriptedModel` is a real `TextBackend` (its prompts, conversations and reply parsing are the
project's) whose `_chat` replays fixed replies instead of sampling, and records what it was shown."""

from __future__ import annotations

import pytest

from model_server.api import ConvertRequest
from model_server.backends import BackendConfig, BackendError, create_backend
from model_server.backends.inductor import InductorBackend
from model_server.backends.seeded import SeededBackend
from model_server.backends.text import TextBackend
from model_server.loop import convert
from tests.conftest import FIXTURES
from tests.model_server.scripted import ScriptedBackend
from verifier.host.pool import VerifierPool

TASK = FIXTURES / "tasks" / "relu.py"
CORRECT = (FIXTURES / "candidates" / "relu_ok.py").read_text()
WRONG = CORRECT.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 1.0)")


class ScriptedModel(TextBackend):
    name = "scripted"
    model_id = "scripted"
    profile = "chat"

    def __init__(self, replies: list[str]):
        self.replies = replies
        self.shown: list[list[dict]] = []

    def _chat(self, messages, n, max_tokens, temperature):
        self.shown.append(messages)
        return [f"```python\n{self.replies[i % len(self.replies)]}```" for i in range(n)]


def _request(**options) -> ConvertRequest:
    return ConvertRequest(task=TASK.read_text(), task_name="relu", trials=2, **options)


def test_after_a_round_with_no_failure_the_model_is_asked_to_beat_the_best(pool):
    """Round 1 is all correct, so a plain backend would stop; the seeded one goes on, and each later round shows the
    model the best verified candidate. The seed is not asked again for a model's failure (not its candidate)."""
    seed, model = ScriptedBackend([[CORRECT]], label="seed's kernel"), ScriptedModel([CORRECT, WRONG])
    outcome = convert(_request(samples=2, rounds=3), SeededBackend(seed, model), pool)
    assert [(a.round, a.label, a.report.verdict) for a in outcome.attempts] == [
        (1, "seed's kernel", "correct"),
        (2, "", "correct"),
        (2, "", "incorrect"),
        (3, "", "correct"),
        (3, "", "incorrect"),
    ]
    assert len(model.shown) == 2 and all(m[-2]["content"] == f"```python\n{CORRECT.strip()}\n```" for m in model.shown)
    assert "not measured" in model.shown[0][-1]["content"]  # a CPU times nothing
    assert [r.feedback for r in seed.requests[1:]] == [[], []]
    assert outcome.best is outcome.attempts[0], "with nothing timed, the first correct candidate is kept"


def test_without_a_verified_kernel_the_model_converts_from_scratch(pool):
    """The seed's only candidate fails: round 2 is the seed's repair (nothing here) and the model's usual conversation
    (a repair of the seed's failure), not an improvement."""
    seed, model = ScriptedBackend([[WRONG]], label="seed's kernel"), ScriptedModel([CORRECT])
    outcome = convert(_request(samples=1, rounds=2), SeededBackend(seed, model), pool)
    assert [a.report.verdict for a in outcome.attempts] == ["incorrect", "correct"]
    [shown] = model.shown
    assert "did not pass verification" in shown[-1]["content"]
    assert outcome.best is outcome.attempts[1]


@pytest.mark.slow
def test_a_model_seeded_from_inductor_sees_its_kernel_and_its_candidates_are_verified(pool, tmp_path):
    """The real built-in backend as the seed: its default kernels, verified in Triton's interpreter, are what the
    model is shown in round 2."""
    model = ScriptedModel([CORRECT])
    outcome = convert(_request(samples=1, rounds=2), SeededBackend(InductorBackend(cache=tmp_path), model), pool)
    assert [(a.label, a.report.verdict) for a in outcome.attempts] == [
        ("Inductor's default kernels", "correct"),
        ("", "correct"),
    ]
    [shown] = model.shown
    assert outcome.attempts[0].source.strip() in shown[-2]["content"]


def test_seeding_is_named_in_the_config_and_checked():
    with pytest.raises(BackendError, match="needs a model backend"):
        create_backend(BackendConfig("inductor", seed_from="inductor"))
    with pytest.raises(BackendError, match="takes `inductor`"):
        create_backend(BackendConfig("openai", model="m", base_url="http://127.0.0.1:9/v1", seed_from="vllm"))
    seeded = create_backend(BackendConfig("openai", model="m", base_url="http://127.0.0.1:9/v1", seed_from="inductor"))
    assert isinstance(seeded, SeededBackend) and seeded.name == "inductor+openai" and seeded.models() == ["m"]


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_the_model_is_shown_the_measured_time_and_the_fastest_correct_kernel_is_kept(tmp_path):
    """On a GPU the best kernel is timed: the model is shown its time beside eager's and torch.compile's, and the
    kernel written is the fastest correct one of both backends'."""
    model = ScriptedModel([CORRECT])
    with VerifierPool(size=2, device="cuda") as gpu:
        outcome = convert(_request(samples=2, rounds=2), SeededBackend(InductorBackend(cache=tmp_path), model), gpu)
    [shown] = model.shown
    assert "It runs in " in shown[-1]["content"] and "torch.compile" in shown[-1]["content"], shown[-1]
    correct = [a for a in outcome.attempts if a.correct]
    assert {a.round for a in correct} == {1, 2}
    assert outcome.best is min(correct, key=lambda a: a.candidate_ms)
