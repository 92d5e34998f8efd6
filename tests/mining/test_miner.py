"""The mining step (mining/miner.py): recurring, checkable kinds of task. Also from Claude Code
transcripts to checks: complaints in people's own words, through the real harvester (feedback
classification) and the miner."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path


from skillopt_sleep.mining import mine
from skillopt_sleep.mining.checks import limit_check
from skillopt_sleep.sources import harvest
from skillopt_sleep.sources.base import DigestBuilder
from skillopt_sleep.types import Feedback, SessionDigest
from tests.mining.builders import (
    COMMIT_REQUESTS,
    PROJECT,
    SIGNOFF,
    TEST_REQUESTS,
    commit_sessions,
    complaint_session,
    digest,
)


def test_mine_promotes_a_recurring_checkable_kind():
    result = mine(commit_sessions())
    tasks = result.tasks
    # one task per distinct request (the upper-cased repeat collapses into the first)
    assert sorted(t.intent.lower() for t in tasks) == sorted(
        [r.lower() for r in COMMIT_REQUESTS] + ["please write a commit message for the staged changes in utils"]
    )
    judge = tasks[0].judge
    assert judge == {
        "kind": "rule",
        "checks": [{"op": "contains", "arg": "Signed-off-by:"}, {"op": "no_refusal", "arg": None}],
        # the complaint that asked for the check, shown beside the rule that answers it
        "said": {'{"arg": "Signed-off-by:", "op": "contains"}': 'you forgot the "Signed-off-by:" line'},
    }
    assert all(t.judge == judge for t in tasks)  # the kind's judge is shared
    assert all(t.recurrence == 5 for t in tasks)  # sessions, not requests
    assert len({t.id for t in tasks}) == len(tasks)
    assert len({t.skill_hint for t in tasks}) == 1 and tasks[0].skill_hint == tasks[0].tags[0]
    assert all(t.project == PROJECT and t.origin == "real" for t in tasks)
    assert all(t.context_excerpt == "branch: main" for t in tasks)
    assert result.groups == 1 and result.one_off == 0 and result.uncheckable == 0


def test_mine_outcome_from_feedback():
    by_intent = {t.intent: t for t in mine(commit_sessions()).tasks}
    assert by_intent[COMMIT_REQUESTS[1]].outcome == "failure"
    assert by_intent[COMMIT_REQUESTS[1]].attempted_solution == "feat: add retries"
    assert by_intent["please write a commit message for the staged changes in utils"].outcome == "unknown"
    first = next(t for i, t in by_intent.items() if i.lower() == COMMIT_REQUESTS[0])
    assert first.source_sessions in (["c0"], ["c3"])
    assert first.outcome == ("failure" if first.source_sessions == ["c0"] else "success")


def test_mine_praised_request_is_success():
    sessions = [
        digest("a", [("write the commit message", "x"), ("great", "")], [Feedback("positive", "great", 0)]),
        complaint_session("b", "write a commit message"),
    ]
    by_session = {t.source_sessions[0]: t for t in mine(sessions).tasks}
    assert by_session["a"].outcome == "success"
    assert by_session["b"].outcome == "failure"


def test_one_off_groups_are_not_promoted():
    sessions = commit_sessions() + [complaint_session("o", "summarize yesterday's incident for the status page")]
    result = mine(sessions)
    assert result.one_off == 1 and result.groups == 2
    assert not any("incident" in t.intent for t in result.tasks)


def test_recurrence_counts_sessions_not_requests():
    d = digest(
        "only",
        [
            ("write the commit message", "x"),
            (SIGNOFF, ""),
            ("write the commit message for the fix", "y"),
            (SIGNOFF, ""),
        ],
        [Feedback("negative", SIGNOFF, 0), Feedback("negative", SIGNOFF, 2)],
    )
    result = mine([d])
    assert result.tasks == [] and result.one_off == 1
    assert len(mine([d], min_recurrence=1).tasks) == 2


def test_uncheckable_groups_are_not_promoted():
    sessions = [
        complaint_session(f"s{i}", text, complaint="hmm, that is not quite it")
        for i, text in enumerate(COMMIT_REQUESTS)
    ]
    result = mine(sessions)
    assert result.tasks == [] and result.uncheckable == 1 and result.one_off == 0


def test_feedback_from_any_instance_makes_the_kind_checkable():
    sessions = [
        digest("a", [(COMMIT_REQUESTS[0], "x")]),
        digest("b", [(COMMIT_REQUESTS[1], "y")]),
        complaint_session("c", COMMIT_REQUESTS[2], complaint="keep it under 50 characters"),
    ]
    tasks = mine(sessions).tasks
    assert len(tasks) == 3
    assert all({"op": "max_chars", "arg": 50} in t.judge["checks"] for t in tasks)


def test_two_kinds_two_judges():
    sessions = [complaint_session(f"c{i}", t) for i, t in enumerate(COMMIT_REQUESTS)]
    sessions += [
        complaint_session(f"t{i}", t, complaint='you forgot "import pytest"') for i, t in enumerate(TEST_REQUESTS)
    ]
    tasks = mine(sessions).tasks
    kinds = {t.skill_hint for t in tasks}
    assert len(kinds) == 2
    for kind in kinds:
        members = [t for t in tasks if t.skill_hint == kind]
        assert len({json.dumps(t.judge, sort_keys=True) for t in members}) == 1
    judges_by_intent = {t.intent: t.judge["checks"][0]["arg"] for t in tasks}
    assert judges_by_intent[TEST_REQUESTS[0]] == "import pytest"
    assert judges_by_intent[COMMIT_REQUESTS[0]] == "Signed-off-by:"


def test_max_instances():
    sessions = [
        complaint_session(f"s{i}", f"write the commit message for change number {w}")
        for i, w in enumerate("alpha beta gamma delta epsilon zeta".split())
    ]
    assert len(mine(sessions).tasks) == 6
    assert len(mine(sessions, max_instances=3).tasks) == 3


def test_mine_is_deterministic():
    a = [t.to_dict() for t in mine(commit_sessions()).tasks]
    b = [t.to_dict() for t in mine(commit_sessions()).tasks]
    assert a == b


def test_mine_assigns_train_and_val():
    tasks = mine(commit_sessions()).tasks
    splits = Counter(t.split for t in tasks)
    assert splits["train"] >= 1 and splits["val"] >= 1 and splits["test"] == 0


def test_judge_maker_replaces_the_heuristic_judge():
    calls = []

    def maker(label, group, checks):
        calls.append((label, sorted(r.text for r in group), checks))
        return {"kind": "rubric", "rubric": "Has a Signed-off-by trailer."}

    tasks = mine(commit_sessions(), judge_maker=maker).tasks
    assert len(calls) == 1
    label, texts, checks = calls[0]
    assert label == tasks[0].skill_hint and len(texts) == 5
    assert checks == [{"op": "contains", "arg": "Signed-off-by:"}]  # the heuristic checks, as a hint
    assert all(
        t.judge["kind"] == "rubric" and t.reference_kind == "rubric" and t.reference == "Has a Signed-off-by trailer."
        for t in tasks
    )


def test_judge_maker_can_decline_a_group():
    result = mine(commit_sessions(), judge_maker=lambda label, group, checks: None)
    assert result.tasks == [] and result.uncheckable == 1


def test_each_task_has_its_kind_in_the_requests_words():
    tasks = mine(commit_sessions()).tasks
    label = tasks[0].skill_hint
    assert "-" in label or label.isalpha()
    assert {t.kind for t in tasks} == {label.replace("-", " ")}
    assert all(w in " ".join(COMMIT_REQUESTS).lower() for w in tasks[0].kind.split())


# -- from transcripts, through the real harvester ------------------------------------------------

SESSIONS = [
    (
        "write the commit message for the staged change",
        "feat: retry uploads",
        "you forgot the Refs: ACME-123 trailer again",
    ),
    (
        "commit msg for what's staged please",
        "fix: handle empty invoices\n\nTODO: tests",
        "no TODOs in commit messages, please. And keep it to 3 lines",
    ),
    (
        "Write a commit message for my staged changes",
        "chore: bump deps " + "x" * 400,
        "way too verbose - max 300 chars",
    ),
]


def _write_session(projects: Path, project: Path, n: int, request: str, reply: str, complaint: str) -> None:
    sid = f"00000000-0000-4000-8000-00000000000{n}"
    folder = projects / re.sub(r"[^A-Za-z0-9]", "-", str(project))
    folder.mkdir(parents=True, exist_ok=True)
    common = {
        "isSidechain": False,
        "cwd": str(project),
        "sessionId": sid,
        "entrypoint": "cli",
        "gitBranch": "main",
        "version": "2.1.0",
    }
    records = []
    for i, (role, text) in enumerate(
        [("user", request), ("assistant", reply), ("user", complaint), ("assistant", "Sorry, fixed.")]
    ):
        ts = f"2026-11-2{n}T10:00:{i:02d}.000Z"
        if role == "user":
            message = {"role": "user", "content": text}
            records.append(
                {
                    **common,
                    "type": "user",
                    "userType": "external",
                    "message": message,
                    "uuid": f"u{n}{i}",
                    "timestamp": ts,
                }
            )
        else:
            message = {
                "id": f"m{n}{i}",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}],
            }
            records.append({**common, "type": "assistant", "message": message, "uuid": f"a{n}{i}", "timestamp": ts})
    (folder / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_complaints_in_own_words_become_the_kinds_checks(tmp_path: Path) -> None:
    project = tmp_path / "acme"
    project.mkdir()
    claude = tmp_path / "claude"
    for n, (request, reply, complaint) in enumerate(SESSIONS, 1):
        _write_session(claude / "projects", project, n, request, reply, complaint)
    result = harvest(project, source="claude", claude_home=claude, state_dir=None)
    assert len(result.digests) == 3
    assert all(d.feedback and d.feedback[0].polarity == "negative" for d in result.digests)

    mined = mine(result.digests)
    assert len(mined.tasks) == 3 and mined.groups == 1  # three phrasings, one kind
    checks = mined.tasks[0].judge["checks"]
    for expected in (
        {"op": "regex", "arg": r"Refs: ACME-\d+"},
        {"op": "not_contains", "arg": "TODO"},
        limit_check("lines", 3),
        {"op": "max_chars", "arg": 300},
    ):
        assert expected in checks
    assert all(t.judge == mined.tasks[0].judge for t in mined.tasks)


def test_each_task_names_the_agent_whose_session_it_came_from():
    import dataclasses

    sessions = commit_sessions()
    mixed = [dataclasses.replace(s, source="codex") if i % 2 else s for i, s in enumerate(sessions)]
    agent_of = {s.session_id: s.source for s in mixed}
    tasks = mine(mixed).tasks
    assert {t.agent for t in tasks} == {"claude", "codex"}
    assert all(t.agent == agent_of[t.source_sessions[0]] for t in tasks)


def _typed(sid: str, agent: str, messages: list[str]) -> SessionDigest:
    """A session as the harvest digests it: every message typed, every one answered."""
    builder = DigestBuilder(source=agent, session_id=sid, path=f"/t/{sid}.jsonl", project=PROJECT)
    for text in messages:
        builder.add_prompt(text)
        builder.new_reply("done")
    return builder.to_digest()


def test_a_follow_up_naming_an_idiom_is_a_check_on_its_kind_not_a_task():
    sessions = [
        _typed("u1", "gemini", ["write unit tests for @src/totals.py", "use pytest.mark.parametrize for the cases"]),
        _typed(
            "u2",
            "claude",
            ["add unit tests for the parse_amount helper", "pls use pytest.mark.parametrize", "and no print() calls"],
        ),
        _typed("u3", "codex", ["unit tests for round_half_even", "perfect, thanks"]),
    ]
    mined = mine(sessions)
    assert {t.intent for t in mined.tasks} == {
        "write unit tests for @src/totals.py",
        "add unit tests for the parse_amount helper",
        "unit tests for round_half_even",
    }
    checks = mined.tasks[0].judge["checks"]
    assert checks[:2] == [
        {"op": "contains", "arg": "pytest.mark.parametrize"},
        {"op": "not_contains", "arg": "print("},
    ]
