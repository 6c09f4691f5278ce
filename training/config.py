"""Arguments of the training commands: a dataclass per command, filled from `--config FILE.yaml`, then from flags
(flags win), printed as a resolved-config header and saved in the run directory.

Each field becomes a flag (`output_dir` -> `--output-dir`); its `metadata["help"]` is the flag's help. Types:
str, int, float, bool (`--x` / `--no-x`) and list[str] (`--x A B`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

T = TypeVar("T")
CONFIG_FILE = "config.yaml"


class ConfigError(Exception):
    """A config file or flag that cannot be used; the message names it."""


def parse(cls: type[T], argv: list[str] | None, description: str, prog: str | None = None) -> T:
    """`cls` filled from the YAML file of `--config` (if any) and then the flags given."""
    parser = argparse.ArgumentParser(prog=prog, description=description, argument_default=argparse.SUPPRESS)
    parser.add_argument("--config", metavar="FILE.yaml", help="read these arguments from a YAML file (flags win)")
    for field in dataclasses.fields(cls):
        _add_flag(parser, field)
    given = vars(parser.parse_args(argv))
    values = _read_config(Path(given.pop("config")), cls) if "config" in given else {}
    values.update(given)
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits


def main(
    args_class: type[T],
    run: Callable[[T], int | None],
    argv: list[str] | None,
    doc: str,
    prog: str,
    refused: tuple[type[Exception], ...] = (),
) -> int:
    """A training command's `main`: its arguments from flags and `--config`, then `run` (its exit code; None is 0).
    A config file that cannot be used, or an error of a `refused` type from `run`, is one line naming it on stderr
    (after the command's name) and exit code 2."""
    name = prog.removeprefix("python -m ")
    try:
        args = parse(args_class, argv, doc.splitlines()[0], prog=prog)
    except ConfigError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    try:
        return run(args) or 0
    except refused as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2


def header(args: object) -> str:
    """The resolved arguments, one `name: value` line each, under a title line."""
    lines = [f"{type(args).__name__} (resolved):"]
    lines += [f"  {name}: {value!r}" for name, value in dataclasses.asdict(args).items()]
    return "\n".join(lines)


def save(args: object, directory: Path) -> Path:
    """Write the resolved arguments as `config.yaml` in `directory` (a re-run with `--config` repeats the run)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CONFIG_FILE
    path.write_text(yaml.safe_dump(dataclasses.asdict(args), sort_keys=False))
    return path


def announce(args: object) -> None:
    print(header(args), file=sys.stderr, flush=True)


def _add_flag(parser: argparse.ArgumentParser, field: dataclasses.Field) -> None:
    flag = "--" + field.name.replace("_", "-")
    help_text = f"{field.metadata.get('help', '')} (default: {shown(default_of(field))})".replace("%", "%%")
    kind = str(field.type)
    if kind == "bool":
        parser.add_argument(flag, dest=field.name, action=argparse.BooleanOptionalAction, help=help_text)
    elif kind.startswith("list["):
        parser.add_argument(flag, dest=field.name, nargs="*", metavar="VALUE", help=help_text)
    else:
        types = {"str": str, "int": int, "float": float}
        if kind not in types:
            raise TypeError(f"{field.name}: unsupported argument type {kind}")
        parser.add_argument(flag, dest=field.name, type=types[kind], metavar=field.name.upper(), help=help_text)


def default_of(field: dataclasses.Field) -> object:
    """A field's default value, made by its factory where it has one."""
    return field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default


def shown(value: object) -> str:
    """A default as `--help` and the README show it: on/off, space-separated lists, `none` for nothing."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return " ".join(map(str, value)) or "none"
    return str(value) if value != "" else "none"


def _read_config(path: Path, cls: type) -> dict[str, Any]:
    try:
        values = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: expected a mapping of argument names to values")
    values = {str(key).replace("-", "_"): value for key, value in values.items()}
    known = {field.name for field in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown argument(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return values
