"""The handoff backend (backends/handoff.py): every call a prompt file, answered between runs by
the person's own agent, and a night that stops for answers and goes on from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.backends.base import AnswerPending, Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.handoff import HandoffBackend, from_options
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.errors import EXIT_HANDOFF

from tests.support.handoff_answers import answer_all, plain, schema_of


def request(user: str = "write the commit message", sample: int = 0, **kw) -> Request:
    return Request(purpose="attempt", system="You write commit messages.", user=user, sample=sample, **kw)


def test_a_call_without_an_answer_becomes_a_prompt_file_and_waits(tmp_path: Path):
    backend = HandoffBackend(tmp_path)
    with pytest.raises(AnswerPending) as info:
        backend.complete(request())
    prompt = (tmp_path / "prompts" / f"{info.value.key}.md").read_text(encoding="utf-8")
    assert "You write commit messages." in prompt and "write the commit message" in prompt
    assert f"answers/{info.value.key}.md" in prompt and backend.waiting() == [info.value.key]
    assert (tmp_path / "answers").is_dir()  # there to write into, also with a shell's redirection
    (tmp_path / "answers" / f"{info.value.key}.md").write_text("fix: retry the upload\n", encoding="utf-8")
    assert backend.complete(request()).text == "fix: retry the upload\n" and backend.waiting() == []


def test_each_sample_and_each_request_is_its_own_prompt(tmp_path: Path):
    backend = HandoffBackend(tmp_path)
    keys = set()
    for req in (request(), request(sample=1), request("another"), request()):
        with pytest.raises(AnswerPending) as info:
            backend.complete(req)
        keys.add(info.value.key)
    assert len(keys) == 3 and len(list((tmp_path / "prompts").iterdir())) == 3


def test_an_attempt_asks_its_next_samples_ahead_and_finds_them_answered(tmp_path: Path):
    backend = HandoffBackend(tmp_path, ahead=2)
    with pytest.raises(AnswerPending):
        backend.complete(request(sample=3))
    wanted = {backend.key(request(sample=s)) for s in (3, 4, 5)}
    assert set(backend.waiting()) == wanted  # the asked sample and the two after it, nothing else
    assert answer_all(tmp_path, lambda prompt: "fix: retry the upload") == 3
    for sample in (3, 4, 5):  # the next look's samples take no round of their own
        assert backend.complete(request(sample=sample)).text == "fix: retry the upload"
    with pytest.raises(AnswerPending):
        backend.complete(request(sample=6))


def test_by_default_and_for_other_calls_nothing_is_asked_ahead(tmp_path: Path):
    backend = HandoffBackend(tmp_path)
    with pytest.raises(AnswerPending):
        backend.complete(request())
    assert len(backend.waiting()) == 1
    ahead = HandoffBackend(tmp_path / "ahead", ahead=3)
    with pytest.raises(AnswerPending):
        ahead.complete(Request(purpose="reflect", system="s", user="what went wrong"))
    assert len(ahead.waiting()) == 1  # a reflect call is not drawn again and again
    answered = tmp_path / "ahead" / "answers" / f"{ahead.key(request(sample=2))}.md"
    answered.parent.mkdir(parents=True, exist_ok=True)
    answered.write_text("fix: retry the upload", encoding="utf-8")
    with pytest.raises(AnswerPending):
        ahead.complete(request(sample=1))
    asked = {ahead.key(request(sample=s)) for s in (1, 3, 4)}  # sample 2 has its answer already
    assert set(ahead.waiting()) - {ahead.key(Request(purpose="reflect", system="s", user="what went wrong"))} == asked


@pytest.mark.parametrize("ahead", [-1, "3", 1.5, True])
def test_ahead_is_a_whole_number_of_samples(tmp_path: Path, ahead):
    with pytest.raises(ValueError, match="ahead"):
        from_options({"dir": str(tmp_path), "ahead": ahead}, None)
    assert from_options({"dir": str(tmp_path), "ahead": 3}, None).ahead == 3


def test_a_reply_format_is_stated_and_preflight_needs_nobody(tmp_path: Path):
    backend = HandoffBackend(tmp_path)
    schema = {"type": "object", "required": ["edits"], "properties": {"edits": {"type": "array"}}}
    with pytest.raises(AnswerPending) as info:
        backend.complete(request(json_schema=schema))
    prompt = (tmp_path / "prompts" / f"{info.value.key}.md").read_text(encoding="utf-8")
    assert schema_of(prompt) == schema and json.loads(plain(prompt)) == {"edits": []}
    assert backend.complete(Request(purpose="preflight", system="", user="Reply OK")).text == "OK"


def test_an_answer_that_is_not_a_file_is_an_error_not_an_answer(tmp_path: Path):
    backend = HandoffBackend(tmp_path)
    key = backend.key(request())
    (tmp_path / "answers" / f"{key}.md").mkdir(parents=True)
    completion = backend.complete(request())
    assert not completion.ok and completion.text == ""


def test_an_answer_that_is_a_link_is_not_followed(tmp_path: Path):
    backend = HandoffBackend(tmp_path / "handoff")
    key = backend.key(request())
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("an answer planted outside the answers folder", encoding="utf-8")
    (tmp_path / "handoff" / "answers").mkdir(parents=True)
    (tmp_path / "handoff" / "answers" / f"{key}.md").symlink_to(elsewhere)
    completion = backend.complete(request())
    assert not completion.ok and completion.text == "" and completion.error == "bad_request"


def test_a_phase_writes_every_prompt_before_it_stops(tmp_path: Path):
    backend = HandoffBackend(tmp_path)
    (tmp_path / "answers").mkdir(parents=True)
    answered = backend.key(request("task 0"))
    (tmp_path / "answers" / f"{answered}.md").write_text("done 0", encoding="utf-8")
    client = Client(backend, limiter=Limiter(2))
    with pytest.raises(AnswerPending) as info:
        client.map([request(f"task {i}") for i in range(7)])
    assert info.value.count == 6 and len(backend.waiting()) == 6


def test_outside_a_night_the_folder_is_in_the_users_state_dir(tmp_path: Path):
    from skillopt_sleep.paths import user_dirs

    assert from_options({}, None).directory == user_dirs().state / "handoff"
    assert from_options({"dir": str(tmp_path)}, None).directory == tmp_path


def test_a_handoff_night_goes_on_round_by_round_until_it_is_done(tmp_path: Path):
    from skillopt_sleep.config import Config
    from skillopt_sleep.night import NightOptions, NightStopped, run_night
    from skillopt_sleep.paths import project_dirs

    from tests.support.tasks import make_tasks, write_tasks_file

    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# proj\n", encoding="utf-8")
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks(per_kind=2))
    config = Config(backend="handoff", agent="claude", k=1, val_samples=1, max_val_samples=2, max_edits=1)
    folder = project_dirs(project).root / "handoff"
    rounds, prompts = 0, 0
    while True:
        try:
            report = run_night(NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file))
            break
        except NightStopped as stop:
            assert stop.code == EXIT_HANDOFF and stop.report.status == "handoff"
            waiting = len(list((folder / "prompts").glob("*.md"))) - len(list((folder / "answers").glob("*.md")))
            assert f"{waiting} prompt(s) wait in" in stop.message and waiting > 0
            rounds += 1
            prompts += answer_all(folder)
            assert rounds < 40, "a night converges"
    assert rounds >= 2, "the night's later calls need its earlier answers"
    [note] = [n for n in report.notes if n.startswith("handoff:")]
    assert note.startswith(f"handoff: {prompts} prompt(s) answered by your agent over {rounds + 1} round(s)")
    assert not folder.exists(), "a finished night clears its prompts and answers"
