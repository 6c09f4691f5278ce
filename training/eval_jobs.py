"""How `training.eval` runs a suite's tasks, whatever the suite: what an earlier run on the output directory
finished, the model server backend, each task's generation and candidate files, and the records appended to
`tasks.jsonl` as tasks finish."""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from training import jsonl
from training.eval_args import EvalArgs

TASKS_FILE = "tasks.jsonl"


class EvalError(Exception):
    """The evaluation cannot start; the message says why."""


def pending_tasks(tasks: list, out: Path) -> tuple[dict, list]:
    """The records `tasks.jsonl` holds, by (name, id), and the tasks (anything with a name and an id) it lacks."""
    finished = {(r["name"], r["id"]): r for r in jsonl.read(out / TASKS_FILE) if "name" in r and "id" in r}
    pending = [task for task in tasks if (task.name, task.id) not in finished]
    log(f"{len(pending)} tasks to evaluate ({len(tasks) - len(pending)} finished in an earlier run)")
    return finished, pending


def start_backend(args: EvalArgs):
    """The model server backend the arguments name (EvalError where it cannot start)."""
    from model_server.backends import BackendConfig, BackendError, create_backend

    backend_config = BackendConfig(
        name=args.backend,
        model=args.model or None,
        profile=args.profile,
        device=args.device,
        base_url=args.base_url or None,
        api_key=os.environ.get("OPENAI_API_KEY"),
        tensor_parallel_size=args.tensor_parallel,
        batch=args.batch,
        compile=args.compile,
        dtype=args.dtype,
    )
    try:
        return create_backend(backend_config)
    except BackendError as exc:
        raise EvalError(str(exc)) from exc


def model_name(args: EvalArgs, backend) -> str:
    """The model `results.json` names: --model, else what the backend serves."""
    return args.model or ", ".join(backend.models())


def record_all(pending: list, finished: dict, job, args: EvalArgs, out: Path) -> None:
    """Run `job(task)` (a function and its arguments, giving the task's record) for every pending task, as many at
    once as fill a generation batch, adding each record to `finished` and appending it to `tasks.jsonl` as it
    comes (one whose task could not be judged is not appended, so a re-run tries it again)."""
    from verifier import SandboxStartError

    started = time.monotonic()
    with (
        ThreadPoolExecutor(max_workers=max(args.workers, args.batch // args.samples)) as workers,
        (out / TASKS_FILE).open("a") as appended,
    ):
        if appended.tell() and not (out / TASKS_FILE).read_bytes().endswith(b"\n"):
            appended.write("\n")  # after a line an interrupted run cut short, which is then skipped on reading
        futures = {workers.submit(*job(task)): task for task in pending}
        try:
            for number, future in enumerate(as_completed(futures), 1):
                try:
                    record = future.result()
                except SandboxStartError as exc:
                    raise EvalError(f"the verifier's sandbox cannot start: {exc}") from exc
                finished[(record["name"], record["id"])] = record
                if not record.get("unverified"):
                    appended.write(json.dumps(record) + "\n")
                    appended.flush()
                rate = number / max(time.monotonic() - started, 1e-9) * 60
                outcome = record["error"] or f"{record['correct']}/{len(record['samples'])} correct"
                outcome += "; not counted, and a re-run tries it again" if record.get("unverified") else ""
                log(
                    f"[{number}/{len(pending)}] {record['name']}: {outcome} "
                    f"({record['seconds']:.1f} s; {rate:.1f} tasks/min)"
                )
        finally:
            workers.shutdown(wait=True, cancel_futures=True)


def generate(backend, request, record: dict) -> list:
    """The candidates `backend` makes for `request`; where it fails, or makes none, `record` says so (its `error`,
    and `unverified` where generation ran out of memory: the machine's state, not the model's). `shortfall` says
    why fewer were made than asked."""
    from model_server.backends.base import collect

    not_made: list[str] = []
    try:
        generated, not_made = collect(backend, request)
    except Exception as exc:  # any failure of one task's generation is that task's outcome, not the run's
        record["error"] = f"generation failed: {_describe(exc)}"
        if _out_of_memory(exc):  # a re-run tries again
            record["unverified"] = True
        generated = []
    record["shortfall"] = not_made
    if not generated and record["error"] is None:
        record["error"] = "generation failed: the backend returned no candidate"
    return generated


def write_candidates(generated: list, folder: Path) -> list[Path]:
    """Each candidate's source written to `folder/sample_I.py`; the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"sample_{number}.py" for number in range(len(generated))]
    for path, candidate in zip(paths, generated, strict=True):
        path.write_text(candidate.source)
    return paths


def _out_of_memory(exc: Exception) -> bool:
    """Whether generation ran out of memory (the GPU shared with other jobs, say) rather than failed on the task."""
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def _describe(exc: Exception) -> str:
    from model_server.backends.base import BackendError

    text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    return text if isinstance(exc, BackendError) else f"{type(exc).__name__}: {text}".rstrip(": ")


def log(text: str) -> None:
    print(f"training.eval: {text}", file=sys.stderr, flush=True)
