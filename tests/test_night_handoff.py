"""A handoff night's part of the night (night_handoff.py): where its files go, the stop that waits
for answers, and the prompts the person's agent works through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skillopt_sleep.backends.base import AnswerPending, Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.handoff import HandoffBackend
from skillopt_sleep.backends.models import Models
from skillopt_sleep.backends.sim.backend import SimBackend
from skillopt_sleep.config import Config
from skillopt_sleep.night_handoff import handoff_in_project, handoffs, stop_for_answers, waiting_prompts
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.types import NightReport


def models_of(target: Any, optimizer: Any = None) -> Models:
    return Models(Client(target), Client(optimizer or target, role="optimizer"))


def ask(backend: HandoffBackend, user: str) -> str:
    """Make one call that has no answer yet; its key."""
    with pytest.raises(AnswerPending) as info:
        backend.complete(Request(purpose="attempt", system="", user=user))
    return info.value.key


def report() -> NightReport:
    return NightReport(night_id="n1", project="/p", mode="run", status="running")


def test_a_handoff_night_keeps_its_files_in_the_project(tmp_path: Path):
    for config in (Config(backend="handoff"), Config(backend="sim", optimizer_backend="Handoff")):
        moved = handoff_in_project(config, tmp_path)
        assert moved.models.backend_options["handoff"]["dir"] == str(project_dirs(tmp_path).root / "handoff")
        assert "handoff" not in config.models.backend_options, "the caller's config stays as it was"


def test_a_folder_the_config_names_is_kept(tmp_path: Path):
    config = Config(backend="handoff", backend_options={"handoff": {"dir": "/elsewhere"}, "sim": {"seed": 1}})
    moved = handoff_in_project(config, tmp_path)
    assert moved.models.backend_options == {"handoff": {"dir": "/elsewhere"}, "sim": {"seed": 1}}


def test_a_night_without_handoff_is_left_alone(tmp_path: Path):
    config = Config(backend="sim")
    assert handoff_in_project(config, tmp_path) is config


def test_a_shared_handoff_backend_is_named_once_and_others_not_at_all(tmp_path: Path):
    shared = HandoffBackend(tmp_path)
    assert handoffs(models_of(shared)) == [shared]
    assert handoffs(models_of(SimBackend(), shared)) == [shared]
    assert handoffs(models_of(SimBackend())) == []


def test_a_night_stopped_for_answers_says_how_many_wait_and_where(tmp_path: Path):
    backend = HandoffBackend(tmp_path)
    ask(backend, "one")
    ask(backend, "two")
    night = report()
    message = stop_for_answers(night, models_of(backend))
    assert message.startswith(f"2 prompt(s) wait in {tmp_path / 'prompts'}: answer each in answers/<same name>")
    assert night.status == "handoff" and night.finished is not None
    assert night.notes == [f"stopped for answers: 2 prompt(s) wait in {tmp_path / 'prompts'}"]
    assert (tmp_path / "rounds.jsonl").is_file(), "the stop is counted as a round"


def test_the_waiting_prompts_are_those_without_an_answer(tmp_path: Path):
    backend = HandoffBackend(tmp_path)
    answered, waiting = ask(backend, "one"), ask(backend, "two")
    (tmp_path / "answers").mkdir(exist_ok=True)  # the backend may have made it to be written into
    (tmp_path / "answers" / f"{answered}.md").write_text("done", encoding="utf-8")
    assert waiting_prompts(models_of(backend)) == [tmp_path / "prompts" / f"{waiting}.md"]
    assert waiting_prompts(models_of(SimBackend())) == []
