"""The reward curve of a `training.grpo` run: per optimizer step, the mean reward, the share of verified replies
and the step's seconds, as a markdown table on stdout and a plot; for synthetic tasks, also the share of replies
verified correct per op, in the first and the second half of the run: which ops the policy is learning.

    python benchmarks/reward_curve.py RUN_DIR [--plot RUN_DIR/reward_curve.png]

Reads `RUN_DIR/log.jsonl` (the trainer's logs), `RUN_DIR/steps.jsonl` (each step's seconds) and
`RUN_DIR/rewards.jsonl` (each verified reply, with the first line of the task it answered).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from training import grpo, jsonl, runs, synth  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a training.grpo run directory")
    parser.add_argument("--plot", type=Path, help="where to write the plot (default: RUN/reward_curve.png)")
    args = parser.parse_args(argv)
    log = args.run / runs.LOG
    if not log.is_file():
        print(f"reward_curve.py: {log} does not exist: is {args.run} a training.grpo run directory?", file=sys.stderr)
        return 2
    rows = curve(jsonl.read(log), jsonl.read(args.run / grpo.STEPS_LOG))
    if not rows:
        print(f"reward_curve.py: {log} holds no step with a reward", file=sys.stderr)
        return 1
    print(table(rows))
    ops = by_op(jsonl.read(args.run / grpo.REWARDS_LOG))
    if ops:
        print("\n" + op_table(ops))
    path = args.plot or args.run / "reward_curve.png"
    if plot(rows, path):
        print(f"\nplot: {path}")
    return 0


def curve(logs: list[dict], steps: list[dict]) -> list[dict]:
    """One row per logged step that has rewards: step, mean reward, share correct, mean format term, seconds."""
    seconds = {record.get("step"): record.get("seconds") for record in steps}
    return [
        {
            "step": record["step"],
            "reward": record["reward"],
            "correct": record.get("verdicts/correct", 0.0),
            "format": record.get("rewards/well_formed/mean"),
            "seconds": seconds.get(record["step"]),
        }
        for record in logs
        if "reward" in record and "step" in record
    ]


def table(rows: list[dict]) -> str:
    lines = ["| step | mean reward | share correct | format term | step s |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        cells = [row["step"], f"{row['reward']:.3f}", f"{row['correct']:.3f}", _number(row["format"])]
        lines.append("| " + " | ".join(str(cell) for cell in [*cells, _number(row["seconds"], 1)]) + " |")
    return "\n".join(lines)


def by_op(replies: list[dict]) -> dict[str, list[int]]:
    """op -> [replies, correct] in the first half of the verified replies (the order they were verified in), then
    the same in the second half, over the replies to synthetic tasks."""
    counts: dict[str, list[int]] = {}
    for index, reply in enumerate(replies):
        chain = synth.ops_of(reply.get("task_first_line", ""))
        if chain is None:
            continue
        half = 0 if index < len(replies) // 2 else 2
        for op in set(chain):
            tally = counts.setdefault(op, [0, 0, 0, 0])
            tally[half] += 1
            tally[half + 1] += bool(reply.get("passed"))
    return counts


def op_table(counts: dict[str, list[int]]) -> str:
    lines = ["| op | replies, first half | share correct | replies, second half | share correct |"]
    lines.append("| --- | --- | --- | --- | --- |")
    for op in sorted(counts, key=lambda op: (-counts[op][0] - counts[op][2], op)):
        first, first_ok, second, second_ok = counts[op]
        shares = [_number(ok / n if n else None) for ok, n in ((first_ok, first), (second_ok, second))]
        lines.append(f"| {op} | {first} | {shares[0]} | {second} | {shares[1]} |")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> bool:
    """The reward and the share of verified replies against the step; False where matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        print("reward_curve.py: matplotlib is not installed: no plot", file=sys.stderr)
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    steps = [row["step"] for row in rows]
    axes.plot(steps, [row["reward"] for row in rows], "o-", label="mean reward")
    axes.plot(steps, [row["correct"] for row in rows], "s--", label="share of replies verified correct")
    axes.set_xlabel("optimizer step")
    axes.set_ylim(0, 1.15)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())
