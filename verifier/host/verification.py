"""One verification, start to finish: static checks, reference, candidate, comparison, timing, report.

Trust comes from separation: the task runs in a sandbox the candidate never touches, and each sandbox makes
the same inputs from the same seeds on the device. The candidate's job streams its outputs through the slot's
channel to the reference side's job, which compares them with the task's own outputs as they arrive; the
parent (this module) runs the two jobs side by side, judges both results, and maps every way a run can end
to exactly one verdict.
"""

from __future__ import annotations

import contextlib
import random
import re
import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from verifier.audit.anti_hacking import check_candidate
from verifier.dynamic import forward_parameters, parse_dynamic, positions
from verifier.errors import TaskError, UsageError
from verifier.host import gpu_lock, sanitizer
from verifier.host.zygote_handle import JobOutcome, ZygoteHandle, start_all
from verifier.options import VerifyOptions
from verifier.report import Report
from verifier.rules import HYBRID_ALLOWS, RULES
from verifier.task import Task, syntax_error_at
from verifier.wire.channel import Channel
from verifier.wire.messages import (
    Call,
    Job,
    JobKind,
    ReferenceResult,
    Violation,
)
from verifier.wire.resize import STEPS

OUTPUT_LIMIT = 4000
MIN_RESIZED = 2  # of the other sizes a dynamic kernel is verified at, the task must run at least this many
SCALED_INPUTS = (4.0, 0.25, -1.0)  # factors of the task's floating-point inputs in the last trials (`_calls`)
REFERENCE_CACHES = (".triton", ".cache")  # what the reference's scratch keeps between verifications
CANDIDATE_MODULE = "candidate"
TASK_INPUTS_FILE = "task_inputs.py"
CHANNEL_SLOT_BYTES = {"cuda": 128 * 2**20, "cpu": 2**20}  # on a GPU: fewer, larger chunks (one sync each)
SANITIZE_SLOWDOWN = 20  # memcheck runs kernels 10-100x slower: its run gets this many timeouts
SANITIZE_MIN_SECONDS = 300.0
UNTRUSTED_OUTPUT = "untrusted: written by the candidate's code; a report or prompt shows it, never acts on it"
# PyTorch compute, seen in the source or at run time, and what is not known to be allowed: what the hybrid policy
# accepts (and never rewards)
LIST_LIMIT = 1000  # entries of a list in the candidate's result that are read
PYTORCH_WORK = (
    (("conv",), "the convolution"),
    (("linear", "matmul", "`@`", ".mm", "bmm", "addmm", "einsum", "baddbmm"), "the matrix multiplication"),
    (("norm",), "the normalisation"),
    (("pool",), "the pooling"),
    (("softmax",), "the softmax"),
    (("attention",), "the attention"),
)


class Slot:
    """The two sandboxes one verification uses, the reference's zygote and the candidate's, and the channel
    that carries the candidate's outputs to the reference side."""

    def __init__(
        self, index: int | str, base: Path, device: str, isolate: bool, cache_dir: Path, gpu: str | None = None
    ):
        self.channel = Channel.create(CHANNEL_SLOT_BYTES.get(device, CHANNEL_SLOT_BYTES["cuda"]))
        fds = [self.channel.fd]
        self.reference = ZygoteHandle(f"ref-{index}", base, device, isolate, [str(cache_dir)], fds, gpu)
        self.candidate = ZygoteHandle(f"cand-{index}", base, device, isolate, pass_fds=fds, gpu=gpu, role="candidate")

    def stop(self) -> None:
        try:
            self.reference.close()
            self.candidate.close()
        finally:
            self.channel.close()


@dataclass
class Shared:
    """What concurrent verifications share: the device, one timing lock (measurements never overlap) and the
    baseline timings of each task, measured once."""

    device: str
    gpu: str | None = None  # the GPU the sandboxes see, as CUDA_VISIBLE_DEVICES names it (None: the default one)
    timing_lock: threading.Lock = field(default_factory=threading.Lock)
    baselines: dict[tuple, dict] = field(default_factory=dict)
    footprints: dict[str, dict] = field(default_factory=dict)  # task digest -> its eager run's peak GPU memory
    baseline_locks: dict[tuple, threading.Lock] = field(default_factory=dict)  # one baseline of a task at a time
    _locks_lock: threading.Lock = field(default_factory=threading.Lock)

    def baseline_lock(self, key: tuple) -> threading.Lock:
        """The lock a verification holds while it compiles and times a task's baselines: the others of the task
        wait for the result instead of compiling it again."""
        with self._locks_lock:
            return self.baseline_locks.setdefault(key, threading.Lock())

    @contextlib.contextmanager
    def measuring(self) -> Iterator[None]:
        """For a timing run: this pool's timing lock, then the GPU alone (`gpu_lock`, across processes)."""
        with self.timing_lock, gpu_lock.measuring(self.gpu):
            yield


class Verification:
    """One candidate's source against one task on a slot (`VerifierPool.verify` picks the slot); `run()` once.
    `candidate_origin` names the candidate in messages (its path, where it came from a file)."""

    def __init__(
        self,
        slot: Slot,
        shared: Shared,
        task: Task,
        candidate: str,
        opts: VerifyOptions,
        cancelled: Callable[[], bool] | None,
        candidate_origin: str = "candidate.py",
    ):
        self.slot = slot
        self.cancelled = cancelled
        self.shared = shared
        self.task = task
        self.candidate_source = candidate
        self.candidate_origin = candidate_origin
        self.opts = opts
        self.phases: dict[str, float] = {}
        seed = opts.seed if opts.seed is not None else secrets.randbelow(2**63)  # unpredictable, yet reported
        self.report = Report(
            verdict="crashed",
            device=shared.device,
            interpreter=shared.device == "cpu",
            seed=seed,
            task=task.origin,
            candidate=candidate_origin,
            policy=opts.policy,
        )
        self.seeder = random.Random(seed)
        self.init_seed = self.seeder.randrange(2**31)
        self.out_of_memory = False  # the last candidate run failed for want of device memory

    def run(self) -> Report:
        started = time.perf_counter()
        try:
            self._run()
        finally:
            self.slot.candidate.wipe()
            self.slot.reference.wipe(keep=REFERENCE_CACHES)
            self.phases["total_s"] = time.perf_counter() - started
            self.report.phases = {k: round(v, 4) for k, v in self.phases.items()}
        return self.report

    def time_baseline(self) -> None:
        """Only the task's eager and torch.compile timings, cached for the verifications that follow (on a GPU):
        what a conversion can measure while its candidates are still being generated. First the task's memory
        footprint (one eager call, a second or two), so that the pool can tell how many of the task's
        verifications fit beside each other long before the compile and the timings are done."""
        if self.shared.device != "cuda" or not self.opts.timing:
            return
        try:
            start_all([self.slot.reference])
            self.first_seed = self.seeder.randrange(2**31)
            self._measure_footprint()
            self._ensure_baseline()
        finally:
            self.slot.reference.wipe(keep=REFERENCE_CACHES)

    def _measure_footprint(self) -> None:
        """The peak GPU memory of one eager call of the task, into `shared.footprints` (nothing on a failure: the
        baseline's timing run reports it)."""
        if self.task.digest in self.shared.footprints:
            return
        with gpu_lock.sharing(self.shared.gpu):
            outcome = self._baseline_job({"footprint": True})
        result = outcome.result
        if outcome.status == "ok" and result and result.get("ok") and result.get("peak_bytes"):
            self.shared.footprints[self.task.digest] = {
                "peak_bytes": result["peak_bytes"],
                "device_bytes": result["device_bytes"],
            }

    def _run(self) -> None:
        report = self.report
        try:
            findings = check_candidate(self.candidate_source, task_module=self.task.name)
        except SyntaxError as exc:
            self._finish("compile_error", f"{syntax_error_at(self.candidate_origin, exc)}: syntax error: {exc.msg}")
            return
        executable = self._sanitizer()
        self.static_findings = findings
        report.violations = [f.as_violation() for f in findings]
        errors = [f for f in findings if RULES[f.rule].rejects]
        if self.opts.policy == "hybrid":
            errors = [f for f in errors if f.rule not in HYBRID_ALLOWS]
        if errors and self.opts.static_checks:
            self._finish("rejected", _rejection_message(errors))
            return
        self.phases["start_s"] = start_all([self.slot.reference, self.slot.candidate])
        report.isolation = self.slot.candidate.isolation
        report.warnings.extend(report.isolation.get("warnings", []))
        if not self._check_correctness(self.opts.trials):
            return
        if executable and not self._sanitize(executable):
            return
        if self.shared.device == "cuda" and self.opts.timing:
            self._time()
        if report.verdict == "correct":
            report.reward = 1.0 if not any(v["severity"] == "error" for v in report.violations) else 0.0

    # ------------------------------------------------------------ correctness

    def _check_correctness(self, trials: int) -> bool:
        """The candidate on `trials` fresh input sets plus one enable_grad call, compared with the task as the
        outputs arrive; True if the candidate is correct."""
        seeds = [self.seeder.randrange(2**31) for _ in range(trials)]
        self.first_seed = seeds[0]
        calls = _calls(seeds)
        if self.opts.dynamic:
            calls = _with_resized_calls(calls, self.opts.dynamic, self.task, self.seeder)
        pair = self._run_pair("candidate", calls)
        if pair is None:
            return False
        reference, result = pair
        report = self.report
        report.trials = trials
        report.launches = [n for n in _listed(result.get("launches")) if isinstance(n, int) and not isinstance(n, bool)]
        self.phases.update(_stage_seconds(result.get("stages")))
        report.kernels = [str(name)[:200] for name in _listed(result.get("kernels"))]
        violations = self._runtime_findings(result)
        report.violations.extend(violations)
        report.coverage, report.library_calls, missing = _coverage(result.get("coverage"))
        if missing:
            report.warnings.append(f"coverage could not be measured: {missing}")
        comparison = reference["comparison"]
        problems = list(comparison["problems"])
        if reference["repeated"]:
            report.violations.append(RULES["TRI357"].seen_at_run_time(reference["repeated"]))
            problems.append(reference["repeated"])
        report.max_abs_error = comparison["max_abs_error"]
        report.max_rel_error = comparison["max_rel_error"]
        report.allclose_tolerance = _number(comparison.get("allclose_tolerance"))
        report.tolerance = comparison["tolerance"] or None
        rejecting = _rejecting(violations, self.opts.policy)
        if rejecting:
            self._finish("rejected", self._runtime_rejection(rejecting[0]))
            return False
        runtime = [v for v in violations if v not in rejecting and v["rule"] not in HYBRID_ALLOWS]
        if runtime or problems:
            self._finish("incorrect", said_once([f"{v['rule']}: {v['message']}" for v in runtime] + problems))
            return False
        skipped = [_text(note, 200) for note in _listed(reference.get("skipped"))]
        too_few = _too_few_resized(calls, skipped, self.opts.dynamic)
        if too_few:
            self._finish("runtime_error", too_few)
            return False
        exact = comparison.get("notes") or []
        likewise = f" (likewise {len(exact) - 1} more times)" if len(exact) > 1 else ""
        closeness = f"; {exact[0]}{likewise}" if exact else ""
        closeness += "; " + "; ".join(skipped) if skipped else ""
        self._finish("correct", f"matches the reference on {_trials_said(calls)} plus an enable_grad call{closeness}")
        return True

    def _runtime_findings(self, result: dict) -> list[Violation]:
        """The candidate job's runtime findings, checked for shape (its process wrote them), with what PyTorch
        computed during the compared calls as TRI360, explained by the source's own TRI302 findings."""
        findings = _violations(result.get("violations"))
        ran = _torch_work(result.get("torch_ops"))
        if ran:
            lines = sorted({f.line for f in getattr(self, "static_findings", []) if f.rule == "TRI302"})
            where = f"; the source computes in PyTorch at line{'s' if len(lines) > 1 else ''} " if lines else ""
            where += ", ".join(str(n) for n in lines[:5]) + (", ..." if len(lines) > 5 else "")
            findings.insert(0, RULES["TRI360"].seen_at_run_time(f"{ran}{where}"))
        return findings

    def _runtime_rejection(self, finding: Violation) -> str:
        """Why a runtime finding refused the candidate; PyTorch doing part of the work is said as such."""
        if finding["rule"] != "TRI360":
            return f"{finding['rule']}: {finding['message']}"
        return (
            f"{_pytorch_work(finding['message'])} ran in PyTorch during the compared calls ({finding['message']}); "
            "the strict policy requires Triton for all of the work (`--policy hybrid` accepts it, reports the share "
            "Triton does, and earns no reward)"
        )

    def _run_pair(self, kind: JobKind, calls: list[Call]) -> tuple[ReferenceResult, dict] | None:
        """The reference side's comparing job and the candidate's job, side by side, joined by the slot's
        channel; both results, or None after setting the verdict for a candidate that did not finish. Outside a
        timing run (whose caller holds the GPU alone), the pair shares the GPU: no timing runs meanwhile.

        A pair that ran out of device memory beside other work (another verification, a compile) runs once more
        with the GPU alone: only then is the task called broken, or the candidate's run failed."""
        if kind == "time_candidate":
            return self._run_jobs_of_pair(kind, calls)
        self.out_of_memory = False
        sharing = gpu_lock.sharing(self.shared.gpu) if self.shared.device == "cuda" else contextlib.nullcontext()
        try:
            with sharing:
                pair = self._run_jobs_of_pair(kind, calls)
            if not self.out_of_memory:
                return pair
            whose = "the candidate's run"
        except TaskError as exc:
            if not _out_of_memory(str(exc)):
                raise
            whose = "the task's own run"
        self.report.warnings.append(f"{whose} ran out of device memory beside other work: verified again alone")
        self.report.verdict, self.report.message = "crashed", ""
        with gpu_lock.measuring(self.shared.gpu):
            return self._run_jobs_of_pair(kind, calls)

    def _run_jobs_of_pair(self, kind: JobKind, calls: list[Call]) -> tuple[ReferenceResult, dict] | None:
        slot, channel = self.slot, self.slot.channel
        ref_name = slot.reference.new_job_name()
        cand_name, cand_files, cand_extra = self._candidate_job()
        candidate_seconds = self.opts.timeout
        wait = candidate_seconds + self.opts.timeout
        reference_job = {
            "module_name": self.task.name,
            "wait_seconds": wait,
            "atol": self.opts.atol,
            "rtol": self.opts.rtol,
        }
        task_file = self.task.file_name
        channel.reset()
        box: dict = {}

        def reference() -> None:
            try:
                box["outcome"] = self._run_job(
                    slot.reference,
                    ref_name,
                    "reference",
                    reference_job,
                    calls,
                    {task_file: self.task.source},
                    task_file,
                    wait + 10,
                )
            except BaseException as exc:  # re-raised in the caller's thread (Cancelled, a dead sandbox)
                box["error"] = exc
            finally:
                channel.close_reader()

        started = time.perf_counter()
        thread = threading.Thread(target=reference, name=f"reference-{ref_name}", daemon=True)
        thread.start()
        try:
            outcome = self._run_job(slot.candidate, cand_name, kind, cand_extra, calls, cand_files)
        finally:
            channel.close_writer()
            thread.join()
        self.phases["candidate_s"] = self.phases.get("candidate_s", 0.0) + outcome.seconds
        self.phases["reference_s"] = self.phases.get("reference_s", 0.0) + time.perf_counter() - started
        if "error" in box:
            raise box["error"]
        reference = self._reference_result(box["outcome"])
        result = self._job_result(outcome)
        if result is None:
            return None
        skipped = len(_listed(reference.get("skipped")))  # scaled trials the task itself could not run
        if reference["calls_compared"] + skipped < len(calls) and not reference["comparison"]["problems"]:
            reference["comparison"]["problems"].append(
                f"only {reference['calls_compared']} of {len(calls) - skipped} calls' outputs were compared"
            )
        return reference, result

    def _candidate_job(self) -> tuple[str, dict[str, str], dict]:
        """A fresh job in the candidate's sandbox: its name, its files (the candidate, and the task without its
        `Model`) and the job's candidate-side fields."""
        files = {f"{CANDIDATE_MODULE}.py": self.candidate_source, TASK_INPUTS_FILE: self.task.inputs_source}
        extra = {"inputs_source": TASK_INPUTS_FILE, "policy": self.opts.policy}
        return self.slot.candidate.new_job_name(), files, extra

    def _reference_result(self, outcome: JobOutcome) -> ReferenceResult:
        result = outcome.result
        if outcome.status != "ok" or outcome.signal or result is None or outcome.harness_error:
            raise TaskError(f"{self.task.origin}: the reference run failed: {_describe_outcome(outcome)}")
        if not result.get("ok"):
            line = f":{result['line']}" if result.get("line") else ""
            failure = f"{result['stage']} failed: {result['error_type']}: {result['error']}"
            raise TaskError(f"{self.task.origin}{line}: {failure}")
        return result

    # ------------------------------------------------------------ --sanitize

    def _sanitizer(self) -> str | None:
        """compute-sanitizer's path when `--sanitize` was asked for; a UsageError if it cannot run here."""
        if not self.opts.sanitize:
            return None
        if self.shared.device != "cuda":
            raise UsageError(
                "--sanitize needs a CUDA GPU: compute-sanitizer checks device kernels (on the CPU every call "
                "already runs with guard zones around its buffers)"
            )
        executable = sanitizer.find()
        if executable is None:
            raise UsageError(
                "--sanitize needs compute-sanitizer from the CUDA toolkit; none found on PATH, in $CUDA_HOME/bin "
                "or /usr/local/cuda/bin"
            )
        return executable

    def _sanitize(self, executable: str) -> bool:
        """One more call of the correct candidate under memcheck; False after setting the verdict if memcheck
        saw a bad access. A sanitized run that cannot finish is a warning, not a verdict."""
        started = time.perf_counter()
        name, files, extra = self._candidate_job()
        calls: list[Call] = [{"seed": self.first_seed, "grad": False, "label": "sanitized call"}]
        extra["sanitizer"] = executable
        seconds = max(SANITIZE_MIN_SECONDS, SANITIZE_SLOWDOWN * self.opts.timeout)
        with gpu_lock.sharing(self.shared.gpu):
            outcome = self._run_job(self.slot.candidate, name, "sanitize", extra, calls, files, seconds=seconds)
        self.phases["sanitize_s"] = time.perf_counter() - started
        count, errors = sanitizer.read_log(outcome.sanitizer_log)
        if errors or count:
            shown = errors[:3] or [f"{count} errors"]
            for error in shown:
                self.report.violations.append(RULES["TRI359"].seen_at_run_time(f"compute-sanitizer memcheck: {error}"))
            more = f" (and {count - len(shown)} more)" if count > len(shown) else ""
            errors_word = "memory error" if count == 1 else "memory errors"
            self._finish(
                "incorrect", f"TRI359: compute-sanitizer memcheck found {count} {errors_word}: {shown[0]}{more}"
            )
            return False
        result = outcome.result
        if outcome.status != "ok" or outcome.exit_code or not result or not result.get("ok"):
            detail = _text(result.get("error")) if result else _describe_outcome(outcome)
            self.report.warnings.append(f"--sanitize: the run under compute-sanitizer did not finish: {detail}")
            return True
        self.report.message += "; compute-sanitizer memcheck saw no memory errors"
        return True

    # ------------------------------------------------------------ timing

    def _time(self) -> None:
        baseline = self._ensure_baseline()
        if baseline is None:
            return
        with self.shared.measuring():
            started = time.perf_counter()
            timing = self._measure(baseline)
            self.phases["timing_s"] = time.perf_counter() - started
        if timing is None:
            return
        fastest = max(timing["speedup_vs_eager"], timing.get("speedup_vs_compile") or 0.0)
        if fastest > self.opts.suspect_speedup:
            if not self._check_correctness(2 * self.opts.trials):
                self.report.message = f"re-verification of a {fastest:.1f}x speedup failed: {self.report.message}"
                return
            with self.shared.measuring():
                timing = self._measure(baseline)
            if timing is None:
                return
            timing["reverified"] = True
        self.report.timing = timing

    def _measure(self, ref: dict) -> dict | None:
        calls: list[Call] = [{"seed": self.first_seed, "grad": False, "label": "timed call"}]
        pair = self._run_pair("time_candidate", calls)
        if pair is None:
            return None
        reference, result = pair
        violations = self._runtime_findings(result)
        rejecting = _rejecting(violations, self.opts.policy)
        self.report.violations.extend(v for v in violations if v not in self.report.violations)
        if rejecting:
            self._finish("rejected", f"while timed: {self._runtime_rejection(rejecting[0])}")
            return None
        problems = reference["comparison"]["problems"]
        if problems:
            self._finish("incorrect", "; ".join(problems[:3]))
            return None
        timed = result.get("candidate")
        median, trials = (timed.get(k) if isinstance(timed, dict) else None for k in ("median_ms", "trials"))
        if not isinstance(median, int | float) or not median > 0 or not isinstance(trials, int):
            self._finish("crashed", "the candidate crashed: its timing run reported no time")
            return None
        return _timing_summary(median, trials, ref)

    def _ensure_baseline(self) -> dict | None:
        """The task's baselines (None where they could not be timed: a warning says why), measured unless another
        verification did (or does: it is waited for). First torch.compile's compile of the task (seconds), beside
        other GPU work, so that the timing run, which holds the GPU alone, finds it in Inductor's cache; the
        compile's failures are the timing run's to report."""
        key = self._baseline_key()
        with self.shared.baseline_lock(key):
            if key in self.shared.baselines:
                return self._baseline()
            if self.opts.compile_baseline:
                started = time.perf_counter()
                with gpu_lock.sharing(self.shared.gpu):
                    self._baseline_job({"prepare": True})
                self.phases["baseline_compile_s"] = time.perf_counter() - started
            with self.shared.measuring():
                return self._baseline()

    def _baseline(self) -> dict | None:
        """Eager and torch.compile timings of the task, measured once per task (shared by the pool's slots)."""
        key = self._baseline_key()
        cached = self.shared.baselines.get(key)
        if cached is not None:
            return {**cached, "cached": True}
        outcome = self._baseline_job({})
        ref = outcome.result
        if outcome.status != "ok" or not ref or not ref.get("ok"):
            detail = _text(ref.get("error")) if ref else _describe_outcome(outcome)
            self.report.warnings.append(f"baseline timing failed: {detail}")
            return None
        self.shared.baselines[key] = ref
        return ref

    def _baseline_key(self) -> tuple:
        return (self.task.digest, self.opts.compile_baseline, self.opts.timing_trials)

    def _baseline_job(self, extra: dict) -> JobOutcome:
        task_file = self.task.file_name
        return self._run_job(
            self.slot.reference,
            self.slot.reference.new_job_name(),
            "time_reference",
            {"module_name": self.task.name, "compile": self.opts.compile_baseline, **extra},
            [{"seed": self.first_seed, "grad": False, "label": "baseline"}],
            {task_file: self.task.source},
            source=task_file,
            seconds=max(self.opts.timeout, 600.0),
        )

    # ------------------------------------------------------------ plumbing

    def _run_job(
        self,
        zygote: ZygoteHandle,
        name: str,
        kind: JobKind,
        extra: dict,
        calls: list[Call],
        files: dict[str, str],
        source: str | None = None,
        seconds: float | None = None,
    ) -> JobOutcome:
        if not zygote.running:
            self.phases["start_s"] = self.phases.get("start_s", 0.0) + zygote.ensure_started()
        job: Job = {
            "id": name,
            "kind": kind,
            "dir": name,
            "files": files,
            "device": self.shared.device,
            "init_seed": self.init_seed,
            "source": source or f"{CANDIDATE_MODULE}.py",
            "module_name": CANDIDATE_MODULE,
            "timing_trials": self.opts.timing_trials,
            "calls": calls,
            "channel_fd": self.slot.channel.fd,
            **extra,
        }
        return zygote.run(job, self.opts.limits(seconds), self.cancelled)

    def _job_result(self, outcome: JobOutcome) -> dict | None:
        """The candidate job's result, or None after setting the verdict for a job that did not finish."""
        self.report.candidate_output = {
            "stdout": _cut(outcome.stdout),
            "stderr": _cut(outcome.stderr),
            "trust": UNTRUSTED_OUTPUT,
        }
        result = outcome.result
        if outcome.status == "timeout":
            self._finish("timeout", _timeout_message(self.opts.timeout, self.shared.device))
        elif outcome.status == "memory":
            limit = self.opts.memory_limit // 2**20
            self._finish("crashed", f"the candidate exceeded the memory limit of {limit} MiB and was killed")
        elif outcome.status != "ok" or outcome.signal or outcome.exit_code or result is None or outcome.harness_error:
            hint = _memory_hint(self.shared.device) if outcome.signal in MEMORY_SIGNALS else ""
            self._finish("crashed", f"the candidate crashed: {_describe_outcome(outcome)}{hint}")
        elif not result.get("ok"):
            self.out_of_memory = _out_of_memory(f"{result.get('error_type')}: {result.get('error')}")
            violations = _violations(result.get("violations"))
            rejecting = _rejecting(violations, self.opts.policy)
            self.report.violations.extend(violations)
            if rejecting:  # a refusal the candidate's code then failed on is why it failed
                self._finish("rejected", self._runtime_rejection(rejecting[0]))
            else:
                verdict, message = _failure_verdict(result, self.candidate_origin)
                memory = any(words in message for words in MEMORY_ERRORS)
                self._finish(verdict, message + (_memory_hint(self.shared.device) if memory else ""))
        else:
            return result
        return None

    def _finish(self, verdict: str, message: str) -> None:
        self.report.verdict = verdict
        self.report.message = message
        if verdict != "correct":
            self.report.reward = 0.0


def _calls(seeds: list[int]) -> list[Call]:
    """One call per seed, then an enable_grad call on the first seed's inputs. The last trials (up to one per factor
    of SCALED_INPUTS, keeping at least two of the task's own) draw the task's inputs scaled up, down and negated:
    values past the constants a task compares against (a clamp's bounds, a threshold) and of the other sign, which
    its own random inputs almost never reach. They come after the enable_grad call, last, because a task may be
    unable to run them (a device-side assert on a GPU ends its process's use of the device)."""
    scaled = min(len(SCALED_INPUTS), max(0, len(seeds) - 2))
    scales = [1.0] * (len(seeds) - scaled) + list(SCALED_INPUTS[:scaled])
    calls: list[Call] = []
    for number, (seed, scale) in enumerate(zip(seeds, scales, strict=True), 1):
        label = f"trial {number}" + (f" (inputs x{scale:g})" if scale != 1.0 else "")
        calls.append({"seed": seed, "grad": False, "label": label, "scale": scale})
    calls.insert(len(seeds) - scaled, {"seed": seeds[0], "grad": True, "label": "enable_grad call"})
    return calls


def _with_resized_calls(calls: list[Call], spec_text: str, task: Task, seeder: random.Random) -> list[Call]:
    """`calls` with one call per other size of the dynamic dimensions (`verifier.wire.resize.STEPS`), after the
    task's own trials and the enable_grad call: the kernel must accept those sizes and compute them as the task
    does (where the task itself cannot run one, it is skipped; `_too_few_resized` counts them)."""
    spec = parse_dynamic(spec_text)
    dims = positions(spec, forward_parameters(task.tree), task.origin)
    trials = sum(1 for c in calls if not c["grad"] and c.get("scale", 1.0) == 1.0)
    resized: list[Call] = [
        {
            "seed": seeder.randrange(2**30),
            "grad": False,
            "label": f"trial {trials + number} (dynamic dims {step}: {spec})",
            "resize": {"dims": dims, "auto": spec.auto, "step": step},
        }
        for number, step in enumerate(STEPS, 1)
    ]
    # after the enable_grad call, as the scaled trials are: the task itself may be unable to run them
    first_scaled = next((i for i, c in enumerate(calls) if c.get("scale", 1.0) != 1.0), len(calls))
    renumbered = [_renumbered(c, len(STEPS)) for c in calls[first_scaled:]]
    return calls[:first_scaled] + resized + renumbered


def _too_few_resized(calls: list[Call], skipped: list[str], spec: str | None) -> str | None:
    """Why the other sizes do not show a dynamic kernel correct: the task's own forward failed at more than one
    of them (a convolution's input smaller than its kernel), so fewer than MIN_RESIZED were compared."""
    resized = [c["label"] for c in calls if "resize" in c]
    missed = [note for note in skipped if any(note.startswith(label + " ") for label in resized)]
    if not resized or len(resized) - len(missed) >= MIN_RESIZED:
        return None
    return (
        f"the kernel was compared at only {len(resized) - len(missed)} other size(s) along the dynamic dimensions "
        f"{spec}, not {MIN_RESIZED}: {'; '.join(missed)}; leave out the dimensions the task cannot vary"
    )


def _renumbered(call: Call, shift: int) -> Call:
    label = re.sub(r"^trial (\d+)", lambda m: f"trial {int(m.group(1)) + shift}", call["label"])
    return {**call, "label": label}


CALL_LABEL = re.compile(
    r"^((?:trial \d+(?: \((?:inputs x|dynamic dims )[^)]*\))?|enable_grad call)(?:, output \d+)?): "
)
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
KINDS_SAID = 3


def said_once(problems: list[str]) -> str:
    """The problems of a verdict, each kind said once: the first call's words in full, then the other calls where
    the same went wrong with other numbers ("(likewise in trial 2 and the enable_grad call)"); at most KINDS_SAID
    kinds, and how many more there were."""
    kinds: dict[str, tuple[str, list[str]]] = {}
    for problem in problems:
        matched = CALL_LABEL.match(problem)
        label, rest = (matched.group(1), problem[matched.end() :]) if matched else ("", problem)
        first, others = kinds.setdefault(NUMBER.sub("#", rest), (problem, []))
        if problem is not first:
            others.append(label or "again")
    said = []
    for first, others in list(kinds.values())[:KINDS_SAID]:
        likewise = f" (likewise in {_listed_words(others)})" if others else ""
        said.append(first + likewise)
    more = len(kinds) - KINDS_SAID
    return "; ".join(said) + (f" (and {more} more kind{'s' if more > 1 else ''} of problem)" if more > 0 else "")


def _listed_words(words: list[str]) -> str:
    named = [f"the {w}" if w == "enable_grad call" else w for w in words]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def _trials_said(calls: list[Call]) -> str:
    """'5 trials (2 with the inputs scaled: x4, x0.25)'."""
    trials = [c for c in calls if not c["grad"]]
    scales = [f"x{c['scale']:g}" for c in trials if c.get("scale", 1.0) != 1.0]
    resized = sum(1 for c in trials if "resize" in c)
    said = f"{len(trials)} trial{'s' if len(trials) != 1 else ''}"
    notes = [f"{resized} at other sizes along the dynamic dimensions"] if resized else []
    notes += [f"{len(scales)} with the inputs scaled: {', '.join(scales)}"] if scales else []
    return said + (f" ({'; '.join(notes)})" if notes else "")


def _stage_seconds(stages: object) -> dict[str, float]:
    """The candidate job's own stage timings as phases (written by the candidate's process: only the known
    stages, and only numbers, are kept)."""
    known = ("load_s", "first_call_s", "calls_s", "coverage_s")
    if not isinstance(stages, dict):
        return {}
    return {f"candidate_{k}": float(v) for k, v in stages.items() if k in known and isinstance(v, int | float)}


def _rejection_message(errors: list) -> str:
    """Why the static rules refused the candidate. What the hybrid policy would accept (a name not known to be
    allowed, which may be library work) is said as such, with the policy that accepts it, rather than as a hack."""
    first = errors[0]
    if all(f.rule in HYBRID_ALLOWS for f in errors):
        where = ", ".join(str(f.line) for f in errors[:5]) + (", ..." if len(errors) > 5 else "")
        subject = first.message[0].upper() + first.message[1:]
        return (
            f"{subject} (line{'s' if len(errors) > 1 else ''} {where}); the strict policy allows Triton launches "
            "and the operations that compute nothing (`--policy hybrid` accepts library work, reports the share "
            "Triton does, and earns no reward)"
        )
    return f"{len(errors)} anti-hacking rule violation(s); first: {first.rule} at line {first.line}: {first.message}"


def _pytorch_work(message: str) -> str:
    """What a TRI302 finding's PyTorch call computes, in words ("The convolution"), else the finding's subject
    ("`torch.relu`", "Arithmetic on a tensor")."""
    lowered = message.lower()
    for keys, words in PYTORCH_WORK:
        if any(key in lowered for key in keys):
            return words[0].upper() + words[1:]
    subject = message.split(";")[0]
    for tail in (
        " computes in PyTorch",
        " runs in PyTorch",
        " runs a PyTorch module or callable",
        " is PyTorch compute",
    ):
        subject = subject.split(tail)[0]
    return subject[0].upper() + subject[1:] if subject else "Part of the work"


def _coverage(measured: object) -> tuple[float | None, list[str], str | None]:
    """The child's coverage figures, checked for shape (they come from the candidate's process), and why
    there is no share when there is none."""
    if not isinstance(measured, dict):
        return None, [], "no figure came back"
    share = measured.get("share")
    share = float(share) if isinstance(share, int | float) and 0.0 <= share <= 1.0 else None
    library = measured.get("library_calls")
    names = [str(n)[:80] for n in library[:10]] if isinstance(library, list) else []
    missing = None if share is not None else str(measured.get("error") or "no figure came back")[:300]
    return share, names, missing


def _timeout_message(seconds: float, device: str) -> str:
    """The timeout verdict's message: the limit that was hit, and what to do when the candidate is only slow."""
    killed = f"the candidate did not finish within the {seconds:g} s timeout and was killed"
    if device == "cpu":
        return (
            f"{killed}; on the CPU its kernels run in Triton's interpreter, which is slow at large shapes: raise "
            "--timeout, shrink the task's get_inputs(), or verify on a GPU (--device cuda)"
        )
    return f"{killed}; if it is slow rather than stuck, raise --timeout or shrink the task's get_inputs()"


def _failure_verdict(result: dict, candidate: str) -> tuple[str, str]:
    """compile_error for failures to load or compile the candidate, runtime_error for failures while running;
    crashed for a failure without the fields every failure carries (the candidate's process wrote it)."""
    stage, error_type, error = (result.get(key) for key in ("stage", "error_type", "error"))
    if not all(isinstance(field, str) for field in (stage, error_type, error)):
        return "crashed", "the candidate crashed: its sandbox reported a failure without its stage and error"
    line = result.get("line")
    where = f"{candidate}:{line}" if isinstance(line, int) and not isinstance(line, bool) and line > 0 else candidate
    message = f"{where}: {stage[:100]} failed: {error_type[:200]}: {_text(error)}"
    if stage == "import" or result.get("triton_compile_error"):
        return "compile_error", message
    return "runtime_error", message


MEMORY_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT)
MEMORY_ERRORS = ("illegal memory access", "misaligned address", "illegal address")


def _memory_hint(device: str) -> str:
    """What usually makes a kernel crash or hit an illegal address, and the tools that find where."""
    find = (
        "`tritonize verify --sanitize` (compute-sanitizer) names the kernel and the access"
        if device.startswith("cuda")
        else "`tritonize audit` checks the masks, and on a GPU `tritonize verify --sanitize` names the access"
    )
    return (
        "; a kernel that reads or writes out of bounds (a grid larger than the data, a load or store without its "
        f"mask) is the usual cause: {find}"
    )


def _describe_outcome(outcome: JobOutcome) -> str:
    if outcome.status == "timeout":
        return f"timed out after {outcome.seconds:.1f} s"
    if outcome.status == "memory":
        return f"exceeded the memory limit ({outcome.peak_rss // 2**20} MiB resident)"
    if outcome.status == "died":
        return f"the sandbox process died ({outcome.detail})"
    if outcome.signal:
        name = signal.Signals(outcome.signal).name if outcome.signal in signal.Signals._value2member_map_ else ""
        return f"killed by signal {outcome.signal} {name}".strip()
    if outcome.harness_error:
        return f"the harness failed: {outcome.harness_error}"
    if outcome.detail:
        return outcome.detail
    return f"exited with code {outcome.exit_code} before reporting a result"


def _rejecting(violations: list[Violation], policy: str) -> list[Violation]:
    """The runtime findings that refuse the candidate outright (the others make it incorrect); under the hybrid
    policy PyTorch's work is not one of them. The child's result is untrusted: a rule id the catalog does not
    know can only come from tampering, and refuses too."""
    allowed = HYBRID_ALLOWS if policy == "hybrid" else set()
    return [v for v in violations if v["rule"] not in RULES or (RULES[v["rule"]].rejects and v["rule"] not in allowed)]


def _out_of_memory(error: str) -> bool:
    """Whether a failure is the device running out of memory (which work beside it may have caused)."""
    return "OutOfMemoryError" in error or "CUDA out of memory" in error


def _listed(value: object) -> list:
    """A list field of the candidate's result, at most LIST_LIMIT entries (anything else: empty)."""
    return value[:LIST_LIMIT] if isinstance(value, list) else []


def _violations(value: object) -> list[Violation]:
    """Runtime findings from the candidate's process, each rebuilt from its fields (malformed ones dropped)."""
    found: list[Violation] = []
    for item in _listed(value):
        if isinstance(item, dict) and isinstance(item.get("rule"), str) and isinstance(item.get("message"), str):
            rule = item["rule"][:20]
            severity = RULES[rule].severity if rule in RULES else "error"
            message = item["message"][:1000]
            found.append({"rule": rule, "severity": severity, "message": message, "line": 0, "column": 0})
    return found


def _torch_work(value: object) -> str:
    """What PyTorch computed during the compared calls, in words ("aten.relu.default 6x in 6 calls"), or ""."""
    totals: dict[str, int] = {}
    calls = 0
    for entry in _listed(value):
        ops = entry.get("ops") if isinstance(entry, dict) else None
        if not isinstance(ops, dict) or not ops:
            continue
        calls += 1
        for name, count in list(ops.items())[:LIST_LIMIT]:
            if isinstance(count, int) and not isinstance(count, bool) and count > 0:
                totals[str(name)[:100]] = totals.get(str(name)[:100], 0) + count
    if not totals:
        return ""
    ranked = sorted(totals.items(), key=lambda item: -item[1])
    named = ", ".join(f"{name} {count}x" for name, count in ranked[:5]) + (", ..." if len(ranked) > 5 else "")
    return f"{named} in {calls} call{'s' if calls > 1 else ''}"


def _timing_summary(cand: float, trials: int, reference: dict) -> dict:
    eager = reference["eager"]["median_ms"]
    compiled = reference.get("compiled", {}).get("median_ms")
    return {
        "candidate_ms": cand,
        "eager_ms": eager,
        "compile_ms": compiled,
        "speedup_vs_eager": eager / cand,
        "speedup_vs_compile": compiled / cand if compiled else None,
        "trials": trials,
        "method": "cuda events, 256 MiB L2 flush before each call, median",
        "compile_error": reference.get("compile_error"),
        "reverified": False,
        "baseline_cached": bool(reference.get("cached")),
    }


def _cut(text: str, limit: int = OUTPUT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + "\n... [truncated]"


def _text(value: object, limit: int = 1000) -> str:
    """A field of a result from a sandbox, as bounded text whatever its type."""
    return str(value)[:limit]


def _number(value: object) -> float | None:
    """A float from the task's side, or None where it sent something else."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
