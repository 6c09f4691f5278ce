"""Output comparison, done where the candidate cannot reach: the reference side's process, chunk by chunk.

Per output leaf: same kind, shape and dtype; NaN and ±Inf exactly where the reference has them; finite
values within `atol + rtol·|ref|` elementwise AND within `rtol·scale` overall (scale = the reference's
largest finite magnitude), so outputs of tiny magnitude cannot pass on `atol` alone; and an output that is
constant (e.g. all zeros) where the reference varies always fails.

A leaf that misses only on the size of its errors gets a second opinion (`against_exact`) where the task can be
run in float64: the fp32 reference is itself off by its rounding (a 4096-long dot product of `randn` values
sums to ~64 with errors ~1e-3 wherever it cancels to near zero), so a kernel that adds in another order, or
more accurately, misses `atol` exactly where PyTorch's own result is wrong. Against the float64 answer, each
value may be off by `atol + rtol·|exact|` plus `EXACT_ALLOWANCE` times the larger of the leaf's rounding noise
(`rounding.py`: how far fp32 rounding, in any reasonable order, moves it) and the largest error of PyTorch's
own fp32 result. The noise, not PyTorch's order, sets the bar: a mean that cancels to zero, which PyTorch's
order happens to get right to 1e-10, allows the 1e-7 that another order's rounding gives. A precision
downgrade (TF32, bf16) is off by 20x and more beyond it and fails.
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
CHUNK_ELEMENTS = 1 << 24
EXACT_ALLOWANCE = 4.0


@dataclass
class Comparison:
    """What one call's outputs look like next to the reference's (errors are None until values were compared:
    a structure, shape or dtype mismatch has no error to report)."""

    max_abs_error: float | None = None
    max_rel_error: float | None = None
    problems: list[str] = field(default_factory=list)
    tolerance: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # The smallest t for which torch.allclose(candidate, reference, rtol=t, atol=t) holds: the field's benchmarks
    # judge correctness that way (KernelBench at 1e-2). Infinite where no tolerance would do (a NaN out of place,
    # another shape); None where nothing was compared.
    allclose_tolerance: float | None = None

    @property
    def passed(self) -> bool:
        return not self.problems

    def merge(self, other: Comparison) -> None:
        self.max_abs_error = _nanmax(self.max_abs_error, other.max_abs_error)
        self.max_rel_error = _nanmax(self.max_rel_error, other.max_rel_error)
        self.allclose_tolerance = _nanmax(self.allclose_tolerance, other.allclose_tolerance)
        self.problems.extend(p for p in other.problems if p not in self.problems)
        self.notes.extend(other.notes)
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
        result.allclose_tolerance = math.inf
        return result
    for index, (ref, cand) in enumerate(zip(reference, candidate)):
        name = label if len(reference) == 1 else f"{label}, output {index}"
        result.merge(_compare_leaf(ref, cand, name, atol, rtol))
    return result


def _compare_leaf(ref: object, cand: object, name: str, atol: float | None, rtol: float | None) -> Comparison:
    if not isinstance(ref, torch.Tensor):
        return compare_value(ref, cand, name)
    if type(cand) is not torch.Tensor:
        return Comparison(
            problems=[f"{name}: expected a torch.Tensor, got {type(cand).__name__ if cand else 'nothing'}"],
            allclose_tolerance=math.inf,
        )
    check = LeafCheck(ref, name, atol, rtol)
    if check.admits(str(cand.dtype), list(cand.shape)):
        flat = cand.reshape(-1)
        for start in range(0, flat.numel(), CHUNK_ELEMENTS):
            check.add(start, flat[start : start + CHUNK_ELEMENTS])
    return check.finish()


def against_exact(
    missed: Comparison, check: LeafCheck, cand: torch.Tensor, exact: object, noise: Noise | None = None
) -> Comparison:
    """The second opinion on a leaf that `check` found right but for the size of its errors: `cand` (the
    candidate's values) and the fp32 reference both measured against `exact`, the task's float64 output, with
    `noise` (the leaf's rounding noise, where it could be estimated) widening what is allowed. Returns `missed`
    unchanged where that answer cannot judge it (another shape, other non-finite places)."""
    errors = exact_errors(check, cand, exact)
    return missed if errors is None else judge_exact(missed, check, errors, noise)


@dataclass(frozen=True)
class ExactErrors:
    """How far the candidate and PyTorch's fp32 result are from the float64 answer (its finite values)."""

    ref_error: float  # PyTorch's largest error
    cand_error: float  # the candidate's largest error
    over: float  # the candidate's largest error beyond `atol + rtol·|exact|`
    scale: float  # the answer's largest magnitude


def exact_errors(check: LeafCheck, cand: torch.Tensor, exact: object) -> ExactErrors | None:
    """One pass, chunk by chunk, over the leaf; None where `exact` cannot judge it (another shape, other
    non-finite places)."""
    ref = check.ref
    if not isinstance(exact, torch.Tensor) or exact.numel() != ref.numel() or cand.numel() != ref.numel():
        return None
    exact, cand = exact.detach().reshape(-1), cand.reshape(-1)
    ref_error = cand_error = over = scale = 0.0
    for start in range(0, ref.numel(), CHUNK_ELEMENTS):
        r, c = ref[start : start + CHUNK_ELEMENTS].double(), cand[start : start + CHUNK_ELEMENTS].double()
        x = exact[start : start + CHUNK_ELEMENTS].double()
        finite = r.isfinite()
        if not bool((finite == x.isfinite()).all()) or not bool((finite == c.isfinite()).all()):
            return None
        r, c, x = r[finite], c[finite], x[finite]
        if not x.numel():
            continue
        cand_diff = (c - x).abs()
        ref_error = max(ref_error, float((r - x).abs().max()))
        cand_error = max(cand_error, float(cand_diff.max()))
        over = max(over, float((cand_diff - check.atol - check.rtol * x.abs()).max()))
        scale = max(scale, float(x.abs().max()))
    return ExactErrors(ref_error, cand_error, over, scale)


def judge_exact(missed: Comparison, check: LeafCheck, errors: ExactErrors, noise: Noise | None = None) -> Comparison:
    """The second opinion from measured `errors`: allowed `EXACT_ALLOWANCE` times the larger of PyTorch's own
    error and the rounding noise (where given)."""
    rounding = noise.largest if noise is not None else 0.0
    bar = max(errors.ref_error, rounding)
    allowed = EXACT_ALLOWANCE * bar
    result = Comparison(
        missed.max_abs_error,
        missed.max_rel_error,
        tolerance=dict(missed.tolerance),
        allclose_tolerance=missed.allclose_tolerance,
    )
    result.tolerance["exact_allowance"] = EXACT_ALLOWANCE
    if noise is not None:
        result.tolerance["rounding_noise"] = rounding
    facts = f"against the float64 answer it is off by up to {errors.cand_error:.3g}"
    if noise is not None:
        facts += f", where fp32 rounding explains up to {rounding:.3g}"
    facts += f" and PyTorch's own fp32 result is off by up to {errors.ref_error:.3g}"
    if errors.over <= allowed and errors.cand_error <= check.rtol * errors.scale + allowed:
        result.notes.append(f"{check.name}: missed the fp32 tolerance, but {facts}: as accurate as fp32 allows")
        return result
    times = errors.cand_error / bar if bar > 0 else math.inf
    verdict = f"{facts}; at most {EXACT_ALLOWANCE:g}x the larger is allowed, this is {_times(times)}"
    if noise is not None and noise.products and times >= 100:
        verdict += "; TF32 or a lower precision in a matmul or convolution would do this"
    result.problems = [f"{p} ({verdict})" for p in missed.problems]
    return result


@dataclass
class Noise:
    """A leaf's rounding noise (`rounding.py`): its largest value, and whether the task multiplies matrices or
    convolves (where a precision downgrade is the usual cause of an error far beyond it)."""

    largest: float
    products: bool = False


def _times(ratio: float) -> str:
    if math.isinf(ratio):
        return "infinitely more"
    return f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.2g}x"


def compare_value(ref: object, cand: object, name: str) -> Comparison:
    """A leaf that is not a tensor (a Python number, None): equal or not."""
    if ref == cand:
        return Comparison(allclose_tolerance=0.0)
    return Comparison(problems=[f"{name}: expected {ref!r}, got {cand!r}"], allclose_tolerance=math.inf)


class LeafCheck:
    """One tensor leaf compared chunk by chunk (flattened, row-major), so a GB-sized output never needs a
    full-size temporary and can be compared as it arrives. `admits` first, then `add` each chunk, then
    `finish`; the result is the same as comparing the whole tensor at once."""

    def __init__(self, ref: torch.Tensor, name: str, atol: float | None = None, rtol: float | None = None):
        self.ref = ref.detach().reshape(-1)
        self.dtype, self.shape, self.name = ref.dtype, list(ref.shape), name
        self.atol, self.rtol = tolerance_for(ref.dtype, atol, rtol)
        self.floating = ref.dtype.is_floating_point or ref.dtype.is_complex
        self.result = Comparison(tolerance={"atol": self.atol, "rtol": self.rtol} if self.floating else {})
        self.seen = 0
        self.wrong = {"NaN": 0, "+Inf": 0, "-Inf": 0}
        self.mismatches = self.outside = self.finite = 0
        self.max_diff = self.scale = self.allclose = 0.0
        self.ref_range: list[float] = []
        self.cand_range: list[float] = []
        self.near_miss = False  # after `finish`: right in every way but the size of the errors

    def admits(self, dtype: str, shape: list[int]) -> bool:
        """Whether a candidate leaf of this dtype and shape can be compared at all (else the problem is kept)."""
        if dtype != str(self.dtype):
            self.result.problems.append(f"{self.name}: dtype {dtype}, expected {self.dtype}")
        if shape != self.shape:
            self.result.problems.append(f"{self.name}: shape {tuple(shape)}, expected {tuple(self.shape)}")
        if self.result.problems:
            self.result.allclose_tolerance = math.inf
        return not self.result.problems

    def add(self, start: int, cand: torch.Tensor) -> None:
        """The candidate's elements `start .. start + len(cand)` of the flattened leaf."""
        if not cand.numel():
            return
        ref = self.ref[start : start + cand.numel()]
        self.seen += cand.numel()
        if not self.floating:
            differ = cand != ref
            count = int(differ.sum())
            if count:
                self.mismatches += count
                diff = (cand.double() - ref.double()).abs()
                self.max_diff = max(self.max_diff, float(diff.max()))
                self.allclose = max(self.allclose, float((diff / (1 + ref.double().abs())).max()))
            return
        r, c = ref.double(), cand.double()
        if not self.ref.is_complex() and self._add_all_finite(r, c):
            return
        for what, ref_mask, cand_mask in (
            ("NaN", r.isnan(), c.isnan()),
            ("+Inf", r.isposinf(), c.isposinf()),
            ("-Inf", r.isneginf(), c.isneginf()),
        ):
            self.wrong[what] += int((ref_mask != cand_mask).sum())
        if any(self.wrong.values()):
            self.allclose = math.inf
        finite = r.isfinite() & c.isfinite()
        if not bool(finite.any()):
            return
        rf, cf = r[finite], c[finite]
        diff = (cf - rf).abs()
        self.finite += rf.numel()
        self.max_diff = max(self.max_diff, float(diff.max()))
        self.scale = max(self.scale, float(rf.abs().max()))
        self.outside += int((diff > self.atol + self.rtol * rf.abs()).sum())
        self.allclose = max(self.allclose, float((diff / (1 + rf.abs())).max()))
        self.ref_range = _widen(self.ref_range, float(rf.min()), float(rf.max()))
        self.cand_range = _widen(self.cand_range, float(cf.min()), float(cf.max()))

    def _add_all_finite(self, r: torch.Tensor, c: torch.Tensor) -> bool:
        """`add` where every value of both chunks is finite (the usual case), in one pass and one device sync: a
        GB-sized output arrives in hundreds of chunks, and the general path's masks and syncs make its reader
        slower than the copy. False (nothing recorded) where a value is not finite."""
        diff = (c - r).abs()
        magnitude = r.abs()
        ref_low, ref_high = torch.aminmax(r)
        cand_low, cand_high = torch.aminmax(c)
        stats = torch.stack(
            [
                (~r.isfinite()).sum() + (~c.isfinite()).sum(),
                diff.max(),
                magnitude.max(),
                (diff > self.atol + self.rtol * magnitude).sum(),
                ref_low,
                ref_high,
                cand_low,
                cand_high,
                (diff / magnitude.add_(1)).max(),  # last: `magnitude` is read above before it changes in place
            ]
        ).tolist()
        if stats[0]:
            return False
        self.finite += r.numel()
        self.max_diff = max(self.max_diff, stats[1])
        self.scale = max(self.scale, stats[2])
        self.outside += int(stats[3])
        self.ref_range = _widen(self.ref_range, stats[4], stats[5])
        self.cand_range = _widen(self.cand_range, stats[6], stats[7])
        self.allclose = max(self.allclose, stats[8])
        return True

    def finish(self) -> Comparison:
        result, name = self.result, self.name
        if result.problems:
            return result
        if self.seen != self.ref.numel():
            result.problems.append(f"{name}: {self.seen} of {self.ref.numel()} values arrived")
            result.allclose_tolerance = math.inf
            return result
        result.allclose_tolerance = self.allclose
        if not self.floating:
            result.max_abs_error = self.max_diff
            result.max_rel_error = None if self.mismatches else 0.0
            if self.mismatches:
                result.problems.append(f"{name}: {self.mismatches} of {self.seen} values differ (exact match required)")
            return result
        for what, wrong in self.wrong.items():
            if wrong:
                result.problems.append(f"{name}: {wrong} positions disagree on {what} with the reference")
        if not self.finite:
            return result
        placed = not result.problems
        result.max_abs_error = self.max_diff
        if self.scale > 0:
            result.max_rel_error = self.max_diff / self.scale
        else:
            result.max_rel_error = 0.0 if self.max_diff == 0 else math.inf
        if self.outside:
            result.problems.append(
                f"{name}: {self.outside} of {self.finite} values outside atol={self.atol:g}, rtol={self.rtol:g} "
                f"(max abs error {self.max_diff:.3g})"
            )
        elif self.max_diff > (self.rtol * self.scale if self.scale > 0 else self.atol):
            result.problems.append(
                f"{name}: max error {self.max_diff:.3g} is {result.max_rel_error:.3g} of the reference's "
                f"scale {self.scale:.3g} (limit rtol={self.rtol:g})"
            )
        (ref_low, ref_high), (cand_low, cand_high) = self.ref_range, self.cand_range
        if self.finite > 1 and ref_high != ref_low and cand_high == cand_low:
            result.problems.append(f"{name}: output is constant ({cand_low:g}) while the reference varies")
        elif placed and result.problems:
            self.near_miss = True
        return result


def _widen(bounds: list[float], low: float, high: float) -> list[float]:
    return [min(bounds[0], low), max(bounds[1], high)] if bounds else [low, high]


def _nanmax(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return b if a is None else a
    return b if math.isnan(a) or b > a else a


def _show(structure: object) -> str:
    if isinstance(structure, dict) and structure.get("kind") in {"tuple", "list"}:
        return f"{structure['kind']} of {len(structure['items'])}"
    return "a single value"
