"""Where tritonize keeps files between runs: compile-check results, Inductor's cache for baselines, logs.

`$TRITONIZE_CACHE` if set, else `$XDG_CACHE_HOME/tritonize`, else `~/.cache/tritonize`.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The cache directory (not created here)."""
    explicit = os.environ.get("TRITONIZE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "tritonize")


def inductor_cache_dir() -> Path:
    """Inductor's compile cache shared by trusted compiles of the user's tasks (the verifier's torch.compile
    baseline, the inductor backend's captures), so the same graph compiles once (not created here)."""
    return cache_dir() / "inductor"
