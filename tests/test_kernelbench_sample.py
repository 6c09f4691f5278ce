"""benchmarks/kernelbench_sample.py: a seeded draw that never takes a problem the project has seen."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "kernelbench_sample.py"


def _clone(root: Path) -> Path:
    """A folder laid out as a KernelBench clone: problems 1-100 of levels 1 and 2."""
    for level in (1, 2):
        folder = root / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True)
        for number in range(1, 101):
            (folder / f"{number}_Problem_{number}.py").write_text(f"# level {level} problem {number}\n")
    return root


def _draw(clone: Path, out: Path, seed: int, *counts: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(clone), "--seed", str(seed), "--out", str(out), "--list", str(out / "s.json"),
         *counts],
        capture_output=True,
        text=True,
    )  # fmt: skip


def test_the_draw_is_repeatable_recorded_and_skips_every_seen_problem(tmp_path):
    clone = _clone(tmp_path / "kb")
    first = _draw(clone, tmp_path / "a", 7)
    again = _draw(clone, tmp_path / "b", 7)
    other = _draw(clone, tmp_path / "c", 8)
    assert first.returncode == 0, first.stderr
    assert first.stdout == again.stdout != other.stdout
    record = json.loads((tmp_path / "a" / "s.json").read_text())
    drawn = record["problems"]
    assert record["seed"] == 7 and len(drawn) == 40 and len(set(drawn)) == 40
    assert sum(p.startswith("level1/") for p in drawn) == 20
    seen = {tuple(line.split()[0].split("/")) for line in (ROOT / "benchmarks" / "kernelbench_seen.txt").read_text()
            .splitlines() if line.startswith("level")}  # fmt: skip
    assert seen and not {(p.split("/")[0], p.split("/")[1].split("_")[0]) for p in drawn} & seen
    assert sorted(f.name for f in (tmp_path / "a").glob("l[12]_*.py")) == sorted(
        f"l{p[5]}_{p.split('/')[1]}" for p in drawn
    )


def test_asking_for_more_than_there_are_unseen_is_an_error(tmp_path):
    done = _draw(_clone(tmp_path / "kb"), tmp_path / "a", 7, "--level1", "99")
    assert done.returncode != 0 and "level 1 has" in done.stderr and "fewer than the 99 asked for" in done.stderr
