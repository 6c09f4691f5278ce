"""The shape of the code that docs/ARCHITECTURE.md describes: imports flow one way and form no circle, and the
README's layout names every module there is.

Imports are read from the source (top-level, inside functions and under TYPE_CHECKING alike), so a circle
that only a lazy import hides still fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from verifier.audit.dataflow import strongly_connected

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("verifier", "model_server", "lsp_server", "training")
# What each package may import from the others: the stack goes lsp_server -> (HTTP) -> model_server -> verifier,
# and the language server may read the HTTP API's contract module, nothing else of the model server; training
# uses the verifier and the model server (its prompts and backends), and nothing of the product imports it.
ALLOWED = {
    "verifier": set(),
    "model_server": {"verifier"},
    "lsp_server": {"verifier", "model_server.api"},
    "training": {"verifier", "model_server"},
}


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in ROOT.joinpath(package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules a file imports, wherever the import statement is."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in known else node.module)
    return {name for name in found if name in known}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(path, known) - {name} for name, path in known.items()}


def test_packages_import_only_down_the_stack():
    for module, imported in graph().items():
        package = module.split(".")[0]
        for target in imported:
            if target.split(".")[0] == package:
                continue
            allowed = ALLOWED[package]
            assert target.split(".")[0] in allowed or target in allowed, f"{module} imports {target}"


# The verifier's front door: its public API (the package itself), the audit's and the command line others add their
# commands to. Everything else in it may change without another package noticing.
VERIFIER_API = {"verifier", "verifier.audit", "verifier.cli"}


def test_other_packages_use_only_the_verifiers_public_api():
    used = {
        target
        for module, imported in graph().items()
        if not module.startswith("verifier")
        for target in imported
        if target.split(".")[0] == "verifier"
    }
    assert used <= VERIFIER_API, sorted(used - VERIFIER_API)


def test_every_public_name_of_the_verifier_resolves():
    import verifier
    import verifier.audit

    for package in (verifier, verifier.audit):
        for name in package.__all__:
            assert getattr(package, name) is not None, f"{package.__name__}.{name}"


# The trust boundary inside the verifier: code that runs in a sandbox (sandbox/) and what crosses (wire/) import
# nothing of the trusted side (host/, the CLI, the pool, the report); the rule catalog and process listing are
# the only other modules they share.
SANDBOX_MAY_IMPORT = ("verifier.sandbox", "verifier.wire", "verifier.rules", "verifier.procs")
WIRE_MAY_IMPORT = ("verifier.wire",)


def test_sandbox_code_imports_nothing_from_the_host_side():
    for module, imported in graph().items():
        if module.startswith("verifier.sandbox"):
            allowed = SANDBOX_MAY_IMPORT
        elif module.startswith("verifier.wire"):
            allowed = WIRE_MAY_IMPORT
        else:
            continue
        for target in imported:
            assert target.startswith(allowed), f"{module} (inside the sandbox) imports {target}"


def test_no_module_imports_itself_through_others():
    cycles = [sorted(group) for group in strongly_connected(graph()) if len(group) > 1]
    assert cycles == []


def test_the_readme_layout_names_every_module_and_nothing_else():
    layout = ROOT.joinpath("README.md").read_text().split("## Layout", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"([\w/]+\.py)\b", layout))
    files = {p.name for package in PACKAGES for p in ROOT.joinpath(package).rglob("*.py")} - {
        "__init__.py",
        "__main__.py",
    }
    assert {Path(name).name for name in named} == files
