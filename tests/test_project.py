"""The project's own promises: CI runs exactly the README's test command, and every rule is registered once
and documented."""

from __future__ import annotations

import re
from pathlib import Path

from verifier.rules import RULES

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("verifier", "model_server", "lsp_server")


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
    documented = re.findall(r"^\| <a id=\"tri(\d{3})\"></a>TRI\1 \|", table, flags=re.MULTILINE)
    assert sorted(f"TRI{number}" for number in documented) == sorted(RULES), "one row per rule, with its anchor"


def test_the_rule_table_gives_each_rules_name_severity_and_whether_it_rejects():
    table = ROOT.joinpath("docs/RULES.md").read_text()
    row = r"^\| <a id=\"tri\d{3}\"></a>(TRI\d{3}) \| ([\w-]+) \| ([a-z /()]+) \|"
    rows = re.findall(row, table, flags=re.MULTILINE)
    assert len(rows) == len(RULES)
    for rule_id, name, severity in rows:
        rule = RULES[rule_id]
        assert name == rule.name, rule_id
        assert severity.split(" ")[0] == rule.severity, rule_id
        assert ("(rejects)" in severity) == rule.rejects, rule_id


def test_every_rule_id_the_code_reports_is_registered():
    """Rule ids are written at the places that report them; each must be one the catalog knows."""
    used = set()
    for package in PACKAGES:
        for path in ROOT.joinpath(package).rglob("*.py"):
            used |= set(re.findall(r"[\"'](TRI\d{3})[\"']", path.read_text()))
    assert used, "no rule ids found: the pattern is wrong"
    assert used <= set(RULES), sorted(used - set(RULES))
