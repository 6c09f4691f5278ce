"""`tritonize audit` end to end through the real console entry point: formats, exit codes, config, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BROKEN = textwrap.dedent(
    """
    import triton
    import triton.language as tl


    @triton.jit
    def k(x_ptr, n):
        offs = tl.arange(0, n)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs))


    @triton.jit
    def rowmax(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr, tl.max(x, axis=0))  # noqa: TRI999
    """
)


ROOT = Path(__file__).resolve().parents[3]


def tritonize(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "verifier", "audit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "broken.py").write_text(BROKEN)
    (tmp_path / "kernels" / "clean.py").write_text("import triton\n")
    (tmp_path / "notes.txt").write_text("import triton\n")
    return tmp_path


def test_json_lists_every_finding_with_the_contract_keys_and_exits_1(project):
    run = tritonize("kernels", "--format", "json", "--no-compile", cwd=project)
    assert run.returncode == 1, run.stderr
    findings = json.loads(run.stdout)
    assert {f["rule"] for f in findings} == {"TRI102", "TRI202"}
    for finding in findings:
        assert finding["path"] == "kernels/broken.py"
        assert set(finding) - {"fix"} == {
            "path", "rule", "severity", "line", "column", "end_line", "end_column", "message"
        }  # fmt: skip
    tri102 = next(f for f in findings if f["rule"] == "TRI102")
    assert (tri102["line"], tri102["column"], tri102["end_column"]) == (8, 25, 26)
    assert tri102["fix"]["edits"][0]["text"] == ": tl.constexpr"


def test_text_reads_like_ruff_and_a_clean_tree_exits_0(project):
    run = tritonize("kernels", "--no-compile", cwd=project)
    lines = run.stdout.splitlines()
    assert lines[0].startswith("kernels/broken.py:8:25: TRI102 [*] [error] tl.arange bound `n`")
    assert lines[-1].startswith("Found 2 errors, 0 warnings, 0 info in 2 files.")
    run = tritonize("kernels/clean.py", "--no-compile", cwd=project)
    assert (run.returncode, run.stdout.strip()) == (0, "All checks passed (1 file).")


def test_select_ignore_and_pyproject_settings(project):
    run = tritonize("kernels", "--format", "json", "--no-compile", "--ignore", "TRI1", cwd=project)
    assert {f["rule"] for f in json.loads(run.stdout)} == {"TRI202"}
    (project / "pyproject.toml").write_text('[tool.tritonize.audit]\nignore = ["TRI202"]\ncompile = false\n')
    run = tritonize("kernels", "--format", "json", cwd=project)
    assert {f["rule"] for f in json.loads(run.stdout)} == {"TRI102"}
    run = tritonize("kernels", "--format", "json", "--ignore", "TRI1,TRI2", cwd=project)
    assert (run.returncode, json.loads(run.stdout)) == (0, [])
    run = tritonize("kernels", "--format", "json", "--ignore", "TRI102", cwd=project)
    assert {f["rule"] for f in json.loads(run.stdout)} == {"TRI202"}, "--ignore replaces the file's ignore list"


def test_sarif_is_a_valid_2_1_0_log_with_relative_locations_and_fixes(project):
    run = tritonize("kernels", "--format", "sarif", "--no-compile", cwd=project)
    log = json.loads(run.stdout)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    [sarif_run] = log["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["TRI102", "TRI202"]
    for result in sarif_run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == "error" and result["message"]["text"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {"uri": "kernels/broken.py", "uriBaseId": "%SRCROOT%"}
        assert location["region"]["startLine"] >= 1 and location["region"]["startColumn"] >= 1
        replacement = result["fixes"][0]["artifactChanges"][0]["replacements"][0]
        assert replacement["insertedContent"]["text"] and replacement["deletedRegion"]["startLine"] >= 1


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["missing.py"], "missing.py: no such file or directory"),
        (["notes.txt"], "notes.txt: not a Python file"),
        (["kernels", "--select", "XYZ"], "matches no rule"),
        (["kernels", "--target", "sm_9x"], "not a CUDA target"),
        (["kernels", "--target", "sm_999"], "target 'sm_999' is not a CUDA target (sm_70, sm_72, sm_75, sm_80"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_line(project, args, complaint):
    run = tritonize(*args, "--no-compile", cwd=project)
    assert run.returncode == 2 and run.stdout == ""
    assert complaint in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_broken_config_file_exits_2(project):
    (project / "pyproject.toml").write_text("[tool.tritonize.audit\n")
    run = tritonize("kernels", cwd=project)
    assert run.returncode == 2 and "not valid TOML" in run.stderr


def test_candidate_files_get_the_anti_hacking_rules(tmp_path):
    candidate = ROOT / "tests" / "fixtures" / "zoo" / "functional_relu.py"
    (tmp_path / "cand.py").write_text(candidate.read_text())
    run = tritonize("cand.py", "--format", "json", "--no-compile", cwd=tmp_path)
    assert "TRI302" in {f["rule"] for f in json.loads(run.stdout)}


def test_fix_applies_every_machine_applicable_fix_in_place_and_reports_what_remains(project):
    """Both errors of BROKEN carry a fix (TRI102 `: tl.constexpr`, TRI202 `other=float("-inf")`); after
    `--fix` the file audits clean, keeps its CRLF line endings and its mode, and a second run changes nothing."""
    path = project / "kernels" / "broken.py"
    path.write_bytes(BROKEN.replace("\n", "\r\n").encode())
    path.chmod(0o640)
    run = tritonize("kernels", "--fix", "--no-compile", cwd=project)
    assert run.returncode == 0, run.stdout
    assert "applied 2 fix(es) in 1 file(s)" in run.stderr
    assert run.stdout.strip() == "All checks passed (2 files)."
    repaired = path.read_bytes().decode()
    assert "def k(x_ptr, n: tl.constexpr):\r\n" in repaired
    assert 'x = tl.load(x_ptr + offs, mask=offs < n, other=float("-inf"))\r\n' in repaired
    assert "\n" not in repaired.replace("\r\n", "")
    assert path.stat().st_mode & 0o777 == 0o640
    again = tritonize("kernels", "--fix", "--no-compile", cwd=project)
    assert "applied 0 fix(es) in 0 file(s)" in again.stderr and path.read_bytes().decode() == repaired
    assert [p.name for p in (project / "kernels").iterdir() if p.name.startswith(".")] == []
