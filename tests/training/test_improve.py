"""training.improve: which verified kernel seeds an improve pair and which one answers it, and that the pair's prompt
is the one serving sends for `--seed-from inductor`."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from model_server import prompts
from model_server.backends.base import GenerationRequest
from model_server.backends.text import conversations
from tests.test_project import ROOT
from training import data, improve
from training.rewards import VerifierRewards
from verifier import Task, VerifierPool

TASK = (ROOT / "tests" / "fixtures" / "tasks" / "relu.py").read_text()


def _timed(label: str, ms: float | None) -> improve.Timed:
    timing = {} if ms is None else {"candidate_ms": ms, "eager_ms": 2.0, "compile_ms": 1.5}
    return improve.Timed(label, f"# kernel {label}\n", timing)


def test_the_seed_is_the_first_verified_kernel_and_the_reply_the_fastest_later_one():
    default, template, tuned = _timed("default", 1.0), _timed("template", 0.5), _timed("tuned", 0.8)
    assert improve.choose([default, template, tuned]) == (default, template)
    assert improve.summary(default, template)["speedup_over_seed"] == pytest.approx(2.0)


@pytest.mark.parametrize(
    "times",
    [
        [1.0],  # one kernel: nothing to go past
        [1.0, 0.97],  # faster, but within the spread of a timing
        [0.5, 1.0, 0.9],  # the compiler's own choice is already the fastest
        [None, 1.0],  # the only other kernel was not timed
    ],
)
def test_no_pair_where_no_later_kernel_is_meaningfully_faster(times):
    assert improve.choose([_timed(str(i), ms) for i, ms in enumerate(times)]) is None


def test_untimed_kernels_are_passed_over_for_seed_and_reply():
    untimed, seed, faster = _timed("untimed", None), _timed("seed", 1.0), _timed("faster", 0.5)
    assert improve.choose([untimed, seed, faster]) == (seed, faster)


@pytest.mark.parametrize("profile", ["autotriton", "kernelllm"])
def test_the_pair_s_prompt_is_what_serving_sends_when_it_improves_on_that_kernel(profile):
    seed = _timed("default", 1.25)
    best = {"source": seed.source, "label": seed.label, "timing": seed.timing}
    request = GenerationRequest(Task(TASK), 4, "cuda", round=2, best=best)
    [(messages, samples)] = conversations(profile, TASK, request)
    expected = messages[-1]["content"] if profile == "kernelllm" else messages
    assert improve.prompt(profile, TASK, seed) == expected and samples == 4
    assert "1.25 ms" in str(expected) and seed.source.strip() in str(expected)


@pytest.mark.gpu
def test_on_a_gpu_a_task_whose_tuned_kernels_win_gets_an_improve_pair_and_a_prompt_that_rewards_speed(tmp_path):
    """Cross-entropy at its published size: Inductor's coordinate-descent tuned kernels ran about 1.5x faster than
    its default ones on an H200 (docs/PERFORMANCE.md), so the default seeds a pair that the faster kernel answers,
    and an improve prompt for GRPO whose speed reward the faster kernel earns and the seed copied back does not."""
    argv = [
        "--output-dir",
        str(tmp_path),
        "--tasks",
        str(ROOT / "benchmarks" / "tasks" / "published" / "cross_entropy.py"),
    ]
    argv += [
        "--device",
        "cuda",
        "--timing",
        "--improve",
        "--workers",
        "4",
        "--val-fraction",
        "0",
        "--test-fraction",
        "0",
    ]
    assert data.main(argv) == 0
    rows = [json.loads(line) for line in (tmp_path / "sft.autotriton.jsonl").read_text().splitlines()]
    [converted] = [row for row in rows if row["kind"] == "convert"]
    [pair] = [row for row in rows if row["kind"] == "improve"]
    seed = prompts.reply_code("autotriton", pair["prompt"][-2]["content"])
    faster = prompts.reply_code("autotriton", pair["completion"][0]["content"])
    assert faster != seed and faster == prompts.reply_code("autotriton", converted["completion"][0]["content"])
    assert pair["speedup_over_seed"] >= improve.MIN_SPEEDUP
    assert pair["seed_ms"] == pytest.approx(pair["speedup_over_seed"] * pair["candidate_ms"])
    assert f"{pair['seed_ms']:.4g} ms" in pair["prompt"][-1]["content"]
    [outcome] = [json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()]
    assert outcome["improve"]["label"] == pair["label"] == outcome["label"], "both rows teach the faster kernel"
    assert converted["report"]["timing"]["candidate_ms"] == pytest.approx(pair["candidate_ms"])
    [seeded] = [json.loads(line) for line in (tmp_path / "rl-improve.autotriton.jsonl").read_text().splitlines()]
    assert seeded["prompt"] == pair["prompt"] and seeded["seed_ms"] == pair["seed_ms"]
    assert seeded["seed"].strip() == seed.strip()
    copied = [{"role": "assistant", "content": f"```python\n{seed}```"}]
    with VerifierPool(size=2, device="cuda") as pool:
        rewards = VerifierRewards(pool, "autotriton", trials=2, timing=True)
        terms = asyncio.run(
            rewards.speedup(
                prompts=[seeded["prompt"]] * 2,
                completions=[pair["completion"], copied],
                task=[seeded["task"]] * 2,
                seed=[seeded["seed"]] * 2,
            )
        )
    assert abs(terms[1]) < 0.15, "the seed copied back earns (about) nothing"
    assert terms[0] > 0 and 2 ** terms[0] == pytest.approx(pair["speedup_over_seed"], rel=0.3), terms
    assert math.isfinite(terms[0]) and rewards.verified in (2, 3), "the seed verified once for both replies"
