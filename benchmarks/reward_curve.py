"""The reward curve of a `training.grpo` run: per optimizer step, the mean reward, the share of verified replies
and the step's seconds, as a markdown table on stdout and a plot.

    python benchmarks/reward_curve.py RUN_DIR [--plot RUN_DIR/reward_curve.png]

Reads `RUN_DIR/log.jsonl` (the trainer's logs) and `RUN_DIR/steps.jsonl` (each step's seconds).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from training import grpo, jsonl, models  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a training.grpo run directory")
    parser.add_argument("--plot", type=Path, help="where to write the plot (default: RUN/reward_curve.png)")
    args = parser.parse_args(argv)
    log = args.run / models.LOG
    if not log.is_file():
        print(f"reward_curve.py: {log} does not exist: is {args.run} a training.grpo run directory?", file=sys.stderr)
        return 2
    rows = curve(jsonl.read(log), jsonl.read(args.run / grpo.STEPS_LOG))
    if not rows:
        print(f"reward_curve.py: {log} holds no step with a reward", file=sys.stderr)
        return 1
    print(table(rows))
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
