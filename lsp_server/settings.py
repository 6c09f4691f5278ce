"""The `tritonize` settings section (workspace/configuration or initializationOptions), typed and parsed here.

Each field of `Settings` says how the editor spells it and how its value is checked. A wrong value never
stops the server: it falls back to the default and the problem is reported once, naming the setting as the
user spelled it, so a typo in an editor's config is visible instead of silently ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from model_server.api import DEFAULT_URL
from verifier import DEVICES, POLICIES, UsageError, parse_dynamic
from verifier.audit import TARGET_PATTERN

PLACEMENTS = ("new_file", "below", "replace")
AUDIT_KEYS = ("ignore", "select")


class _Bad(ValueError):
    """The value does not fit; the message says what was expected."""


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad("expected true or false")
    return value


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 64:
        raise _Bad("expected a whole number from 1 to 64")
    return value


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _Bad("expected a non-empty string")
    return value


def _optional_text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _Bad("expected a string")
    return value


def _url(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise _Bad("expected an http:// or https:// URL")
    return value.rstrip("/")


def _target(value: Any) -> str | None:
    if value is not None and not (isinstance(value, str) and TARGET_PATTERN.match(value)):
        raise _Bad("expected a CUDA architecture such as sm_90")
    return value


def _rule_prefixes(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Bad('expected a list of rule prefixes such as ["TRI2"]')
    return tuple(value)


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in choices:
            raise _Bad(f"expected one of {', '.join(choices)}")
        return value

    return check


def _dynamic(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _Bad('expected null, "auto", or dimensions such as "0" or "x:0,y:0"')
    try:
        return str(parse_dynamic(value))
    except UsageError as exc:
        raise _Bad(str(exc)) from None


def _setting(default: Any, key: str, check: Callable[[Any], Any], secret: bool = False) -> Any:
    """A settings field: its default, the key editors use (`audit.select` for nested ones) and its check."""
    return field(default=default, repr=not secret, metadata={"key": key, "check": check})


@dataclass(frozen=True)
class Settings:
    """What the editor configured; defaults work offline with the built-in inductor backend."""

    server_url: str = _setting(DEFAULT_URL, "serverUrl", _url)
    auto_start: bool = _setting(True, "autoStart", _boolean)
    backend: str = _setting("inductor", "backend", _name)
    model: str | None = _setting(None, "model", _optional_text)
    samples: int = _setting(4, "samples", _count)
    rounds: int = _setting(2, "rounds", _count)
    trials: int = _setting(5, "trials", _count)
    device: str = _setting("auto", "device", _one_of(DEVICES))
    target: str | None = _setting(None, "target", _target)
    placement: str = _setting("new_file", "placement", _one_of(PLACEMENTS))
    policy: str = _setting("strict", "policy", _one_of(POLICIES))
    dynamic: str | None = _setting(None, "dynamic", _dynamic)
    compile_on_save: bool = _setting(True, "compileOnSave", _boolean)
    code_lens: bool = _setting(True, "codeLens", _boolean)
    select: tuple[str, ...] = _setting((), "audit.select", _rule_prefixes)
    ignore: tuple[str, ...] = _setting((), "audit.ignore", _rule_prefixes)
    token: str | None = _setting(None, "token", _optional_text, secret=True)


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """Settings from the client's `tritonize` section (camelCase or snake_case), and what was wrong with it."""
    if raw is None:
        return Settings(), []
    if not isinstance(raw, dict):
        return Settings(), [f"tritonize settings must be an object, got {type(raw).__name__}"]
    spelled, problems = _flatten(raw)
    by_key = {f.metadata["key"]: f for f in fields(Settings)} | {f.name: f for f in fields(Settings)}
    values: dict[str, Any] = {}
    for key, value in spelled.items():
        setting = by_key.get(key)
        if setting is None:
            problems.append(f"tritonize.{key} is not a setting (known: {', '.join(_top_level_keys())})")
            continue
        try:
            values[setting.name] = setting.metadata["check"](value)
        except _Bad as exc:
            problems.append(f"tritonize.{key}: {exc}; using {setting.default!r}")
    return Settings(**values), problems


def _flatten(raw: dict) -> tuple[dict[str, Any], list[str]]:
    """Top-level keys as given, and the `audit` object's keys as `audit.select` / `audit.ignore`."""
    spelled = {key: value for key, value in raw.items() if key != "audit"}
    audit = raw.get("audit")
    if audit is None:
        return spelled, []
    if not isinstance(audit, dict):
        return spelled, ["tritonize.audit must be an object with `select` and `ignore` lists"]
    problems = [
        f"tritonize.audit.{key} is not a setting (known: {', '.join(AUDIT_KEYS)})"
        for key in audit
        if key not in AUDIT_KEYS
    ]
    spelled |= {f"audit.{key}": value for key, value in audit.items() if key in AUDIT_KEYS}
    return spelled, problems


def _top_level_keys() -> list[str]:
    return sorted({f.metadata["key"] for f in fields(Settings) if "." not in f.metadata["key"]} | {"audit"})
