"""The trust core of tritonize: prove a Triton candidate equal to its PyTorch task, and measure it.

The public names load on first use, so `verifier.audit` (the editor's diagnostics) starts without importing torch.
"""

from __future__ import annotations

import importlib

from verifier import threadsafe_ast

threadsafe_ast.install()

_PUBLIC = {
    "Cancelled": "verifier.errors",
    "Finding": "verifier.findings",
    "Report": "verifier.report",
    "SandboxStartError": "verifier.errors",
    "TaskError": "verifier.errors",
    "UsageError": "verifier.errors",
    "VerifierPool": "verifier.host.pool",
    "VerifyOptions": "verifier.options",
    "verify": "verifier.host.pool",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'verifier' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
