"""Where a timed `training.eval` run's time went, from the verifier's phase seconds that each sample records.

    python benchmarks/eval_phases.py OUT [OUT ...]

A timing run has the GPU to itself (the verifier's exclusive GPU lock), so the timing runs of an evaluation go one
at a time, and a correct sample waits for the GPU while others are timed or while the runs already on the GPU
finish. Per evaluation, a markdown table row:

- tasks, and the correct samples (the ones that are timed);
- span: from the first task finished to the last, in seconds. With `--batch` covering the suite, every task starts
  at once and is generated in one batch, so this is the verification after generation;
- timing: the correct samples' `timing_s` added up (the seconds the GPU was held for timing) and their share of the
  span; the rest of the span, with correct samples waiting, is time the timing runs could not start;
- the median `timing_s` of a correct sample;
- the median wait of a correct sample and of the others: `total_s` less the phases that did work (the longer of
  the candidate's and the reference's runs, whose concurrent seconds both record, and every other phase but the
  candidate's own stages: starting the sandboxes, the sanitizer, timing). A timed run counts both in the runs and in
  timing, so the wait is a lower bound.

An evaluation made before the phases were recorded shows `-` where they are needed. Files are read, never run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from training.eval import read_results  # noqa: E402

# Phases not added up as work: the whole, and the reference's run, which goes beside the candidate's (the longer
# of the two counts), as the candidate's own stages (`candidate_*`) go inside it.
NOT_ADDED = {"total_s", "reference_s"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outs", nargs="+", type=Path, metavar="OUT", help="training.eval output directories")
    args = parser.parse_args(argv)
    lines = [
        "| evaluation | tasks | correct | span s | timing s | timing share | timing s a correct sample (median) "
        "| wait s, correct (median) | wait s, others (median) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for out in args.outs:
        try:
            row = summarize(read_results(out))
        except ValueError as exc:
            print(f"eval_phases.py: {exc}", file=sys.stderr)
            return 2
        except (KeyError, TypeError) as exc:
            print(f"eval_phases.py: {out}: a task or sample record lacks {exc}", file=sys.stderr)
            return 2
        lines.append(f"| {out} | " + " | ".join(row) + " |")
    print("\n".join(lines))
    return 0


def summarize(tasks: list[dict]) -> list[str]:
    """The table cells (after the label) of one evaluation's task records."""
    samples = [sample for task in tasks for sample in task.get("samples", [])]
    correct = [sample for sample in samples if sample["correct"]]
    finished = [task["seconds"] for task in tasks if "seconds" in task]
    span = max(finished) - min(finished) if finished else 0.0
    timings = [sample["phases"]["timing_s"] for sample in correct if "timing_s" in (sample.get("phases") or {})]
    timing = sum(timings)
    return [
        str(len(tasks)),
        str(len(correct)),
        f"{span:.0f}",
        f"{timing:.0f}" if timings else "-",
        f"{timing / span:.0%}" if timings and span else "-",
        _median(timings),
        _median([wait(s) for s in correct if s.get("phases")]),
        _median([wait(s) for s in samples if not s["correct"] and s.get("phases")]),
    ]


def wait(sample: dict) -> float:
    """A sample's seconds in no phase that did work (a lower bound: see the module's docstring)."""
    phases = sample["phases"]
    runs = max(phases.get("candidate_s", 0.0), phases.get("reference_s", 0.0))
    others = [
        seconds for name, seconds in phases.items() if name not in NOT_ADDED and not name.startswith("candidate_")
    ]
    return max(phases["total_s"] - runs - sum(others), 0.0)


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}" if values else "-"


if __name__ == "__main__":
    sys.exit(main())
