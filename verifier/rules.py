"""Every rule the audit and the verifier report, registered once: stable id, name, default severity, where it
is checked and whether a finding refuses a candidate outright.

Stages: `static` rules read source (the audit's TRI0xx-TRI5xx and the anti-hacking TRI301-TRI318), `compile`
rules build kernels for a CUDA target (TRI6xx), `runtime` rules are seen inside the verifier's sandbox while
a candidate runs (TRI351-TRI361). A rule that `rejects` gives the verdict `rejected`; any other error-level
runtime finding makes the candidate `incorrect`. docs/RULES.md has one row per rule and is checked against
this table by the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.wire.messages import Violation

# What the hybrid policy lets PyTorch do: call modules and library ops for the work Triton does not do.
HYBRID_ALLOWS = frozenset({"TRI302", "TRI317", "TRI360"})

SEVERITIES = ("error", "warning", "info")
STAGES = ("static", "compile", "runtime")
DOCS_URL = "https://github.com/tritonize/tritonize/blob/main/docs/RULES.md"


@dataclass(frozen=True)
class Rule:
    """A stable rule id with its short name, default severity, stage and one-line summary."""

    id: str
    name: str
    severity: str
    summary: str
    stage: str = "static"
    rejects: bool = False

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES or self.stage not in STAGES:
            raise ValueError(f"{self.id}: bad severity {self.severity!r} or stage {self.stage!r}")

    def seen_at_run_time(self, message: str) -> Violation:
        """A finding of this rule as the report lists it, with no source position (line and column 0)."""
        return {"rule": self.id, "severity": self.severity, "message": message, "line": 0, "column": 0}


def _static(id: str, name: str, severity: str, summary: str) -> Rule:
    return Rule(id, name, severity, summary)


def _hack(id: str, name: str, severity: str, summary: str) -> Rule:
    return Rule(id, name, severity, summary, "static", rejects=severity == "error")


def _compile(id: str, name: str, severity: str, summary: str) -> Rule:
    return Rule(id, name, severity, summary, "compile")


def _runtime(id: str, name: str, summary: str, rejects: bool) -> Rule:
    return Rule(id, name, "error", summary, "runtime", rejects)


RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in [
        _static("TRI000", "internal-error", "warning", "the audit itself failed on this code (please report it)"),
        _static("TRI001", "syntax-error", "error", "the file does not parse as Python"),
        _static("TRI002", "not-utf8", "error", "the file is not valid UTF-8"),
        _static("TRI003", "time-budget", "info", "the audit ran out of its time budget; later findings are missing"),
        _static("TRI101", "arange-not-power-of-two", "error", "tl.arange range is not a power of two"),
        _static("TRI102", "arange-not-constexpr", "error", "tl.arange bound is a runtime value"),
        _static("TRI103", "shape-not-constexpr", "error", "a block shape uses a parameter not annotated tl.constexpr"),
        _static("TRI104", "program-id-axis", "error", "tl.program_id / tl.num_programs axis outside 0..2"),
        _static("TRI105", "unsupported-construct", "error", "Python construct the Triton compiler rejects"),
        _static("TRI106", "call-to-python", "error", "a kernel calls a plain Python function"),
        _static("TRI107", "dot-too-small", "error", "tl.dot on a block dimension below 16"),
        _static("TRI108", "launch-not-jit", "error", "kernel[grid](...) launches a function that is not @triton.jit"),
        _static("TRI201", "unmasked-block-access", "warning", "load/store of program_id-indexed blocks without a mask"),
        _static("TRI202", "masked-load-no-other", "error", "masked lanes without other= reach a reduction or exp"),
        _static("TRI203", "int32-offset-overflow", "warning", "program_id times a runtime stride in int32"),
        _static("TRI204", "inclusive-bound", "error", "a mask `offsets <= n` lets one lane past the end"),
        _hack("TRI301", "no-triton-kernel", "error", "the candidate defines no @triton.jit kernel"),
        _hack("TRI302", "torch-compute", "warning", "PyTorch compute in forward's code (what ran decides: TRI360)"),
        _hack("TRI303", "try-except", "error", "try/except can hide a fallback to PyTorch"),
        _hack("TRI304", "forbidden-import", "error", "import or call outside the allow-list (threads, processes, I/O)"),
        _hack("TRI305", "dynamic-code", "error", "eval/exec/getattr-style dynamic code the checks cannot see"),
        _hack("TRI306", "dunder-access", "error", "access to interpreter internals through __dunder__ names"),
        _hack("TRI307", "monkey-patch", "error", "assignment to an attribute of an imported module or class"),
        _hack("TRI308", "tensor-subclass", "error", "a torch.Tensor subclass can compute lazily or fake results"),
        _hack("TRI309", "side-stream", "error", "CUDA streams or graphs let work escape the timed region"),
        _hack("TRI310", "state-in-forward", "error", "state kept between calls (output caching)"),
        _hack("TRI311", "rng-seeding", "error", "seeding RNGs to predict or hard-code the test inputs"),
        _hack("TRI312", "precision-downgrade", "error", "global switch to lower matmul precision (TF32/fp16)"),
        _hack("TRI313", "torch-delegation", "error", "delegation to torch.compile, TorchScript or torch internals"),
        _hack("TRI314", "imports-task", "error", "the candidate imports the task it is checked against"),
        _hack("TRI315", "print", "info", "print() output is captured into the report, never shown as results"),
        _hack("TRI316", "decoy-kernel", "warning", "a @triton.jit kernel that nothing launches or calls"),
        _hack("TRI317", "not-allowed", "error", "a name, attribute or call outside the allowlist"),
        _hack("TRI318", "model-not-plain", "error", "ModelNew is not one plain top-level class"),
        _runtime("TRI351", "no-triton-launch", "forward launched no Triton kernel (or fewer than timed calls)", True),
        _runtime("TRI352", "side-stream-launch", "a kernel launched outside the timed stream", True),
        _runtime("TRI353", "new-thread", "the candidate started a thread", True),
        _runtime("TRI354", "input-mutated", "forward changed one of its inputs", False),
        _runtime("TRI355", "not-plain-tensor", "an output is not exactly torch.Tensor", False),
        _runtime("TRI356", "harness-tampered", "timers, synchronize, comparison or the launch hook replaced", True),
        _runtime("TRI357", "cached-output", "an output repeats the previous call's (output caching)", False),
        _runtime("TRI358", "out-of-bounds", "forward wrote outside the buffers it was given or allocated", False),
        _runtime("TRI359", "memcheck-error", "compute-sanitizer memcheck saw a bad device memory access", False),
        _runtime("TRI360", "torch-compute-ran", "PyTorch computed part of the work while forward ran", True),
        _runtime("TRI361", "sandbox-refused", "the candidate reached into its own process and was refused", True),
        _static("TRI401", "unshifted-exp", "warning", "exp of unshifted values summed (softmax/logsumexp overflow)"),
        _static("TRI402", "low-precision-accumulator", "warning", "fp16/bf16 accumulator or tl.dot output"),
        _static("TRI403", "dot-precision-unstated", "warning", "tl.dot without input_precision: TF32 for fp32 inputs"),
        _static("TRI501", "untuned-kernel", "info", "a loop or tl.dot kernel with no autotune and no num_warps"),
        _static("TRI502", "strided-inner-access", "info", "innermost offsets multiplied by a constant stride > 1"),
        _static("TRI503", "loop-invariant-load", "info", "the same address is loaded on every loop iteration"),
        _compile("TRI601", "compile-error", "error", "the kernel does not compile for the target GPU"),
        _compile("TRI602", "register-spills", "warning", "registers spill to local memory"),
        _compile("TRI603", "shared-memory-limit", "error", "shared memory above the target's per-block limit"),
        _compile("TRI604", "compile-summary", "info", "registers, spills and shared memory per configuration"),
    ]
}

AUDIT_RULES: dict[str, Rule] = {rule.id: rule for rule in RULES.values() if rule.stage != "runtime"}


def docs_url(rule_id: str) -> str:
    """The rule's row in docs/RULES.md."""
    return f"{DOCS_URL}#{rule_id.lower()}"
