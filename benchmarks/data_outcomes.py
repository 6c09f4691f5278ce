"""What became of the tasks of `training.data` runs: verified pairs and failures by source, size tier and op family,
the distinct computations verified, and the most common reasons a task gave no pair.

    python benchmarks/data_outcomes.py OUTPUT_DIR [OUTPUT_DIR ...] [--json FILE]

Reads each directory's `rl.*.jsonl` (the tasks), `progress.jsonl` (each converted task's outcome) and
`sft.*.jsonl` (the pairs); the shards of one run are read together.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from training import jsonl
from training.dedup import computation_id

REASONS = 12


def outcomes(directories: list[Path]) -> dict:
    """The counts of the table, from the runs' files."""
    tasks = {r["id"]: r for d in directories for path in sorted(d.glob("rl.*.jsonl")) for r in jsonl.read(path)}
    done = [o for d in directories for o in jsonl.read(d / "progress.jsonl")]
    pairs = {p["id"] for d in directories for path in d.glob("sft.*.jsonl") for p in jsonl.read(path)}
    table = {"source": collections.Counter(), "size": collections.Counter(), "family": collections.Counter()}
    reasons = collections.Counter()
    for outcome in done:
        task = tasks.get(outcome["id"])
        if task is None:
            continue
        kept = "verified" if outcome["kept"] else "not"
        source, size = _source_and_size(task["task_origin"])
        table["source"][source, kept] += 1
        table["size"][size, kept] += 1
        for family in task["op_families"]:
            table["family"][family, kept] += 1
        if not outcome["kept"]:
            reasons[_reason(outcome)] += 1
    verified = [tasks[i]["task"] for i in pairs if i in tasks]
    return {
        "tasks": len(tasks),
        "converted": len(done),
        "verified": len(verified),
        "distinct_computations_verified": len({computation_id(source) for source in verified}),
        "verdicts": dict(collections.Counter(o["verdict"] for o in done)),
        **{key: {f"{name} {kept}": n for (name, kept), n in sorted(counts.items())} for key, counts in table.items()},
        "reasons": dict(reasons.most_common(REASONS)),
    }


def _source_and_size(origin: str) -> tuple[str, str]:
    """(library, size tier) from a harvested task's origin or file name (`harvest:transformers.X:small`,
    `.../transformers_X_small.py`); ("other", "-") for any other task."""
    name = origin.rsplit("/", 1)[-1].removesuffix(".py")
    if origin.startswith("harvest:"):
        _, block, size = origin.split(":")
        return block.rsplit(".", 1)[0], size
    for library in ("torch_nn", "transformers", "timm", "torchvision"):
        if name.startswith(library + "_"):
            return library.replace("_", "."), name.rsplit("_", 1)[-1]
    return "other", "-"


def _reason(outcome: dict) -> str:
    """An outcome's message without what differs between tasks (buffer names, shapes, lines)."""
    message = outcome.get("message", "")
    if outcome["verdict"] == "not_converted":
        message = message.split(": ", 2)[-1]
    message = re.sub(r"buf\d+", "bufN", message)
    message = re.sub(r"\(.*", "", re.sub(r"lines? [\d, ]+", "line N", message))
    return f"{outcome['verdict']}: {message[:100]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directories", nargs="+", type=Path, help="output directories of training.data")
    parser.add_argument("--json", type=Path, help="also write the counts here")
    args = parser.parse_args(argv)
    missing = [str(d) for d in args.directories if not (d / "progress.jsonl").is_file()]
    if missing:
        parser.error(f"no progress.jsonl in {', '.join(missing)}: not an output directory of training.data")
    counts = outcomes(args.directories)
    print(f"{counts['tasks']} tasks, {counts['converted']} converted, {counts['verified']} verified pairs, ", end="")
    print(f"{counts['distinct_computations_verified']} distinct computations verified")
    print("verdicts: " + ", ".join(f"{k} {v}" for k, v in counts["verdicts"].items()))
    for key in ("source", "size", "family"):
        names = sorted({label.rsplit(" ", 1)[0] for label in counts[key]})
        print(f"\n{key:<14} verified      not")
        for name in names:
            print(f"{name:<14} {counts[key].get(name + ' verified', 0):>8} {counts[key].get(name + ' not', 0):>8}")
    print("\nwhy no pair:")
    for reason, n in counts["reasons"].items():
        print(f"{n:>5}  {reason}")
    if args.json:
        args.json.write_text(json.dumps(counts, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
