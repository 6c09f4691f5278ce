"""Every audit rule: stable id, name, default severity and one-line summary (docs/RULES.md has the details)."""

from __future__ import annotations

from verifier.findings import Rule
from verifier.hack_rules import RULES as HACK_RULES

AUDIT_RULES: dict[str, Rule] = {
    r.id: r
    for r in [
        Rule("TRI000", "internal-error", "warning", "the audit itself failed on this code (please report it)"),
        Rule("TRI001", "syntax-error", "error", "the file does not parse as Python"),
        Rule("TRI002", "not-utf8", "error", "the file is not valid UTF-8"),
        Rule("TRI101", "arange-not-power-of-two", "error", "tl.arange range is not a power of two"),
        Rule("TRI102", "arange-not-constexpr", "error", "tl.arange bound is a runtime value"),
        Rule("TRI103", "shape-not-constexpr", "error", "a block shape uses a parameter not annotated tl.constexpr"),
        Rule("TRI104", "program-id-axis", "error", "tl.program_id / tl.num_programs axis outside 0..2"),
        Rule("TRI105", "unsupported-construct", "error", "Python construct the Triton compiler rejects"),
        Rule("TRI106", "call-to-python", "error", "a kernel calls a plain Python function"),
        Rule("TRI107", "dot-too-small", "error", "tl.dot on a block dimension below 16"),
        Rule("TRI108", "launch-not-jit", "error", "kernel[grid](...) launches a function that is not @triton.jit"),
        Rule("TRI201", "unmasked-block-access", "warning", "load/store of program_id-indexed blocks without a mask"),
        Rule("TRI202", "masked-load-no-other", "error", "masked lanes without other= reach a reduction or exp"),
        Rule("TRI203", "int32-offset-overflow", "warning", "program_id times a runtime stride in int32"),
        Rule("TRI401", "unshifted-exp", "warning", "exp of unshifted values summed (softmax/logsumexp overflow)"),
        Rule("TRI402", "low-precision-accumulator", "warning", "fp16/bf16 accumulator or tl.dot output"),
        Rule("TRI403", "dot-precision-unstated", "warning", "tl.dot without input_precision: TF32 for fp32 inputs"),
        Rule("TRI501", "untuned-kernel", "info", "a loop or tl.dot kernel with no autotune and no num_warps"),
        Rule("TRI502", "strided-inner-access", "info", "innermost offsets multiplied by a constant stride > 1"),
        Rule("TRI503", "loop-invariant-load", "info", "the same address is loaded on every loop iteration"),
        Rule("TRI601", "compile-error", "error", "the kernel does not compile for the target GPU"),
        Rule("TRI602", "register-spills", "warning", "registers spill to local memory"),
        Rule("TRI603", "shared-memory-limit", "error", "shared memory above the target's per-block limit"),
        Rule("TRI604", "compile-summary", "info", "registers, spills and shared memory per configuration"),
    ]
}

ALL_RULES: dict[str, Rule] = {**AUDIT_RULES, **HACK_RULES}
