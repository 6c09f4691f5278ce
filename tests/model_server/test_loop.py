"""The conversion loop and `tritonize convert`: repair feedback, stopping, and the command's files and exits."""

from __future__ import annotations

import itertools
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from model_server import loop
from model_server.api import ConvertRequest
from model_server.backends import BackendError, Batch, Generated, GenerationRequest
from model_server.backends.inductor import InductorBackend
from model_server.loop import Attempt, ConvertError, _choose, convert
from tests.conftest import FIXTURES
from tests.model_server.events import kinds
from tests.model_server.scripted import ScriptedBackend
from tests.sources import pair
from verifier import procs
from verifier.host.pool import VerifierPool
from verifier.report import Report

TASKS = FIXTURES / "tasks"
CANDIDATES = FIXTURES / "candidates"


def _request(task: Path, **options) -> ConvertRequest:
    """The request for the task in `task`'s file, as the command line makes it."""
    return ConvertRequest(task=task.read_text(), task_name=task.stem, **options)


def _wrong_relu() -> str:
    return (CANDIDATES / "relu_ok.py").read_text().replace("tl.maximum(x, 0.0)", "tl.maximum(x, 1.0)")


def test_failures_are_fed_back_and_the_repaired_candidate_wins(pool):
    correct = (CANDIDATES / "relu_ok.py").read_text()
    assert _wrong_relu() != correct
    backend = ScriptedBackend([[_wrong_relu()], [correct]])
    events: list[dict] = []
    outcome = convert(_request(TASKS / "relu.py", samples=2, rounds=3, trials=2), backend, pool, events.append)
    assert [a.report.verdict for a in outcome.attempts] == ["incorrect", "correct"]
    assert outcome.best is outcome.attempts[1] and outcome.best.round == 2
    [feedback] = backend.requests[1].feedback
    assert feedback["source"] == _wrong_relu() and feedback["report"]["verdict"] == "incorrect"
    assert len(backend.requests) == 2, "no repair round once every candidate of a round is correct"
    assert kinds(events) == ["round", "note", "candidate", "round", "note", "candidate", "done"]
    assert events[-1]["best"]["round"] == 2 and events[-1]["report"]["verdict"] == "correct"


def test_the_sandboxes_start_while_the_backend_generates():
    with VerifierPool(size=2, device="cpu") as fresh:

        class WaitingBackend(ScriptedBackend):
            def generate(self, request: GenerationRequest) -> Iterator[Batch]:
                zygotes = [z for slot in fresh._slots for z in (slot.reference, slot.candidate)]
                waited = time.monotonic() + 120
                while not all(z.running for z in zygotes) and time.monotonic() < waited:
                    time.sleep(0.1)
                yield from super().generate(request)

        backend = WaitingBackend([[(CANDIDATES / "relu_ok.py").read_text()]])
        outcome = convert(_request(TASKS / "relu.py", samples=1, rounds=1, trials=1), backend, fresh)
    assert outcome.best is not None, outcome.attempts[0].report.message
    assert outcome.best.report.phases["start_s"] == 0


class RecordingPool(VerifierPool):
    """A real pool that notes when each verification ends."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ended: dict[str, float] = {}

    def verify(self, task, candidate, options=None, **keywords):
        try:
            return super().verify(task, candidate, options, **keywords)
        finally:
            self.ended[keywords["candidate_origin"]] = time.monotonic()


def test_candidates_handed_over_early_are_verified_while_the_backend_generates():
    correct = (CANDIDATES / "relu_ok.py").read_text()
    with RecordingPool(size=2, device="cpu") as recording:

        class EarlyBackend(ScriptedBackend):
            def generate(self, request: GenerationRequest) -> Iterator[Batch]:
                yield Batch([Generated(correct, "ready first")], more=True)
                waited = time.monotonic() + 120
                while "candidate_r1_1.py" not in recording.ended and time.monotonic() < waited:
                    time.sleep(0.1)
                self.returned = time.monotonic()
                yield Batch([Generated(_wrong_relu(), "ready last")])

        backend = EarlyBackend([])
        events: list[dict] = []
        options = dict(samples=4, rounds=1, trials=1)
        outcome = convert(_request(TASKS / "relu.py", **options), backend, recording, emit=events.append)
        assert not recording.shared.timing_lock.locked()
    assert recording.ended["candidate_r1_1.py"] < backend.returned
    assert [(a.index, a.label, a.report.verdict) for a in outcome.attempts] == [
        (1, "ready first", "correct"),
        (2, "ready last", "incorrect"),
    ]
    notes = [e["text"] for e in events if e["event"] == "note"]
    assert "scripted made 1 candidate in" in notes[0] and "still generating" in notes[0]
    assert "1. ready first" in notes[0]
    assert "made 1 more candidate (2 in all) of the 4 asked for" in notes[1] and "2. ready last" in notes[1]
    assert sorted((e["index"], e["of"]) for e in events if e["event"] == "candidate") == [(1, 2), (2, 2)]


def test_a_round_waiting_for_its_first_candidates_says_every_few_seconds_that_it_is_alive(pool, monkeypatch):
    monkeypatch.setattr(loop, "HEARTBEAT_SECONDS", 0.2)

    class SlowBackend(ScriptedBackend):
        def generate(self, request: GenerationRequest) -> Iterator[Batch]:
            time.sleep(1.1)
            yield from super().generate(request)

    events: list[dict] = []
    backend = SlowBackend([[(CANDIDATES / "relu_ok.py").read_text()]])
    convert(_request(TASKS / "relu.py", samples=1, rounds=1, trials=1), backend, pool, emit=events.append)
    notes = [e["text"] for e in events if e["event"] == "note"]
    alive = [n for n in notes if "scripted is still generating (" in n]
    assert 3 <= len(alive) <= 6, notes
    made = next(i for i, n in enumerate(notes) if "scripted made 1 candidate" in n)
    assert all(notes.index(n) < made for n in alive), notes  # none once the candidates are there
    time.sleep(0.5)
    assert len([e for e in events if "still generating (" in e.get("text", "")]) == len(alive)


def test_the_progress_line_says_why_the_backend_made_fewer_candidates_than_asked(pool):
    class ShortBackend(ScriptedBackend):
        def generate(self, request: GenerationRequest) -> Iterator[Batch]:
            for batch in super().generate(request):
                yield Batch(
                    batch.candidates, not_made=("templates: Inductor did not finish compiling the task within 45 s",)
                )

    events: list[dict] = []
    options = dict(samples=3, rounds=1, trials=1)
    convert(_request(TASKS / "relu.py", **options), ShortBackend([[_wrong_relu()]]), pool, events.append)
    [note] = [e["text"] for e in events if e["event"] == "note" and "made" in e["text"]]
    assert note.startswith(
        "round 1: scripted made 1 candidate of the 3 asked for (all the distinct ones it has for this task;"
    )
    assert "not made: templates: Inductor did not finish compiling the task within 45 s)" in note


def test_cancelling_stops_before_any_work(pool):
    backend = ScriptedBackend([[_wrong_relu()]])
    outcome = convert(_request(TASKS / "relu.py"), backend, pool, cancelled=lambda: True)
    assert outcome.stopped == "cancelled" and outcome.attempts == [] and backend.requests == []


def test_a_backend_with_nothing_to_offer_ends_without_a_winner(pool):
    events: list[dict] = []
    outcome = convert(_request(TASKS / "relu.py"), ScriptedBackend([[]]), pool, events.append)
    assert outcome.best is None and outcome.attempts == []
    assert kinds(events) == ["round", "note", "done"] and events[-1]["best"] is None


def test_a_backend_failure_in_the_first_round_is_a_convert_error(pool):
    class Failing(ScriptedBackend):
        def generate(self, request):
            raise BackendError("the model server at 127.0.0.1:9 refused the connection")

    with pytest.raises(ConvertError, match="refused the connection"):
        convert(_request(TASKS / "relu.py"), Failing([]), pool)


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="samples must be at least 1, got 0"):
        _request(TASKS / "relu.py", samples=0)
    with pytest.raises(ValueError, match="task_name must be a Python identifier"):
        ConvertRequest(task="x", task_name="my-task")


def _tritonize(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "model_server", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_convert_writes_the_verified_kernel_and_never_overwrites(tmp_path):
    """The task's file name is longer than a module name may be (as some of KernelBench's are): it is cut."""
    stem = "softmax_with_a_file_name_as_long_as_kernelbench_level_1_problem_77_has_it"
    task = tmp_path / f"{stem}.py"
    shutil.copy(TASKS / "softmax.py", task)
    done = _tritonize("convert", str(task), "--device", "cpu", "--trials", "2")
    assert done.returncode == 0, done.stderr
    written = tmp_path / f"{stem}_triton.py"
    assert "class ModelNew" in written.read_text()
    assert "correct" in done.stdout and "round 1: candidate 1/1 correct" in done.stderr
    written.write_text("keep me")
    again = _tritonize("convert", str(task), "--device", "cpu")
    assert again.returncode == 2 and "exists; pass --force" in again.stderr
    assert written.read_text() == "keep me"


@pytest.mark.slow
def test_convert_writes_a_hybrid_only_under_the_hybrid_policy(tmp_path):
    """A float64 linear layer converts only to a hybrid (Inductor's Triton matmul templates take fp32, fp16 and
    bf16 only): under the default policy (strict, as for verify) nothing is written and stderr says how to accept
    it; `--policy hybrid` writes it."""
    task = tmp_path / "linear_relu_float64.py"
    shutil.copy(FIXTURES / "hybrid" / "linear_relu_float64.py", task)
    strict = _tritonize("convert", str(task), "--device", "cpu", "--trials", "1", "--samples", "1", "--rounds", "1")
    assert strict.returncode == 1, strict.stderr
    assert "which the strict policy refuses; pass --policy hybrid to accept it" in strict.stderr
    assert not (tmp_path / "linear_relu_float64_triton.py").exists()
    hybrid = _tritonize(
        "convert",
        str(task),
        "--device",
        "cpu",
        "--trials",
        "1",
        "--samples",
        "1",
        "--rounds",
        "1",
        "--policy",
        "hybrid",
    )
    assert hybrid.returncode == 0, hybrid.stderr
    written = tmp_path / "linear_relu_float64_triton.py"
    assert "torch.addmm(" in written.read_text()
    first = written.read_text().splitlines()[0]
    assert first.startswith("# tritonize-policy: hybrid -- verified correct under the hybrid policy (not all Triton: ")
    assert hybrid.stdout.strip().endswith(
        "it satisfies the hybrid policy, not the strict one: `tritonize verify` checks it as hybrid)"
    )

    agrees = _tritonize("verify", str(task), str(written), "--trials", "2")
    assert agrees.returncode == 0, agrees.stdout + agrees.stderr
    assert agrees.stdout.startswith("verdict: correct under hybrid (not all Triton: "), agrees.stdout
    assert "as " + str(written) + "'s `# tritonize-policy` line says" in agrees.stderr
    assert not re.search(r"TRI\d+ error", agrees.stdout), agrees.stdout
    assert "TRI360 allowed under the hybrid policy: " in agrees.stdout, agrees.stdout
    held = _tritonize("verify", str(task), str(written), "--trials", "2", "--policy", "strict")
    assert held.returncode == 1 and held.stdout.startswith("verdict: rejected"), held.stdout


def test_convert_checks_out_before_anything_runs(tmp_path):
    task = TASKS / "relu.py"
    missing = _tritonize("convert", str(task), "--device", "cpu", "--out", str(tmp_path / "missing/x.py"))
    assert missing.returncode == 2
    assert missing.stderr == (
        f"tritonize convert: error: cannot write --out {tmp_path}/missing/x.py: the directory {tmp_path}/missing "
        "does not exist\n"
    )
    directory = _tritonize("convert", str(task), "--device", "cpu", "--out", str(tmp_path))
    assert directory.returncode == 2
    assert directory.stderr == (
        f"tritonize convert: error: --out {tmp_path} is a directory; give a file path, e.g. {tmp_path}/relu_triton.py\n"
    )
    assert list(tmp_path.iterdir()) == []
    seeded = _tritonize("convert", str(task), "--device", "cpu", "--seed-from", "inductor")
    assert seeded.returncode == 2
    assert seeded.stderr == (
        "tritonize convert: error: --seed-from inductor needs a model backend to improve on it: openai, "
        "transformers or vllm\n"
    )


@pytest.mark.slow
def test_a_candidate_past_the_timeout_is_reported_with_what_to_do(tmp_path):
    out = tmp_path / "relu_triton.py"
    done = _tritonize("convert", str(TASKS / "relu.py"), "--device", "cpu", "--trials", "1", "--timeout", "0.05",
                      "--out", str(out))  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert (
        "  round 1, candidate 1: the candidate did not finish within the 0.05 s timeout and was killed; on the CPU its "
        "kernels run in Triton's interpreter, which is slow at large shapes: raise --timeout, shrink the task's "
        "get_inputs(), or verify on a GPU (--device cuda)\n"
    ) in done.stderr
    assert not out.exists()


def test_convert_names_a_broken_task(tmp_path):
    task = tmp_path / "broken.py"
    task.write_text("import torch\n\nclass Model(torch.nn.Module):\n    pass\n")
    done = _tritonize("convert", str(task), "--device", "cpu")
    assert done.returncode == 2
    assert f"{task}:1: not a task: it defines no `get_inputs`, `get_init_inputs`" in done.stderr


def test_a_deadline_that_passes_during_generation_skips_verification(pool):
    class Slow(ScriptedBackend):
        def generate(self, request):
            time.sleep(0.5)
            yield from super().generate(request)

    events: list[dict] = []
    options = dict(samples=3, rounds=2, deadline=0.3)
    outcome = convert(_request(TASKS / "relu.py", **options), Slow([[_wrong_relu()] * 3] * 2), pool, events.append)
    assert outcome.stopped == "deadline" and outcome.attempts == []
    assert kinds(events) == ["round", "note", "done"] and events[-1]["stopped"] == "deadline"


def test_cancelling_kills_a_verification_in_flight(pool):
    hang = (FIXTURES / "zoo" / "hang_in_kernel.py").read_text()
    cancel = threading.Event()
    threading.Timer(3.0, cancel.set).start()
    options = dict(samples=1, rounds=2, timeout=120)
    outcome = convert(_request(TASKS / "add.py", **options), ScriptedBackend([[hang]]), pool, cancelled=cancel.is_set)
    # a verification that ran on to its 120 s timeout would be an attempt with a verdict; a killed one is none
    assert outcome.stopped == "cancelled" and outcome.attempts == []
    report = pool.verify(*pair(TASKS / "relu.py", CANDIDATES / "relu_ok.py"), trials=1)
    assert report.passed, "the pool recovers for the next verification"


def test_cancelling_stops_inductor_s_compile_at_once_and_leaves_nothing_behind(pool, tmp_path, monkeypatch):
    """The capture runs in its own sandboxed process for seconds (longer on a GPU, with autotuning): a cancel kills
    it within a poll, and neither its processes nor its scratch directory outlive the conversion. Only this test's
    own are looked at: in a parallel run, other tests' captures come and go meanwhile."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    cancel, fired = threading.Event(), []

    def press_cancel() -> None:
        fired.append(time.monotonic())
        cancel.set()

    backend = InductorBackend(cache=tmp_path / "captures")  # nothing cached: the capture must run
    threading.Timer(1.5, press_cancel).start()
    outcome = convert(_request(TASKS / "relu.py", samples=1, rounds=1), backend, pool, cancelled=cancel.is_set)
    returned = time.monotonic()
    assert cancel.is_set(), "the conversion ended before the cancel: the test proves nothing"
    assert outcome.stopped == "cancelled" and outcome.attempts == []
    assert returned - fired[0] < 2.0, "Inductor's compile ran on after the cancel"
    assert _captures_of_this_process() == [], "a capture process outlived the conversion"
    assert not list(scratch.glob("tritonize-run-*")), "the capture's scratch directory was left behind"
    assert not list((tmp_path / "captures").glob("*.json")), "a cancelled capture is not cached"


def _captures_of_this_process() -> list[int]:
    """Live capture processes this process started: its descendants, and orphans (a capture that lost its parent
    is reparented to pid 1); another test's, running beside this one, are neither."""
    found = subprocess.run(["pgrep", "-f", "model_server.inductor.capture"], capture_output=True, text=True)
    ours = set(procs.descendants(os.getpid())) | set(procs.children(1))
    return [int(pid) for pid in found.stdout.split() if int(pid) in ours]


@pytest.mark.gpu
def test_reaching_the_target_speedup_stops_before_the_repair_round():
    """Also: the task's baselines are timed while the backend generates, so every candidate finds them."""
    correct = (CANDIDATES / "relu_ok.py").read_text()

    class SlowBackend(ScriptedBackend):
        def generate(self, request: GenerationRequest) -> Iterator[Batch]:
            time.sleep(20)  # what a model takes; the pool warms and times the baselines meanwhile
            yield from super().generate(request)

    backend = SlowBackend([[_wrong_relu(), correct], [correct]])
    options = dict(samples=2, rounds=2, trials=2, target_speedup=0.01)
    with VerifierPool(size=1, device="cuda") as gpu:
        outcome = convert(_request(TASKS / "relu.py", **options), backend, gpu)
    assert outcome.stopped == "target_speedup" and len(backend.requests) == 1
    assert outcome.best is not None and outcome.best.report.timing["speedup_vs_eager"] > 0.01
    assert outcome.best.report.timing["baseline_cached"], outcome.best.report.timing


def _attempt(index: int, policy: str, ms: float | None, verdict: str = "correct") -> Attempt:
    reward = 1.0 if policy == "strict" and verdict == "correct" else 0.0
    timing = None if ms is None else {"candidate_ms": ms}
    report = Report(verdict=verdict, reward=reward, policy=policy, timing=timing)
    return Attempt(1, index, f"source {index}", report, f"variant {index}", policy)


def test_an_all_triton_candidate_wins_unless_a_hybrid_is_meaningfully_faster():
    strict, hybrid = _attempt(1, "strict", 1.00), _attempt(2, "hybrid", 0.97)
    assert _choose([strict, hybrid], "hybrid") == (strict, "all Triton; the hybrid candidate is not 1.05x faster")
    much_faster = _attempt(3, "hybrid", 0.5)
    best, why = _choose([strict, hybrid, much_faster], "hybrid")
    assert best is much_faster and why.endswith("2.00x faster than the fastest all-Triton candidate")
    failed = _attempt(4, "strict", None, verdict="incorrect")
    best, why = _choose([failed, hybrid], "hybrid")
    assert best is hybrid and why.endswith("no all-Triton candidate was correct")
    assert _choose([failed], "hybrid") == (None, "")
    assert _choose([_attempt(5, "strict", None)], "hybrid")[1] == "correct", "on the CPU nothing is timed"


def test_under_the_strict_policy_a_hybrid_candidate_is_never_chosen():
    strict, much_faster = _attempt(1, "strict", 1.00), _attempt(2, "hybrid", 0.5)
    assert _choose([strict, much_faster], "strict")[0] is strict
    assert _choose([_attempt(3, "strict", None, verdict="incorrect"), much_faster], "strict") == (None, "")
    with pytest.raises(ValueError, match="policy must be strict or hybrid"):
        _request(TASKS / "relu.py", policy="lenient")


class _OneAtATimePool(VerifierPool):
    """A real CPU pool that reports room for one verification of the task at a time (what `fitting` says on a GPU
    once a huge task's baseline has measured its memory: nothing measures GPU memory here) and records when each
    verification runs."""

    def __init__(self):
        super().__init__(size=2, device="cpu")
        self.spans: list[tuple[float, float]] = []

    def fitting(self, task):
        return 1

    def verify(self, *args, **kwargs):
        started = time.monotonic()
        try:
            return super().verify(*args, **kwargs)
        finally:
            self.spans.append((started, time.monotonic()))


def test_verifications_that_do_not_fit_beside_each_other_run_one_at_a_time():
    correct = (CANDIDATES / "relu_ok.py").read_text()
    with _OneAtATimePool() as narrow:
        outcome = convert(
            _request(TASKS / "relu.py", samples=3, rounds=1, trials=2),
            ScriptedBackend([[correct, correct.replace("256", "128"), _wrong_relu()]]),
            narrow,
            lambda event: None,
        )
        spans = sorted(narrow.spans)
    assert sorted(a.report.verdict for a in outcome.attempts) == ["correct", "correct", "incorrect"]
    assert len(spans) == 3
    assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(spans)), spans


class _SlowBaselinePool(_OneAtATimePool):
    """A real CPU pool whose baseline timing takes a while (as a torch.compile baseline does on a GPU) and which
    knows the task's memory (room for `room` of its verifications at once) or, with None, knows nothing of it (as
    on a GPU before the baseline's first job has measured it: nothing measures GPU memory here)."""

    def __init__(self, room: int | None):
        super().__init__()
        self.room = room

    def fitting(self, task):
        return self.room

    baseline_done = math.inf

    def time_baseline(self, task, options=None, **keywords):
        time.sleep(1.0)
        self.baseline_done = time.monotonic()


@pytest.mark.parametrize("room", [None, 2, 3])
def test_a_second_verification_runs_beside_the_baseline_only_where_the_task_is_known_to_fit_beside_both(room):
    """Unknown memory, or room for two (the baseline counts as one): the second candidate waits for the first or
    the baseline. Room for three: both verify while the baseline runs."""
    correct = (CANDIDATES / "relu_ok.py").read_text()
    with _SlowBaselinePool(room) as pool:
        outcome = convert(
            _request(TASKS / "relu.py", samples=2, rounds=1, trials=2),
            ScriptedBackend([[correct, correct.replace("256", "128")]]),
            pool,
            lambda event: None,
        )
        (_, first_end), (second_start, _) = sorted(pool.spans)
        baseline_done = pool.baseline_done
    assert [a.report.verdict for a in outcome.attempts] == ["correct", "correct"]
    if room == 3:
        assert second_start < min(first_end, baseline_done), (second_start, first_end, baseline_done)
    else:
        assert second_start >= min(first_end, baseline_done), (second_start, first_end, baseline_done)
