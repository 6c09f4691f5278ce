"""Output comparison, done in the trusted parent on tensors the candidate can no longer touch.

Per output leaf: same kind, shape and dtype; NaN and ±Inf exactly where the reference has them; finite
values within `atol + rtol·|ref|` elementwise AND within `rtol·scale` overall (scale = the reference's
largest finite magnitude), so outputs of tiny magnitude cannot pass on `atol` alone; and an output that is
constant (e.g. all zeros) where the reference varies always fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

DEFAULT_TOLERANCES = {
    torch.float64: 1e-6,
    torch.float32: 1e-4,
    torch.float16: 1e-2,
    torch.bfloat16: 1e-2,
}
FALLBACK_TOLERANCE = 1e-2  # fp8 and other narrow float types


@dataclass
class Comparison:
    """What one call's outputs look like next to the reference's (errors are None until values were compared:
    a structure, shape or dtype mismatch has no error to report)."""

    max_abs_error: float | None = None
    max_rel_error: float | None = None
    problems: list[str] = field(default_factory=list)
    tolerance: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.problems

    def merge(self, other: Comparison) -> None:
        self.max_abs_error = _nanmax(self.max_abs_error, other.max_abs_error)
        self.max_rel_error = _nanmax(self.max_rel_error, other.max_rel_error)
        self.problems.extend(p for p in other.problems if p not in self.problems)
        self.tolerance = self.tolerance or other.tolerance


def tolerance_for(dtype: torch.dtype, atol: float | None, rtol: float | None) -> tuple[float, float]:
    """(atol, rtol): the user's overrides, else the dtype's default (fp32 1e-4, fp16/bf16 1e-2)."""
    default = DEFAULT_TOLERANCES.get(dtype, FALLBACK_TOLERANCE)
    return (default if atol is None else atol, default if rtol is None else rtol)


def compare_structure(ref_structure: object, cand_structure: object, label: str) -> list[str]:
    """Problems with the shape of the result itself (tensor vs tuple, tuple lengths)."""
    if ref_structure == cand_structure:
        return []
    return [f"{label}: output structure differs: expected {_show(ref_structure)}, got {_show(cand_structure)}"]


def compare_devices(reference: list[dict], candidate: list[dict]) -> list[str]:
    """Problems with where outputs live (a CPU result for a GPU task means the work left the GPU)."""
    problems = []
    for index, (ref, cand) in enumerate(zip(reference, candidate)):
        if "device" in ref and cand.get("device") != ref["device"]:
            problems.append(f"output {index} is on {cand.get('device', 'no device')}, expected {ref['device']}")
    return problems


def compare_outputs(
    reference: list, candidate: list, label: str, atol: float | None = None, rtol: float | None = None
) -> Comparison:
    """Compare the leaves of one call; `label` names the call in messages (e.g. 'trial 2')."""
    result = Comparison()
    if len(reference) != len(candidate):
        result.problems.append(f"{label}: {len(candidate)} outputs, expected {len(reference)}")
        return result
    for index, (ref, cand) in enumerate(zip(reference, candidate)):
        name = label if len(reference) == 1 else f"{label}, output {index}"
        result.merge(_compare_leaf(ref, cand, name, atol, rtol))
    return result


def _compare_leaf(ref: object, cand: object, name: str, atol: float | None, rtol: float | None) -> Comparison:
    result = Comparison()
    if not isinstance(ref, torch.Tensor):
        if ref != cand:
            result.problems.append(f"{name}: expected {ref!r}, got {cand!r}")
        return result
    if type(cand) is not torch.Tensor:
        result.problems.append(f"{name}: expected a torch.Tensor, got {type(cand).__name__ if cand else 'nothing'}")
        return result
    if cand.dtype != ref.dtype:
        result.problems.append(f"{name}: dtype {cand.dtype}, expected {ref.dtype}")
    if cand.shape != ref.shape:
        result.problems.append(f"{name}: shape {tuple(cand.shape)}, expected {tuple(ref.shape)}")
    if result.problems:
        return result
    if not (ref.dtype.is_floating_point or ref.dtype.is_complex):
        mismatches = int((cand != ref).sum())
        result.max_abs_error = float((cand.double() - ref.double()).abs().max()) if mismatches else 0.0
        result.max_rel_error = None if mismatches else 0.0
        if mismatches:
            result.problems.append(f"{name}: {mismatches} of {ref.numel()} values differ (exact match required)")
        return result
    return _compare_float(ref, cand, name, *tolerance_for(ref.dtype, atol, rtol))


def _compare_float(ref: torch.Tensor, cand: torch.Tensor, name: str, atol: float, rtol: float) -> Comparison:
    result = Comparison(tolerance={"atol": atol, "rtol": rtol})
    r, c = ref.double(), cand.double()
    for what, ref_mask, cand_mask in (
        ("NaN", r.isnan(), c.isnan()),
        ("+Inf", r.isposinf(), c.isposinf()),
        ("-Inf", r.isneginf(), c.isneginf()),
    ):
        wrong = int((ref_mask != cand_mask).sum())
        if wrong:
            result.problems.append(f"{name}: {wrong} positions disagree on {what} with the reference")
    finite = r.isfinite() & c.isfinite()
    if not bool(finite.any()):
        return result
    rf, cf = r[finite], c[finite]
    diff = (cf - rf).abs()
    scale = float(rf.abs().max())
    result.max_abs_error = float(diff.max())
    if scale > 0:
        result.max_rel_error = result.max_abs_error / scale
    else:
        result.max_rel_error = 0.0 if result.max_abs_error == 0 else math.inf
    outside = int((diff > atol + rtol * rf.abs()).sum())
    if outside:
        result.problems.append(
            f"{name}: {outside} of {rf.numel()} values outside atol={atol:g}, rtol={rtol:g} "
            f"(max abs error {result.max_abs_error:.3g})"
        )
    elif result.max_abs_error > (rtol * scale if scale > 0 else atol):
        result.problems.append(
            f"{name}: max error {result.max_abs_error:.3g} is {result.max_rel_error:.3g} of the reference's "
            f"scale {scale:.3g} (limit rtol={rtol:g})"
        )
    if rf.numel() > 1 and float(rf.max()) != float(rf.min()) and float(cf.max()) == float(cf.min()):
        result.problems.append(f"{name}: output is constant ({float(cf[0]):g}) while the reference varies")
    return result


def _nanmax(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return b if a is None else a
    return b if math.isnan(a) or b > a else a


def _show(structure: object) -> str:
    if isinstance(structure, dict) and structure.get("kind") in {"tuple", "list"}:
        return f"{structure['kind']} of {len(structure['items'])}"
    return "a single value"
