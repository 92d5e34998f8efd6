"""A person using the real OpenCode CLI in a throwaway HOME, against a fake model on 127.0.0.1:
the TUI through tmux, and ``opencode run``. Shared by ``scripts/record_opencode.py`` and the
``real_clis`` test of the OpenCode source.

The fake is a custom ``@ai-sdk/openai-compatible`` provider (bundled in the CLI: nothing is
fetched from npm) declared in the throwaway ``opencode.json``; the update check, the models.dev
fetch, default plugins, LSP downloads and sharing are switched off, and a proxy on a closed port
catches anything that still tries the internet.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.support.chat_server import FakeChat
from tests.support.cli_run import run_cli
from tests.support.tui import Tmux, settle, wait_until

MODEL = "fake-model"
AGENTS_MARKER = "USER-AGENTS-MD-MARKER"


def opencode_env(home: Path, fake: FakeChat) -> dict[str, str]:
    """A throwaway environment whose only provider is the fake, with every fetch switched off."""
    config = home / ".config" / "opencode"
    config.mkdir(parents=True, exist_ok=True)
    settings = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"fake/{MODEL}",
        "small_model": f"fake/{MODEL}",
        "enabled_providers": ["fake"],
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": fake.base_url, "apiKey": fake.key},
                "models": {MODEL: {"name": "Fake Model", "tool_call": True}},
            }
        },
    }
    (config / "opencode.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    # the user's own instructions: injected into the system prompt, never a prompt
    (config / "AGENTS.md").write_text(f"# {AGENTS_MARKER}\nAlways answer briefly.\n", encoding="utf-8")
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }


def data_dir(home: Path) -> Path:
    return home / ".local" / "share" / "opencode"


def database(home: Path) -> Path:
    return data_dir(home) / "opencode.db"


class OpenCodeUser:
    """Drives ``cli`` in ``project`` with HOME ``home``; ``fake`` answers every model call."""

    def __init__(self, cli: str, project: Path, home: Path, fake: FakeChat, tmux_name: str = "skillopt-rec-opencode"):
        self.cli = cli
        self.project = project
        self.home = home
        self.fake = fake
        self.env = opencode_env(home, fake)
        self.tmux_name = tmux_name

    def tui(self, typed: list[str], *args: str) -> None:
        """One TUI run: type each prompt, wait until the model is done with it, quit (ctrl+c).
        A line starting with ``!`` is a shell command the TUI runs itself, without the model."""
        tui = Tmux(self.tmux_name, [self.cli, *args], self.project, self.env)
        try:
            wait_until("the opencode prompt", lambda: "ctrl+p" in tui.screen(), 60)
            time.sleep(2)
            for prompt in typed:
                before = len(self.fake.requests)
                if prompt.startswith("!"):  # "!" turns the input into a shell prompt and is not shown
                    tui.keys("!", literal=True)
                    time.sleep(1)
                    tui.type_line(prompt[1:])
                    time.sleep(3)
                    continue
                tui.type_line(prompt)

                def called(before: int = before) -> bool:
                    return len(self.fake.requests) > before

                try:
                    wait_until("a model call", called, 20)
                except TimeoutError:
                    # on a loaded machine the TUI may take the Enter as part of the typing: press it again
                    tui.keys("Enter")
                    wait_until("a model call", called)
                settle(self.fake, quiet=4.0)
            tui.keys("C-c")
            wait_until("opencode to exit", lambda: not tui.alive(), 30)
        finally:
            tui.kill()

    def run(self, *args: str) -> None:
        """``opencode run ARGS`` (headless), which must succeed."""
        run_cli([self.cli, "run", *args], self.project, self.env)

    def version(self) -> str:
        out = subprocess.run([self.cli, "--version"], env=self.env, capture_output=True, text=True, timeout=60)
        return out.stdout.strip()
