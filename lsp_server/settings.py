"""The `tritonize` settings section (workspace/configuration), checked field by field.

A wrong value never stops the server: it falls back to the default and the problem is reported once, naming
the setting, so a typo in an editor's config is visible instead of silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from verifier.audit.config import TARGET_PATTERN

PLACEMENTS = ("new_file", "below", "replace")
DEVICES = ("auto", "cuda", "cpu")


@dataclass(frozen=True)
class Settings:
    """What the editor configured; defaults work offline with the built-in inductor backend."""

    server_url: str = "http://127.0.0.1:8765"
    auto_start: bool = True
    backend: str = "inductor"
    model: str | None = None
    samples: int = 4
    rounds: int = 2
    trials: int = 5
    device: str = "auto"
    target: str | None = None
    placement: str = "new_file"
    compile_on_save: bool = True
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    token: str | None = field(default=None, repr=False)


_ALIASES = {
    "serverUrl": "server_url",
    "autoStart": "auto_start",
    "compileOnSave": "compile_on_save",
}
_SPELLING = {internal: camel for camel, internal in _ALIASES.items()}


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """Settings from the client's `tritonize` section (camelCase or snake_case), and what was wrong with it."""
    if raw is None:
        return Settings(), []
    if not isinstance(raw, dict):
        return Settings(), [f"tritonize settings must be an object, got {type(raw).__name__}"]
    flat = {_ALIASES.get(key, key): value for key, value in raw.items() if key != "audit"}
    spelled = {_ALIASES.get(key, key): key for key in raw} | {"select": "audit.select", "ignore": "audit.ignore"}
    audit = raw.get("audit")
    problems = []
    if isinstance(audit, dict):
        flat.update({key: value for key, value in audit.items() if key in ("select", "ignore")})
        problems += [
            f"tritonize.audit.{key} is not a setting (known: ignore, select)"
            for key in audit
            if key not in ("select", "ignore")
        ]
    elif audit is not None:
        return Settings(), ["tritonize.audit must be an object with `select` and `ignore` lists"]
    known = {f.name: f for f in fields(Settings)}
    values: dict[str, Any] = {}
    for key, value in flat.items():
        if key not in known:
            names = sorted({_SPELLING.get(name, name) for name in known} - {"select", "ignore"} | {"audit"})
            problems.append(f"tritonize.{key} is not a setting (known: {', '.join(names)})")
            continue
        checked, problem = _check(key, value)
        if problem:
            problems.append(f"tritonize.{spelled.get(key, key)}: {problem}; using {getattr(Settings(), key)!r}")
        else:
            values[key] = checked
    return Settings(**values), problems


def _check(key: str, value: Any) -> tuple[Any, str | None]:
    if key in ("auto_start", "compile_on_save"):
        return (value, None) if isinstance(value, bool) else (None, "expected true or false")
    if key in ("samples", "rounds", "trials"):
        ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 64
        return (value, None) if ok else (None, "expected a whole number from 1 to 64")
    if key in ("select", "ignore"):
        ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
        return (tuple(value), None) if ok else (None, 'expected a list of rule prefixes such as ["TRI2"]')
    if key == "placement":
        return (value, None) if value in PLACEMENTS else (None, f"expected one of {', '.join(PLACEMENTS)}")
    if key == "device":
        return (value, None) if value in DEVICES else (None, f"expected one of {', '.join(DEVICES)}")
    if key == "target":
        ok = value is None or (isinstance(value, str) and TARGET_PATTERN.match(value) is not None)
        return (value, None) if ok else (None, "expected a CUDA architecture such as sm_90")
    if key == "server_url":
        ok = isinstance(value, str) and value.startswith(("http://", "https://"))
        return (value.rstrip("/"), None) if ok else (None, "expected an http:// or https:// URL")
    if key in ("model", "token"):
        return (value, None) if value is None or isinstance(value, str) else (None, "expected a string")
    return (value, None) if isinstance(value, str) and value else (None, "expected a non-empty string")
