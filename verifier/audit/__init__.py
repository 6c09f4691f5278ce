"""`tritonize audit`: static rules over Triton source, and compile checks for a CUDA target without a GPU.

This module is the audit's public API (the language server and the benchmarks use it, nothing else of
`verifier.audit`); the names load on first use.
"""

from __future__ import annotations

from verifier import lazy

_PUBLIC = {
    "audit": "verifier.audit.engine",
    "audit_source": "verifier.audit.engine",
    "python_files": "verifier.audit.engine",
    "SourceAudit": "verifier.audit.engine",
    "KernelSpan": "verifier.audit.engine",
    "AuditConfig": "verifier.audit.config",
    "ConfigError": "verifier.audit.config",
    "load_config": "verifier.audit.config",
    "TARGET_PATTERN": "verifier.audit.config",
    "CompileChecker": "verifier.audit.compile_check",
    "plan": "verifier.audit.compile_plan",
    "SourceIndex": "verifier.audit.source_index",
    "NOQA": "verifier.audit.noqa",
    "named_codes": "verifier.audit.noqa",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy.attributes(__name__, _PUBLIC)
