"""Where tritonize keeps files between runs, and that the test run keeps them in its temporary home."""

from __future__ import annotations

from pathlib import Path

from lsp_server.local_server import LocalServer
from tests.conftest import temporary_home
from verifier.audit.compile_check import default_cache_dir
from verifier.cache import cache_dir


def test_tritonize_cache_wins_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TRITONIZE_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("TRITONIZE_CACHE")
    assert cache_dir() == tmp_path / "xdg" / "tritonize"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == tmp_path / "home" / ".cache" / "tritonize"


def test_caches_and_logs_of_this_test_run_stay_in_its_temporary_home():
    home = temporary_home()
    for place in (cache_dir(), default_cache_dir(), LocalServer().log_dir, Path.home()):
        assert place.is_relative_to(home), place
