"""One verification, start to finish: static checks, reference, candidate, comparison, timing, report.

Trust comes from separation: the task runs in a sandbox the candidate never touches, and each sandbox makes
the same inputs from the same seeds on the device. The candidate's job streams its outputs through the slot's
channel to the reference side's job, which compares them with the task's own outputs as they arrive; the
parent (this module) runs the two jobs side by side, judges both results, and maps every way a run can end
to exactly one verdict.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import random
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from verifier.audit.anti_hacking import check_candidate
from verifier.errors import TaskError, UsageError
from verifier.host import gpu_lock, sanitizer
from verifier.host.zygote_handle import JobOutcome, ZygoteHandle, start_all
from verifier.options import VerifyOptions
from verifier.report import Report
from verifier.rules import RULES
from verifier.wire.channel import Channel
from verifier.wire.messages import (
    HARNESS_ERROR_FILE,
    RESULT_FILE,
    SANITIZER_LOG_FILE,
    STDERR_FILE,
    STDOUT_FILE,
    Call,
    Job,
    JobKind,
    ReferenceResult,
    Violation,
)

OUTPUT_LIMIT = 4000
CANDIDATE_MODULE = "candidate"
TASK_INPUTS_FILE = "task_inputs.py"
CHANNEL_SLOT_BYTES = {"cuda": 128 * 2**20, "cpu": 2**20}  # on a GPU: fewer, larger chunks (one sync each)
SANITIZE_SLOWDOWN = 20  # memcheck runs kernels 10-100x slower: its run gets this many timeouts
SANITIZE_MIN_SECONDS = 300.0
SANITIZER_LOG_LIMIT = 2**20  # memcheck prints at most 20 errors, each with its host backtrace, then a summary
HYBRID_ALLOWS = {"TRI302"}  # PyTorch compute: what the hybrid policy accepts (and never rewards)
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

    def __init__(self, index: int, base: Path, device: str, isolate: bool, cache_dir: Path, gpu: str | None = None):
        self.channel = Channel.create(CHANNEL_SLOT_BYTES.get(device, CHANNEL_SLOT_BYTES["cuda"]))
        fds = [self.channel.fd]
        self.reference = ZygoteHandle(f"ref-{index}", base, device, isolate, [str(cache_dir)], fds, gpu)
        self.candidate = ZygoteHandle(f"cand-{index}", base, device, isolate, pass_fds=fds, gpu=gpu)

    def stop(self) -> None:
        try:
            self.reference.stop()
            self.candidate.stop()
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

    @contextlib.contextmanager
    def measuring(self) -> Iterator[None]:
        """For a timing run: this pool's timing lock, then the GPU alone (`gpu_lock`, across processes)."""
        with self.timing_lock, gpu_lock.measuring(self.gpu):
            yield


def _at(path: Path, exc: SyntaxError) -> str:
    """`path:line` of a syntax error, or the path alone where Python names no line (a null byte, say)."""
    return f"{path}:{exc.lineno}" if exc.lineno else str(path)


def check_task_file(task: Path) -> str:
    """Parse the task without running it; return its module name or raise TaskError naming file and line."""
    try:
        source = task.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read task file {task}: {exc.strerror or exc}") from exc
    try:
        tree = ast.parse(source, filename=str(task))
    except SyntaxError as exc:
        raise TaskError(f"{_at(task, exc)}: syntax error: {exc.msg}") from exc
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    missing = [name for name in ("Model", "get_inputs", "get_init_inputs") if name not in defined]
    if missing:
        raise TaskError(f"{task}:1: not a task: it defines no {', '.join(f'`{m}`' for m in missing)}")
    return task.stem if task.stem.isidentifier() else "task"


def inputs_only(source: str) -> str:
    """The task's source without its `Model` class (blank lines keep the line numbers): what the candidate's
    sandbox needs to draw the same inputs, and nothing that computes the reference."""
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines[first - 1 : node.end_lineno] = [""] * (node.end_lineno - first + 1)
    return "\n".join(lines) + "\n"


class Verification:
    """One candidate file against one task file on a slot (`VerifierPool.verify` picks the slot); `run()` once."""

    def __init__(
        self,
        slot: Slot,
        shared: Shared,
        task: Path,
        candidate: Path,
        opts: VerifyOptions,
        cancelled: Callable[[], bool] | None,
    ):
        self.slot = slot
        self.cancelled = cancelled
        self.shared = shared
        self.task = task
        self.candidate = candidate
        self.opts = opts
        self.phases: dict[str, float] = {}
        seed = opts.seed if opts.seed is not None else secrets.randbelow(2**63)  # unpredictable, yet reported
        self.report = Report(
            verdict="crashed",
            device=shared.device,
            interpreter=shared.device == "cpu",
            seed=seed,
            task=str(task),
            candidate=str(candidate),
            policy=opts.policy,
        )
        self.seeder = random.Random(seed)
        self.init_seed = self.seeder.randrange(2**31)

    def run(self) -> Report:
        started = time.perf_counter()
        try:
            self._run()
        finally:
            self.slot.candidate.wipe()
            self.slot.reference.wipe(keep=(".triton", ".cache"))
            self.phases["total_s"] = time.perf_counter() - started
            self.report.phases = {k: round(v, 4) for k, v in self.phases.items()}
        return self.report

    def time_baseline(self) -> None:
        """Only the task's eager and torch.compile timings, cached for the verifications that follow (on a GPU):
        what a conversion can measure while its candidates are still being generated."""
        module_name = check_task_file(self.task)
        if self.shared.device != "cuda" or not self.opts.timing:
            return
        try:
            start_all([self.slot.reference])
            self.first_seed = self.seeder.randrange(2**31)
            with self.shared.measuring():
                self._baseline(module_name)
        finally:
            self.slot.reference.wipe(keep=(".triton", ".cache"))

    def _run(self) -> None:
        report = self.report
        module_name = check_task_file(self.task)
        try:
            source = self.candidate.read_text()
        except OSError as exc:
            raise UsageError(f"cannot read candidate file {self.candidate}: {exc.strerror or exc}") from exc
        try:
            findings = check_candidate(source, task_module=module_name)
        except SyntaxError as exc:
            self._finish("compile_error", f"{_at(self.candidate, exc)}: syntax error: {exc.msg}")
            return
        executable = self._sanitizer()
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
        if not self._check_correctness(module_name, self.opts.trials):
            return
        if executable and not self._sanitize(module_name, executable):
            return
        if self.shared.device == "cuda" and self.opts.timing:
            self._time(module_name)
        if report.verdict == "correct":
            report.reward = 1.0 if not any(v["severity"] == "error" for v in report.violations) else 0.0

    # ------------------------------------------------------------ correctness

    def _check_correctness(self, module_name: str, trials: int) -> bool:
        """The candidate on `trials` fresh input sets plus one enable_grad call, compared with the task as the
        outputs arrive; True if the candidate is correct."""
        seeds = [self.seeder.randrange(2**31) for _ in range(trials)]
        self.first_seed = seeds[0]
        calls: list[Call] = [{"seed": seed, "grad": False, "label": f"trial {i + 1}"} for i, seed in enumerate(seeds)]
        calls.append({"seed": seeds[0], "grad": True, "label": "enable_grad call"})
        pair = self._run_pair(module_name, "candidate", calls)
        if pair is None:
            return False
        reference, result = pair
        report = self.report
        report.trials = trials
        report.launches = result["launches"]
        self.phases.update(_stage_seconds(result.get("stages")))
        report.kernels = result["kernels"]
        report.violations.extend(result["violations"])
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
        report.tolerance = comparison["tolerance"] or None
        rejecting = _rejecting(result["violations"])
        if rejecting:
            self._finish("rejected", f"{rejecting[0]['rule']}: {rejecting[0]['message']}")
            return False
        runtime = [v for v in result["violations"] if v not in rejecting]
        if runtime or problems:
            messages = [f"{v['rule']}: {v['message']}" for v in runtime] + problems
            more = f" (and {len(messages) - 3} more)" if len(messages) > 3 else ""
            self._finish("incorrect", "; ".join(messages[:3]) + more)
            return False
        exact = comparison.get("notes") or []
        likewise = f" (likewise {len(exact) - 1} more times)" if len(exact) > 1 else ""
        closeness = f"; {exact[0]}{likewise}" if exact else ""
        self._finish("correct", f"matches the reference on {trials} trials plus an enable_grad call{closeness}")
        return True

    def _run_pair(self, module_name: str, kind: JobKind, calls: list[Call]) -> tuple[ReferenceResult, dict] | None:
        """The reference side's comparing job and the candidate's job, side by side, joined by the slot's
        channel; both results, or None after setting the verdict for a candidate that did not finish. Outside a
        timing run (whose caller holds the GPU alone), the pair shares the GPU: no timing runs meanwhile."""
        sharing = self.shared.device == "cuda" and kind != "time_candidate"
        with gpu_lock.sharing(self.shared.gpu) if sharing else contextlib.nullcontext():
            return self._run_jobs_of_pair(module_name, kind, calls)

    def _run_jobs_of_pair(
        self, module_name: str, kind: JobKind, calls: list[Call]
    ) -> tuple[ReferenceResult, dict] | None:
        slot, channel = self.slot, self.slot.channel
        ref_name, ref_dir = slot.reference.new_job_dir()
        shutil.copyfile(self.task, ref_dir / f"{module_name}.py")
        cand_name, cand_dir, inputs = self._candidate_job_dir()
        candidate_seconds = self.opts.timeout
        wait = candidate_seconds + self.opts.timeout
        reference_job = {
            "module_name": module_name,
            "wait_seconds": wait,
            "atol": self.opts.atol,
            "rtol": self.opts.rtol,
        }
        channel.reset()
        box: dict = {}

        def reference() -> None:
            try:
                box["outcome"] = self._run_job(
                    slot.reference, ref_name, "reference", reference_job, calls, f"{module_name}.py", wait + 10
                )
            except BaseException as exc:  # re-raised in the caller's thread (Cancelled, a dead sandbox)
                box["error"] = exc
            finally:
                channel.close_reader()

        started = time.perf_counter()
        thread = threading.Thread(target=reference, name=f"reference-{ref_name}", daemon=True)
        thread.start()
        try:
            outcome = self._run_job(slot.candidate, cand_name, kind, {"inputs_source": inputs}, calls)
        finally:
            channel.close_writer()
            thread.join()
        self.phases["candidate_s"] = self.phases.get("candidate_s", 0.0) + outcome.seconds
        self.phases["reference_s"] = self.phases.get("reference_s", 0.0) + time.perf_counter() - started
        if "error" in box:
            raise box["error"]
        reference = self._reference_result(box["outcome"], ref_dir)
        result = self._job_result(outcome, cand_dir)
        if result is None:
            return None
        if reference["calls_compared"] < len(calls) and not reference["comparison"]["problems"]:
            reference["comparison"]["problems"].append(
                f"only {reference['calls_compared']} of {len(calls)} calls' outputs were compared"
            )
        return reference, result

    def _candidate_job_dir(self) -> tuple[str, Path, str]:
        """A fresh job directory in the candidate's sandbox holding the candidate and the task without its
        `Model`: (its name, its host path, the task file's path as the sandbox sees it)."""
        name, job_dir = self.slot.candidate.new_job_dir()
        shutil.copyfile(self.candidate, job_dir / f"{CANDIDATE_MODULE}.py")
        (job_dir / TASK_INPUTS_FILE).write_text(inputs_only(self.task.read_text()))
        return name, job_dir, f"{self.slot.candidate.scratch}/{name}/{TASK_INPUTS_FILE}"

    def _reference_result(self, outcome: JobOutcome, job_dir: Path) -> ReferenceResult:
        result = _read_json(job_dir / RESULT_FILE)
        if outcome.status != "ok" or outcome.signal or result is None:
            raise TaskError(f"{self.task}: the reference run failed: {_describe_outcome(outcome, job_dir)}")
        if not result.get("ok"):
            line = f":{result['line']}" if result.get("line") else ""
            raise TaskError(f"{self.task}{line}: {result['stage']} failed: {result['error_type']}: {result['error']}")
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

    def _sanitize(self, module_name: str, executable: str) -> bool:
        """One more call of the correct candidate under memcheck; False after setting the verdict if memcheck
        saw a bad access. A sanitized run that cannot finish is a warning, not a verdict."""
        started = time.perf_counter()
        name, job_dir, inputs = self._candidate_job_dir()
        calls: list[Call] = [{"seed": self.first_seed, "grad": False, "label": "sanitized call"}]
        extra = {"inputs_source": inputs, "sanitizer": executable}
        seconds = max(SANITIZE_MIN_SECONDS, SANITIZE_SLOWDOWN * self.opts.timeout)
        with gpu_lock.sharing(self.shared.gpu):
            outcome = self._run_job(self.slot.candidate, name, "sanitize", extra, calls, seconds=seconds)
        self.phases["sanitize_s"] = time.perf_counter() - started
        count, errors = sanitizer.read_log(_read_text(job_dir / SANITIZER_LOG_FILE, SANITIZER_LOG_LIMIT))
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
        result = _read_json(job_dir / RESULT_FILE)
        if outcome.status != "ok" or outcome.exit_code or not result or not result.get("ok"):
            detail = result.get("error") if result else _describe_outcome(outcome, job_dir)
            self.report.warnings.append(f"--sanitize: the run under compute-sanitizer did not finish: {detail}")
            return True
        self.report.message += "; compute-sanitizer memcheck saw no memory errors"
        return True

    # ------------------------------------------------------------ timing

    def _time(self, module_name: str) -> None:
        with self.shared.measuring():
            started = time.perf_counter()
            timing = self._measure(module_name)
            self.phases["timing_s"] = time.perf_counter() - started
        if timing is None:
            return
        fastest = max(timing["speedup_vs_eager"], timing.get("speedup_vs_compile") or 0.0)
        if fastest > self.opts.suspect_speedup:
            if not self._check_correctness(module_name, 2 * self.opts.trials):
                self.report.message = f"re-verification of a {fastest:.1f}x speedup failed: {self.report.message}"
                return
            with self.shared.measuring():
                timing = self._measure(module_name)
            if timing is None:
                return
            timing["reverified"] = True
        self.report.timing = timing

    def _measure(self, module_name: str) -> dict | None:
        ref = self._baseline(module_name)
        if ref is None:
            return None
        calls: list[Call] = [{"seed": self.first_seed, "grad": False, "label": "timed call"}]
        pair = self._run_pair(module_name, "time_candidate", calls)
        if pair is None:
            return None
        reference, result = pair
        rejecting = _rejecting(result["violations"])
        self.report.violations.extend(result["violations"])
        if rejecting:
            self._finish("rejected", f"while timed: {rejecting[0]['rule']}: {rejecting[0]['message']}")
            return None
        problems = reference["comparison"]["problems"]
        if problems:
            self._finish("incorrect", "; ".join(problems[:3]))
            return None
        return _timing_summary(result["candidate"], ref)

    def _baseline(self, module_name: str) -> dict | None:
        """Eager and torch.compile timings of the task, measured once per task (shared by the pool's slots)."""
        key = (hashlib.sha256(self.task.read_bytes()).hexdigest(), self.opts.compile_baseline, self.opts.timing_trials)
        cached = self.shared.baselines.get(key)
        if cached is not None:
            return {**cached, "cached": True}
        name, job_dir = self.slot.reference.new_job_dir()
        shutil.copyfile(self.task, job_dir / f"{module_name}.py")
        outcome = self._run_job(
            self.slot.reference,
            name,
            "time_reference",
            {"module_name": module_name, "compile": self.opts.compile_baseline},
            [{"seed": self.first_seed, "grad": False, "label": "baseline"}],
            source=f"{module_name}.py",
            seconds=max(self.opts.timeout, 600.0),
        )
        ref = _read_json(job_dir / RESULT_FILE)
        if outcome.status != "ok" or not ref or not ref.get("ok"):
            detail = ref.get("error") if ref else _describe_outcome(outcome, job_dir)
            self.report.warnings.append(f"baseline timing failed: {detail}")
            return None
        self.shared.baselines[key] = ref
        return ref

    # ------------------------------------------------------------ plumbing

    def _run_job(
        self,
        zygote: ZygoteHandle,
        name: str,
        kind: JobKind,
        extra: dict,
        calls: list[Call],
        source: str | None = None,
        seconds: float | None = None,
    ) -> JobOutcome:
        if not zygote.running:
            self.phases["start_s"] = self.phases.get("start_s", 0.0) + zygote.ensure_started()
        job: Job = {
            "id": name,
            "kind": kind,
            "dir": name,
            "device": self.shared.device,
            "init_seed": self.init_seed,
            "source": f"{zygote.scratch}/{name}/{source or CANDIDATE_MODULE + '.py'}",
            "module_name": CANDIDATE_MODULE,
            "timing_trials": self.opts.timing_trials,
            "calls": calls,
            "channel_fd": self.slot.channel.fd,
            **extra,
        }
        return zygote.run(job, self.opts.limits(seconds), self.cancelled)

    def _job_result(self, outcome: JobOutcome, job_dir: Path) -> dict | None:
        """The candidate job's result, or None after setting the verdict for a job that did not finish."""
        self.report.candidate_output = {
            "stdout": _read_text(job_dir / STDOUT_FILE),
            "stderr": _read_text(job_dir / STDERR_FILE),
        }
        result = _read_json(job_dir / RESULT_FILE)
        if outcome.status == "timeout":
            self._finish("timeout", _timeout_message(self.opts.timeout, self.shared.device))
        elif outcome.status == "memory":
            limit = self.opts.memory_limit // 2**20
            self._finish("crashed", f"the candidate exceeded the memory limit of {limit} MiB and was killed")
        elif outcome.status != "ok" or outcome.signal or outcome.exit_code or result is None:
            self._finish("crashed", f"the candidate crashed: {_describe_outcome(outcome, job_dir)}")
        elif not result.get("ok"):
            self._finish(*_failure_verdict(result, self.candidate))
        else:
            return result
        return None

    def _finish(self, verdict: str, message: str) -> None:
        self.report.verdict = verdict
        self.report.message = message
        if verdict != "correct":
            self.report.reward = 0.0


def _stage_seconds(stages: object) -> dict[str, float]:
    """The candidate job's own stage timings as phases (written by the candidate's process: only the known
    stages, and only numbers, are kept)."""
    known = ("load_s", "first_call_s", "calls_s", "coverage_s")
    if not isinstance(stages, dict):
        return {}
    return {f"candidate_{k}": float(v) for k, v in stages.items() if k in known and isinstance(v, int | float)}


def _rejection_message(errors: list) -> str:
    """Why the static rules refused the candidate. PyTorch doing part of the work is said as such, with the
    policy that would accept it, rather than as a hack."""
    first = errors[0]
    if all(f.rule in HYBRID_ALLOWS for f in errors):
        where = ", ".join(str(f.line) for f in errors[:5]) + (", ..." if len(errors) > 5 else "")
        return (
            f"{_pytorch_work(first.message)} runs in PyTorch (line{'s' if len(errors) > 1 else ''} {where}); the "
            "strict policy requires Triton for all of the work (`--policy hybrid` accepts it, reports the share "
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


def _failure_verdict(result: dict, candidate: Path) -> tuple[str, str]:
    """compile_error for failures to load or compile the candidate, runtime_error for failures while running."""
    where = f"{candidate}:{result['line']}" if result.get("line") else str(candidate)
    message = f"{where}: {result['stage']} failed: {result['error_type']}: {result['error']}"
    if result["stage"] == "import" or result.get("triton_compile_error"):
        return "compile_error", message
    return "runtime_error", message


def _describe_outcome(outcome: JobOutcome, job_dir: Path) -> str:
    if outcome.status == "timeout":
        return f"timed out after {outcome.seconds:.1f} s"
    if outcome.status == "memory":
        return f"exceeded the memory limit ({outcome.peak_rss // 2**20} MiB resident)"
    if outcome.status == "died":
        return f"the sandbox process died ({outcome.detail})"
    if outcome.signal:
        name = signal.Signals(outcome.signal).name if outcome.signal in signal.Signals._value2member_map_ else ""
        return f"killed by signal {outcome.signal} {name}".strip()
    harness_error = _read_text(job_dir / HARNESS_ERROR_FILE)
    if harness_error:
        return f"the harness failed: {harness_error}"
    return f"exited with code {outcome.exit_code} before reporting a result"


def _rejecting(violations: list[Violation]) -> list[Violation]:
    """The runtime findings that refuse the candidate outright (the others make it incorrect). The child's
    result is untrusted: a rule id the catalog does not know can only come from tampering, and refuses too."""
    return [v for v in violations if v.get("rule") not in RULES or RULES[v["rule"]].rejects]


def _timing_summary(candidate: dict, reference: dict) -> dict:
    eager = reference["eager"]["median_ms"]
    compiled = reference.get("compiled", {}).get("median_ms")
    cand = candidate["median_ms"]
    return {
        "candidate_ms": cand,
        "eager_ms": eager,
        "compile_ms": compiled,
        "speedup_vs_eager": eager / cand if cand > 0 else None,
        "speedup_vs_compile": compiled / cand if compiled and cand > 0 else None,
        "trials": candidate["trials"],
        "method": "cuda events, 256 MiB L2 flush before each call, median",
        "compile_error": reference.get("compile_error"),
        "reverified": False,
        "baseline_cached": bool(reference.get("cached")),
    }


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _read_text(path: Path, limit: int = OUTPUT_LIMIT) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return ""
    text = data[:limit].decode(errors="replace")
    return text + "\n... [truncated]" if len(data) > limit else text
