"""What crosses the sandbox boundary, typed in one place (docs/ARCHITECTURE.md, "The sandbox boundary").

The trusted parent (`host/zygote_handle.py`) writes one request per line on the zygote's stdin: a `Job` (with
the files it needs, which the zygote writes into the job's directory inside its own scratch) or a `Wipe`. The
zygote forks a child that runs the job (`sandbox/harness.py`); the child writes its result (one of the
`*Result`/`Timed*` types or a `StageFailure`, each with `seconds` added) as JSON to a pipe the zygote holds,
never to a file. Once the child is gone the zygote answers one `ZygoteReply` line carrying that result, the
child's captured output and, for a sanitize job, memcheck's log, every part cut at its limit below. Nothing
crosses as a file the parent reads: the parent's only inputs from a sandbox are that line and the channel.
Tensors never travel through files: each process makes the inputs from the seeds in `Call`, and the
candidate's outputs reach the reference side's comparer through the slot's shared-memory channel
(`wire/channel.py`). Violations use the report's `{rule, severity, message, line, column}` shape.
"""

from __future__ import annotations

from typing import Literal, Required, TypedDict

JobKind = Literal["reference", "candidate", "time_reference", "time_candidate", "sanitize", "sanitized_candidate"]

STDOUT_FILE = "stdout.txt"
STDERR_FILE = "stderr.txt"
SANITIZED_JOB_FILE = "sanitized_job.json"  # sanitize: the job the process under compute-sanitizer runs
SANITIZER_LOG_FILE = "sanitizer.log"  # sanitize: memcheck's report, sent back in the reply
RESULT_LIMIT = 4 * 2**20  # bytes of a child's result; a longer one is not a result
OUTPUT_LIMIT = 64 * 2**10  # bytes of a child's stdout and of its stderr sent back
SANITIZER_LOG_LIMIT = 2**20  # memcheck prints at most 20 errors, each with its host backtrace, then a summary
REPLY_LIMIT = RESULT_LIMIT + 2 * OUTPUT_LIMIT + SANITIZER_LOG_LIMIT + 2**20  # one reply line, JSON escaping included


class Call(TypedDict, total=False):
    """One call of the model: the seed its inputs are drawn from, the grad mode, its name in messages, and the
    factor its floating-point inputs are scaled by (1 when absent: the task's own inputs)."""

    seed: Required[int]
    grad: Required[bool]
    label: Required[str]
    scale: float
    # other sizes along dynamic dimensions: {"dims": [[position or None, dim], ...], "auto": bool, "step": str}
    resize: dict


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
    """One job for a zygote: `dir` is a new directory in its scratch, `files` (name -> text) are written there,
    and `source` / `inputs_source` name files among them (the zygote makes them paths for the child)."""

    files: dict[str, str]
    result_fd: int  # set by the zygote: the pipe the child writes its result to
    policy: str  # candidate jobs: "strict" or "hybrid"
    inputs_source: str  # candidate jobs: the task without its Model, to draw inputs from
    wait_seconds: float  # reference: how long to wait for the candidate's outputs
    atol: float | None  # reference: tolerance overrides
    rtol: float | None
    compile: bool  # time_reference: also time torch.compile
    prepare: bool  # time_reference: only compile and call the task once (caches warm for the timing run), no timing
    footprint: bool  # time_reference: only call the task once, eagerly, for its peak GPU memory; no timing
    sanitizer: str  # sanitize: the compute-sanitizer executable


class Ready(TypedDict):
    """The zygote's first line, once torch and Triton are imported and the sandbox is locked down."""

    ready: bool
    pid: int


class Wipe(TypedDict):
    """Delete everything in the zygote's scratch but the `keep` names (between verifications)."""

    wipe: bool
    keep: list[str]


class ZygoteReply(TypedDict, total=False):
    """How the job's child ended (its exit code, or the signal that killed it) and what it left: its result
    (None when it wrote none, or nothing that parses), its output, memcheck's log. `wiped` answers a `Wipe`."""

    id: str
    exit_code: int
    signal: int
    result: dict | None
    result_problem: str  # why there is no result: too long, not JSON
    stdout: str
    stderr: str
    sanitizer_log: str
    wiped: bool


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


class OutputsHeader(TypedDict, total=False):
    """The JSON frame the candidate's job sends on the channel before each call's tensor bytes. `failed`: a scaled
    or resized call where the candidate's forward raised instead (no leaves follow); the reference forgives it
    only where the task itself could not run that call."""

    structure: Required[object]
    leaves: Required[list[LeafInfo]]
    failed: str


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
    violations: list[Violation]  # candidate jobs: what the watch had seen (a refusal may be why it failed)


class HarnessFailure(TypedDict):
    """The harness itself failed before it could report (the child's result in place of one of the others)."""

    harness_error: str


class ComparisonResult(TypedDict):
    """`compare.Comparison` as JSON."""

    max_abs_error: float | None
    max_rel_error: float | None
    allclose_tolerance: float | None  # smallest rtol = atol for torch.allclose over the unscaled trials
    problems: list[str]
    tolerance: dict
    notes: list[str]  # leaves that passed on the float64 second opinion


class ReferenceResult(TypedDict):
    """The task ran each call and compared the candidate's streamed outputs with its own."""

    ok: Literal[True]
    calls_compared: int
    comparison: ComparisonResult
    repeated: str | None  # a trial's output identical to the previous one's while the reference's changed
    skipped: list[str]  # scaled trials the task itself could not run, or where its output is not finite


class Coverage(TypedDict, total=False):
    """How much of one extra call's work ran in Triton (`coverage.measure`); `error` if it could not be said."""

    share: float | None
    basis: str  # "kernel time" on a GPU, "ops" on the CPU
    library_calls: list[str]
    error: str


class TorchOps(TypedDict):
    """What PyTorch computed for the candidate during one compared call (`sandbox/torch_work.py`)."""

    call: str
    ops: dict[str, int]  # ATen operation -> times it ran


class CandidateResult(TypedDict):
    """The candidate ran on every trial plus one enable_grad call; what the runtime watch saw."""

    ok: Literal[True]
    launches: list[int]
    kernels: list[str]
    violations: list[Violation]
    torch_ops: list[TorchOps]
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
    torch_ops: list[TorchOps]


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
