"""Where a GRPO step's time goes: generation, reward (verification) and update, on this machine's device.

    python benchmarks/grpo_step.py --data DATA [--model M | --size small] [--steps 4] [--num-generations 8] [...]

Runs the real `python -m training.grpo` for `--steps` steps on the RL prompts of `DATA` (from `python -m
training.data`) with `--model`, or a model built from scratch on DATA's text (`training.scratch --size`), and
prints each step's split from the run's `steps.jsonl`, then the medians (the first step pays for warm-up).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from training import grpo, scratch  # noqa: E402

COLUMNS = ("seconds", "generation_s", "reward_s", "update_s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a training.data output directory")
    parser.add_argument("--model", help="the model to train (default: one built from scratch)")
    parser.add_argument("--size", default="small", help="the scratch model's size")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--batch", type=int, default=16, help="replies per device per step")
    parser.add_argument("--max-completion-length", type=int, default=512)
    parser.add_argument("--verify-workers", type=int, default=4)
    parser.add_argument("--device", default="auto", help="where replies are verified")
    parser.add_argument("--json", help="also write the steps here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tritonize-grpo-bench-") as scratch_dir:
        model = args.model
        if model is None:
            model = str(Path(scratch_dir) / "model")
            scratch.build(Path(model), list(scratch.data_text(Path(args.data))), args.size)
        run = Path(scratch_dir) / "run"
        flags = ["--data", args.data, "--model", model, "--output-dir", str(run), "--max-steps", str(args.steps)]
        flags += ["--num-generations", str(args.num_generations), "--per-device-batch-size", str(args.batch)]
        flags += ["--max-completion-length", str(args.max_completion_length), "--verify-device", args.device]
        flags += ["--verify-workers", str(args.verify_workers), "--save-steps", str(10 * args.steps)]
        if grpo.main(flags) != 0:
            sys.exit("training.grpo failed")
        steps = [json.loads(line) for line in (run / grpo.STEPS_LOG).read_text().splitlines()]
    print(f"{'step':>5} " + " ".join(f"{c:>12}" for c in COLUMNS) + f" {'replies':>8}")
    for step in steps:
        print(f"{step['step']:>5} " + " ".join(f"{step[c]:>12.2f}" for c in COLUMNS) + f" {args.batch:>8}")
    later = steps[1:] or steps
    print(f"{'median':>5} " + " ".join(f"{statistics.median(s[c] for s in later):>12.2f}" for c in COLUMNS))
    if args.json:
        Path(args.json).write_text(json.dumps(steps, indent=1) + "\n")


if __name__ == "__main__":
    main()
