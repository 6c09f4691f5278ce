"""Options of one verification, with their defaults and validation."""

from __future__ import annotations

from dataclasses import dataclass

from verifier.host.limits import MIN_MEMORY_LIMIT, Limits, default_memory_limit

POLICIES = ("strict", "hybrid")


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
        if self.memory_limit is None:
            self.memory_limit = default_memory_limit()

    def limits(self, seconds: float | None = None) -> Limits:
        """The sandbox limits of one run (`seconds` overrides the timeout, for baseline timing)."""
        return Limits(seconds or self.timeout, self.memory_limit)
