"""The pinned real clients are where the real-client tests expect them."""

from __future__ import annotations

import subprocess

import pytest

from tests.real_clients import client_env, real_cli


@pytest.mark.parametrize(("name", "version"), [("claude", "2.1.328"), ("codex", "0.169.0")])
def test_real_cli_reports_the_pinned_version(name, version, tmp_path):
    out = subprocess.run([real_cli(name), "--version"], capture_output=True, text=True, timeout=60,
                         env=client_env(tmp_path))
    assert out.returncode == 0, out.stderr
    assert version in out.stdout
