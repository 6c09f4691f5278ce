"""Options of one verification, with their defaults and validation."""

from __future__ import annotations

import re
from dataclasses import dataclass

from verifier.dynamic import parse_dynamic
from verifier.host.limits import MIN_MEMORY_LIMIT, Limits, default_memory_limit

POLICIES = ("strict", "hybrid")
POLICY_LINE = re.compile(r"^# tritonize-policy: (strict|hybrid)\b", re.MULTILINE)
POLICY_LINES_READ = 5  # the policy line is among a kernel's first lines, where `tritonize convert` writes it


def policy_line(policy: str, library_calls: list[str]) -> str:
    """The first line `tritonize convert` writes above a kernel: the policy it was verified under, which
    `tritonize verify` then checks it under by default."""
    if policy == "strict":
        return "# tritonize-policy: strict -- verified correct under the strict policy: all the work in Triton\n"
    left = f" (not all Triton: {', '.join(library_calls)})" if library_calls else " (not all Triton)"
    return f"# tritonize-policy: hybrid -- verified correct under the hybrid policy{left}\n"


def declared_policy(source: str) -> str | None:
    """The policy a kernel's `# tritonize-policy:` line names, among its first lines; None without one."""
    found = POLICY_LINE.search("\n".join(source.splitlines()[:POLICY_LINES_READ]))
    return found.group(1) if found else None


@dataclass
class VerifyOptions:
    """How hard to check: trials, seeds, limits, tolerances, whether to time on the GPU, and the policy."""

    trials: int = 5
    seed: int | None = None
    timeout: float = 60.0
    memory_limit: int | None = None
    atol: float | None = None
    rtol: float | None = None
    timing: bool = True
    timing_trials: int = 100
    compile_baseline: bool = True
    suspect_speedup: float = 10.0
    policy: str = "strict"  # "hybrid": PyTorch may do the work Triton does not (never rewarded)
    sanitize: bool = False  # GPU: one more run under compute-sanitizer memcheck once the candidate is correct
    static_checks: bool = True  # off only to test that the sandbox holds on its own; never for real use
    dynamic: str | None = None  # a `verifier.dynamic` spec: also verify at other sizes along these dimensions

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise ValueError(f"trials must be at least 1, got {self.trials}")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout}")
        if self.memory_limit is not None and self.memory_limit < MIN_MEMORY_LIMIT:
            raise ValueError(f"memory limit must be at least 256 MiB, got {self.memory_limit} bytes")
        for name in ("atol", "rtol"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be non-negative, got {value}")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        if self.dynamic is not None:
            self.dynamic = str(parse_dynamic(self.dynamic))
        if self.memory_limit is None:
            self.memory_limit = default_memory_limit()

    def limits(self, seconds: float | None = None) -> Limits:
        """The sandbox limits of one run (`seconds` overrides the timeout, for baseline timing)."""
        return Limits(seconds or self.timeout, self.memory_limit)
