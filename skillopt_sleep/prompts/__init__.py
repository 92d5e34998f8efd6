"""Prompt templates (package data, ``$name`` placeholders) and their one renderer."""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template


@cache
def _template(name: str) -> Template:
    text = resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")
    return Template(text)


def render(name: str, **values: object) -> str:
    """Render template ``name`` (``prompts/<name>.md``); a missing value is a KeyError."""
    return _template(name).substitute({k: str(v) for k, v in values.items()}).strip() + "\n"
