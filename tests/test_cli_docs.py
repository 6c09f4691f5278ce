"""The README documents each command from its parser: the same options, spelt as `--help` spells them, with the
same defaults. The parsers are the one source; this test fails as soon as the README drifts from them."""

from __future__ import annotations

import argparse
import re

import pytest

import lsp_server.cli
import model_server.cli
import verifier.cli
from tests.test_project import ROOT

COMMANDS = ("convert", "serve", "verify", "audit", "rule", "lsp")
HELP_DEFAULT = re.compile(r"\(default: (.+)\)$")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parts = [verifier.cli.add_parser, model_server.cli.add_parser, lsp_server.cli.add_parser]
    parser = verifier.cli.build_parser(parts)
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def readme_section(command: str) -> tuple[str, str]:
    """The heading (`tritonize convert TASK`) and text of the README's section on `command`."""
    readme = ROOT.joinpath("README.md").read_text()
    match = re.search(rf"^## `(tritonize {command}\b[^`]*)`\n(.*?)(?=^## |\Z)", readme, flags=re.MULTILINE | re.DOTALL)
    assert match is not None, f"README.md has no section `## tritonize {command}`"
    return match.group(1), match.group(2)


def option_rows(section: str) -> list[tuple[list[str], str]]:
    """Each row of the section's option table: the options as written (`--trials N`), and the default cell."""
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `--"):
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        assert len(cells) == 3, f"not an `| option | default | meaning |` row: {line}"
        forms = [form.replace("\\|", "|") for form in re.findall(r"`([^`]+)`", cells[0])]
        rows.append((forms, cells[1].replace("`", "").replace("\\|", "|")))
    return rows


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The parser's long options (`--no-compile` included), without --help."""
    return {
        name: action
        for name, action in parser._option_string_actions.items()
        if name.startswith("--") and name != "--help"
    }


def written_as(parser: argparse.ArgumentParser, action: argparse.Action, name: str) -> str:
    """`name` as `--help` writes it: `--trials N`, `--device auto|cuda|cpu`, `--json`."""
    if action.nargs == 0:
        return name
    argument = parser._get_formatter()._format_args(action, action.dest.upper())
    if action.metavar is None and action.choices is not None:
        argument = argument.strip("{}").replace(",", "|")
    return f"{name} {argument}"


def documented_default(action: argparse.Action) -> str:
    """The default as the README's table must give it: the parser's value, `off` for a flag, and for an option
    whose default is worked out when it runs, the `(default: ...)` its help ends with (else `none`)."""
    stated = HELP_DEFAULT.search(action.help or "")
    if isinstance(action, argparse._StoreTrueAction):
        return "off"
    if action.default is None:
        return stated.group(1) if stated else "none"
    value = f"{action.default:g}" if isinstance(action.default, float) else str(action.default)
    assert stated is None or stated.group(1) == value, f"{action.option_strings}: help says {stated.group(1)}"
    return value


@pytest.mark.parametrize("command", COMMANDS)
def test_the_readme_table_of_each_command_lists_exactly_its_options_with_their_defaults(command):
    parser = subcommands()[command]
    _, section = readme_section(command)
    known = options(parser)
    documented: set[str] = set()
    for forms, default in option_rows(section):
        for form in forms:
            name = form.split(" ")[0]
            assert name in known, f"README.md, `tritonize {command}`: {name} is not an option of the command"
            action = known[name]
            assert form == written_as(parser, action, name), f"README.md, `tritonize {command}`: {form}"
            assert default == documented_default(action), f"README.md, `tritonize {command}`: default of {name}"
            documented.add(name)
    missing = sorted(set(known) - documented)
    assert not missing, f"README.md, `tritonize {command}`: no row for {', '.join(missing)}"


@pytest.mark.parametrize("command", COMMANDS)
def test_the_readme_heading_names_the_positional_arguments(command):
    parser = subcommands()[command]
    heading, _ = readme_section(command)
    positionals = [
        f"{action.metavar or action.dest}..." if action.nargs == "+" else action.metavar or action.dest
        for action in parser._actions
        if not action.option_strings
    ]
    assert heading == " ".join(["tritonize", command, *positionals])


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_the_readme_section_mentions_exists(command):
    """Options written as code (`--policy hybrid`) or in a `tritonize` command line. Prose may point at another
    command's option (the editor settings name `serve`'s), never at one that no command has."""
    every = set().union(*(options(parser) for parser in subcommands().values()))
    _, section = readme_section(command)
    code = re.findall(r"`([^`\n]+)`", section) + re.findall(r"^tritonize .*$", section, flags=re.MULTILINE)
    mentioned = {
        option
        for text in code
        if text.startswith(("--", "tritonize "))
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", text)
    }
    assert mentioned or not options(subcommands()[command]), "the pattern is wrong"
    assert not mentioned - every, f"README.md, `tritonize {command}`: {sorted(mentioned - every)}"
