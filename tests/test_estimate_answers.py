"""The model's answers other than attempts from a project's last night (``estimate_answers.py``),
kept for the next estimate only."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from skillopt_sleep import estimate
from skillopt_sleep.backends.base import Completion


def test_last_nights_optimizer_answers_are_kept_for_the_estimate_not_the_night(tmp_path: Path) -> None:
    from skillopt_sleep import estimate_answers
    from skillopt_sleep.backends.base import Request
    from skillopt_sleep.backends.sim import SimBackend

    log = estimate_answers.AnswerLog()
    reflect = Request(purpose="reflect", system="s", user="what rule?")
    attempt = Request(purpose="attempt", system="s", user="do it")
    log.put("k-reflect", reflect, Completion(text='{"edits": ["last night"]}'))
    log.put("k-attempt", attempt, Completion(text="an attempt"))  # the score cache keeps attempts
    log.put("k-failed", reflect, Completion(text="", error="server"))
    assert log.get("k-reflect", reflect) is None  # the night itself never reads them
    project = tmp_path / "proj"
    log.save(project)
    known = estimate_answers.load(project)
    assert set(known) == {"k-reflect"} and known["k-reflect"].text == '{"edits": ["last night"]}'
    # the rehearsal's stand-in answers a question asked last night as the model did, the rest as the sim
    real = SimpleNamespace(id="anthropic:claude-sonnet-4-6", offline=False)
    stand_in = estimate.StandIn(real, SimBackend(), {reflect.cache_key(real.id): known["k-reflect"]})
    assert stand_in.complete(reflect).text == '{"edits": ["last night"]}'
    assert stand_in.complete(Request(purpose="reflect", system="s", user="another")).text != known["k-reflect"].text
    estimate_answers.answers_path(project).write_text("x" * (2 * estimate_answers.MAX_BYTES + 1), encoding="utf-8")
    assert estimate_answers.load(project) == {}  # not one we wrote


def test_the_answers_kept_stop_at_the_size_limit_and_the_first_ones_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillopt_sleep import estimate_answers
    from skillopt_sleep.backends.base import Request

    monkeypatch.setattr(estimate_answers, "MAX_BYTES", 300)
    log = estimate_answers.AnswerLog()
    reflect = Request(purpose="reflect", system="s", user="what rule?")
    for i in range(10):
        log.put(f"k-{i}", reflect, Completion(text=f"answer {i}"))
    log.save(tmp_path)
    kept = estimate_answers.load(tmp_path)
    assert 0 < len(kept) < 10 and set(kept) == {f"k-{i}" for i in range(len(kept))}
    assert estimate_answers.answers_path(tmp_path).stat().st_size <= 300 + 100  # the format line


def test_a_file_of_another_format_or_with_broken_lines_gives_only_the_whole_answers(tmp_path: Path) -> None:
    from skillopt_sleep import estimate_answers

    path = estimate_answers.answers_path(tmp_path)
    path.parent.mkdir(parents=True)
    good = {"text": "kept", "model": "m", "usage": {}, "tools_called": []}
    lines = [
        {"format": estimate_answers.FORMAT},
        {"k": "whole", "c": good},
        {"k": 7, "c": good},
        {"k": "no text", "c": {"model": "m"}},
        {"k": "bad tools", "c": {**good, "tools_called": [1]}},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    assert {k: c.text for k, c in estimate_answers.load(tmp_path).items()} == {"whole": "kept"}
    path.write_text(json.dumps({"format": "another.v1"}) + "\n" + json.dumps(lines[1]) + "\n", encoding="utf-8")
    assert estimate_answers.load(tmp_path) == {}
