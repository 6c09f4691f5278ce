"""Runs the static rules over a source text, a file or a tree of files."""

from __future__ import annotations

import ast
import fnmatch
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from verifier.audit import budget, language, memory, numerics, performance
from verifier.audit.anti_hacking import check_candidate
from verifier.audit.collector import Collector
from verifier.audit.config import AuditConfig
from verifier.audit.dataflow import KernelFlow
from verifier.audit.noqa import is_suppressed, suppressions
from verifier.audit.source_index import SourceIndex
from verifier.findings import Finding

KERNEL_RULES = (language.check_kernel, memory.check_kernel, numerics.check_kernel, performance.check_kernel)
RULE_FAMILIES = {
    language.check_kernel: "the language rules (TRI1xx)",
    memory.check_kernel: "the memory rules (TRI2xx)",
    numerics.check_kernel: "the numerics rules (TRI4xx)",
    performance.check_kernel: "the performance rules (TRI5xx)",
}
PYTHON_SUFFIXES = {".py", ".pyi"}
SKIPPED_DIRECTORIES = {".git", ".hg", ".venv", "venv", "__pycache__", "node_modules", "build", "dist", ".tox"}


@dataclass(frozen=True)
class FileFindings:
    """The findings of one audited file, and its source (for fixes and compile checks)."""

    path: str
    findings: list[Finding]
    source: str | None


@dataclass(frozen=True)
class KernelSpan:
    """Where a `@triton.jit` function sits: its name, `def` line, the name's column and last line (1-based)."""

    name: str
    line: int
    name_column: int
    end_line: int


@dataclass(frozen=True)
class SourceAudit:
    """The static findings of one source, and the kernels found on the way (editors point findings at them)."""

    findings: list[Finding]
    kernels: list[KernelSpan]


def audit_source(source: str | bytes, path: str = "<string>", config: AuditConfig | None = None) -> list[Finding]:
    """Every selected, unsuppressed static finding in one module's source. Never raises on bad input."""
    return audit(source, path, config).findings


def audit(source: str | bytes, path: str = "<string>", config: AuditConfig | None = None) -> SourceAudit:
    """`audit_source`, plus the spans of the kernels the audit found."""
    config = config or AuditConfig()
    text, findings = _decode(source)
    kernels: list[KernelSpan] = []
    if text is not None:
        findings, kernels = _static_findings(text, config.time_budget)
    lines = (text or "").splitlines()
    noqa = suppressions(lines)
    kept = [f for f in findings if config.selects(f.rule) and not is_suppressed(f, noqa)]
    return SourceAudit(sorted(kept, key=lambda f: (f.line, f.column, f.rule)), kernels)


def audit_file(path: Path, config: AuditConfig | None = None) -> FileFindings:
    """Audit one file; an unreadable file is a usage error (OSError), not a finding."""
    raw = path.read_bytes()
    text, _ = _decode(raw)
    return FileFindings(str(path), audit_source(raw if text is None else text, str(path), config), text)


def python_files(paths: Iterable[str], config: AuditConfig) -> list[Path]:
    """Files named on the command line, and every `*.py` under named directories that mentions triton.

    Raises FileNotFoundError naming the first path that does not exist.
    """
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if not path.exists():
            raise FileNotFoundError(f"{name}: no such file or directory")
        if path.is_file() and path.suffix not in PYTHON_SUFFIXES:
            raise FileNotFoundError(f"{name}: not a Python file (the audit reads .py files)")
        if path.is_file():
            found.append(path)
            continue
        for root, directories, files in os.walk(path):
            directories[:] = sorted(
                d
                for d in directories
                if d not in SKIPPED_DIRECTORIES and not d.startswith(".") and not _excluded(Path(root, d), config)
            )
            for file in sorted(files):
                candidate = Path(root, file)
                if file.endswith(".py") and not _excluded(candidate, config) and _mentions_triton(candidate):
                    found.append(candidate)
    return found


def _excluded(path: Path, config: AuditConfig) -> bool:
    text = path.as_posix()
    return any(fnmatch.fnmatch(text, pattern) or fnmatch.fnmatch(path.name, pattern) for pattern in config.exclude)


def _mentions_triton(path: Path) -> bool:
    try:
        return b"triton" in path.read_bytes()
    except OSError:
        return True


def _decode(source: str | bytes) -> tuple[str | None, list[Finding]]:
    if isinstance(source, str):
        return source, []
    try:
        return source.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = source[: exc.start].count(b"\n") + 1
        column = exc.start - (source.rfind(b"\n", 0, exc.start) + 1) + 1
        message = f"byte 0x{source[exc.start]:02x} at offset {exc.start} is not valid UTF-8; save the file as UTF-8"
        return None, [Finding("TRI002", "error", message, line, column, line, column + 1)]


def _static_findings(text: str, seconds: float) -> tuple[list[Finding], list[KernelSpan]]:
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [_syntax_finding(exc, text)], []
    except (RecursionError, MemoryError, ValueError) as exc:
        return [Finding("TRI001", "error", f"cannot parse this file: {type(exc).__name__}: {exc}", 1)], []
    lines = text.splitlines()
    out = Collector(lines)
    try:
        index = SourceIndex(tree, text)
    except RecursionError:
        return [Finding("TRI000", "warning", "the file is nested too deeply to audit", 1)], []
    kernels = [_span(kernel.node, out) for kernel in index.kernels.values()]
    stage, anchor = "", tree
    with budget.limit(seconds):
        try:
            for kernel in index.kernels.values():
                stage, anchor = f"the data flow of kernel `{kernel.name}`", kernel.node
                flow = KernelFlow(index, kernel)
                for check in KERNEL_RULES:
                    stage = f"{RULE_FAMILIES[check]} on kernel `{kernel.name}`"
                    budget.check_now()
                    _run_rule(check, index, kernel, flow, out)
            stage, anchor = "the launch checks (TRI108)", tree
            language.check_launches(index, out)
            if index.is_candidate():
                stage = "the anti-hacking rules (TRI301-TRI316)"
                try:
                    out.findings.extend(check_candidate(text, index=index))
                except RecursionError:
                    out.add("TRI000", tree, "the anti-hacking checks hit Python's recursion limit on this file")
        except budget.OutOfTime:
            out.add(
                "TRI003",
                anchor,
                f"the audit stopped after its {seconds:g} s time budget, in {stage}; findings after that point are "
                "missing. Raise `time-budget` in [tool.tritonize.audit] (or --time-budget) to audit the whole file",
            )
    return out.findings, kernels


def _run_rule(check, index: SourceIndex, kernel, flow: KernelFlow, out: Collector) -> None:
    """One rule family on one kernel; a bug in it must not hide the other rules' findings."""
    try:
        check(index, kernel, flow, out)
    except budget.OutOfTime:
        raise
    except Exception as exc:
        message = f"{check.__module__} failed on kernel `{kernel.name}`: {type(exc).__name__}: {exc}"
        out.add("TRI000", kernel.node, message + " (please report this)")


def _span(node: ast.FunctionDef, out: Collector) -> KernelSpan:
    name_column = out.character(node.lineno, node.col_offset) + len("def ") + 1
    return KernelSpan(node.name, node.lineno, name_column, node.end_lineno or node.lineno)


def _syntax_finding(exc: SyntaxError, text: str) -> Finding:
    line = exc.lineno or 1
    column = exc.offset or 1
    end_line = getattr(exc, "end_lineno", None) or line
    end_column = getattr(exc, "end_offset", None) or column + 1
    if end_line == line and end_column <= column:
        end_column = column + 1
    return Finding("TRI001", "error", f"syntax error: {exc.msg}", line, column, end_line, end_column)
