"""The project's own promises: CI runs exactly the README's test command, and every rule is documented."""

from __future__ import annotations

import re
from pathlib import Path

from verifier.audit.catalog import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_RULES = {"TRI351", "TRI352", "TRI353", "TRI354", "TRI355", "TRI356", "TRI357"}


def readme_commands() -> list[str]:
    quickstart = ROOT.joinpath("README.md").read_text().split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", quickstart)


def test_quickstart_has_two_commands_and_ci_runs_the_test_one():
    setup_and_run, setup_and_test = readme_commands()
    main_job = re.search(r"tritonize convert (examples/\S+\.py)$", setup_and_run)
    assert main_job is not None and ROOT.joinpath(main_job.group(1)).is_file()
    assert "pytest" in setup_and_test
    ci_lines = [line for line in ROOT.joinpath(".ci/run").read_text().splitlines() if line and line[0] not in "#"]
    assert ci_lines[-1] == setup_and_test


def test_every_rule_has_one_row_in_the_rule_table():
    table = ROOT.joinpath("docs/RULES.md").read_text()
    documented = re.findall(r"^\| (TRI\d{3}) \|", table, flags=re.MULTILINE)
    assert sorted(documented) == sorted(set(ALL_RULES) | RUNTIME_RULES)


def test_the_rule_table_gives_each_rules_default_severity():
    table = ROOT.joinpath("docs/RULES.md").read_text()
    rows = dict(re.findall(r"^\| (TRI\d{3}) \| [\w-]+ \| ([a-z /]+) \|", table, flags=re.MULTILINE))
    for rule in ALL_RULES.values():
        assert rows[rule.id].split(" / ")[0] == rule.severity, rule.id
