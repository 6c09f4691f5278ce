"""The verification report: the object `tritonize verify --json` prints (docs/ARCHITECTURE.md, "The report")."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from verifier.rules import HYBRID_ALLOWS

VERDICTS = ("correct", "incorrect", "rejected", "compile_error", "runtime_error", "timeout", "crashed")


def passes(verdict: str, reward: float, policy: str) -> bool:
    """Whether a report passes: correct, and rewarded under the strict policy (a hybrid one earns no reward). For
    reports read back as JSON too, such as a model server's answer."""
    return verdict == "correct" and (reward > 0 or policy == "hybrid")


@dataclass
class Report:
    """Verdict, reward and evidence for one candidate against one task."""

    verdict: str
    reward: float = 0.0
    violations: list[dict] = field(default_factory=list)
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    allclose_tolerance: float | None = None  # smallest t with torch.allclose(rtol=t, atol=t) on the unscaled trials
    trials: int = 0
    device: str = "cpu"
    isolation: dict = field(default_factory=dict)
    timing: dict | None = None
    message: str = ""
    interpreter: bool = False
    seed: int | None = None
    tolerance: dict | None = None
    launches: list[int] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    candidate_output: dict = field(default_factory=lambda: {"stdout": "", "stderr": ""})
    phases: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    task: str = ""
    candidate: str = ""
    policy: str = "strict"
    coverage: float | None = None
    library_calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    @property
    def passed(self) -> bool:
        """The CLI's exit-0 condition (`passes`)."""
        return passes(self.verdict, self.reward, self.policy)

    def _verdict_said(self) -> str:
        """The verdict, and under the hybrid policy what a correct kernel leaves to PyTorch."""
        if self.verdict != "correct" or self.policy != "hybrid":
            return self.verdict
        if self.library_calls:
            return f"correct under hybrid (not all Triton: {', '.join(self.library_calls)})"
        if self.coverage is not None and self.coverage < 1:
            return f"correct under hybrid (not all Triton: {self.coverage:.0%} in Triton)"
        return "correct under hybrid (all Triton: it would pass the strict policy too)"

    def to_dict(self) -> dict:
        return _finite(asdict(self))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def summary(self) -> str:
        """A few human-readable lines for the terminal."""
        lines = [f"verdict: {self._verdict_said()}   reward: {self.reward:g}   device: {self.device}"]
        if self.message:
            lines.append(self.message)
        if self.max_abs_error is not None:
            lines.append(_error_line(self.max_abs_error, self.max_rel_error, self.trials))
        if self.coverage is not None:
            library = f"; in PyTorch: {', '.join(self.library_calls)}" if self.library_calls else ""
            basis = "kernel time" if self.device == "cuda" else "ops"
            lines.append(f"coverage: {self.coverage:.0%} of the {basis} in Triton ({self.policy} policy){library}")
        for v in self.violations:
            where = f" (line {v['line']}, column {v.get('column', 1)})" if v.get("line") else ""
            allowed = self.policy == "hybrid" and v["rule"] in HYBRID_ALLOWS
            severity = "allowed under the hybrid policy" if allowed else v["severity"]
            lines.append(f"  {v['rule']} {severity}{where}: {v['message']}")
        if self.timing:
            t = self.timing
            lines.append(
                f"timing: candidate {t['candidate_ms']:.4g} ms, eager {t['eager_ms']:.4g} ms "
                f"(x{t['speedup_vs_eager']:.3g})"
                + (
                    f", torch.compile {t['compile_ms']:.4g} ms (x{t['speedup_vs_compile']:.3g})"
                    if t.get("compile_ms")
                    else ""
                )
            )
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)


def _error_line(error: float, ratio: float | None, trials: int) -> str:
    """The largest error and the largest ratio of an output's error to that output's largest reference magnitude,
    each named (they may come from different outputs or trials)."""
    relative = "" if ratio is None else f"; max relative error {ratio:.3g} (error / the reference's largest magnitude)"
    return f"max abs error {error:.3g}{relative}, over {trials} trials"


def _finite(value: object) -> object:
    """JSON has no NaN or Infinity: such floats become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
