"""Arguments from a YAML file, then from flags (flags win), with clear errors for what does not fit."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from training import config


@dataclasses.dataclass
class Args:
    output_dir: str = dataclasses.field(default="", metadata={"help": "where"})
    steps: int = 2
    rate: float = 0.5
    verify: bool = True
    suites: list[str] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError("--steps must be at least 1")


def test_flags_override_the_config_file_and_the_rest_keep_their_defaults(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("output-dir: from-file\nsteps: 7\nsuites: [a, b]\n")
    args = config.parse(Args, ["--config", str(path), "--steps", "9", "--no-verify"], "test")
    assert args == Args(output_dir="from-file", steps=9, rate=0.5, verify=False, suites=["a", "b"])


def test_the_resolved_config_is_printed_and_saved_to_repeat_the_run(tmp_path):
    args = config.parse(Args, ["--output-dir", "out", "--suites", "x", "y", "--rate", "0.25"], "test")
    assert "Args (resolved):" in config.header(args) and "  suites: ['x', 'y']" in config.header(args)
    saved = config.save(args, tmp_path / "run")
    assert yaml.safe_load(saved.read_text())["rate"] == 0.25
    assert config.parse(Args, ["--config", str(saved)], "test") == args


def test_an_unknown_key_in_the_file_is_named_with_the_known_ones(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("stepz: 3\n")
    with pytest.raises(config.ConfigError, match=r"run.yaml: unknown argument\(s\) stepz; known: .*steps"):
        config.parse(Args, ["--config", str(path)], "test")


@pytest.mark.parametrize("text", ["[1, 2]\n", "steps: [\n"])
def test_a_file_that_is_not_a_mapping_is_refused(tmp_path, text):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(config.ConfigError, match=r"run\.yaml"):
        config.parse(Args, ["--config", str(path)], "test")


def test_a_value_the_arguments_refuse_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        config.parse(Args, ["--steps", "0"], "test")
    assert exited.value.code == 2 and "--steps must be at least 1" in capsys.readouterr().err
