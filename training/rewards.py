"""Rewards for GRPO and the pass condition of evaluation: the verifier's verdict on each completion (strict policy),
and nothing a completion can earn without it.

Four terms, each a reward function trl calls with the batch (`prompts`, `completions`, and the dataset's columns,
`task` among them) and weighs by `GRPOConfig.reward_weights`:

- `correct`: 1 where the verifier finds the completion's module correct and rewards it (all compute in Triton,
  every anti-hacking check passed), else 0;
- `speedup`: for a correct completion with GPU timings, log2 of its speedup over eager PyTorch, clipped to
  [-1, 1]; 0 otherwise (on a CPU nothing is timed). For an improve prompt (its row's `seed` column holds the
  verified kernel the prompt shows), log2 of its speedup over that seed instead, the seed verified and timed once in
  this run, on this GPU, like the replies: copying the seed back earns 0, as does any time within 1.05x of the seed's
  (the spread of one timing), a faster kernel more;
- `well_formed`: the share of three checks the reply passes (a code block that parses, a `ModelNew` class, a
  `@triton.jit` kernel): a gradient toward well-formed replies while none is correct yet;
- `runs`: 1 where the module compiled and its `forward` ran to the end, so that the verifier compared its output
  (verdict `correct` or `incorrect`), else 0. Without it a near-deterministic policy whose group members differ
  only in a number (a wrong element count against the right one) is pushed off every wrong number, and learns to
  leave the argument out: a crash scores what a wrong answer scores (benchmarks/results/training-notes.md, the
  collapsed run).

Each completion is verified once (the terms share its report) in the verifier's sandbox, `concurrency` at a time on
the pool's device; a completion that crashes, hangs or hacks costs only its own reward. Verdict counts go to the
trainer's metrics (`verdicts/<verdict>`) and every report's summary to `rewards.jsonl` in the run directory.
"""

from __future__ import annotations

import ast
import asyncio
import collections
import functools
import hashlib
import json
import math
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from model_server import prompts
from training.improve import MIN_SPEEDUP

if TYPE_CHECKING:
    from verifier import Report, Task, VerifierPool

SPEEDUP_CLIP = 1.0  # |log2 speedup| counted at most: 2x faster earns the whole term, 2x slower loses it
# Timing a reply for the speedup term: fewer calls than a conversion's timing (a reward needs the ratio to within
# a few percent, not the last one), and against eager only (no torch.compile of every task).
TIMING_TRIALS = 20
REMEMBERED = 4096  # reports kept for the terms of one batch to share (several batches' worth)


def passed(report: Report) -> bool:
    """The pass condition of training and evaluation: the verifier's own (correct and rewarded), under the strict
    policy only (a hybrid candidate passes the verifier without a reward)."""
    return report.policy == "strict" and report.passed


def ran(report: Report) -> bool:
    """The module compiled and its `forward` ran to the end under the strict policy: the verifier compared its
    output, right or wrong."""
    return report.policy == "strict" and report.verdict in ("correct", "incorrect")


def speedup_term(report: Report) -> float:
    """log2 of a passing report's speedup over eager, clipped; 0 where it did not pass or was not timed."""
    speedup = (report.timing or {}).get("speedup_vs_eager")
    if not passed(report) or not speedup or speedup <= 0:
        return 0.0
    return max(-SPEEDUP_CLIP, min(SPEEDUP_CLIP, math.log2(speedup)))


def speedup_over_seed_term(report: Report, seed: Report) -> float:
    """log2 of a passing reply's speedup over its prompt's seed kernel (both timed alike), clipped; 0 where either
    did not pass or was not timed, and within `MIN_SPEEDUP` either way: a copy of the seed, or a change that only
    moves its time within the spread of one timing, must not earn what GRPO's group scaling would blow up from
    noise into an advantage."""
    reply_ms = (report.timing or {}).get("candidate_ms")
    seed_ms = (seed.timing or {}).get("candidate_ms")
    if not passed(report) or not passed(seed) or not reply_ms or not seed_ms or reply_ms <= 0 or seed_ms <= 0:
        return 0.0
    gain = math.log2(seed_ms / reply_ms)
    if abs(gain) < math.log2(MIN_SPEEDUP):
        return 0.0
    return max(-SPEEDUP_CLIP, min(SPEEDUP_CLIP, gain))


def format_term(code: str | None) -> float:
    """The share of the checks a reply's module passes: it parses, defines `ModelNew`, has a `@triton.jit` kernel."""
    if code is None:
        return 0.0
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return 0.0
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    kernels = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)
    ]
    return (1 + ("ModelNew" in classes) + bool(kernels)) / 3


def completion_text(completion: object) -> str:
    """The text of one trl completion: a string (raw prompts) or a list of messages (chat prompts)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(m.get("content") or "" for m in completion if isinstance(m, dict))
    return ""


class VerifierRewards:
    """The reward functions of one trainer process, sharing one verifier pool and the reports of a batch."""

    def __init__(
        self,
        pool: VerifierPool,
        profile: str,
        concurrency: int = 2,
        trials: int = 3,
        timeout: float = 60.0,
        timing: bool = True,
        log: Path | None = None,
        timing_trials: int = TIMING_TRIALS,
    ):
        self.pool, self.profile = pool, profile
        self.trials, self.timeout, self.timing, self.log = trials, timeout, timing, log
        self.timing_trials = timing_trials
        self.concurrency = max(1, concurrency)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reports: dict[str, asyncio.Future] = {}
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._lock = threading.Lock()
        self.verified = 0
        self.seconds = 0.0  # spent waiting for the batches' verifications

    def functions(self) -> list:
        """The reward functions, in the order of `reward_weights`."""
        return [self.correct, self.speedup, self.well_formed, self.runs]

    async def correct(self, prompts: list, completions: list, task: list[str], **columns) -> list[float]:
        started = time.monotonic()
        reports = await self._reports_of(completions, task, columns.get("log_metric"), columns.get("seed"))
        self.seconds += time.monotonic() - started
        return [1.0 if report is not None and passed(report) else 0.0 for report in reports]

    async def speedup(
        self, prompts: list, completions: list, task: list[str], seed: list[str] | None = None, **columns
    ) -> list[float]:
        reports = await self._reports_of(completions, task, None, seed)
        terms = []
        for report, source, kernel in zip(reports, task, seed or [""] * len(reports), strict=True):
            if report is None:
                terms.append(0.0)
            elif kernel:  # an improve prompt: its seed was verified beside the replies
                terms.append(speedup_over_seed_term(report, await self._report_of(source, kernel, seed=True)))
            else:
                terms.append(speedup_term(report))
        return terms

    async def well_formed(self, prompts: list, completions: list, **columns) -> list[float]:
        return [format_term(self.code_of(c)) for c in completions]

    async def runs(self, prompts: list, completions: list, task: list[str], **columns) -> list[float]:
        reports = await self._reports_of(completions, task, None)
        return [1.0 if report is not None and ran(report) else 0.0 for report in reports]

    def code_of(self, completion: object) -> str | None:
        return prompts.reply_code(self.profile, completion_text(completion))

    def module_of(self, completion: object) -> str | None:
        """What is verified: the reply's code block, or, as serving does, the reply itself where it has none (it
        then fails verification with a verdict of its own); None for an empty reply."""
        text = completion_text(completion)
        return prompts.reply_code(self.profile, text) or (text if text.strip() else None)

    async def _reports_of(
        self, completions: list, tasks: list[str], log_metric, seeds: list[str] | None = None
    ) -> list[Report | None]:
        """Each completion's report (None for an empty reply), verified once per batch; the prompts' seeds (improve
        prompts) are verified beside them."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # futures and the semaphore belong to one event loop (trl keeps one)
            self._loop, self._reports, self._semaphore = loop, {}, asyncio.Semaphore(self.concurrency)
        for task, seed in zip(tasks, seeds or [], strict=False):
            if seed:
                self._report_of(task, seed, seed=True)
        futures = []
        for completion, task in zip(completions, tasks, strict=True):
            code = self.module_of(completion)
            futures.append(None if code is None else self._report_of(task, code))
        reports = [None if f is None else await f for f in futures]
        if log_metric is not None:
            counts = collections.Counter(r.verdict if r is not None else "empty" for r in reports)
            for verdict, count in counts.items():
                log_metric(f"verdicts/{verdict}", count / len(reports))
        return reports

    def _report_of(self, task: str, code: str, seed: bool = False) -> asyncio.Future:
        """The report of `code` against `task`, verified once while it is remembered: a reply, or (`seed`) the
        kernel an improve prompt shows, which the replies of its group are timed against."""
        key = hashlib.sha256(f"{task}\0{code}".encode()).hexdigest()
        if key not in self._reports:
            self._forget_old()
            self._reports[key] = asyncio.get_running_loop().create_task(self._verify(key, task, code, seed))
        return self._reports[key]

    async def _verify(self, key: str, task: str, code: str, seed: bool) -> Report:
        async with self._semaphore:
            report = await asyncio.to_thread(self._verify_now, key, task, code)
        self._write_log(key, task, report, seed)
        return report

    def _verify_now(self, key: str, task: str, code: str) -> Report:
        """One verification in the sandbox (a task the verifier cannot run is a failed completion, not a crash)."""
        from verifier import Report, TaskError

        try:
            return self.pool.verify(
                _task(task),
                code.encode(errors="replace").decode(),  # a reply is any text a model can decode
                trials=self.trials,
                timeout=self.timeout,
                timing=self.timing,
                timing_trials=self.timing_trials,
                compile_baseline=False,
                policy="strict",
            )
        except TaskError as exc:
            return Report(verdict="crashed", message=f"the task could not be run: {exc}")
        finally:
            with self._lock:
                self.verified += 1

    def _forget_old(self) -> None:
        while len(self._reports) >= REMEMBERED:
            oldest = next(iter(self._reports))
            if not self._reports[oldest].done():
                return
            del self._reports[oldest]

    def _write_log(self, key: str, task: str, report: Report, seed: bool) -> None:
        """One line of `rewards.jsonl`: the reply's verdict and how it was reached, with the task it answered (a
        hash to group the replies of a prompt, and the task's first line, which names a synthetic task's ops); an
        improve prompt's seed has a line too, marked `seed`."""
        if self.log is None:
            return
        timing = report.timing or {}
        line = {
            "key": key[:16],
            "task": hashlib.sha256(task.encode()).hexdigest()[:16],
            "task_first_line": task.lstrip().split("\n", 1)[0][:120],
            "verdict": report.verdict,
            "passed": passed(report),
            "rules": sorted({v["rule"] for v in report.violations}),
            "speedup_vs_eager": timing.get("speedup_vs_eager"),
            "message": report.message[:300],
            "phases": {name: round(value, 3) for name, value in report.phases.items()},
            "candidate_ms": timing.get("candidate_ms"),
        }
        if seed:
            line["seed"] = True
        with self._lock, self.log.open("a") as f:
            f.write(json.dumps(line) + "\n")


@functools.lru_cache(maxsize=64)
def _task(source: str) -> Task:
    """The verifier's task for a prompt's task source, parsed once for the replies of all its prompts."""
    from verifier import Task

    return Task(source)
