"""Evaluate a backend on a suite of tasks: K verified samples per task, pass@k and fast_p.

    python -m training.eval --suite DIR --backend NAME [--model M] [--samples K] --output-dir OUT [flags]

`--suite` is a directory of KernelBench task modules (`*.py` defining `Model`, `get_inputs` and
`get_init_inputs`), an `rl.PROFILE.jsonl` file of `training.data` (its tasks of `--split`), or a level of KernelBench
as released, `kernelbench:CLONE/level1` (`training/suites.py`). A channel of TritonBench, `tritonbench-t:CLONE` or
`tritonbench-g:CLONE`, is evaluated by its own rules (`training/tritonbench_score.py`); what follows is of the
others. Each task gets
`--samples` candidates from a model server backend (`inductor`, `transformers`, `vllm`, `openai`, built by the
model server's own factory, prompted through `model_server/prompts.py`), and each candidate is verified in the
verifier's sandbox under the strict policy (timed against eager and torch.compile on a GPU unless `--no-timing`).

Metrics, each a mean over the suite's tasks (a task whose generation failed counts as 0 everywhere; a task whose
generation ran out of memory, or whose own run failed in the verifier, out of GPU memory beside other jobs say,
says nothing of the model: it is listed in `tasks_unverified`, not counted, and not saved, so a re-run tries it
again):

- pass@k: per task, the unbiased estimator 1 - C(n-c, k) / C(n, k) over its n samples of which c are correct
  (correct: `training.rewards.passed`, what GRPO rewards: verdict `correct` with reward > 0 under the strict
  policy). A backend may return fewer than `--samples` candidates (the `inductor` backend only has so many
  distinct ones): n is what it returned, and a k above n is taken as n.
- fast_p: per task, the share of its n samples that are correct AND have a measured speedup above p (against
  eager, or against torch.compile). A correct sample without a measured speedup is not fast. Without timings (a
  CPU run, or `--no-timing`) fast_p is null.
- kernelbench: the same by KernelBench's own rule of correctness, torch.allclose at rtol = atol = 1e-2 on the
  task's own inputs (the report's `allclose_tolerance`), with no other check: `correct` is the mean share of a
  task's samples it passes (with one sample per task, KernelBench's correctness), and `fast_p` against eager is
  KernelBench's fast_p. The verifier times only the samples it finds correct, so a sample that passes only the
  looser rule counts as correct there but never as fast.

Written to the output directory:

- `tasks.jsonl`: one line per finished task (its samples' verdicts, speedups, messages and the seconds of each
  verification's phases), appended as each finishes; a re-run on the same directory skips the tasks it holds, and
  `benchmarks/compare_evals.py` reads it where an evaluation was cut short before `results.json`;
- `candidates/TASK/sample_I.py`: every candidate, as verified;
- `results.json`: every task and the totals (pass@k, fast_p, verdict counts, backend, model, device, date, and
  the seconds this invocation took);
- `fast_p.png`: fast_p against p, for eager and torch.compile;
- `config.yaml`: the resolved arguments.

A markdown table of the tasks and totals goes to stdout, progress to stderr.
"""

from __future__ import annotations

import collections
import datetime
import json
import os
import sys
import time
from concurrent.futures import Executor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from model_server import prompts
from model_server.backends.transformers_backend import DTYPE_HELP, DTYPES
from training import config, jsonl, rewards, suites, tritonbench, tritonbench_score
from training.suites import SuiteTask
from training.tritonbench import BenchTask
from verifier import DEVICES, Task

TASKS_FILE = "tasks.jsonl"
RESULTS_FILE = "results.json"
# Arguments that change what a task's samples are: a re-run on the same directory must keep them.
RESULT_ARGUMENTS = (
    "suite",
    "split",
    "backend",
    "model",
    "profile",
    "samples",
    "temperature",
    "max_tokens",
    "trials",
    "device",
    "verify_device",
    "timing",
    "dtype",
    "tritonbench_instruction",
)
MORE_K = (5, 10, 20, 50, 100)
PLOT_POINTS = 200
BASELINES = ("eager", "compile")
KERNELBENCH_TOLERANCE = 1e-2  # KernelBench's harness: torch.allclose(rtol=1e-2, atol=1e-2)
NO_MODEL = "the inductor backend converts PyTorch modules; TritonBench tasks need a model backend"


@dataclass
class EvalArgs:
    """What `python -m training.eval` evaluates, and how."""

    output_dir: str = field(default="", metadata={"help": "directory for the results, candidates and plot"})
    suite: str = field(
        default="",
        metadata={
            "help": "a directory of KernelBench task modules, an rl.PROFILE.jsonl file, kernelbench:CLONE/levelN, "
            "or tritonbench-t:CLONE / tritonbench-g:CLONE"
        },
    )
    split: str = field(default="test", metadata={"help": "the records of this split, when --suite is a JSONL file"})
    backend: str = field(default="inductor", metadata={"help": "inductor, transformers, vllm or openai"})
    model: str = field(default="", metadata={"help": "model directory or id (transformers, vllm, openai)"})
    profile: str = field(default="autotriton", metadata={"help": "prompt profile: autotriton, kernelllm, chat"})
    base_url: str = field(default="", metadata={"help": "openai: the server's URL (else $OPENAI_BASE_URL)"})
    tensor_parallel: int = field(default=1, metadata={"help": "vllm: GPUs the model is split over"})
    samples: int = field(default=4, metadata={"help": "candidates asked for per task (K)"})
    temperature: float = field(default=0.8, metadata={"help": "sampling temperature of model backends"})
    max_tokens: int = field(default=2048, metadata={"help": "longest reply of model backends, in tokens"})
    k: list[str] = field(
        default_factory=list, metadata={"help": "k of pass@k (none: 1, K, and those of 5 10 20 50 100 below K)"}
    )
    fast_p: list[str] = field(
        default_factory=lambda: ["0", "1", "1.5", "2"], metadata={"help": "speedup thresholds p of fast_p"}
    )
    device: str = field(
        default="auto", metadata={"help": "where the model runs and candidates are verified: auto, cuda or cpu"}
    )
    verify_device: str = field(
        default="",
        metadata={
            "help": "where candidates are verified, when not on --device: cpu verifies in the Triton interpreter "
            "(the GRPO rewards' route) while the model generates on the GPU"
        },
    )
    trials: int = field(default=5, metadata={"help": "verification trials per candidate"})
    timeout: float = field(default=120.0, metadata={"help": "seconds per verification run"})
    timing: bool = field(default=True, metadata={"help": "time correct candidates against eager and torch.compile"})
    workers: int = field(default=2, metadata={"help": "candidates verified at once"})
    batch: int = field(
        default=32,
        metadata={"help": "transformers: sequences sampled in one generate call (the samples of several tasks)"},
    )
    compile: bool = field(
        default=False, metadata={"help": "transformers: decode with a static KV cache, compiled on a GPU"}
    )
    dtype: str = field(default="auto", metadata={"help": DTYPE_HELP})
    tritonbench_instruction: str = field(
        default="simple", metadata={"help": "TritonBench suites: the benchmark's simple or complex instructions"}
    )

    def __post_init__(self) -> None:
        if not self.output_dir:
            raise ValueError("--output-dir is required")
        if not self.suite:
            raise ValueError("--suite is required")
        suites.parse(self.suite)
        if self.profile not in prompts.PROFILES:
            raise ValueError(f"--profile must be one of {', '.join(prompts.PROFILES)}, got {self.profile!r}")
        if self.device not in DEVICES:
            raise ValueError(f"--device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.verify_device and self.verify_device not in DEVICES:
            raise ValueError(f"--verify-device must be one of {', '.join(DEVICES)}, got {self.verify_device!r}")
        if self.tritonbench_instruction not in tritonbench.INSTRUCTIONS:
            kinds = " or ".join(tritonbench.INSTRUCTIONS)
            raise ValueError(f"--tritonbench-instruction must be {kinds}, got {self.tritonbench_instruction!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"--dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if min(self.samples, self.trials, self.workers, self.tensor_parallel, self.max_tokens, self.batch) < 1:
            raise ValueError(
                "--samples, --trials, --workers, --tensor-parallel, --max-tokens and --batch must be at least 1"
            )
        if self.timeout <= 0 or self.temperature < 0:
            raise ValueError("--timeout must be positive and --temperature at least 0")
        self.k = [str(k) for k in self.k]
        self.fast_p = [str(p) for p in self.fast_p]
        try:
            ks, ps = self.ks, self.ps
        except ValueError:
            raise ValueError("--k takes whole numbers and --fast-p numbers") from None
        if any(k < 1 or k > self.samples for k in ks):
            raise ValueError(f"--k values must be between 1 and --samples ({self.samples}), got {self.k}")
        if not ps or any(p < 0 for p in ps):
            raise ValueError(f"--fast-p needs one or more thresholds of at least 0, got {self.fast_p}")

    @property
    def ks(self) -> list[int]:
        """The k of pass@k, ascending."""
        if self.k:
            return sorted({int(k) for k in self.k})
        return sorted({1, self.samples, *(k for k in MORE_K if k <= self.samples)})

    @property
    def ps(self) -> list[float]:
        """The thresholds p of fast_p, ascending."""
        return sorted({float(p) for p in self.fast_p})


class EvalError(Exception):
    """The evaluation cannot start; the message says why."""


def main(argv: list[str] | None = None) -> int:
    return config.main(
        EvalArgs, evaluate, argv, __doc__, "python -m training.eval", refused=(EvalError, suites.SuiteError)
    )


def evaluate(args: EvalArgs) -> int:
    """Evaluate the suite as the arguments say, write the results, the table and the plot; the exit code."""
    config.announce(args)
    out = Path(args.output_dir)
    started = time.monotonic()
    try:
        suite = suites.parse(args.suite)
        bench = suite.kind in suites.TRITONBENCH
        if bench and args.backend == "inductor":
            raise EvalError(f"{NO_MODEL} (transformers, vllm or openai)")
        if bench:
            tasks = suites.tritonbench_tasks(suite, args.tritonbench_instruction)
        else:
            tasks = suites.discover(suite, args.split, out, log=_log)
        check_resumable(args, out)
        config.save(args, out)
        records, backend_name, model, device = (run_tritonbench if bench else run)(tasks, args, out)
    except KeyboardInterrupt:
        _log(f"stopped; the finished tasks are in {out / TASKS_FILE}: re-run the same command to go on")
        return 130
    if bench:
        totals = summarize_tritonbench(records, args.ks, suite.source["channel"], args.tritonbench_instruction)
    else:
        totals = summarize(records, args.ks, args.ps, timed=device == "cuda" and args.timing)
    totals |= {
        "suite": suite.source,
        "backend": backend_name,
        "model": model,
        "device": device,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - started, 1),
    }
    results = {"tasks": records, "totals": totals}
    (out / RESULTS_FILE).write_text(json.dumps(results, indent=1) + "\n")
    if not bench:
        plot(records, totals, args.ps, out / "fast_p.png")
    print(tritonbench_score.table(records, totals) if bench else table(records, totals))
    _log(f"wrote the results to {out}")
    return 0


def read_results(out: Path) -> list[dict]:
    """The task records of an earlier evaluation's output directory, for the tools that compare evaluations
    (ValueError naming the file and what is wrong with it). An evaluation cut short before `results.json` gives the
    tasks it finished, from `tasks.jsonl`, and says so on stderr."""
    path = out / RESULTS_FILE
    try:
        tasks = json.loads(path.read_text())["tasks"]
    except FileNotFoundError:
        if (out / TASKS_FILE).is_file():
            tasks = jsonl.read(out / TASKS_FILE)
            print(f"{out}: no {RESULTS_FILE} (cut short?): the {len(tasks)} tasks {TASKS_FILE} holds", file=sys.stderr)
            return tasks
        raise ValueError(f"{path} does not exist: is {out} a training.eval output directory?") from None
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a training.eval results file ({exc})") from None
    if not isinstance(tasks, list):
        raise ValueError(f"{path} is not a training.eval results file (its tasks are not a list)")
    return tasks


def recorded_samples(out: Path) -> list[dict]:
    """Each sample of an earlier evaluation whose task and candidate files are there: `task` and `candidate`
    (paths), the recorded `verdict` and `passed`. The others are counted on stderr (ValueError as `read_results`,
    or naming the field a record lacks)."""
    samples, missing = [], 0
    try:
        for task in read_results(out):
            if any("exec" in sample for sample in task["samples"]):
                raise ValueError(
                    f"{out} is a TritonBench evaluation: its programs are scored by the benchmark's own test code, "
                    "not verified as KernelBench-style tasks; its results.json holds their call and execution "
                    "accuracy (benchmarks/compare_evals.py prints them)"
                )
            task_path = Path(task["path"])
            if not task_path.is_file():  # an evaluation made elsewhere: its JSONL tasks are written under OUT/tasks
                task_path = out / suites.TASKS_DIR / task_path.name
            for sample in task["samples"]:
                candidate = out / sample["candidate"]
                if not (task_path.is_file() and candidate.is_file()):
                    missing += 1
                    continue
                samples.append(
                    {
                        "task": task_path,
                        "candidate": candidate,
                        "verdict": sample["verdict"],
                        "passed": sample["correct"],
                    }
                )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{out}: a task or sample record (results.json or tasks.jsonl) lacks {exc}") from None
    if missing:
        print(f"{out}: {missing} samples left out, their task or candidate file is not there", file=sys.stderr)
    return samples


# ---------------------------------------------------------------- tasks


def check_resumable(args: EvalArgs, out: Path) -> None:
    """Refuse to add to a run directory whose finished tasks were evaluated with other arguments."""
    saved = out / config.CONFIG_FILE
    if not (out / TASKS_FILE).exists() or not saved.exists():
        return
    try:
        before = yaml.safe_load(saved.read_text()) or {}
    except yaml.YAMLError:
        return
    now = vars(args)
    changed = [name for name in RESULT_ARGUMENTS if name in before and before[name] != now[name]]
    if changed:
        flags = ", ".join(f"--{name.replace('_', '-')} ({before[name]!r} there)" for name in changed)
        raise EvalError(f"--output-dir {out} holds tasks evaluated with other {flags}; use a fresh --output-dir")


# ---------------------------------------------------------------- generation and verification


def run(tasks: list[SuiteTask], args: EvalArgs, out: Path) -> tuple[list[dict], str, str, str]:
    """Evaluate every task not finished in an earlier run on `out`, appending each to `tasks.jsonl` as it
    finishes; every task's record (in suite order), the backend, model and device. As many tasks are under way as
    fill a generation batch (or keep the verifiers busy): their requests reach the backend together."""
    from verifier import VerifierPool

    finished, pending = pending_tasks(tasks, out)
    try:
        pool = VerifierPool(size=args.workers, device=args.verify_device or args.device)
    except ValueError as exc:
        raise EvalError(f"--verify-device: {exc}" if args.verify_device else str(exc)) from exc
    try:
        backend = start_backend(args)
    except EvalError:
        pool.close()
        raise
    with pool, ThreadPoolExecutor(max_workers=args.workers) as verifiers:

        def job(task: SuiteTask) -> tuple:
            return evaluate_task, task, backend, pool, verifiers, args, out

        record_all(pending, finished, job, args, out)
    return [finished[(task.name, task.id)] for task in tasks], backend.name, model_name(args, backend), pool.device


def pending_tasks(tasks: list, out: Path) -> tuple[dict, list]:
    """The records `tasks.jsonl` holds, by (name, id), and the tasks (anything with a name and an id) it lacks."""
    finished = {(r["name"], r["id"]): r for r in jsonl.read(out / TASKS_FILE) if "name" in r and "id" in r}
    pending = [task for task in tasks if (task.name, task.id) not in finished]
    _log(f"{len(pending)} tasks to evaluate ({len(tasks) - len(pending)} finished in an earlier run)")
    return finished, pending


def start_backend(args: EvalArgs):
    """The model server backend the arguments name (EvalError where it cannot start)."""
    from model_server.backends import BackendConfig, BackendError, create_backend

    backend_config = BackendConfig(
        name=args.backend,
        model=args.model or None,
        profile=args.profile,
        device=args.device,
        base_url=args.base_url or None,
        api_key=os.environ.get("OPENAI_API_KEY"),
        tensor_parallel_size=args.tensor_parallel,
        batch=args.batch,
        compile=args.compile,
        dtype=args.dtype,
    )
    try:
        return create_backend(backend_config)
    except BackendError as exc:
        raise EvalError(str(exc)) from exc


def model_name(args: EvalArgs, backend) -> str:
    """The model `results.json` names: --model, else what the backend serves."""
    return args.model or ", ".join(backend.models())


def record_all(pending: list, finished: dict, job, args: EvalArgs, out: Path) -> None:
    """Run `job(task)` (a function and its arguments, giving the task's record) for every pending task, as many at
    once as fill a generation batch, adding each record to `finished` and appending it to `tasks.jsonl` as it
    comes (one whose task could not be judged is not appended, so a re-run tries it again)."""
    from verifier import SandboxStartError

    started = time.monotonic()
    with (
        ThreadPoolExecutor(max_workers=max(args.workers, args.batch // args.samples)) as workers,
        (out / TASKS_FILE).open("a") as log,
    ):
        if log.tell() and not (out / TASKS_FILE).read_bytes().endswith(b"\n"):
            log.write("\n")  # after a line an interrupted run cut short, which is then skipped on reading
        futures = {workers.submit(*job(task)): task for task in pending}
        try:
            for number, future in enumerate(as_completed(futures), 1):
                try:
                    record = future.result()
                except SandboxStartError as exc:
                    raise EvalError(f"the verifier's sandbox cannot start: {exc}") from exc
                finished[(record["name"], record["id"])] = record
                if not record.get("unverified"):
                    log.write(json.dumps(record) + "\n")
                    log.flush()
                rate = number / max(time.monotonic() - started, 1e-9) * 60
                outcome = record["error"] or f"{record['correct']}/{len(record['samples'])} correct"
                outcome += "; not counted, and a re-run tries it again" if record.get("unverified") else ""
                _log(
                    f"[{number}/{len(pending)}] {record['name']}: {outcome} "
                    f"({record['seconds']:.1f} s; {rate:.1f} tasks/min)"
                )
        finally:
            workers.shutdown(wait=True, cancel_futures=True)


def evaluate_task(task: SuiteTask, backend, pool, verifiers: Executor, args: EvalArgs, out: Path) -> dict:
    """One task's record: its samples from `backend`, each verified on `pool` (through `verifiers`, so the
    samples of a task are verified at once), or why there are none."""
    from model_server.backends.base import GenerationRequest
    from verifier import TaskError

    started = time.monotonic()
    record = {"name": task.name, "path": str(task.path), "id": task.id, "samples": [], "correct": 0, "error": None}
    request = GenerationRequest(
        task.task, args.samples, pool.device, temperature=args.temperature, max_tokens=args.max_tokens
    )
    generated = generate(backend, request, record)
    if record.get("unverified"):
        return record | {"seconds": round(time.monotonic() - started, 2)}
    paths = write_candidates(generated, out / "candidates" / task.name)
    futures = [
        verifiers.submit(verify_sample, pool, task.task, candidate.source, path.name, args)
        for path, candidate in zip(paths, generated, strict=True)
    ]
    try:
        samples = [future.result() for future in futures]
    except TaskError as exc:  # the task's own run failed (out of GPU memory beside other jobs, say): no verdict
        record["error"] = f"the task cannot be verified: {exc}"
        record["unverified"] = True
        samples = []
    for sample, candidate, path in zip(samples, generated, paths, strict=False):
        sample |= {"candidate": str(path.relative_to(out)), "label": candidate.label, "policy": candidate.policy}
    record["samples"] = samples
    record["correct"] = sum(sample["correct"] for sample in samples)
    record["seconds"] = round(time.monotonic() - started, 2)
    return record


def generate(backend, request, record: dict) -> list:
    """The candidates `backend` makes for `request`; where it fails, or makes none, `record` says so (its `error`,
    and `unverified` where generation ran out of memory: the machine's state, not the model's). `shortfall` says
    why fewer were made than asked."""
    from model_server.backends.base import collect

    not_made: list[str] = []
    try:
        generated, not_made = collect(backend, request)
    except Exception as exc:  # any failure of one task's generation is that task's outcome, not the run's
        record["error"] = f"generation failed: {_describe(exc)}"
        if _out_of_memory(exc):  # a re-run tries again
            record["unverified"] = True
        generated = []
    record["shortfall"] = not_made
    if not generated and record["error"] is None:
        record["error"] = "generation failed: the backend returned no candidate"
    return generated


def write_candidates(generated: list, folder: Path) -> list[Path]:
    """Each candidate's source written to `folder/sample_I.py`; the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"sample_{number}.py" for number in range(len(generated))]
    for path, candidate in zip(paths, generated, strict=True):
        path.write_text(candidate.source)
    return paths


def verify_sample(pool, task: Task, candidate: str, origin: str, args: EvalArgs) -> dict:
    """The verifier's verdict and speedups for one candidate (strict policy); `origin` names it in messages."""
    report = pool.verify(
        task,
        candidate,
        candidate_origin=origin,
        trials=args.trials,
        timeout=args.timeout,
        policy="strict",
        timing=args.timing,
    )
    timing = report.timing or {}
    tolerance = report.allclose_tolerance
    return {
        "verdict": report.verdict,
        "correct": rewards.passed(report),
        "allclose_tolerance": tolerance,
        "kernelbench_correct": tolerance is not None and tolerance <= KERNELBENCH_TOLERANCE,
        "speedup_vs_eager": timing.get("speedup_vs_eager"),
        "speedup_vs_compile": timing.get("speedup_vs_compile"),
        "rules": sorted({v["rule"] for v in report.violations}),
        "message": report.message[:500],
        "phases": report.phases,
    }


# ---------------------------------------------------------------- TritonBench


def run_tritonbench(tasks: list[BenchTask], args: EvalArgs, out: Path) -> tuple[list[dict], str, str, str]:
    """`run` for a TritonBench suite: no verifier pool, each task's programs run in one-off sandboxes
    (`training/tritonbench_score.py`) on the device candidates are verified on."""
    from verifier import resolve_device

    try:
        device = resolve_device(args.verify_device or args.device)
    except ValueError as exc:
        raise EvalError(f"--verify-device: {exc}" if args.verify_device else str(exc)) from exc
    finished, pending = pending_tasks(tasks, out)
    backend = start_backend(args)
    with ThreadPoolExecutor(max_workers=args.workers) as runners:

        def job(task: BenchTask) -> tuple:
            return evaluate_tritonbench_task, task, backend, runners, device, args, out

        record_all(pending, finished, job, args, out)
    return [finished[(t.name, t.id)] for t in tasks], backend.name, model_name(args, backend), device


def evaluate_tritonbench_task(
    task: BenchTask, backend, runners: Executor, device: str, args: EvalArgs, out: Path
) -> dict:
    """One TritonBench task's record: the reference's run, then the samples `backend` writes for the task's own
    instruction, each run and scored, or why there are none. Every program runs through `runners` (so a task's
    samples run at once, and no more programs than --workers run at a time). `correct` counts the samples that pass
    execution, `call` those that pass the call test."""
    from model_server.backends.base import GenerationRequest

    started = time.monotonic()
    record = {"name": task.name, "path": str(task.path), "id": task.id, "samples": [], "correct": 0, "call": 0}
    record["error"] = None
    reference = runners.submit(tritonbench_score.reference_run, task, device, args.timeout, out).result()
    if not reference["call"]:
        error = f"the reference fails on {device}: {tritonbench_score.failure_line(reference)}"
        return record | {"error": error, "unverified": True, "seconds": round(time.monotonic() - started, 2)}
    record["reference_reproducible"] = reference["reproducible"]
    request = GenerationRequest(
        None, args.samples, device, temperature=args.temperature, max_tokens=args.max_tokens, prompt=task.instruction
    )
    generated = generate(backend, request, record)
    if record.get("unverified"):
        return record | {"seconds": round(time.monotonic() - started, 2)}
    paths = write_candidates(generated, out / "candidates" / task.name)
    futures = [
        runners.submit(tritonbench_score.score, task, candidate.source, reference, device, args.timeout)
        for candidate in generated
    ]
    samples = [future.result() for future in futures]
    for sample, path in zip(samples, paths, strict=True):
        sample["candidate"] = str(path.relative_to(out))
    record["samples"] = samples
    record["correct"] = sum(sample["exec"] for sample in samples)
    record["call"] = sum(sample["call"] for sample in samples)
    record["seconds"] = round(time.monotonic() - started, 2)
    return record


def summarize_tritonbench(records: list[dict], ks: list[int], channel: str, instruction: str) -> dict:
    """The totals over the TritonBench tasks whose reference ran: call and execution accuracy (pass@1 of `call` and
    of `exec`, a mean over tasks), pass@k of `exec`, the share of samples that pass `exec` with the audit clean, and
    counts."""
    counts, records = _counts(records)
    samples = [s for r in records for s in r["samples"]]
    return {
        **counts,
        "pass@k": {str(k): _mean_pass(records, "correct", k) for k in ks},
        "tritonbench": {
            "channel": channel,
            "instruction": instruction,
            "call_accuracy": _mean_pass(records, "call", 1),
            "exec_accuracy": _mean_pass(records, "correct", 1),
            "exec_audit_clean": mean_share(records, tritonbench_score.clean_pass),
            "references_not_reproducible": [r["name"] for r in records if r.get("reference_reproducible") is False],
            "exec_rule": "exit 0, and stdout then test_results printed exactly as the reference's (fixed seed)",
        },
        "verdicts": dict(sorted(collections.Counter(s["verdict"] for s in samples).items())),
    }


def _counts(records: list[dict]) -> tuple[dict, list[dict]]:
    """The counts every suite's totals open with, over the tasks that could be judged (a sample's `correct` is its
    pass by the suite's rule), and those tasks; a task whose own run failed is listed apart and not counted."""
    unverified = [r["name"] for r in records if r.get("unverified")]
    records = [r for r in records if not r.get("unverified")]
    samples = [s for r in records for s in r["samples"]]
    counts = {
        "tasks": len(records),
        "samples": len(samples),
        "correct_samples": sum(s["correct"] for s in samples),
        "tasks_solved": sum(r["correct"] > 0 for r in records),
        "tasks_failed_to_generate": sum(bool(r["error"]) and not r["samples"] for r in records),
        "tasks_unverified": unverified,
    }
    return counts, records


def _mean_pass(records: list[dict], key: str, k: int) -> float:
    """The mean over tasks of pass@k, counting a task's samples that pass by its record's `key` count."""
    values = [pass_at_k(len(r["samples"]), r[key], k) for r in records]
    return sum(values) / len(values) if values else 0.0


# ---------------------------------------------------------------- metrics


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of k samples drawn without replacement from n, c of them correct, is
    correct: 1 - C(n-c, k) / C(n, k), as a product (no huge binomials). A k above n is taken as n."""
    if n == 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    missed = 1.0
    for i in range(n - c + 1, n + 1):
        missed *= 1.0 - k / i
    return 1.0 - missed


def fast_p(records: list[dict], p: float, baseline: str, correct: str = "correct") -> float:
    """The mean over tasks of the share of a task's samples that are correct (by the sample's key `correct`) with a
    speedup above `p` against `baseline` (`eager` or `compile`); a task without samples counts as 0."""
    return mean_share(records, lambda s: s.get(correct) and (s.get(f"speedup_vs_{baseline}") or 0.0) > p)


def mean_share(records: list[dict], holds) -> float:
    """The mean over tasks of the share of a task's samples for which `holds`; a task without samples is 0."""
    if not records:
        return 0.0
    shares = [sum(bool(holds(s)) for s in r["samples"]) / len(r["samples"]) if r["samples"] else 0.0 for r in records]
    return sum(shares) / len(records)


def summarize(records: list[dict], ks: list[int], ps: list[float], timed: bool) -> dict:
    """The totals over the tasks that could be verified: pass@k, fast_p (null without timings), and counts; a task
    whose own run failed says nothing of the model, so it is listed apart and not counted."""
    counts, records = _counts(records)
    fast = {"eager": None, "compile": None, "note": "no timings on a CPU or with --no-timing"}
    if timed:
        fast = {baseline: {f"{p:g}": fast_p(records, p, baseline) for p in ps} for baseline in BASELINES}
        fast["note"] = None
    kernelbench = {
        "tolerance": KERNELBENCH_TOLERANCE,
        "correct": mean_share(records, lambda s: s.get("kernelbench_correct")),
        "fast_p": {f"{p:g}": fast_p(records, p, "eager", "kernelbench_correct") for p in ps} if timed else None,
    }
    samples = [s for r in records for s in r["samples"]]
    return {
        **counts,
        "pass@k": {str(k): _mean_pass(records, "correct", k) for k in ks},
        "fast_p": fast,
        "kernelbench": kernelbench,
        "verdicts": dict(collections.Counter(s["verdict"] for s in samples)),
    }


# ---------------------------------------------------------------- report


def table(records: list[dict], totals: dict) -> str:
    """A markdown table of the tasks (correct samples, verdicts, best speedups), then one of the totals."""
    rows = ["| task | correct | verdicts | best vs eager | best vs compile |", "| --- | --- | --- | --- | --- |"]
    for record in records:
        samples = record["samples"]
        verdicts = ", ".join(f"{v} {n}" for v, n in collections.Counter(s["verdict"] for s in samples).items())
        rows.append(
            f"| {record['name']} | {record['correct']}/{len(samples)} | {_cell(record['error'] or verdicts)} "
            f"| {_best(samples, 'eager')} | {_best(samples, 'compile')} |"
        )
    lines = [*rows, "", "| metric | value |", "| --- | --- |"]
    lines.append(f"| tasks solved | {totals['tasks_solved']}/{totals['tasks']} |")
    if totals["tasks_unverified"]:
        lines.append(
            f"| not counted (out of memory, or the task's own run failed) | {', '.join(totals['tasks_unverified'])} |"
        )
    lines += [f"| pass@{k} | {value:.3f} |" for k, value in totals["pass@k"].items()]
    for baseline, name in (("eager", "eager"), ("compile", "torch.compile")):
        values = totals["fast_p"][baseline]
        if values is None:
            lines.append(f"| fast_p vs {name} | n/a: {totals['fast_p']['note']} |")
        else:
            lines += [f"| fast_{p} vs {name} | {value:.3f} |" for p, value in values.items()]
    kernelbench = totals["kernelbench"]
    lines.append(
        f"| correct by KernelBench's rule (allclose at {kernelbench['tolerance']:g}) | {kernelbench['correct']:.3f} |"
    )
    for p, value in (kernelbench["fast_p"] or {}).items():
        lines.append(f"| KernelBench's fast_{p} (its rule, vs eager) | {value:.3f} |")
    verdicts = ", ".join(f"{v} {n}" for v, n in sorted(totals["verdicts"].items())) or "none"
    lines.append(f"| verdicts | {verdicts} |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def _best(samples: list[dict], baseline: str) -> str:
    speedups = [s[f"speedup_vs_{baseline}"] for s in samples if s["correct"] and s.get(f"speedup_vs_{baseline}")]
    return f"{max(speedups):.2f}x" if speedups else "-"


def plot(records: list[dict], totals: dict, ps: list[float], path: Path) -> None:
    """fast_p against p, against eager and against torch.compile, the reported thresholds marked; without
    timings, an empty chart that says so."""
    try:
        import matplotlib
    except ImportError:
        _log("matplotlib is not installed: no plot")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    if totals["fast_p"]["eager"] is None:
        axes.text(0.5, 0.5, totals["fast_p"]["note"], ha="center", va="center", wrap=True, transform=axes.transAxes)
    else:
        speedups = [s.get(f"speedup_vs_{b}") or 0.0 for r in records for s in r["samples"] for b in BASELINES]
        top = max([*ps, *speedups, 1.0]) * 1.1
        grid = [top * i / (PLOT_POINTS - 1) for i in range(PLOT_POINTS)]
        for baseline, name in (("eager", "vs eager"), ("compile", "vs torch.compile")):
            (line,) = axes.plot(grid, [fast_p(records, p, baseline) for p in grid], label=name)
            marked = totals["fast_p"][baseline]
            axes.plot(ps, [marked[f"{p:g}"] for p in ps], "o", color=line.get_color())
        axes.legend()
    axes.set_xlabel("speedup threshold p")
    axes.set_ylabel("fast_p")
    axes.set_ylim(0, 1.05)
    axes.set_title(f"fast_p over {totals['tasks']} tasks ({totals['backend']}, {totals['device']})")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


# ---------------------------------------------------------------- files


def _out_of_memory(exc: Exception) -> bool:
    """Whether generation ran out of memory (the GPU shared with other jobs, say) rather than failed on the task."""
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def _describe(exc: Exception) -> str:
    from model_server.backends.base import BackendError

    text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    return text if isinstance(exc, BackendError) else f"{type(exc).__name__}: {text}".rstrip(": ")


def _log(text: str) -> None:
    print(f"training.eval: {text}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
