"""`tritonize audit`: settings, static rules for every file, compile checks in parallel, one report."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path

from verifier.audit.config import AuditConfig, ConfigError, load_config, validate
from verifier.audit.engine import FileFindings, audit_file, audit_source, python_files
from verifier.audit.fixes import apply_fixes
from verifier.audit.formats import as_json, as_sarif, as_text
from verifier.audit.noqa import is_suppressed, suppressions
from verifier.findings import Finding

EXIT_CLEAN, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2
FIX_ROUNDS = 5


@dataclass(frozen=True)
class AuditRequest:
    """What the command line asked for; None means "take it from the config file"."""

    paths: list[str]
    output_format: str = "text"
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    target: str | None = None
    compile: bool | None = None
    compile_timeout: float | None = None
    time_budget: float | None = None
    fix: bool = False


def run_audit(request: AuditRequest) -> int:
    """Audit, print the report on stdout, and return the exit code."""
    try:
        config = _settings(request)
        files = python_files(request.paths, config)
        audited = [audit_file(path, config) for path in files]
        if request.fix:
            audited = _fix(audited, config)
    except (ConfigError, OSError) as exc:
        print(f"tritonize audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    results = [(item.path, finding) for item in audited for finding in item.findings]
    if config.compile:
        results += _compile_findings(audited, config)
    results.sort(key=lambda r: (r[0], r[1].line, r[1].column, r[1].rule))
    if request.output_format == "json":
        print(as_json(results))
    elif request.output_format == "sarif":
        print(as_sarif(results, _version()))
    else:
        print(as_text(results, len(audited)))
    return EXIT_ERRORS if any(f.severity == "error" for _, f in results) else EXIT_CLEAN


def _fix(audited: list[FileFindings], config: AuditConfig) -> list[FileFindings]:
    """Apply the fixes of each file (a few rounds, re-auditing between them), write the files that changed in
    place (atomically, line endings kept), and return what remains to report."""
    fixed_total, changed = 0, 0
    result = []
    for item in audited:
        original = item.source
        for _ in range(FIX_ROUNDS):
            if item.source is None or not any(f.fix for f in item.findings):
                break
            source, applied = apply_fixes(item.source, item.findings)
            if not applied:
                break
            fixed_total += applied
            item = FileFindings(item.path, audit_source(source, item.path, config), source)
        if item.source != original:
            _write(Path(item.path), item.source)
            changed += 1
        result.append(item)
    print(f"tritonize audit: applied {fixed_total} fix(es) in {changed} file(s)", file=sys.stderr)
    return result


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tritonize-fix")
    temporary.write_bytes(text.encode("utf-8"))
    os.chmod(temporary, path.stat().st_mode & 0o7777)
    os.replace(temporary, path)


def _settings(request: AuditRequest) -> AuditConfig:
    config = load_config(Path(request.paths[0]) if request.paths else Path.cwd())
    overrides = {
        "select": request.select,
        "ignore": request.ignore,
        "target": request.target,
        "compile": request.compile,
        "compile_timeout": request.compile_timeout,
        "time_budget": request.time_budget,
    }
    config = replace(config, **{k: v for k, v in overrides.items() if v is not None})
    validate(config, "command line" if config.source is None else f"{config.source} or the command line")
    return config


def _compile_findings(audited: list[FileFindings], config: AuditConfig) -> list[tuple[str, Finding]]:
    """Compile checks for every parsable file, several at once; selection and noqa apply as for static rules."""
    try:
        from verifier.audit.compile_check import CompileChecker
    except ImportError as exc:
        print(f"tritonize audit: warning: compile checks skipped ({exc})", file=sys.stderr)
        return []
    checker = CompileChecker(config)
    todo = [item for item in audited if item.source is not None and "triton" in item.source]
    todo = [item for item in todo if not any(f.rule in {"TRI001", "TRI002"} for f in item.findings)]
    if not todo:
        return []
    if sys.stderr.isatty():
        print(f"tritonize audit: compiling kernels of {len(todo)} file(s) for {config.target}...", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=max(1, min(len(todo), os.cpu_count() or 1))) as pool:
        outcomes = list(pool.map(lambda item: checker.findings(item.path, item.source), todo))
    for warning in sorted(checker.warnings):
        print(f"tritonize audit: warning: compile checks ran without the sandbox: {warning}", file=sys.stderr)
    results = []
    for item, findings in zip(todo, outcomes):
        noqa = suppressions(item.source.splitlines())
        results += [(item.path, f) for f in findings if config.selects(f.rule) and not is_suppressed(f, noqa)]
    return results


def _version() -> str:
    try:
        return metadata.version("tritonize")
    except metadata.PackageNotFoundError:
        return "0"
