"""The mechanisms by name (scheduler/registry.py): which one an OS gets by default."""

from __future__ import annotations

from skillopt_sleep.scheduler import default_via


def test_default_via_follows_the_os() -> None:
    assert default_via("linux", systemd_available=lambda: True) == "systemd"
    assert default_via("linux", systemd_available=lambda: False) == "cron"
    assert default_via("darwin") == "launchd"
    assert default_via("win32") == "schtasks"
