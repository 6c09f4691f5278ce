"""The metrics of `training.eval` over task records (each with its `samples` and the count of them that pass):
pass@k, fast_p and the shares and counts every suite's totals give."""

from __future__ import annotations


def counts(records: list[dict]) -> tuple[dict, list[dict]]:
    """The counts every suite's totals open with, over the tasks that could be judged (a sample's `correct` is its
    pass by the suite's rule), and those tasks; a task whose own run failed is listed apart and not counted."""
    unverified = [r["name"] for r in records if r.get("unverified")]
    records = [r for r in records if not r.get("unverified")]
    samples = [s for r in records for s in r["samples"]]
    counts = {
        "tasks": len(records),
        "samples": len(samples),
        "correct_samples": sum(s["correct"] for s in samples),
        "tasks_solved": sum(r["correct"] > 0 for r in records),
        "tasks_failed_to_generate": sum(bool(r["error"]) and not r["samples"] for r in records),
        "tasks_unverified": unverified,
    }
    return counts, records


def mean_pass(records: list[dict], key: str, k: int) -> float:
    """The mean over tasks of pass@k, counting a task's samples that pass by its record's `key` count."""
    values = [pass_at_k(len(r["samples"]), r[key], k) for r in records]
    return sum(values) / len(values) if values else 0.0


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of k samples drawn without replacement from n, c of them correct, is
    correct: 1 - C(n-c, k) / C(n, k), as a product (no huge binomials). A k above n is taken as n."""
    if n == 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    missed = 1.0
    for i in range(n - c + 1, n + 1):
        missed *= 1.0 - k / i
    return 1.0 - missed


def fast_p(records: list[dict], p: float, baseline: str, correct: str = "correct") -> float:
    """The mean over tasks of the share of a task's samples that are correct (by the sample's key `correct`) with a
    speedup above `p` against `baseline` (`eager` or `compile`); a task without samples counts as 0."""
    return mean_share(records, lambda s: s.get(correct) and (s.get(f"speedup_vs_{baseline}") or 0.0) > p)


def mean_share(records: list[dict], holds) -> float:
    """The mean over tasks of the share of a task's samples for which `holds`; a task without samples is 0."""
    if not records:
        return 0.0
    shares = [sum(bool(holds(s)) for s in r["samples"]) / len(r["samples"]) if r["samples"] else 0.0 for r in records]
    return sum(shares) / len(records)
