"""GPU timing the way the field learned to do it: CUDA events, L2 flush, warm-up, median of many calls.

The functions used here are bound at import, before any candidate code runs, so a candidate that patches
`torch.cuda.Event.elapsed_time` or `torch.cuda.synchronize` afterwards cannot change what is measured.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch

_EVENT = torch.cuda.Event
_RECORD = torch.cuda.Event.record
_ELAPSED = torch.cuda.Event.elapsed_time
_SYNCHRONIZE = torch.cuda.synchronize
L2_FLUSH_BYTES = 256 * 1024 * 1024


def time_cuda(fn: Callable[[], object], max_trials: int = 100, budget_ms: float = 1000.0) -> dict:
    """Median wall time of `fn` on the GPU in milliseconds, each call after an L2 flush."""
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    estimate = _estimate_ms(fn, flush)
    warmup = max(3, min(100, int(25.0 / max(estimate, 1e-3))))
    trials = max(10, min(max_trials, int(budget_ms / max(estimate, 1e-3))))
    for _ in range(warmup):
        fn()
    starts = [_EVENT(enable_timing=True) for _ in range(trials)]
    ends = [_EVENT(enable_timing=True) for _ in range(trials)]
    _SYNCHRONIZE()
    for start, end in zip(starts, ends):
        flush.zero_()
        _RECORD(start)
        fn()
        _RECORD(end)
    _SYNCHRONIZE()
    times = [_ELAPSED(s, e) for s, e in zip(starts, ends)]
    return {"median_ms": statistics.median(times), "min_ms": min(times), "trials": trials, "warmup": warmup}


def _estimate_ms(fn: Callable[[], object], flush: torch.Tensor) -> float:
    fn()
    _SYNCHRONIZE()
    start, end = _EVENT(enable_timing=True), _EVENT(enable_timing=True)
    _RECORD(start)
    for _ in range(3):
        flush.zero_()
        fn()
    _RECORD(end)
    _SYNCHRONIZE()
    return _ELAPSED(start, end) / 3


def tamper_targets() -> list[tuple[object, str, object]]:
    """(owner, attribute, original) triples whose replacement would fake a measurement."""
    return [
        (torch.cuda.Event, "record", _RECORD),
        (torch.cuda.Event, "elapsed_time", _ELAPSED),
        (torch.cuda, "synchronize", _SYNCHRONIZE),
        (torch.cuda, "Event", _EVENT),
    ]
