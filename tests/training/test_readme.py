"""The README's flags table of each training command is its arguments dataclass: every flag, default and help."""

from __future__ import annotations

import dataclasses
import re

import pytest

from tests.test_project import ROOT
from training import data, eval, grpo, scratch, sft
from training.config import default_of, shown

COMMANDS = {
    "### Data (`python -m training.data`)": data.DataArgs,
    "### A model from scratch (`python -m training.scratch`)": scratch.ScratchArgs,
    "### SFT (`python -m training.sft`)": sft.SFTArgs,
    "### GRPO (`python -m training.grpo`)": grpo.GRPOArgs,
    "### Evaluation (`python -m training.eval`)": eval.EvalArgs,
}


@pytest.mark.parametrize("heading", list(COMMANDS), ids=lambda h: h.split("`")[1])
def test_the_readme_table_lists_every_argument_with_its_default_and_help(heading):
    readme = ROOT.joinpath("README.md").read_text()
    assert heading in readme
    section = readme.split(heading, 1)[1].split("\n#", 1)[0]
    rows = {
        re.match(r"`(--[\w-]+)", cells[0]).group(1): cells[1:]
        for line in section.splitlines()
        if line.startswith("| `--")
        for cells in [[cell.strip() for cell in line.strip("|").split("|")]]
    }
    expected = {}
    for field in dataclasses.fields(COMMANDS[heading]):
        expected["--" + field.name.replace("_", "-")] = [shown(default_of(field)), field.metadata["help"]]
    assert rows == expected
