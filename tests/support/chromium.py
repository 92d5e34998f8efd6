"""Headless Chromium for tests that must see a page rendered: ``screenshot(page, png)``.

``chromium_or_skip()`` skips when no Chromium is installed, or fails under
``SKILLOPT_REQUIRE_CHROMIUM=1`` (CI installs it: ``apt-get install chromium``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_or_skip() -> str:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    message = "no Chromium on PATH (install it: apt-get install -y chromium)"
    if os.environ.get("SKILLOPT_REQUIRE_CHROMIUM") == "1":
        pytest.fail(message + "; SKILLOPT_REQUIRE_CHROMIUM=1 makes this a failure")
    pytest.skip(message)


def screenshot(
    binary: str, page: Path, png: Path, width: int = 900, height: int = 1000, timeout: float = 90.0
) -> bytes:
    """Render ``page`` (a local file) headless and return the PNG bytes. A throwaway profile and
    HOME; no network services; the whole process group is killed if it hangs."""
    with tempfile.TemporaryDirectory(prefix="skillopt-chromium-") as scratch:
        args = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--user-data-dir={Path(scratch) / 'profile'}",
            f"--screenshot={png}",
            f"--window-size={width},{height}",
            page.resolve().as_uri(),
        ]
        env = {"PATH": os.environ.get("PATH", ""), "HOME": scratch, "TMPDIR": scratch}
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"chromium did not finish within {timeout:.0f} s")
        finally:
            try:  # helpers (zygote, crashpad) that outlived the browser
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.returncode != 0 or not png.is_file():
            tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
            pytest.fail(f"chromium exited {proc.returncode} without a screenshot: {' | '.join(tail)}")
        return png.read_bytes()
