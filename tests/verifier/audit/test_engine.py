"""The audit engine: selection, noqa, config files, directories, and never crashing on broken input."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from tests.verifier.audit.helpers import HEADER, audit
from verifier.audit.config import AuditConfig, ConfigError, load_config
from verifier.audit.engine import audit_source, python_files

ROOT = Path(__file__).resolve().parents[3]
UNMASKED = """
@triton.jit
def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs)){noqa}
"""
REAL_FILES = sorted([ROOT / "examples/softmax_triton.py", *FIXTURES.joinpath("candidates").glob("*.py")])


def test_noqa_with_codes_suppresses_only_those_codes():
    assert {f.rule for f in audit(UNMASKED.format(noqa=""))} == {"TRI201"}
    assert not audit(UNMASKED.format(noqa="  # noqa: TRI201"))
    assert not audit(UNMASKED.format(noqa="  # NOQA:TRI101,TRI201"))
    assert {f.rule for f in audit(UNMASKED.format(noqa="  # noqa: TRI101"))} == {"TRI201"}
    assert not audit(UNMASKED.format(noqa="  # noqa"))


def test_select_and_ignore_use_prefixes_and_the_longest_prefix_wins():
    body = UNMASKED.format(noqa="").replace("tl.arange(0, BLOCK)", "tl.arange(0, 100)")
    assert {f.rule for f in audit(body)} == {"TRI101", "TRI201"}
    assert {f.rule for f in audit(body, select=("TRI1",))} == {"TRI101"}
    assert {f.rule for f in audit(body, ignore=("TRI2",))} == {"TRI101"}
    assert {f.rule for f in audit(body, ignore=("TRI2",), select=("TRI", "TRI201"))} == {"TRI101", "TRI201"}


def test_config_is_read_from_the_nearest_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tritonize.audit]\nselect = ["TRI1", "TRI2"]\nignore = ["TRI203"]\ntarget = "sm_80"\ncompile = false\n'
    )
    nested = tmp_path / "pkg" / "ops"
    nested.mkdir(parents=True)
    config = load_config(nested)
    assert (config.select, config.ignore, config.target, config.compile) == (
        ("TRI1", "TRI2"),
        ("TRI203",),
        "sm_80",
        False,
    )
    assert config.capability == 80


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        ('selekt = ["TRI1"]', "unknown key 'selekt'"),
        ('select = "TRI1"', "select must be a list of strings"),
        ('select = ["XYZ1"]', "matches no rule"),
        ('target = "gfx942"', "not a CUDA target"),
        ('compile = "yes"', "compile must be true or false"),
        ("compile-timeout = -1", "compile-timeout must be a positive number"),
    ],
)
def test_bad_config_names_the_file_and_the_key(tmp_path, body, complaint):
    (tmp_path / "pyproject.toml").write_text(f"[tool.tritonize.audit]\n{body}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path)
    assert complaint in str(raised.value) and "pyproject.toml" in str(raised.value)


def test_directories_yield_triton_files_and_skip_hidden_virtualenvs_and_excluded(tmp_path):
    for name in ["a/kernels.py", "a/plain.py", ".venv/lib/k.py", "a/gen/k.py", "a/notes.txt"]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("import triton\n" if "plain" not in name else "x = 1\n")
    found = python_files([str(tmp_path)], AuditConfig(exclude=("*/gen/*",)))
    assert [p.relative_to(tmp_path).as_posix() for p in found] == ["a/kernels.py"]
    with pytest.raises(FileNotFoundError, match=r"missing\.py"):
        python_files([str(tmp_path / "missing.py")], AuditConfig())


def test_syntax_error_is_one_finding_at_the_error():
    [finding] = audit_source(HEADER + "@triton.jit\ndef k(x_ptr:\n    pass\n")
    assert finding.rule == "TRI001" and finding.severity == "error" and finding.line == 6


def test_non_utf8_bytes_are_one_finding_at_the_bad_byte():
    [finding] = audit_source(b"import triton\nx = '\xff'\n")
    assert finding.rule == "TRI002" and (finding.line, finding.column) == (2, 6)


def test_huge_and_deeply_nested_inputs_do_not_crash():
    assert audit_source("x = " + "(" * 5000 + "1" + ")" * 5000)[0].rule == "TRI001"
    kernel = UNMASKED.format(noqa="")
    big = HEADER + "\n".join(kernel.replace("def copy", f"def copy{i}") for i in range(300))
    assert len(audit_source(big)) == 600


def test_columns_count_characters_not_utf8_bytes():
    body = (
        UNMASKED.format(noqa="")
        .replace("    offs = ", "    é = 1\n    offs = ")
        .replace("tl.store(", "ö = 0; tl.store(")
    )
    [finding] = [f for f in audit(body) if f.message.startswith("tl.store")]
    assert finding.column == 12


def _mutate(source: str, seed: int) -> str:
    rng = random.Random(seed)
    text = source[: rng.randrange(len(source) + 1)] if rng.random() < 0.5 else source
    for _ in range(rng.randrange(1, 6)):
        at = rng.randrange(len(text) + 1)
        choice = rng.random()
        if choice < 0.4:
            text = text[:at] + text[at + rng.randrange(1, 20) :]
        elif choice < 0.8:
            text = (
                text[:at] + rng.choice(["(", ")", ":", "tl.", "\n    ", "[", ",", "BLOCK", " mask=", "#"]) + text[at:]
            )
        else:
            other = source[rng.randrange(len(source)) :][:40]
            text = text[:at] + other + text[at:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file=st.sampled_from(REAL_FILES), seed=st.integers(0, 2**32), as_bytes=st.booleans())
def test_fuzzed_real_files_never_raise_and_never_hit_an_internal_error(file, seed, as_bytes):
    text = _mutate(file.read_text(), seed)
    source = text.encode("utf-8", errors="surrogateescape") + (b"\xfe" if seed % 7 == 0 else b"") if as_bytes else text
    findings = audit_source(source, str(file))
    assert not [f for f in findings if f.rule == "TRI000"]
    assert all(f.line >= 1 and f.column >= 1 for f in findings)
