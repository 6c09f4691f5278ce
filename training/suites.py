"""The suites `training.eval` reads, and where their tasks came from.

A suite is named by `--suite`:

- a folder of KernelBench-format task modules (`*.py` defining `Model`, `get_inputs`, `get_init_inputs`);
- an `rl.PROFILE.jsonl` file of `training.data` (the records of one split, written out as modules);
- `kernelbench:PATH`, a level of ScalingIntelligence/KernelBench as its repository releases it: PATH is the level's
  folder (`CLONE/KernelBench/level1`) or the clone with the level after it (`CLONE/level1`). Its problems are named
  `l1_19_ReLU` and taken in the order of their numbers, and the results record the clone's commit;
- `tritonbench-t:PATH` or `tritonbench-g:PATH`, a channel of thunlp/TritonBench as released: PATH is the clone or its
  `data` folder. Its tasks are not KernelBench modules: `training/tritonbench.py` reads them, and the results record
  the clone's commit too.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from training import jsonl, tritonbench
from verifier import Task

TASKS_DIR = "tasks"  # a JSONL suite's tasks, written out as modules under the output directory
KERNELBENCH = "kernelbench"
TRITONBENCH = ("tritonbench-t", "tritonbench-g")
KINDS = (KERNELBENCH, *TRITONBENCH)
LEVEL = re.compile(r"level(\d+)$")
PROBLEM = re.compile(r"(\d+)_")
GIT_SECONDS = 10


class SuiteError(ValueError):
    """The suite cannot be read; the message names what is wrong and where."""


@dataclass(frozen=True)
class SuiteTask:
    """One task of the suite: its name, the file it was read from, its id (from its digest), and the task as
    the verifier and the backends take it."""

    name: str
    path: Path
    id: str
    task: Task


@dataclass(frozen=True)
class Suite:
    """A parsed `--suite`: its kind (`folder`, `records` or a benchmark of KINDS), where it is, and for a benchmark
    what `results.json` records of it (level, the clone's commit)."""

    kind: str
    path: Path
    source: dict


def parse(spec: str) -> Suite:
    """The suite `spec` names, checked to exist; SuiteError says what is wrong."""
    kind, _, rest = spec.partition(":")
    if rest and kind == KERNELBENCH:
        return _kernelbench(Path(rest).expanduser())
    if rest and kind in TRITONBENCH:
        try:
            data, source = tritonbench.locate(kind, Path(rest).expanduser())
        except tritonbench.FormatError as exc:
            raise SuiteError(str(exc)) from None
        return Suite(kind, data, source | {"commit": _commit(data)})
    if rest and re.fullmatch(r"[a-z][a-z0-9-]+", kind) and not Path(spec).exists():
        raise SuiteError(f"--suite {spec}: unknown benchmark `{kind}` (known: {', '.join(KINDS)})")
    path = Path(spec).expanduser()
    if path.is_dir():
        return Suite("folder", path, {"kind": "folder", "path": str(path)})
    if path.is_file() and path.suffix == ".jsonl":
        return Suite("records", path, {"kind": "records", "path": str(path)})
    raise SuiteError(f"--suite: not a directory, a .jsonl file, kernelbench:PATH or tritonbench-t/g:PATH: {spec}")


def discover(suite: Suite, split: str, out: Path, log=print) -> list[SuiteTask]:
    """The suite's tasks: its task modules (a benchmark's in problem order, the others in name order), or the
    JSONL records of `split` written out as modules under `out/tasks` (the verifier and the backends read tasks
    from files). A file that is not a task is skipped and said on `log`."""
    from verifier import TaskError, UsageError

    if suite.kind == "records":
        named = [(path.stem, path) for path in _tasks_from_records(suite.path, split, out / TASKS_DIR)]
        where = f"--suite {suite.path} has no records of split `{split}`"
    elif suite.kind == KERNELBENCH:
        prefix = f"l{suite.source['level']}_"
        named = [(prefix + path.stem, path) for path in sorted(suite.path.glob("*.py"), key=_problem_order)]
        where = f"--suite {KERNELBENCH}:{suite.path} holds no KernelBench problems (N_Name.py)"
    else:
        named = [(path.stem, path) for path in sorted(suite.path.glob("*.py"))]
        where = (
            f"--suite {suite.path} holds no KernelBench task modules (*.py defining Model, get_inputs, get_init_inputs)"
        )
    tasks, skipped = [], []
    for name, path in named:
        try:
            task = Task.from_file(path)
        except (TaskError, UsageError):
            skipped.append(path.name)
            continue
        tasks.append(SuiteTask(name, path, task.digest[:16], task))
    if not tasks:
        raise SuiteError(where)
    if skipped:
        log(f"skipped {len(skipped)} file(s) that are not tasks: {', '.join(skipped)}")
    return tasks


def tritonbench_tasks(suite: Suite, instruction: str) -> list[tritonbench.BenchTask]:
    """A TritonBench suite's tasks, each with its instruction of kind `instruction` (simple or complex)."""
    try:
        return tritonbench.discover(suite.kind, suite.path, instruction)
    except tritonbench.FormatError as exc:
        raise SuiteError(str(exc)) from None


def _kernelbench(path: Path) -> Suite:
    """A KernelBench level: the level's folder, or the clone with the level after it."""
    level = LEVEL.match(path.name)
    if level is None:
        raise SuiteError(f"--suite {KERNELBENCH}:{path}: name a level, e.g. {KERNELBENCH}:{path}/level1")
    for folder in (path, path.parent / "KernelBench" / path.name):
        if folder.is_dir():
            break
    else:
        raise SuiteError(
            f"--suite {KERNELBENCH}:{path}: no such level folder (looked at {path} and "
            f"{path.parent / 'KernelBench' / path.name}); give a clone of ScalingIntelligence/KernelBench"
        )
    source = {"kind": KERNELBENCH, "level": int(level.group(1)), "path": str(folder), "commit": _commit(folder)}
    return Suite(KERNELBENCH, folder, source)


def _problem_order(path: Path) -> tuple[int, str]:
    number = PROBLEM.match(path.name)
    return (int(number.group(1)) if number else 1 << 30, path.name)


def _commit(folder: Path) -> str | None:
    """The commit of the git clone `folder` is in, or None where it is not in one (or git is not there)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=GIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", commit) else None


def _tasks_from_records(path: Path, split: str, directory: Path) -> list[Path]:
    """Each record's task module of `split`, written to `directory` under a name from its origin."""
    written = []
    for record in jsonl.read(path):
        if record.get("split") != split or not isinstance(record.get("task"), str):
            continue
        origin = str(record.get("task_origin", ""))
        stem = origin.replace(":", "_") if origin.startswith("synthetic:") else Path(origin).stem
        name = f"{stem or 'task'}_{str(record.get('id', ''))[:8]}".strip("_")
        directory.mkdir(parents=True, exist_ok=True)
        task = directory / f"{name}.py"
        task.write_text(record["task"])
        written.append(task)
    return sorted(written)
