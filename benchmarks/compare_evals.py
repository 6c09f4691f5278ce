"""Whether one model beats another on the same held-out tasks: two `training.eval` outputs compared task by task;
or evaluations on the field's benchmarks beside the figures other projects published.

    python benchmarks/compare_evals.py OUT_A OUT_B [OUT_A2 OUT_B2 ...]
    python benchmarks/compare_evals.py --published OUT [OUT ...]

Pairs the tasks both evaluated (by name and content hash) and prints, as a markdown table, each side's pass@1 on
them, the difference, how many tasks got better or worse, a bootstrap 95% interval of the difference and the
one-sided p-value of B > A under a sign-flip permutation test. The test asks how often a difference this large
comes from chance alone: under "B is no better than A", each task's difference is as likely to have either sign.
Samples of one task are not independent (a near-deterministic model writes the same kernel four times), so the
task, not the sample, is the unit here. Several pairs (two runs of one recipe, say, each SFT model against its own
GRPO model) get a row each and a last row that pools their tasks. The pooled difference and counts take each
pair's task once; the interval and the p-value resample and flip a task (by content hash) as one unit with all its
pairs, because one task's differences in two runs go together (a task GRPO learned in one run it tends to learn in
the other), and counting them as independent would overstate the evidence. The pooled row treats the runs as
given: it asks whether these GRPO models beat their SFT models, and the spread between the pairs' rows is what
says how much another run would differ.

`--published` prints one row per evaluation of a KernelBench level (`training.eval --suite kernelbench:...`): its
correctness and fast_1 by KernelBench's own rule, and the verifier's strict pass@1; or of a TritonBench channel
(`--suite tritonbench-t:...`): its execution and call accuracy by TritonBench's rule, and the share that also passes
the project's audit (the verifier's own verdict on TritonBench is not made yet); then the figures of AutoTriton,
KernelLLM and TritonRL on the same benchmarks as their papers and model cards give them
(`benchmarks/published_figures.json`, with each figure's source and setting), marked as quoted: they were measured
elsewhere, on other machines, with other harnesses, and only the benchmark and the metric's name are shared.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = Path(__file__).resolve().parent / "published_figures.json"
sys.path.insert(0, str(ROOT))

from training.eval import RESULTS_FILE, read_results  # noqa: E402

EXACT_UP_TO = 16  # tasks that differ: up to this many, every sign assignment is counted (2^16), else sampled
DRAWS = 100_000
SEED = 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "outs",
        nargs="+",
        type=Path,
        metavar="OUT",
        help="training.eval output directories in pairs, the baseline's then the challenger's: A B [A2 B2 ...]",
    )
    parser.add_argument(
        "--published",
        action="store_true",
        help="print each OUT's KernelBench figures beside the published figures of other models instead",
    )
    args = parser.parse_args(argv)
    if args.published:
        try:
            print(field_table([measured_row(out) for out in args.outs], json.loads(PUBLISHED.read_text())))
        except ValueError as exc:
            print(f"compare_evals.py: {exc}", file=sys.stderr)
            return 2
        return 0
    if len(args.outs) % 2:
        print(
            f"compare_evals.py: give the directories in pairs (baseline, challenger); got {len(args.outs)}",
            file=sys.stderr,
        )
        return 2
    names = labels(args.outs)
    rows, pooled_a, pooled_b, pooled_tasks = [], [], [], []
    for index in range(0, len(args.outs), 2):
        out_a, out_b = args.outs[index], args.outs[index + 1]
        try:
            a, b = pass_rates(out_a), pass_rates(out_b)
        except ValueError as exc:
            print(f"compare_evals.py: {exc}", file=sys.stderr)
            return 2
        common = sorted(a.keys() & b.keys())
        if not common:
            print(f"compare_evals.py: {out_a} and {out_b} share no evaluated task", file=sys.stderr)
            return 1
        rates_a, rates_b = [a[key] for key in common], [b[key] for key in common]
        pooled_a += rates_a
        pooled_b += rates_b
        pooled_tasks += [task_id for _, task_id in common]
        left_out = len(a.keys() ^ b.keys())
        note = f"{left_out} tasks evaluated on one side only are left out." if left_out else ""
        rows.append((f"{names[index]} -> {names[index + 1]}", compare(rates_a, rates_b), note))
    if len(rows) > 1:
        rows.append((f"pooled ({len(rows)} pairs)", compare(pooled_a, pooled_b, pooled_tasks), ""))
    print(table(rows))
    return 0


def pass_rates(out: Path) -> dict[tuple[str, str], float]:
    """Each evaluated task's share of correct samples, keyed by (name, id), from OUT/results.json (or the
    tasks.jsonl of an evaluation cut short)."""
    try:
        return {
            (task["name"], task["id"]): task["correct"] / len(task["samples"])
            for task in read_results(out)
            if task.get("samples") and not task.get("unverified")
        }
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{out}: a task record (results.json or tasks.jsonl) lacks {exc}") from None


def compare(a: list[float], b: list[float], tasks: list[str] | None = None) -> dict:
    """The paired comparison of per-task pass rates `a` and `b` (same order): means, difference, tasks better and
    worse, a bootstrap interval of the mean difference and the sign-flip p-value of b > a. `tasks` names each
    position's task where one task may hold several positions (pooled pairs): the interval and the p-value then
    resample and flip each task's positions together."""
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    clusters = _clusters(diffs, tasks or [str(index) for index in range(n)])
    rng = random.Random(SEED)
    means = sorted(_resampled_mean(clusters, rng) for _ in range(2000))
    return {
        "tasks": n,
        "a": sum(a) / n,
        "b": sum(b) / n,
        "difference": sum(diffs) / n,
        "better": sum(d > 0 for d in diffs),
        "worse": sum(d < 0 for d in diffs),
        "interval": (means[49], means[1949]),
        "p": sign_flip_p([total for total, _ in clusters], rng),
    }


def _clusters(diffs: list[float], tasks: list[str]) -> list[tuple[float, int]]:
    """(sum of differences, positions) of each task, in order of first appearance."""
    grouped: dict[str, list[float]] = {}
    for task, diff in zip(tasks, diffs, strict=True):
        grouped.setdefault(task, []).append(diff)
    return [(sum(values), len(values)) for values in grouped.values()]


def _resampled_mean(clusters: list[tuple[float, int]], rng: random.Random) -> float:
    """The mean difference over as many tasks as there are, drawn with replacement."""
    drawn = [rng.choice(clusters) for _ in clusters]
    return sum(total for total, _ in drawn) / sum(size for _, size in drawn)


def sign_flip_p(diffs: list[float], rng: random.Random) -> float:
    """The share of sign assignments of the nonzero differences (one per task) whose sum reaches the observed one:
    exact when few tasks differ, else estimated from `DRAWS` random assignments."""
    nonzero = [abs(d) for d in diffs if d]
    observed = sum(diffs) - 1e-12
    if len(nonzero) <= EXACT_UP_TO:
        assignments = itertools.product((1, -1), repeat=len(nonzero))
        sums = (sum(s * d for s, d in zip(signs, nonzero, strict=True)) for signs in assignments)
        hits = sum(total >= observed for total in sums)
        return hits / 2 ** len(nonzero)
    hits = sum(sum(d if rng.random() < 0.5 else -d for d in nonzero) >= observed for _ in range(DRAWS))
    return hits / DRAWS


def labels(outs: list[Path]) -> list[str]:
    """The directories' names, with as many parent folders as tell them apart (run-g/eval-sft, run-h/eval-sft)."""
    parts = [out.resolve().parts for out in outs]
    depth = 1
    while depth < min(len(p) for p in parts) and len({p[-depth:] for p in parts}) < len(set(parts)):
        depth += 1
    return ["/".join(p[-depth:]) for p in parts]


def table(rows: list[tuple[str, dict, str]]) -> str:
    """The markdown table of (label, comparison, note) rows, then the rows' notes."""
    lines = [
        "| evaluations | tasks | pass@1 A | pass@1 B | difference | 95% interval | better | worse | p (B > A) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, result, _ in rows:
        low, high = result["interval"]
        lines.append(
            f"| {label} | {result['tasks']} | {result['a']:.3f} | {result['b']:.3f} | {result['difference']:+.3f} | "
            f"{low:+.3f} to {high:+.3f} | {result['better']} | {result['worse']} | {result['p']:.3f} |"
        )
    notes = [f"{label}: {note}" for label, _, note in rows if note]
    return "\n".join([*lines, *([""] if notes else []), *notes])


def measured_row(out: Path) -> dict:
    """What `field_table` shows of one evaluation: its suite, backend and model, and its totals."""
    path = out / RESULTS_FILE
    try:
        totals = json.loads(path.read_text())["totals"]
        suite = totals.get("suite") or {}
        row = {
            "model": f"{totals['backend']} {totals['model']}".strip(),
            "benchmark": _benchmark(suite),
            "tasks": totals["tasks"],
            "samples": totals["samples"],
            "device": totals["device"],
            "date": totals["date"][:10],
        }
        cells = _tritonbench_cells(totals["tritonbench"]) if "tritonbench" in totals else _kernelbench_cells(totals)
        return row | cells
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist: an evaluation's results.json is needed") from None
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} lacks what the table needs ({exc}): evaluate again with this version") from None


def _kernelbench_cells(totals: dict) -> dict:
    fast = (totals["kernelbench"]["fast_p"] or {}).get("1")
    return {
        "correct": f"{totals['kernelbench']['correct']:.3f}",
        "fast_1": "n/a (not timed)" if fast is None else f"{fast:.3f}",
        "own": f"{totals['pass@k']['1']:.3f}",
    }


def _tritonbench_cells(bench: dict) -> dict:
    """TritonBench's execution accuracy (its call accuracy beside it), as the published figures give them."""
    return {
        "correct": f"{bench['exec_accuracy']:.3f} (call {bench['call_accuracy']:.3f})",
        "fast_1": "n/a (not timed)",
        "own": f"{bench['exec_audit_clean']:.3f} (exec, audit clean)",
    }


def _benchmark(suite: dict) -> str:
    commit = (suite.get("commit") or "")[:7]
    at = f" @{commit}" if commit else ""
    if suite.get("kind") == "kernelbench":
        return f"KernelBench L{suite['level']}{at}"
    if suite.get("kind") in ("tritonbench-t", "tritonbench-g"):
        return f"TritonBench-{suite['channel']}{at}"
    return f"{suite.get('kind', 'suite')} {suite.get('path', '')}".strip()


def field_table(measured: list[dict], published: dict) -> str:
    """Measured rows, then the published figures on the same benchmarks, each marked quoted with its source."""
    lines = [
        "| model | benchmark | tasks | correct | fast_1 | verifier pass@1 (strict) or audit | setting | figures |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in measured:
        per_task = row["samples"] / row["tasks"] if row["tasks"] else 0
        lines.append(
            f"| {row['model']} | {row['benchmark']} | {row['tasks']} | {row['correct']} | {row['fast_1']} | "
            f"{row['own']} | {per_task:g} samples per task, {row['device']} | measured {row['date']} |"
        )
    for figure in published["figures"]:
        cells = [_quoted(figure.get(name)) for name in ("correct", "fast_1")]
        lines.append(
            f"| {figure['model']} | {figure['benchmark']} | {figure.get('tasks', '')} | {cells[0]} | {cells[1]} | "
            f"| {figure['setting']} | quoted: {figure['source']} |"
        )
    notes = ["", *[f"- {note}" for note in published["notes"]]]
    return "\n".join(lines + notes)


def _quoted(value: object) -> str:
    return "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    sys.exit(main())
