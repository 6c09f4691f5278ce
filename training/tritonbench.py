"""TritonBench (thunlp/TritonBench) as its repository releases it: the tasks of channel T or G, each with the
benchmark's own instruction, its reference code and its test code.

The released layout, under the clone's `data/` folder, for channel C (T or G):

- `TritonBench_C_v1/NAME.py`: the reference code, a line of 146 `#`, then the test code (a `test_*` function that
  builds inputs on 'cuda' and returns a dict of results, and `test_results = test_*()`);
- `TritonBench_C_simp_alpac_v1.json` and `TritonBench_C_comp_alpac_v1.json`: the instructions (Alpaca records:
  `instruction`, `input`, `output`), simple and complex;
- the statistics that tie an instruction to its file: `TritonBench_T_v1.jsonl` (one JSON array; `file` and
  `description`, which the instruction quotes after "Functional Description:") and `TritonBench_G_v1.json` (`file`
  and `simp_instru` / `comp_instru`, the text the instruction ends with).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

KINDS = {"tritonbench-t": "T", "tritonbench-g": "G"}
INSTRUCTIONS = {"simple": "simp", "complex": "comp"}
SEPARATOR = "#" * 146
STATISTICS = {"T": ("TritonBench_T_v1.jsonl", "TritonBench_T_v1.json"), "G": ("TritonBench_G_v1.json",)}


class FormatError(ValueError):
    """The clone is not laid out as TritonBench releases it; the message names what is missing and where."""


@dataclass(frozen=True)
class BenchTask:
    """One TritonBench task: its name (the file's stem), its file, its id (a digest of what is scored and asked),
    the reference code, the test code, the instruction the model is given, and its channel (T or G)."""

    name: str
    path: Path
    id: str
    reference: str
    test: str
    instruction: str
    channel: str


def locate(kind: str, path: Path) -> tuple[Path, dict]:
    """The data folder of a TritonBench clone named by `kind:path` (the clone, or its `data` folder), and what
    `results.json` records of it besides the commit; FormatError names what is missing."""
    channel = KINDS[kind]
    data = path / "data" if (path / "data").is_dir() else path
    needed = [f"TritonBench_{channel}_v1/", *(_instructions_file(channel, short) for short in INSTRUCTIONS.values())]
    missing = [name for name in needed if not (data / name).exists()]
    if not any((data / name).is_file() for name in STATISTICS[channel]):
        missing.append(" or ".join(STATISTICS[channel]))
    if missing:
        raise FormatError(
            f"--suite {kind}:{path}: not a TritonBench clone, {data} lacks {', '.join(missing)}; "
            "give a clone of thunlp/TritonBench (or its data folder)"
        )
    return data, {"kind": kind, "channel": channel, "path": str(data)}


def discover(kind: str, data: Path, instruction: str) -> list[BenchTask]:
    """The channel's tasks in name order, each with its instruction of kind `instruction` (simple or complex)."""
    channel = KINDS[kind]
    short = INSTRUCTIONS[instruction]
    texts = _instruction_texts(data / _instructions_file(channel, short))
    tasks = []
    for entry in _statistics(data, channel):
        file = entry.get("file")
        quoted = _quoted_text(channel, short, entry)
        if not isinstance(file, str) or quoted is None:
            raise FormatError(f"{data}: a statistics record lacks `file` or the text its instruction quotes: {entry!r}")
        reference, test = _split(data / f"TritonBench_{channel}_v1" / file)
        matched = [text for text in texts if quoted in _flat(text)]
        if len(matched) != 1:
            raise FormatError(
                f"{data / _instructions_file(channel, short)}: {len(matched)} instructions quote the description of "
                f"{file} (one expected)"
            )
        digest = hashlib.sha256("\0".join((reference, test, matched[0])).encode()).hexdigest()[:16]
        path = data / f"TritonBench_{channel}_v1" / file
        tasks.append(BenchTask(Path(file).stem, path, digest, reference, test, matched[0], channel))
    if not tasks:
        raise FormatError(f"--suite {kind}:{data}: its statistics list no tasks")
    return sorted(tasks, key=lambda task: task.name)


def script(code: str, test: str) -> str:
    """The program the benchmark runs: code, the separator line, then the task's test code."""
    return f"{code.rstrip()}\n{SEPARATOR}\n{test}"


def _instructions_file(channel: str, short: str) -> str:
    return f"TritonBench_{channel}_{short}_alpac_v1.json"


def _statistics(data: Path, channel: str) -> list[dict]:
    path = next(data / name for name in STATISTICS[channel] if (data / name).is_file())
    records = _json(path)
    if not isinstance(records, list) or not all(isinstance(record, dict) for record in records):
        raise FormatError(f"{path}: expected one JSON array of objects")
    return records


def _instruction_texts(path: Path) -> list[str]:
    records = _json(path)
    if not isinstance(records, list) or not all(isinstance(r, dict) and "instruction" in r for r in records):
        raise FormatError(f"{path}: expected a JSON array of Alpaca records (instruction, input, output)")
    return [str(record["instruction"]) for record in records]


def _quoted_text(channel: str, short: str, entry: dict) -> str | None:
    """The part of its instruction a statistics record holds: T's functional description, G's instruction text."""
    text = entry.get("description") if channel == "T" else entry.get(f"{short}_instru")
    if not isinstance(text, str) or not text.strip():
        return None
    flat = _flat(text)
    return f"Functional Description: {flat} Wrapper Entry Information:" if channel == "T" else flat


def _split(path: Path) -> tuple[str, str]:
    """(reference code, test code) of a task file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FormatError(f"{path}: cannot read the task file its statistics name ({exc.strerror})") from None
    parts = text.split(SEPARATOR)
    if len(parts) < 2 or "def test_" not in parts[-1]:
        raise FormatError(f"{path}: no line of 146 '#' followed by test code (def test_...)")
    return SEPARATOR.join(parts[:-1]), parts[-1]


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FormatError(f"{path}: cannot read it as JSON ({exc})") from None


def _flat(text: str) -> str:
    return " ".join(text.split())
