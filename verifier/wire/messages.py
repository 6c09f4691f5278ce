"""What crosses the sandbox boundary, typed in one place (docs/ARCHITECTURE.md, "The sandbox boundary").

The trusted parent (`zygote_handle.py`) writes one `Job` per line on the zygote's stdin; the zygote forks a
child that runs the job (`harness.py`) and answers one `ZygoteReply` per line once the child is gone. The
child's findings never travel on that pipe: it writes a result (RESULT_FILE in the job directory: one of the
`*Result`/`Timed*` types or a `StageFailure`, each with `seconds` added, the job's time in the child).
Tensors never travel through files: each process makes the inputs from the seeds in `Call`, and the
candidate's outputs reach the reference side's comparer through the slot's shared-memory channel
(`channel.py`). Violations use the report's `{rule, severity, message, line, column}` shape.
"""

from __future__ import annotations

from typing import Literal, TypedDict

JobKind = Literal["reference", "candidate", "time_reference", "time_candidate", "sanitize", "sanitized_candidate"]

RESULT_FILE = "result.json"
STDOUT_FILE = "stdout.txt"
STDERR_FILE = "stderr.txt"
HARNESS_ERROR_FILE = "harness_error.txt"
SANITIZED_JOB_FILE = "sanitized_job.json"  # sanitize: the job the process under compute-sanitizer runs
SANITIZER_LOG_FILE = "sanitizer.log"  # sanitize: memcheck's report, read by the parent


class Call(TypedDict):
    """One call of the model: the seed its inputs are drawn from, the grad mode, and its name in messages."""

    seed: int
    grad: bool
    label: str


class _JobRequired(TypedDict):
    id: str
    kind: JobKind
    dir: str
    device: str
    init_seed: int
    source: str
    module_name: str
    timing_trials: int
    calls: list[Call]
    channel_fd: int


class Job(_JobRequired, total=False):
    """One job for a zygote; `dir` is relative to its scratch directory."""

    inputs_source: str  # candidate jobs: the task without its Model, to draw inputs from
    wait_seconds: float  # reference: how long to wait for the candidate's outputs
    atol: float | None  # reference: tolerance overrides
    rtol: float | None
    compile: bool  # time_reference: also time torch.compile
    sanitizer: str  # sanitize: the compute-sanitizer executable


class Ready(TypedDict):
    """The zygote's first line, once torch and Triton are imported and the sandbox is locked down."""

    ready: bool
    pid: int


class ZygoteReply(TypedDict, total=False):
    """How the job's child ended: its exit code, or the signal that killed it."""

    id: str
    exit_code: int
    signal: int


class Violation(TypedDict):
    """A rule finding as the report lists it (line and column 0 for what was seen at run time)."""

    rule: str
    severity: str
    message: str
    line: int
    column: int


class LeafInfo(TypedDict, total=False):
    """One output leaf as the child saw it."""

    type: str
    dtype: str
    shape: list[int]
    device: str
    value: object  # a leaf that is not a tensor: its value (numbers, booleans, None) or its repr


class OutputsHeader(TypedDict):
    """The JSON frame the candidate's job sends on the channel before each call's tensor bytes."""

    structure: object
    leaves: list[LeafInfo]


class TimingSample(TypedDict):
    """`timing.time_cuda`'s measurement of one callable."""

    median_ms: float
    min_ms: float
    trials: int
    warmup: int


class StageFailure(TypedDict):
    """The job failed in one stage (import, init, forward, ...) with this exception."""

    ok: Literal[False]
    stage: str
    error_type: str
    error: str
    line: int | None
    triton_compile_error: bool
    traceback: str


class ComparisonResult(TypedDict):
    """`compare.Comparison` as JSON."""

    max_abs_error: float | None
    max_rel_error: float | None
    problems: list[str]
    tolerance: dict
    notes: list[str]  # leaves that passed on the float64 second opinion


class ReferenceResult(TypedDict):
    """The task ran each call and compared the candidate's streamed outputs with its own."""

    ok: Literal[True]
    calls_compared: int
    comparison: ComparisonResult
    repeated: str | None  # a trial's output identical to the previous one's while the reference's changed


class Coverage(TypedDict, total=False):
    """How much of one extra call's work ran in Triton (`coverage.measure`); `error` if it could not be said."""

    share: float | None
    basis: str  # "kernel time" on a GPU, "ops" on the CPU
    library_calls: list[str]
    error: str


class CandidateResult(TypedDict):
    """The candidate ran on every trial plus one enable_grad call; what the runtime watch saw."""

    ok: Literal[True]
    launches: list[int]
    kernels: list[str]
    violations: list[Violation]
    coverage: Coverage
    stages: dict[str, float]  # seconds: load (inputs, import, init), first call (compiles), other calls, coverage


class TimedReference(TypedDict, total=False):
    """Eager (and torch.compile) medians of the task."""

    ok: bool
    eager: TimingSample
    compiled: TimingSample
    compile_seconds: float
    compile_error: str
    peak_bytes: int  # the GPU memory the task's eager run took at most (model, inputs, outputs, workspace)
    device_bytes: int


class TimedCandidate(TypedDict):
    """The candidate's median; its last output went to the comparer."""

    ok: Literal[True]
    candidate: TimingSample
    violations: list[Violation]


# ---------------------------------------------------------------- the audit's compile child (audit/compile_child.py)


class CompileJobSpec(TypedDict):
    """One compilation of one kernel (`compile_plan.CompileJob.as_dict`)."""

    kernel: str
    line: int
    signature: dict[str, str]
    constexprs: dict[str, object]
    num_warps: int
    num_stages: int | None


class CompileSpec(TypedDict):
    """The compile child's job file: the source to rebuild kernels from, the target and the compilations."""

    source_path: str
    capability: int
    jobs: list[CompileJobSpec]


class CompileResult(TypedDict, total=False):
    """One compilation's outcome: `skipped` or `error` (a description with its location), else the figures."""

    kernel: str
    constexprs: dict[str, object]
    skipped: str
    error: dict
    shared: int
    registers: int
    spill_stores: int
    spill_loads: int


class CompileOutcome(TypedDict, total=False):
    """The compile child's result file; `failure` when the child itself did not finish (set by the parent)."""

    notes: list[str]
    results: list[CompileResult]
    failure: str
