"""The `tritonize` settings section: both spellings, checked values, and every problem named."""

from __future__ import annotations

from lsp_server.settings import Settings, parse_settings


def test_camel_case_and_nested_audit_settings_are_read():
    raw = {"serverUrl": "http://gpu-box:8765/", "autoStart": False, "samples": 8, "audit": {"ignore": ["TRI5"]}}
    settings, problems = parse_settings(raw)
    assert problems == []
    assert (settings.server_url, settings.auto_start, settings.samples, settings.ignore) == (
        "http://gpu-box:8765",
        False,
        8,
        ("TRI5",),
    )


def test_each_bad_value_is_named_and_falls_back_to_its_default():
    raw = {"samples": True, "target": "sm90", "audit": {"selct": ["TRI2"]}, "serverUrl": "gpu-box:8765"}
    settings, problems = parse_settings(raw)
    assert settings == Settings()
    assert sorted(problems) == [
        "tritonize.audit.selct is not a setting (known: ignore, select)",
        "tritonize.samples: expected a whole number from 1 to 64; using 4",
        "tritonize.serverUrl: expected an http:// or https:// URL; using 'http://127.0.0.1:8765'",
        "tritonize.target: expected a CUDA architecture such as sm_90; using None",
    ]
    assert parse_settings(["not", "an", "object"])[1] == ["tritonize settings must be an object, got list"]


def test_the_verification_policy_is_strict_unless_set_to_hybrid():
    assert Settings().policy == "strict"
    assert parse_settings({"policy": "hybrid"})[0].policy == "hybrid"
    settings, problems = parse_settings({"policy": "lenient"})
    assert settings.policy == "strict"
    assert problems == ["tritonize.policy: expected one of strict, hybrid; using 'strict'"]


def test_the_dynamic_dimensions_are_read_normalised_and_a_bad_spec_is_named():
    assert Settings().dynamic is None
    assert parse_settings({"dynamic": " x:0, 1 "})[0].dynamic == "x:0,1"
    assert parse_settings({"dynamic": ""})[0].dynamic is None
    settings, problems = parse_settings({"dynamic": "x:"})
    assert settings.dynamic is None
    assert problems == [
        "tritonize.dynamic: dynamic spec item 'x:' is neither a dimension (`0`, `-2`) nor an argument's dimension "
        "(`x:0`); using None"
    ]
