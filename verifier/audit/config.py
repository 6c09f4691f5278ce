"""Audit settings: defaults, `[tool.tritonize.audit]` in pyproject.toml, then command-line overrides."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from verifier.audit.budget import DEFAULT_SECONDS
from verifier.rules import AUDIT_RULES

TARGET_PATTERN = re.compile(r"^sm_(\d{2,3})a?$")
# NVIDIA's compute capabilities from Volta on: a target outside them is a typo (sm_999), not a GPU to plan for.
CAPABILITIES = (70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121)
KEYS = {"select", "ignore", "target", "compile", "exclude", "compile-timeout", "time-budget"}


class ConfigError(ValueError):
    """A setting that cannot be used, with the file and key that hold it."""


@dataclass(frozen=True)
class AuditConfig:
    """Which rules run and how compile checks are done."""

    select: tuple[str, ...] = ("TRI",)
    ignore: tuple[str, ...] = ()
    target: str = "sm_90"
    compile: bool = True
    exclude: tuple[str, ...] = ()
    compile_timeout: float = 120.0
    time_budget: float = DEFAULT_SECONDS
    source: str | None = field(default=None, compare=False)

    def selects(self, rule: str) -> bool:
        """Ruff-style prefixes: the longest matching prefix in select/ignore wins; ties go to ignore."""
        chosen = max((len(p) for p in self.select if rule.startswith(p)), default=-1)
        dropped = max((len(p) for p in self.ignore if rule.startswith(p)), default=-1)
        return chosen >= 0 and chosen > dropped

    @property
    def capability(self) -> int:
        return int(TARGET_PATTERN.match(self.target).group(1))


def load_config(start: Path) -> AuditConfig:
    """The settings of the nearest pyproject.toml at or above `start` that has `[tool.tritonize.audit]`."""
    directory = start if start.is_dir() else start.parent
    for folder in [directory.resolve(), *directory.resolve().parents]:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{pyproject}: not valid TOML ({exc})") from exc
            section = data.get("tool", {}).get("tritonize", {}).get("audit")
            if section is not None:
                return from_mapping(section, f"{pyproject} [tool.tritonize.audit]")
    return AuditConfig()


def from_mapping(section: object, where: str) -> AuditConfig:
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: expected a table")
    unknown = sorted(set(section) - KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})")
    config = AuditConfig(source=where)
    for key in ("select", "ignore", "exclude"):
        if key in section:
            value = section[key]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: {key} must be a list of strings")
            config = replace(config, **{key: tuple(value)})
    if "target" in section:
        config = replace(config, target=str(section["target"]))
    if "compile" in section:
        if not isinstance(section["compile"], bool):
            raise ConfigError(f"{where}: compile must be true or false")
        config = replace(config, compile=section["compile"])
    for key, attribute in (("compile-timeout", "compile_timeout"), ("time-budget", "time_budget")):
        if key in section:
            seconds = section[key]
            if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds <= 0:
                raise ConfigError(f"{where}: {key} must be a positive number of seconds")
            config = replace(config, **{attribute: float(seconds)})
    validate(config, where)
    return config


def validate(config: AuditConfig, where: str) -> None:
    """Reject rule codes that match no rule and targets Triton cannot compile for."""
    for key in ("select", "ignore"):
        for prefix in getattr(config, key):
            if not any(rule.startswith(prefix) for rule in AUDIT_RULES):
                raise ConfigError(f"{where}: {key} has {prefix!r}, which matches no rule (rules are TRI###)")
    matched = TARGET_PATTERN.match(config.target)
    if not matched or int(matched.group(1)) not in CAPABILITIES:
        known = ", ".join(f"sm_{c}" for c in CAPABILITIES)
        raise ConfigError(f"{where}: target {config.target!r} is not a CUDA target ({known})")
