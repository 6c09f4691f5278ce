"""JSONL files that long runs append to as they go, so a run cut short loses at most its last line."""

from __future__ import annotations

import json
from pathlib import Path


def read(path: Path) -> list[dict]:
    """The JSON objects of a JSONL file (none if it does not exist), without a last line cut short by an
    interrupted run."""
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found
