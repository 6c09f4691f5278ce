"""Draw a recorded random sample of KernelBench problems the project has not seen, and copy them out for a run.

    python benchmarks/kernelbench_sample.py KERNELBENCH_CLONE --seed 20261127 --level1 20 --level2 20 \
        --out .kb/sample --list benchmarks/results/DATE/sample.json

KERNELBENCH_CLONE is a clone of ScalingIntelligence/KernelBench as released (its `KernelBench/level1`, `level2`
folders). Problems named in `benchmarks/kernelbench_seen.txt` (those the project's benchmarks contain or its
development measured) are never drawn. The files are copied to `--out` as `l1_<file>` and `l2_<file>`, ready for
`benchmarks/convert_inductor.py`; `--list` records the seed, the clone's commit and every problem drawn, so the
sample can be drawn again and checked.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
from pathlib import Path

SEEN = Path(__file__).resolve().parent / "kernelbench_seen.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clone", type=Path, help="a clone of ScalingIntelligence/KernelBench")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--level1", type=int, default=20, help="problems to draw from level 1 (default 20)")
    parser.add_argument("--level2", type=int, default=20, help="problems to draw from level 2 (default 20)")
    parser.add_argument("--out", type=Path, required=True, help="folder the drawn files are copied to")
    parser.add_argument("--list", type=Path, required=True, help="JSON file that records the sample")
    args = parser.parse_args()
    seen = read_seen(SEEN)
    drawn = []
    for level, count in ((1, args.level1), (2, args.level2)):
        pool = [p for p in problems(args.clone, level) if (level, problem_id(p)) not in seen]
        if count > len(pool):
            parser.error(f"level {level} has {len(pool)} unseen problems, fewer than the {count} asked for")
        drawn += [(level, p) for p in sorted(random.Random(f"{args.seed}:{level}").sample(pool, count), key=problem_id)]
    args.out.mkdir(parents=True, exist_ok=True)
    for level, path in drawn:
        shutil.copyfile(path, args.out / f"l{level}_{path.name}")
    record = {
        "seed": args.seed,
        "kernelbench_commit": commit(args.clone),
        "excluded": sorted(f"level{level}/{number}" for level, number in seen),
        "problems": [f"level{level}/{path.name}" for level, path in drawn],
    }
    args.list.parent.mkdir(parents=True, exist_ok=True)
    args.list.write_text(json.dumps(record, indent=1) + "\n")
    for level, path in drawn:
        print(f"level{level}/{path.name}")


def read_seen(path: Path) -> set[tuple[int, int]]:
    """(level, problem number) of every line `levelN/M  why` in the seen list."""
    seen = set()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"level([123])/(\d+)\s+.+", line)
        if match is None:
            raise SystemExit(f"{path}:{number}: expected 'levelN/M  why', got {line!r}")
        seen.add((int(match[1]), int(match[2])))
    return seen


def problems(clone: Path, level: int) -> list[Path]:
    folder = clone / "KernelBench" / f"level{level}"
    if not folder.is_dir():
        raise SystemExit(f"{folder} is not a folder: is {clone} a clone of ScalingIntelligence/KernelBench?")
    return sorted(folder.glob("[0-9]*_*.py"), key=problem_id)


def problem_id(path: Path) -> int:
    return int(path.name.split("_", 1)[0])


def commit(clone: Path) -> str | None:
    done = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


if __name__ == "__main__":
    main()
