"""The VS Code extension (editors/vscode): its settings held to the language server's, and the TypeScript type
check, lint, unit tests and .vsix build, driven from here so CI runs them (npm from the registry; no VS Code
download: the unit tests run on node's own test runner).
"""

from __future__ import annotations

import os
import posixpath
import re
import sys
import zipfile
from dataclasses import fields
from urllib.parse import urlsplit

import pytest

from lsp_server.settings import PLACEMENTS, Settings, parse_settings
from model_server.backends import BACKENDS
from tests.editors import vscode_build
from verifier.device import DEVICES
from verifier.options import POLICIES

# The extension's own settings, never sent to the server (src/settings.ts, EXTENSION_ONLY_KEYS).
EXTENSION_ONLY = {"interpreter", "trace.server"}
# Settings with a fixed set of values, and the values the server takes.
CHOICES = {"device": DEVICES, "placement": PLACEMENTS, "policy": POLICIES, "backend": BACKENDS}


def contributed() -> dict[str, dict]:
    """The server's settings as package.json contributes them, by the key the server reads."""
    properties = vscode_build.manifest()["contributes"]["configuration"]["properties"]
    keys = {name.removeprefix("tritonize."): prop for name, prop in properties.items()}
    assert set(keys) >= EXTENSION_ONLY
    return {key: prop for key, prop in keys.items() if key not in EXTENSION_ONLY}


def test_every_server_setting_is_contributed_with_the_servers_default():
    by_key = {f.metadata["key"]: f for f in fields(Settings)}
    settings = contributed()
    assert set(settings) == set(by_key) - {"token"}, "the token lives in secret storage, not in settings"
    for key, prop in settings.items():
        default = by_key[key].default
        assert prop["default"] == (list(default) if isinstance(default, tuple) else default), key
        assert prop.get("markdownDescription") or prop.get("description"), f"{key} has no description"
    defaults = {key: prop["default"] for key, prop in settings.items() if "." not in key}
    defaults["audit"] = {"select": settings["audit.select"]["default"], "ignore": settings["audit.ignore"]["default"]}
    assert parse_settings(defaults) == (Settings(), [])


def test_enums_and_bounds_are_the_values_the_server_accepts():
    settings = contributed()
    for key, choices in CHOICES.items():
        assert settings[key]["enum"] == list(choices), key
        assert len(settings[key]["enumDescriptions"]) == len(choices), key
        for value in choices:
            assert parse_settings({key: value})[1] == [], (key, value)
    numbers = [key for key, prop in settings.items() if prop["type"] == "integer"]
    assert numbers == ["samples", "rounds", "trials"]
    for key in numbers:
        low, high = settings[key]["minimum"], settings[key]["maximum"]
        assert parse_settings({key: low})[1] == parse_settings({key: high})[1] == []
        assert parse_settings({key: low - 1})[1] and parse_settings({key: high + 1})[1], key
    target = re.compile(settings["target"]["pattern"])
    for value in ("sm_90", "sm_100a", "sm90", "sm_9"):
        assert bool(target.match(value)) == (parse_settings({"target": value})[1] == []), value


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(vscode_build.MISSING is not None, reason=vscode_build.MISSING or "")
def test_the_extension_type_checks_lints_passes_its_unit_tests_and_packages():
    vscode_build.installed()
    vscode_build.npm("run", "check")
    vscode_build.npm("run", "lint")
    output = vscode_build.npm("test", env={**os.environ, "TRITONIZE_TEST_PYTHON": sys.executable})
    passed = int(re.search(r"^# pass (\d+)$", output, re.MULTILINE).group(1))
    assert re.search(r"^# fail 0$", output, re.MULTILINE) and re.search(r"^# skipped 0$", output, re.MULTILINE)
    assert passed >= 40, output[-3000:]

    vsix = vscode_build.packaged()
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        readme = archive.read("extension/readme.md").decode()
        bundle = archive.read("extension/dist/extension.js").decode()
    assert names == {
        "[Content_Types].xml",
        "extension.vsixmanifest",
        "extension/package.json",
        "extension/readme.md",
        "extension/changelog.md",
        "extension/LICENSE.txt",
        "extension/dist/extension.js",
        "extension/media/icon.png",
    }
    assert "vscode-languageclient" not in re.findall(r"require\(\"([^\"]+)\"\)", bundle), "the client is bundled"
    assert "sourceMappingURL" not in bundle
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert images, "the marketplace README shows a screenshot"
    for image in images:  # an absolute URL of a file in this repository (the marketplace has no other copy)
        url = urlsplit(image)
        path = posixpath.normpath(url.path).split("/raw/HEAD/", 1)[1]
        assert url.scheme == "https" and (vscode_build.ROOT / path).is_file(), image
