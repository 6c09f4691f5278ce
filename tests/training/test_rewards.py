"""The GRPO rewards, computed by the real verifier on the CPU (Triton's interpreter) for honest, hacked, crashing
and hanging completions."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math

import pytest

from tests.conftest import FIXTURES
from training.rewards import VerifierRewards, format_term, passed, speedup_over_seed_term, speedup_term
from verifier.host.pool import VerifierPool
from verifier.report import Report

ADD = (FIXTURES / "tasks/add.py").read_text()
GOOD = (FIXTURES / "candidates/add_ok.py").read_text()
ZOO = FIXTURES / "zoo"


def _chat(code: str) -> list[dict]:
    return [{"role": "assistant", "content": f"The kernel adds elementwise.\n\n```python\n{code}```"}]


def _rewards(
    rewards: VerifierRewards, completions: list, metrics: dict | None = None, seeds: list[str] | None = None
) -> list[list[float]]:
    """Each reward function over one batch, as trl's trainer calls them: together, on one event loop (with
    `seeds`, the improve prompts' seed column)."""
    columns = {"prompts": [None] * len(completions), "completions": completions, "task": [ADD] * len(completions)}
    if seeds is not None:
        columns["seed"] = seeds
    if metrics is not None:
        columns["log_metric"] = lambda name, value: metrics.setdefault(name, []).append(value)

    async def batch():
        return await asyncio.gather(*(function(**columns) for function in rewards.functions()))

    return [list(values) for values in zip(*asyncio.run(batch()), strict=True)]


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=2, device="cpu") as pool:
        yield pool


def test_only_a_verified_completion_earns_the_correctness_reward(pool, tmp_path):
    hostile = [_chat((ZOO / name).read_text()) for name in ("torch_in_forward.py", "monkeypatch_elapsed_time.py")]
    rewards = VerifierRewards(pool, "autotriton", trials=2, timeout=60, log=tmp_path / "rewards.jsonl")
    metrics: dict = {}
    replies = [_chat(GOOD), *hostile, [{"role": "assistant", "content": "no code"}], [{"role": "assistant"}]]
    scores = _rewards(rewards, replies, metrics)
    good, fallback, timing_hack, no_code, empty = scores
    assert good == [1.0, 0.0, 1.0, 1.0], "correct; no timing on a CPU; well formed; ran"
    assert fallback[0] == 0.0 and timing_hack[0] == 0.0, "a hack earns nothing, however well formed"
    assert fallback[3] == 0.0 and timing_hack[3] == 0.0, "nor for running"
    assert fallback[2] == 1.0
    assert no_code == [0.0, 0.0, 0.0, 0.0] and empty == [0.0, 0.0, 0.0, 0.0]
    logged = [json.loads(line) for line in (tmp_path / "rewards.jsonl").read_text().splitlines()]
    assert len(logged) == 4, "one line per verified reply; a reply without code is verified as it is, as serving does"
    assert {(line["task"], line["task_first_line"]) for line in logged} == {
        (hashlib.sha256(ADD.encode()).hexdigest()[:16], ADD.lstrip().splitlines()[0])
    }, "each reply names the task it answered"
    assert metrics["verdicts/correct"] == [0.2] and metrics["verdicts/rejected"] == [0.4]
    assert metrics["verdicts/empty"] == [0.2] and sum(v[0] for v in metrics.values()) == pytest.approx(1.0)


def test_the_same_completion_twice_in_a_batch_is_verified_once(pool):
    rewards = VerifierRewards(pool, "autotriton", trials=2)
    scores = _rewards(rewards, [_chat(GOOD), _chat(GOOD)])
    assert [s[0] for s in scores] == [1.0, 1.0]
    assert rewards.verified == 1


def test_a_crashing_or_hanging_completion_costs_only_its_own_reward(pool):
    crash = GOOD.replace(
        "    def forward(self, x, y):\n", "    def forward(self, x, y):\n        import os\n        os.abort()\n"
    )
    hang = GOOD.replace(
        "    def forward(self, x, y):\n", "    def forward(self, x, y):\n        while True:\n            pass\n"
    )
    assert crash != GOOD and hang != GOOD
    rewards = VerifierRewards(pool, "autotriton", trials=2, timeout=4)
    scores = _rewards(rewards, [_chat(crash), _chat(GOOD), _chat(hang)])  # the hang ends only at the timeout
    assert [s[0] for s in scores] == [0.0, 1.0, 0.0]


def test_a_kernelllm_completion_is_the_code_block_its_prompt_opened(pool):
    rewards = VerifierRewards(pool, "kernelllm", trials=2)
    [score] = _rewards(rewards, [GOOD + "```\n"])
    assert score == [1.0, 0.0, 1.0, 1.0]


def test_a_wrong_count_earns_the_runs_term_and_a_launch_without_it_does_not(pool):
    """The two replies of the collapsed GRPO run (benchmarks/results/training-notes.md): a kernel told the wrong
    element count runs and computes wrong values; one whose launch leaves the count out fails. Only the first ran
    to the end."""
    wrong_count = GOOD.replace("n = x.numel()", "n = x.numel() // 2")
    no_count = GOOD.replace("(x, y, out, n, BLOCK=256)", "(x, y, out, BLOCK=256)")
    assert GOOD not in (wrong_count, no_count)
    rewards = VerifierRewards(pool, "autotriton", trials=2)
    wrong, dropped = _rewards(rewards, [_chat(wrong_count), _chat(no_count)])
    assert wrong == [0.0, 0.0, 1.0, 1.0], "incorrect: no correctness reward, but its forward ran"
    assert dropped == [0.0, 0.0, 1.0, 0.0], "runtime_error: well formed, nothing else"


def test_the_speedup_term_is_log2_of_the_speedup_clipped_and_only_for_a_pass():
    timed = Report(verdict="correct", reward=1.0, timing={"speedup_vs_eager": 1.5})
    assert passed(timed) and speedup_term(timed) == pytest.approx(0.585, abs=1e-3)
    assert speedup_term(Report(verdict="correct", reward=1.0, timing={"speedup_vs_eager": 8.0})) == 1.0
    assert speedup_term(Report(verdict="correct", reward=1.0, timing={"speedup_vs_eager": 0.1})) == -1.0
    assert speedup_term(Report(verdict="incorrect", timing={"speedup_vs_eager": 3.0})) == 0.0
    hybrid = Report(verdict="correct", reward=1.0, policy="hybrid", timing={"speedup_vs_eager": 3.0})
    assert not passed(hybrid) and speedup_term(hybrid) == 0.0
    assert speedup_term(Report(verdict="correct", reward=1.0)) == 0.0, "untimed (CPU)"


def test_over_a_seed_the_speedup_term_is_log2_of_the_seed_s_time_over_the_reply_s():
    def timed(ms: float | None, verdict: str = "correct") -> Report:
        return Report(verdict=verdict, reward=1.0, timing={"candidate_ms": ms} if ms else None)

    seed = timed(2.0)
    assert speedup_over_seed_term(timed(1.0), seed) == 1.0
    assert speedup_over_seed_term(timed(2.0), seed) == 0.0, "the seed copied back earns nothing"
    assert speedup_over_seed_term(timed(1.93), seed) == 0.0 and speedup_over_seed_term(timed(2.08), seed) == 0.0, (
        "nor does a time within the spread of one timing"
    )
    assert speedup_over_seed_term(timed(1.88), seed) == pytest.approx(math.log2(2.0 / 1.88))
    assert speedup_over_seed_term(timed(3.0), seed) == pytest.approx(-0.585, abs=1e-3)
    assert speedup_over_seed_term(timed(0.1), seed) == 1.0 and speedup_over_seed_term(timed(40.0), seed) == -1.0
    assert speedup_over_seed_term(timed(1.0, "incorrect"), seed) == 0.0
    assert speedup_over_seed_term(timed(1.0), timed(2.0, "incorrect")) == 0.0, "a seed that fails here counts nothing"
    assert speedup_over_seed_term(timed(None), seed) == 0.0 and speedup_over_seed_term(timed(1.0), timed(None)) == 0.0


def test_an_improve_prompt_s_seed_is_verified_once_beside_its_replies_and_logged_as_the_seed(pool, tmp_path):
    """On the CPU nothing is timed, so every speed term is 0; what is checked is that the seed column reaches the
    rewards, the seed is verified once for the whole group, and its line in the log says it is the seed."""
    rewards = VerifierRewards(pool, "autotriton", trials=2, timeout=60, log=tmp_path / "rewards.jsonl")
    seed = GOOD.replace("256", "512")
    assert seed != GOOD
    replies = [_chat(GOOD), _chat(GOOD.replace("256", "128"))]
    scores = _rewards(rewards, replies, seeds=[seed, seed])
    assert [s[:2] for s in scores] == [[1.0, 0.0], [1.0, 0.0]]
    logged = [json.loads(line) for line in (tmp_path / "rewards.jsonl").read_text().splitlines()]
    assert rewards.verified == 3 and len(logged) == 3
    assert [line.get("seed", False) for line in logged].count(True) == 1
    assert all(line["passed"] for line in logged)


def test_the_format_term_counts_what_a_module_needs():
    assert format_term(None) == 0.0
    assert format_term("def (") == 0.0
    assert format_term("x = 1\n") == pytest.approx(1 / 3)
    assert format_term("class ModelNew:\n    pass\n") == pytest.approx(2 / 3)
    assert format_term(GOOD) == 1.0
