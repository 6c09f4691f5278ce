"""Compile diagnostics (TRI601-TRI604): build each kernel for a CUDA target without a GPU, in a sandbox.

Results are cached by a hash of the source, the target, the Triton version and the planned jobs (in memory
and under the user's cache directory), so re-auditing an unchanged file costs nothing.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from verifier.audit.compile_plan import CompileJob, plan
from verifier.audit.config import AuditConfig
from verifier.audit.source_index import SourceIndex
from verifier.cache import cache_dir
from verifier.findings import Finding
from verifier.host import isolation
from verifier.host.limits import Limits, default_memory_limit
from verifier.wire.messages import CompileOutcome, CompileResult, CompileSpec

SHARED_MEMORY_LIMITS = {70: 98304, 75: 65536, 80: 166912, 86: 101376, 87: 166912, 89: 101376, 90: 232448, 100: 232448}


def shared_memory_limit(capability: int) -> int:
    """Bytes of shared memory one block may use on this compute capability (opt-in maximum)."""
    known = [c for c in SHARED_MEMORY_LIMITS if c <= capability]
    return SHARED_MEMORY_LIMITS[max(known)] if known else 49152


class CompileChecker:
    """Runs and caches compile checks; safe to call from several threads for different files."""

    def __init__(self, config: AuditConfig, cache_dir: Path | None = None, isolate: bool = True):
        self.config = config
        self.isolate = isolate
        self.cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        self._memory: dict[str, CompileOutcome] = {}
        self.warnings: set[str] = set()

    def findings(self, path: str, source: str) -> list[Finding]:
        """Compile findings for one file (empty when no kernel's signature can be known)."""
        try:
            index = SourceIndex(ast.parse(source), source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return []
        jobs = plan(index)
        if not jobs:
            return []
        outcome = self._outcome(source, jobs)
        return _to_findings(index, jobs, outcome, self.config)

    def _outcome(self, source: str, jobs: list[CompileJob]) -> CompileOutcome:
        key = self._key(source, jobs)
        if key in self._memory:
            return self._memory[key]
        cached = self.cache_dir / f"{key}.json" if self.cache_dir else None
        if cached is not None and cached.is_file():
            try:
                outcome = json.loads(cached.read_text())
                self._memory[key] = outcome
                return outcome
            except (OSError, ValueError):
                pass
        outcome = self._run(source, jobs)
        if "failure" not in outcome:
            self._memory[key] = outcome
            if cached is not None:
                try:
                    cached.parent.mkdir(parents=True, exist_ok=True)
                    cached.write_text(json.dumps(outcome))
                except OSError:
                    pass
        return outcome

    def _key(self, source: str, jobs: list[CompileJob]) -> str:
        import triton

        material = json.dumps(
            [source, self.config.target, triton.__version__, [job.as_dict() for job in jobs]], sort_keys=True
        )
        return hashlib.sha256(material.encode()).hexdigest()

    def _run(self, source: str, jobs: list[CompileJob]) -> CompileOutcome:
        scratch = tempfile.mkdtemp(prefix="tritonize-audit-")
        try:
            subject = os.path.join(scratch, "audited_source.py")
            Path(subject).write_text(source, encoding="utf-8")
            spec: CompileSpec = {
                "source_path": subject,
                "capability": self.config.capability,
                "jobs": [j.as_dict() for j in jobs],
            }
            Path(scratch, "job.json").write_text(json.dumps(spec))
            program = [
                sys.executable,
                "-m",
                "verifier.sandbox.compile_child",
                "--job",
                os.path.join(scratch, "job.json"),
            ]
            launch = isolation.prepare(
                program,
                device="cpu",
                isolate=self.isolate,
                host_scratch=Path(scratch),
                readonly=[scratch],
                env={"TRITON_DEFAULT_FP_FUSION": "1"},
            )
            self.warnings.update(launch.isolation["warnings"])
            limits = Limits(self.config.compile_timeout, default_memory_limit())
            run = isolation.run_limited(launch, limits)
            if run.exceeded == "timeout":
                return {"failure": f"compiling took longer than {self.config.compile_timeout:g} s and was stopped"}
            if run.exceeded == "memory":
                return {"failure": f"the compiler process used more than {limits.memory // 2**20} MiB and was stopped"}
            outcome = _last_json_line(run.stdout)
            if run.returncode != 0 or outcome is None:
                tail = (run.stderr or "").strip().splitlines()[-1:] or [f"exit status {run.returncode}"]
                return {"failure": f"the compiler process failed: {tail[0][:300]}"}
            return outcome
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def _last_json_line(stdout: str) -> CompileOutcome | None:
    lines = stdout.strip().splitlines()
    try:
        outcome = json.loads(lines[-1]) if lines else None
    except (ValueError, RecursionError):
        return None
    return outcome if isinstance(outcome, dict) else None


def default_cache_dir() -> Path:
    return cache_dir() / "audit-compile"


def _to_findings(
    index: SourceIndex, jobs: list[CompileJob], outcome: CompileOutcome, config: AuditConfig
) -> list[Finding]:
    if "failure" in outcome:
        kernel = index.kernels[jobs[0].kernel].node
        return [Finding("TRI604", "info", f"compile check not done: {outcome['failure']}", kernel.lineno)]
    findings: list[Finding] = []
    limit = shared_memory_limit(config.capability)
    for job, result in zip(jobs, outcome["results"]):
        for finding in _job_findings(index, job, result, config.target, limit):
            if finding.rule == "TRI601" and any(_same_failure(finding, f) for f in findings):
                continue  # the same error in every configuration is reported once
            findings.append(finding)
    return findings


def _same_failure(new: Finding, old: Finding) -> bool:
    return (
        old.rule == new.rule
        and (old.line, old.column) == (new.line, new.column)
        and (old.message.split(": ", 1)[-1] == new.message.split(": ", 1)[-1])
    )


def _job_findings(index: SourceIndex, job: CompileJob, result: CompileResult, target: str, limit: int) -> list[Finding]:
    kernel = index.kernels[job.kernel].node
    where = f"{target}, {job.label}"
    assumed = f" (assuming {', '.join(job.assumptions)}; check the launch)" if job.assumptions else ""
    certain = "info" if job.assumptions else "error"  # a guessed type may be the whole problem
    if "skipped" in result:
        return [Finding("TRI604", "info", f"not compiled: {result['skipped']}", kernel.lineno)]
    if "error" in result:
        error = result["error"]
        line, column, end_line, end_column = _error_location(index, error, kernel)
        message = f"`{job.kernel}` does not compile for {target} ({job.label}): {error['message']}{assumed}"
        return [Finding("TRI601", certain, message, line, column, end_line, end_column)]
    findings = []
    shared = result.get("shared", 0)
    spills = result.get("spill_stores", 0) + result.get("spill_loads", 0)
    registers = result.get("registers")
    figures = f"{registers if registers is not None else '?'} registers, {spills} bytes spilled, {shared} bytes shared"
    anchor = (kernel.lineno, kernel.col_offset + 5, kernel.lineno, kernel.col_offset + 5 + len(job.kernel))
    findings.append(Finding("TRI604", "info", f"`{job.kernel}` on {where}: {figures}", *anchor))
    if spills:
        findings.append(
            Finding(
                "TRI602",
                "warning",
                f"`{job.kernel}` spills registers on {where} ({result.get('spill_stores', 0)} bytes stored, "
                f"{result.get('spill_loads', 0)} loaded): use smaller blocks or more warps",
                *anchor,
            )
        )
    if shared > limit:
        findings.append(
            Finding(
                "TRI603",
                certain,
                f"`{job.kernel}` needs {shared} bytes of shared memory on {where}, above the {limit} bytes a block "
                f"may use on {target}; the launch fails with OutOfResources. Use smaller blocks or fewer "
                f"stages{assumed}",
                *anchor,
            )
        )
    return findings


def _error_location(index: SourceIndex, error: dict, kernel: ast.FunctionDef) -> tuple[int, int, int, int]:
    """Map a location relative to a function's `def` line to the file (1-based line and column)."""
    function = index.kernels.get(error.get("function") or "")
    definition = function.node if function is not None else kernel
    if "line" not in error:
        return kernel.lineno, 1, kernel.lineno, 1
    line = definition.lineno + error["line"] - 1
    column = error.get("column", 0) + 1
    end_line = definition.lineno + (error.get("end_line") or error["line"]) - 1
    end_column = (error.get("end_column") or error.get("column", 0)) + 1
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, column + 1
    return line, column, end_line, end_column
