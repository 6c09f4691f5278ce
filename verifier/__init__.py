"""The trust core of tritonize: prove a Triton candidate equal to its PyTorch task, and measure it.

This module is the verifier's public API; other packages import it, `verifier.audit` (static analysis) and
`verifier.cli` (the command line they add their commands to), and nothing else of the verifier. The names load
on first use, so the editor's diagnostics start without importing torch.
"""

from __future__ import annotations

from verifier import lazy, threadsafe_ast

threadsafe_ast.install()

_PUBLIC = {
    # a task, and verifying candidates against it
    "Task": "verifier.task",
    "read_source": "verifier.task",
    "VerifierPool": "verifier.host.pool",
    "verify": "verifier.host.pool",
    "VerifyOptions": "verifier.options",
    "POLICIES": "verifier.options",
    "policy_line": "verifier.options",
    "declared_policy": "verifier.options",
    "parse_dynamic": "verifier.dynamic",
    "declared_dynamic": "verifier.dynamic",
    "dynamic_line": "verifier.dynamic",
    "dynamic_positions": "verifier.dynamic",
    "DEVICES": "verifier.device",
    "resolve_device": "verifier.device",
    "Report": "verifier.report",
    "passes": "verifier.report",
    "Finding": "verifier.findings",
    "docs_url": "verifier.rules",
    "RULES": "verifier.rules",
    "explain_rule": "verifier.rule_docs",
    "UnknownRule": "verifier.rule_docs",
    "Cancelled": "verifier.errors",
    "SandboxStartError": "verifier.errors",
    "TaskError": "verifier.errors",
    "UsageError": "verifier.errors",
    # running other code isolated (the Inductor capture), and where it may cache
    "run_isolated": "verifier.host.runner",
    "Spare": "verifier.host.runner",
    "default_memory_limit": "verifier.host.limits",
    "cache_dir": "verifier.cache",
    "inductor_cache_dir": "verifier.cache",
    # inside a sandbox: a task's module, seeds and inputs exactly as a verification makes them
    "load_module": "verifier.sandbox.task_code",
    "seed_everything": "verifier.sandbox.task_code",
    "trial_inputs": "verifier.sandbox.task_code",
    "flatten": "verifier.sandbox.task_code",
    "full_precision": "verifier.sandbox.task_code",
    "stage": "verifier.sandbox.task_code",
    "StageError": "verifier.sandbox.task_code",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy.attributes(__name__, _PUBLIC)
