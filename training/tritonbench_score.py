"""TritonBench's programs, run in the verifier's sandbox and scored as the benchmark scores them, for
`training.eval` (which asks a model backend for each task's samples with the benchmark's own instruction).

A task's reference code, and then each candidate, runs with the task's test code after it (`tritonbench.script`)
as `python -m training.tritonbench_run` in a sandbox of `verifier.run_isolated`: no network, a read-only view of
the interpreter, a private scratch, `--timeout` seconds and the default memory limit. The candidate's code is
hostile, and the reference's is code from GitHub. Per sample:

- `call`: the program exits with 0 within the time limit (the benchmark's call accuracy);
- `exec`: it does, and what it printed, then its `test_results` as the runner renders them, is identical to the
  reference's (the benchmark's execution accuracy compares the two programs' stdout; its released test code prints
  nothing, so the runner prints the results);
- `audit`: the error and warning findings of the project's static audit on the code that ran, read as a module
  whose `ModelNew.forward` calls what the test code calls of it, so that the anti-hacking rules apply; `kernels`:
  the Triton kernels the audit found. `exec` passes code that prints the right text however it got it (PyTorch
  doing the work, say): the audit is the project's view beside the benchmark's.

Channel G's programs keep only the candidate's imports and function definitions, as the benchmark's own scripts
run G's code. The reference runs twice (a task whose two runs differ cannot be passed) and is kept per task and
device under OUT/tritonbench_reference; a task whose reference fails is not counted, and a re-run tries it again.
"""

from __future__ import annotations

import ast
import collections
import json
import sys
import time
from pathlib import Path

from training import tritonbench
from training.tritonbench import BenchTask
from training.tritonbench_run import MARKER

REFERENCE_DIR = "tritonbench_reference"
TAIL_CHARS = 2000
SHOWN_SEVERITIES = ("error", "warning")
ENTRY_MODULE = """

import torch


class ModelNew(torch.nn.Module):
    def forward(self, *args, **kwargs):
        return ({calls})
"""


def reference_run(task: BenchTask, device: str, seconds: float, out: Path) -> dict:
    """The reference's run on `device`, from OUT/tritonbench_reference where an earlier one passed, else run now
    (and kept there when it passes). It runs twice: `reproducible` says whether both printed the same, since no
    candidate can match a reference that does not match itself."""
    path = out / REFERENCE_DIR / device / f"{task.name}-{task.id}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    program = tritonbench.script(task.reference, task.test)
    ran = execute(program, task.path.name, device, seconds)
    if ran["call"]:
        again = execute(program, task.path.name, device, seconds)
        ran["reproducible"] = again["call"] and (again["printed"], again["results"]) == (ran["printed"], ran["results"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(ran))
    return ran


def score(task: BenchTask, candidate: str, reference: dict, device: str, seconds: float) -> dict:
    """One sample's `call`, `exec`, verdict, output tails and seconds, and the project's audit of its code."""
    code = kept_definitions(candidate) if task.channel == "G" else candidate
    ran = execute(tritonbench.script(code, task.test), task.path.name, device, seconds)
    same = ran["call"] and (ran["printed"], ran["results"]) == (reference["printed"], reference["results"])
    findings, kernels = audit_view(code, task.test)
    return {
        "verdict": _verdict(ran, same),
        "call": ran["call"],
        "exec": same,
        "correct": same,
        "exit": ran["exit"],
        "seconds": ran["seconds"],
        "stdout_tail": ran["stdout"][-TAIL_CHARS:],
        "stderr_tail": ran["stderr"][-TAIL_CHARS:],
        "audit": findings,
        "audit_errors": sorted({f["rule"] for f in findings if f["severity"] == "error"}),
        "kernels": kernels,
    }


def execute(program: str, name: str, device: str, seconds: float) -> dict:
    """Run `program`, as the file `name` (the task's: a test may import its own file by name), in the verifier's
    sandbox through the runner: whether it passed the benchmark's call test, what it printed before the runner's
    marker, the rendered results after it, its output, exit and seconds."""
    from verifier import run_isolated

    def command(folder: str) -> list[str]:
        return [sys.executable, "-m", "training.tritonbench_run", str(Path(folder, name)), "--device", device]

    started = time.monotonic()
    done = run_isolated(
        command,
        device=device,
        seconds=seconds,
        files={name: program},
        packages=("verifier", "training"),
        env={"TRITON_INTERPRET": "1"} if device == "cpu" else None,
    )
    printed, marker, results = done.stdout.rpartition(f"{MARKER}\n")
    return {
        "call": done.returncode == 0 and done.exceeded is None,
        "exit": done.returncode,
        "exceeded": done.exceeded,
        "printed": printed if marker else done.stdout,
        "results": results if marker else None,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "seconds": round(time.monotonic() - started, 2),
    }


def kept_definitions(code: str) -> str:
    """Channel G's rule: the candidate's imports, then its function definitions (every one, nested ones too, as the
    benchmark's scripts collect them), and nothing else; code that does not parse is kept as it is."""
    try:
        nodes = list(ast.walk(ast.parse(code)))
    except (SyntaxError, ValueError, RecursionError):
        return code
    imports = [ast.unparse(node) for node in nodes if isinstance(node, ast.Import | ast.ImportFrom)]
    functions = [ast.unparse(node) for node in nodes if isinstance(node, ast.FunctionDef)]
    return "\n".join(imports) + "\n\n" + "\n".join(functions)


def audit_view(code: str, test: str) -> tuple[list[dict], int]:
    """The project's static audit of `code` (error and warning findings, on its own lines) read as a `ModelNew`
    module whose forward calls what `test` calls of it, and the number of Triton kernels the audit found."""
    from verifier.audit import audit

    lines = len(code.splitlines())
    calls = ", ".join(f"{entry}(*args, **kwargs)" for entry in entry_points(code, test))
    audited = audit(code.rstrip("\n") + "\n" + ENTRY_MODULE.format(calls=calls + "," if calls else "None"))
    findings = [
        {"rule": f.rule, "severity": f.severity, "line": f.line, "message": f.message[:300]}
        for f in audited.findings
        if f.severity in SHOWN_SEVERITIES and f.line <= lines
    ]
    return findings, len([kernel for kernel in audited.kernels if kernel.line <= lines])


def entry_points(code: str, test: str) -> list[str]:
    """What the test code calls of the candidate: each called name, or attribute of a name (`Fn.apply`), that the
    candidate defines at its top level, in the order first called."""
    try:
        defined = {
            node.name
            for node in ast.parse(code).body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        calls = [node.func for node in ast.walk(ast.parse(test)) if isinstance(node, ast.Call)]
    except (SyntaxError, ValueError, RecursionError):
        return []
    found = []
    for func in calls:
        root = func.value if isinstance(func, ast.Attribute) else func
        if isinstance(root, ast.Name) and root.id in defined and isinstance(func, ast.Name | ast.Attribute):
            found.append(ast.unparse(func))
    return list(dict.fromkeys(found))


# ---------------------------------------------------------------- report


def table(records: list[dict], totals: dict) -> str:
    """A markdown table of the tasks (call, exec, audit), then one of the totals."""
    rows = ["| task | call | exec | audit errors | outcome |", "| --- | --- | --- | --- | --- |"]
    for record in records:
        samples = record["samples"]
        errors = sorted({rule for s in samples for rule in s["audit_errors"]})
        verdicts = collections.Counter(s["verdict"] for s in samples)
        outcome = record["error"] or ", ".join(f"{v} {n}" for v, n in verdicts.items())
        rows.append(
            f"| {record['name']} | {record['call']}/{len(samples)} | {record['correct']}/{len(samples)} | "
            f"{', '.join(errors) or '-'} | {outcome.replace('|', '/')} |"
        )
    bench = totals["tritonbench"]
    lines = [*rows, "", "| metric | value |", "| --- | --- |"]
    lines.append(f"| tasks | {totals['tasks']} (channel {bench['channel']}, {bench['instruction']} instructions) |")
    if totals["tasks_unverified"]:
        left_out = ", ".join(totals["tasks_unverified"])
        lines.append(f"| not counted (the reference failed, or out of memory) | {left_out} |")
    if bench["references_not_reproducible"]:
        unstable = ", ".join(bench["references_not_reproducible"])
        lines.append(f"| references whose two runs printed different results (exec cannot pass) | {unstable} |")
    lines.append(f"| call accuracy (TritonBench) | {bench['call_accuracy']:.3f} |")
    lines.append(f"| execution accuracy (TritonBench) | {bench['exec_accuracy']:.3f} |")
    lines += [f"| pass@{k} (exec) | {value:.3f} |" for k, value in totals["pass@k"].items()]
    lines.append(f"| exec with the audit clean (no error finding, a Triton kernel) | {bench['exec_audit_clean']:.3f} |")
    verdicts = ", ".join(f"{v} {n}" for v, n in totals["verdicts"].items()) or "none"
    lines.append(f"| verdicts | {verdicts} |")
    return "\n".join(lines)


def clean_pass(sample: dict) -> bool:
    """Whether a sample passes execution with the audit clean: no error finding, and a Triton kernel."""
    return sample["exec"] and not sample["audit_errors"] and sample["kernels"] > 0


def _verdict(ran: dict, same: bool) -> str:
    if ran["exceeded"]:
        return "timeout" if ran["exceeded"] == "timeout" else f"exceeded_{ran['exceeded']}"
    if not ran["call"]:
        return "failed"
    return "passed" if same else "wrong_output"


def failure_line(ran: dict) -> str:
    """Why a run failed, in one line: the limit it ran out of, or its exit code and last line of stderr."""
    if ran["exceeded"]:
        return f"it ran out of {'time' if ran['exceeded'] == 'timeout' else ran['exceeded']}"
    lines = ran["stderr"].strip().splitlines()
    return f"exit {ran['exit']}: {lines[-1][:300] if lines else 'no output'}"
