"""How many GRPO replies per minute the verifier rewards, as `training.grpo` asks for them, on this machine's device.

    python benchmarks/reward_throughput.py --data DATA [--group 8] [--batch 16] [--workers 2 4] [--families ...]

Replies are the verified completions of `DATA/sft.autotriton.jsonl` (from `python -m training.data`), each task's
given `--group` times (a comment makes each copy a distinct reply, as a GRPO group's replies are), sent to the
reward functions `--batch` at a time, the way trl's trainer calls them. Every task is new to the pool, so each
group pays for its task's baseline timings, as in training. One row per `--workers` value: replies, correct,
seconds, replies per minute and the median seconds per batch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from training import jsonl  # noqa: E402
from training.rewards import VerifierRewards  # noqa: E402
from verifier import VerifierPool  # noqa: E402

PHASES = ("total_s", "candidate_s", "timing_s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a training.data output directory with SFT pairs")
    parser.add_argument("--group", type=int, default=8, help="replies per task (GRPO's num_generations)")
    parser.add_argument("--batch", type=int, default=16, help="replies per reward call (per_device_batch_size)")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4], help="verifications at once")
    parser.add_argument("--tasks", type=int, default=8, help="tasks per row (each row takes new ones)")
    parser.add_argument("--families", nargs="*", default=["elementwise", "activation"])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--timing", action=argparse.BooleanOptionalAction, default=True, help="the speedup term")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    pairs = [
        pair
        for pair in jsonl.read(Path(args.data) / "sft.autotriton.jsonl")
        if set(pair["op_families"]) <= set(args.families)
    ]
    needed = args.tasks * len(args.workers)
    if len(pairs) < needed:
        sys.exit(f"{len(pairs)} pairs of families {args.families} in {args.data}; {needed} needed")
    header = f"{'workers':>7} {'replies':>7} {'correct':>7} {'seconds':>8} {'replies/min':>11} {'s/batch':>8}"
    print(header + " " + " ".join(f"{name:>11}" for name in PHASES) + "  device")
    rows = []
    for number, workers in enumerate(args.workers):
        chosen = pairs[number * args.tasks : (number + 1) * args.tasks]
        rows.append(run_row(chosen, workers, args))
        row = rows[-1]
        print(
            f"{workers:>7} {row['replies']:>7} {row['correct']:>7} {row['seconds']:>8.1f} {row['per_minute']:>11.1f} "
            f"{row['median_batch_s']:>8.1f} "
            + " ".join(f"{row['median_phases_s'][name]:>11.2f}" for name in PHASES)
            + f"  {row['device']}",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


def run_row(pairs: list[dict], workers: int, args: argparse.Namespace) -> dict:
    """Reward every task's group of replies, `args.batch` replies a call, on a fresh pool of `workers` slots."""
    replies, tasks = [], []
    for pair in pairs:
        text = pair["completion"][0]["content"]
        for copy in range(args.group):
            replies.append([{"role": "assistant", "content": text.replace("```python\n", f"```python\n# {copy}\n", 1)}])
            tasks.append(pair["task"])
    with VerifierPool(size=workers, device=args.device) as pool:
        pool.warm()
        log = Path(tempfile.mkdtemp(prefix="tritonize-rewards-bench-")) / "rewards.jsonl"
        rewards = VerifierRewards(pool, "autotriton", workers, args.trials, timing=args.timing, log=log)
        batches, scores = [], []
        started = time.perf_counter()
        for start in range(0, len(replies), args.batch):
            batch_started = time.perf_counter()
            chunk = slice(start, start + args.batch)
            scores += asyncio.run(rewards.correct(None, replies[chunk], tasks[chunk]))
            batches.append(time.perf_counter() - batch_started)
        seconds = time.perf_counter() - started
        device = pool.device
    phases = [line["phases"] for line in jsonl.read(log)]
    shutil.rmtree(log.parent, ignore_errors=True)
    return {
        "workers": workers,
        "replies": len(replies),
        "correct": int(sum(scores)),
        "seconds": seconds,
        "per_minute": len(replies) / seconds * 60,
        "median_batch_s": statistics.median(batches),
        "device": device,
        "median_phases_s": {name: statistics.median(p.get(name, 0.0) for p in phases) for name in PHASES},
    }


if __name__ == "__main__":
    main()
