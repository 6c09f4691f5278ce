"""Where do a model's kernels fail? Two tables over `training.eval` outputs of synthetic tasks.

    python benchmarks/failure_modes.py OUT [OUT ...]

Element counts: how many kernels state a constant element count (`xnumel = 512`, as Inductor's kernels specialised
to their inputs do), how many of those equal the task's element count (the product of its first input's shape), and
how often each kind passed. It tells a small model's arithmetic (a wrong count makes a kernel read and write past
its buffers or leave part of the output unwritten) from its computation. The task's shape comes from `get_inputs`'
first `torch.randn(...)`/`torch.rand(...)` call, whose sizes are integers or names of module-level integer
constants (the synthetic tasks'); other tasks count as `unknown`.

Ops: the share of samples that passed, per op of the chain the generator wrote in each task's docstring
("Synthetic task (seed 20260): multiply_input -> relu."; a task of two ops counts for both): whether the failures
are spread over every op or concentrated on a few the model never learnt, and which ops GRPO changed. Tasks without
a synthetic docstring are counted on stderr and left out.

Tasks and kernels are read, never run.
"""

from __future__ import annotations

import argparse
import ast
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from training import synth  # noqa: E402
from training.eval import recorded_samples  # noqa: E402
from training.rationale import constant_counts  # noqa: E402

MAX_BYTES = 1_000_000  # a task or kernel file larger than this is not parsed (counted as `unknown` or `none`)
KINDS = ("matches", "differs", "none", "unknown")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", type=Path, nargs="+", help="training.eval output directories")
    args = parser.parse_args(argv)
    counts, ops = [], []
    try:
        for out in args.outputs:
            samples = recorded_samples(out)
            counts.append((out, [(classify(s["task"], s["candidate"]), s["passed"]) for s in samples]))
            ops.append(per_op(out, samples))
    except ValueError as exc:
        print(f"failure_modes.py: {exc}", file=sys.stderr)
        return 2
    print(count_table(counts) + "\n\n" + op_table(args.outputs, ops))
    return 0


def classify(task: Path, candidate: Path) -> str:
    """`matches`, `differs`, `none` or `unknown`: whether one of the candidate's constant counts is the
    task's element count; `none` where it states no count, `unknown` where the task's count cannot be read."""
    elements = element_count(task)
    if elements is None:
        return "unknown"
    counts = stated_counts(candidate)
    if not counts:
        return "none"
    return "matches" if elements in counts else "differs"


def element_count(task: Path) -> int | None:
    """The number of elements of the task's first input, read from its source; None where it cannot be read."""
    tree = _parse(task)
    if tree is None:
        return None
    constants = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and type(node.value.value) is int
    }
    get_inputs = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    returned = next((n.value for n in ast.walk(get_inputs) if isinstance(n, ast.Return)), None) if get_inputs else None
    if not isinstance(returned, ast.List | ast.Tuple) or not returned.elts:
        return None
    first = returned.elts[0]
    if not (
        isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and first.func.attr in ("randn", "rand")
    ):
        return None
    count = 1
    for size in first.args:
        value = constants.get(size.id) if isinstance(size, ast.Name) else None
        value = size.value if isinstance(size, ast.Constant) else value
        if type(value) is not int:
            return None
        count *= value
    return count


def stated_counts(candidate: Path) -> set[int]:
    """The element counts the candidate's functions are specialised to (`training.rationale.constant_counts`)."""
    tree = _parse(candidate)
    if tree is None:
        return set()
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    return {value for function in functions for _, value in constant_counts(function)}


def _parse(path: Path) -> ast.Module | None:
    if path.stat().st_size > MAX_BYTES:
        return None
    try:
        return ast.parse(path.read_text(errors="replace"))
    except (SyntaxError, ValueError, RecursionError):
        return None


def count_table(rows: list[tuple[Path, list[tuple[str, bool]]]]) -> str:
    """One line per evaluation: samples of each kind, and how many of them passed."""
    lines = [
        "| evaluation | samples | count matches (passed) | count differs (passed) | no count (passed) | task unknown |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for out, samples in rows:
        total = collections.Counter(kind for kind, _ in samples)
        passed = collections.Counter(kind for kind, ok in samples if ok)
        cells = [f"{total[kind]} ({passed[kind]})" for kind in KINDS[:3]]
        lines.append(f"| {out} | {len(samples)} | {' | '.join(cells)} | {total['unknown']} |")
    return "\n".join(lines)


def per_op(out: Path, samples: list[dict]) -> dict[str, tuple[int, int]]:
    """op -> (samples passed, samples) over the evaluation's synthetic tasks."""
    passed: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    unknown = 0
    for sample in samples:
        chain = synth.ops_of(sample["task"].read_text(errors="replace")[:2000])
        if chain is None:
            unknown += 1
            continue
        for op in set(chain):
            total[op] += 1
            passed[op] += bool(sample["passed"])
    if unknown:
        print(f"{out}: {unknown} samples left out, their task is not a synthetic one", file=sys.stderr)
    return {op: (passed[op], total[op]) for op in total}


def op_table(outputs: list[Path], columns: list[dict[str, tuple[int, int]]]) -> str:
    """Ops by how many samples they have across the evaluations, then by name."""
    counts: collections.Counter[str] = collections.Counter()
    for column in columns:
        counts.update({op: n for op, (_, n) in column.items()})
    lines = ["| op | " + " | ".join(str(out) for out in outputs) + " |", "| --- |" + " --- |" * len(outputs)]
    for op in sorted(counts, key=lambda op: (-counts[op], op)):
        cells = [f"{column[op][0]}/{column[op][1]}" if op in column else "-" for column in columns]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
