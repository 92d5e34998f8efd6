"""The LLM merge pass over the heuristic groups, with a model played by FakeBackend handlers."""

from __future__ import annotations

import json
import re

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.mining import mine
from skillopt_sleep.mining.llm_groups import LlmGrouper
from skillopt_sleep.mining.requests import UserRequest
from skillopt_sleep.types import Feedback, SessionDigest
from tests.support.fake_backend import FakeBackend

TEXTS = [
    "make the onboarding mail Portuguese",
    "the settings labels, but in Korean please",
    "run the migrations on staging",
]


def lines(request: Request) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^(\d+)\. (.*)$", request.user, re.M)}


def language_model(request: Request) -> str:
    """A model that knows two groups naming a language are one kind of task (translation)."""
    same = [n for n, text in lines(request).items() if re.search(r"portuguese|korean", text, re.I)]
    return json.dumps({"same_kind": [same]})


def groups_of(texts: list[str]) -> list[list[UserRequest]]:
    out = []
    for n, text in enumerate(texts):
        session = SessionDigest(source="claude", session_id=f"s{n}", project="/p", path=f"/t/{n}.jsonl")
        out.append([UserRequest(session=session, index=0, text=text)])
    return out


def texts_of(groups: list[list[UserRequest]]) -> list[list[str]]:
    return sorted(sorted(r.text for r in g) for g in groups)


def test_groups_the_model_calls_one_kind_are_merged_and_nothing_else_moves() -> None:
    backend = FakeBackend(language_model)
    grouper = LlmGrouper(Client(backend, role="optimizer"))
    got = grouper(groups_of(TEXTS))
    assert texts_of(got) == sorted([sorted(TEXTS[:2]), [TEXTS[2]]])
    assert len(backend.requests) == 1 and backend.requests[0].purpose == "mine"
    assert grouper.merged == 1 and grouper.notes == ["LLM grouping merged 1 heuristic group(s) into others"]


def test_a_reply_that_is_not_json_is_repaired_once() -> None:
    def model(request: Request) -> str:
        if request.payload.get("repair"):
            return language_model(request)
        return "Groups 1 and 2 look like translations to me."

    backend = FakeBackend(model)
    got = LlmGrouper(Client(backend, role="optimizer"))(groups_of(TEXTS))
    assert len(backend.requests) == 2 and "could not be used" in backend.requests[1].user
    assert texts_of(got) == sorted([sorted(TEXTS[:2]), [TEXTS[2]]])


def test_still_no_json_after_the_repair_keeps_the_heuristic_groups_loudly() -> None:
    backend = FakeBackend(lambda request: "sorry, I cannot do JSON")
    grouper = LlmGrouper(Client(backend, role="optimizer"))
    groups = groups_of(TEXTS)
    assert texts_of(grouper(groups)) == texts_of(groups)
    assert len(backend.requests) == 2
    assert grouper.notes == ["LLM grouping: miner reply was not JSON after one repair; the heuristic groups were kept"]


def test_invented_and_repeated_numbers_are_ignored_and_counted() -> None:
    backend = FakeBackend(lambda request: {"same_kind": [[1, 2, 99], [2, 3], [0]]})
    grouper = LlmGrouper(Client(backend, role="optimizer"))
    got = grouper(groups_of(TEXTS))
    assert texts_of(got) == sorted([sorted(TEXTS[:2]), [TEXTS[2]]])  # 2 is already taken: [2, 3] merges nothing
    assert grouper.ignored_ids == 3 and any("3 group number(s)" in note for note in grouper.notes)


def test_only_the_largest_groups_are_shown() -> None:
    backend = FakeBackend(lambda request: {"same_kind": []})
    LlmGrouper(Client(backend, role="optimizer"), max_groups=2)(groups_of(TEXTS + ["fix the flaky test"]))
    assert sorted(lines(backend.requests[0])) == [1, 2]


def test_a_merge_makes_a_kind_recur_across_sessions() -> None:
    complaint = "no more than 3 lines"
    digests = [
        SessionDigest(
            source="claude",
            session_id=f"s{n}",
            project="/p",
            path=f"/t/{n}.jsonl",
            user_prompts=[text, complaint],
            assistant_finals=["ok", "ok"],
            feedback=[Feedback("negative", complaint, 0)],
        )
        for n, text in enumerate(TEXTS[:2])
    ]
    assert mine(digests).tasks == []  # two one-off groups: nothing recurs
    result = mine(digests, grouper=LlmGrouper(Client(FakeBackend(language_model), role="optimizer")))
    assert sorted(t.intent for t in result.tasks) == sorted(TEXTS[:2])
    assert result.notes == ["LLM grouping merged 1 heuristic group(s) into others"]


def test_the_simulator_is_not_asked_to_group() -> None:
    backend = FakeBackend(language_model, offline=True)
    grouper = LlmGrouper(Client(backend, role="optimizer"))
    groups = groups_of(TEXTS)
    assert texts_of(grouper(groups)) == texts_of(groups) and backend.requests == []
    assert grouper.notes and "skipped" in grouper.notes[0]
