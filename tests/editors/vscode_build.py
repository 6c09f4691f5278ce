"""Build the VS Code extension (editors/vscode) with npm, once per test run, for the test that checks the build and
the end-to-end test that installs the .vsix in code-server."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path

from tests.test_project import ROOT

EXTENSION = ROOT / "editors" / "vscode"
NPM = shutil.which("npm")
NODE = shutil.which("node")
MISSING = "npm and node are needed to build the VS Code extension" if NPM is None or NODE is None else None


def manifest() -> dict:
    return json.loads((EXTENSION / "package.json").read_text())


def npm(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> str:
    """Run `npm ARGS` in the extension's directory; its output, or a failure that shows it."""
    done = subprocess.run(
        [NPM, *args], cwd=EXTENSION, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"npm {' '.join(args)} failed ({done.returncode}):\n{output[-6000:]}"
    return output


@functools.cache
def installed() -> None:
    """`npm ci` from the committed lockfile; install scripts are not needed (esbuild finds its binary package)."""
    npm("ci", "--ignore-scripts", "--no-audit", "--no-fund")


@functools.cache
def packaged() -> Path:
    """`npm run package`: the bundle, then `vsce package`; the .vsix path."""
    installed()
    vsix = EXTENSION / f"tritonize-{manifest()['version']}.vsix"
    vsix.unlink(missing_ok=True)
    npm("run", "package")
    assert vsix.is_file(), f"npm run package wrote no {vsix.name}"
    return vsix
