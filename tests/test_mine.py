from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.mine import (
    assign_splits,
    checks_from_feedback,
    cluster,
    jaccard,
    load_tasks,
    mine,
    requests_from,
    save_tasks,
    signature,
    tasks_document,
)
from skillopt_sleep.types import TASKS_FORMAT, Feedback, SessionDigest, TaskRecord

PROJECT = "/home/dev/acme"
SIGNOFF = 'you forgot the "Signed-off-by:" line'


def digest(sid: str, turns: list[tuple[str, str]], feedback: list[Feedback] = (),
           project: str = PROJECT, branch: str | None = "main") -> SessionDigest:
    """A session from (user prompt, assistant final) turns; feedback prompts are turns too."""
    return SessionDigest(
        source="claude", session_id=sid, project=project, path=f"/t/{sid}.jsonl", branch=branch,
        user_prompts=[p for p, _ in turns], assistant_finals=[a for _, a in turns],
        feedback=list(feedback),
    )


def complaint_session(sid: str, request: str, complaint: str = SIGNOFF,
                      reply: str = "feat: add retries") -> SessionDigest:
    return digest(sid, [(request, reply), (complaint, "Sorry, fixed.")],
                  [Feedback("negative", complaint, 0)])


COMMIT_REQUESTS = [
    "write the commit message for the staged changes",
    "Write a commit message for my staged changes",
    "commit message for the staged diff please",
]
TEST_REQUESTS = [
    "add a unit test for the parser module",
    "add unit tests for the parser module edge cases",
]


# -- signature / jaccard -------------------------------------------------------------------------


def test_signature_drops_stopwords_digits_and_stems():
    sig = signature("Please write the commit messages for 3 staged changes now")
    assert sig == frozenset({"write", "commit", "messag", "stag", "chang"})
    assert signature("") == frozenset()
    assert signature("the and of a") == frozenset()


def test_signature_is_case_insensitive():
    assert signature("Commit MESSAGE") == signature("commit message")


def test_jaccard():
    a, b = frozenset({"x", "y"}), frozenset({"y", "z"})
    assert jaccard(a, b) == pytest.approx(1 / 3)
    assert jaccard(a, a) == 1.0
    assert jaccard(a, frozenset({"q"})) == 0.0
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(a, frozenset()) == 0.0


# -- requests_from -------------------------------------------------------------------------------


def test_feedback_messages_are_not_requests():
    d = digest("s1", [
        ("write the commit message", "feat: x"),
        (SIGNOFF, "fixed"),
        ("add a unit test for the parser", "done"),
        ("great, thanks", "you're welcome"),
    ], [Feedback("negative", SIGNOFF, 0), Feedback("positive", "great, thanks", 2)])
    reqs = requests_from([d])
    assert [r.text for r in reqs] == ["write the commit message", "add a unit test for the parser"]
    assert [r.index for r in reqs] == [0, 2]


def test_feedback_attaches_to_the_request_it_reacts_to():
    d = digest("s1", [
        ("write the commit message", "feat: x"),
        ("add a unit test for the parser", "def test_x(): ..."),
        ("tests go in tests/unit, and include \"pytest.mark.unit\"", "ok"),
        ("summarize the PR", "It adds x."),
    ], [Feedback("negative", 'tests go in tests/unit, and include "pytest.mark.unit"', 1),
        Feedback("positive", "perfect", 3)])
    reqs = {r.text: r for r in requests_from([d])}
    assert set(reqs) == {"write the commit message", "add a unit test for the parser", "summarize the PR"}
    assert reqs["add a unit test for the parser"].feedback == ['tests go in tests/unit, and include "pytest.mark.unit"']
    assert reqs["write the commit message"].feedback == []
    assert reqs["summarize the PR"].feedback == [] and reqs["summarize the PR"].praised
    assert not reqs["add a unit test for the parser"].praised
    assert reqs["add a unit test for the parser"].reply == "def test_x(): ..."


def test_positive_feedback_is_not_a_complaint():
    d = digest("s1", [("write the commit message", "x"), ("nice, always include that", "")],
               [Feedback("positive", "nice, always include that", 0)])
    (req,) = requests_from([d])
    assert req.feedback == [] and req.praised


def test_blank_prompts_and_missing_finals():
    d = SessionDigest("claude", "s1", PROJECT, "/t", user_prompts=["   ", "write the commit message"],
                      assistant_finals=["x"])
    (req,) = requests_from([d])
    assert req.text == "write the commit message" and req.index == 1 and req.reply == ""


# -- cluster -------------------------------------------------------------------------------------


def test_cluster_groups_rephrasings_across_sessions_and_separates_kinds():
    digests = [digest(f"c{i}", [(text, "")]) for i, text in enumerate(COMMIT_REQUESTS)]
    digests += [digest(f"t{i}", [(text, "")]) for i, text in enumerate(TEST_REQUESTS)]
    digests.append(digest("o", [("summarize yesterday's incident for the status page", "")]))
    groups = cluster(requests_from(digests))
    as_sets = sorted((sorted(r.text for r in g) for g in groups), key=len, reverse=True)
    assert as_sets[0] == sorted(COMMIT_REQUESTS)
    assert as_sets[1] == sorted(TEST_REQUESTS)
    assert as_sets[2] == ["summarize yesterday's incident for the status page"]
    assert len(groups) == 3
    # the commit group spans all three sessions
    commit = next(g for g in groups if g[0].text in COMMIT_REQUESTS)
    assert {r.session.session_id for r in commit} == {"c0", "c1", "c2"}


def test_cluster_threshold():
    reqs = requests_from([digest("a", [("alpha beta gamma delta", "")]),
                          digest("b", [("alpha beta epsilon zeta", "")])])
    assert len(cluster(reqs, threshold=0.01)) == 1
    assert len(cluster(reqs, threshold=0.99)) == 2


def test_cluster_is_independent_of_input_order():
    texts = COMMIT_REQUESTS + TEST_REQUESTS + ["summarize yesterday's incident for the status page"]
    expected = None
    for shuffle_seed in range(6):
        order = list(texts)
        random.Random(shuffle_seed).shuffle(order)
        groups = cluster(requests_from([digest(f"s{i}", [(t, "")]) for i, t in enumerate(order)]))
        got = sorted(sorted(r.text for r in g) for g in groups)
        assert expected is None or got == expected
        expected = got


def test_cluster_joins_a_rephrasing_seeded_alone():
    texts = ["write the commit message for the staged changes",
             "Write a commit msg for my staged changes",  # cosine 0.57 to the first, above 0.3
             "commit message for the staged diff please"]
    groups = cluster(requests_from([digest(f"s{i}", [(t, "")]) for i, t in enumerate(texts)]))
    together = next(g for g in groups if any(r.text == texts[0] for r in g))
    assert texts[1] in {r.text for r in together}


def test_cluster_empty():
    assert cluster([]) == []


# -- checks_from_feedback ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SIGNOFF, [{"op": "contains", "arg": "Signed-off-by:"}]),
        ("it's missing “Closes #12”", [{"op": "contains", "arg": "Closes #12"}]),
        ("you should include `make lint` in the steps", [{"op": "contains", "arg": "make lint"}]),
        ('never put "WIP" in the subject', [{"op": "not_contains", "arg": "WIP"}]),
        ('please remove the "Co-authored-by" trailer', [{"op": "not_contains", "arg": "Co-authored-by"}]),
        ("there should be a ## Testing section", [{"op": "section_present", "arg": "Testing"}]),
        ("add a section called Risks.", [{"op": "section_present", "arg": "Risks"}]),
        ('the "## Summary" heading is missing', [{"op": "section_present", "arg": "Summary"}]),
        ("keep it under 72 characters", [{"op": "max_chars", "arg": 72}]),
        # a limit on the subject line checks the first line, not the whole reply
        ("the subject must be no more than 50 chars!", [{"op": "regex", "arg": r"\A[^\n]{1,50}(?:\n|\Z)"}]),
        ("write at least 200 characters", [{"op": "min_chars", "arg": 200}]),
    ],
)
def test_checks_from_feedback(text, expected):
    assert checks_from_feedback([text]) == expected


@pytest.mark.parametrize(
    "text",
    [
        "that looks weird",
        "no, not like that",
        "make it better",
        'I said "hello" to the team',  # quoted, but no cue saying it belongs in the answer
        "keep it short",  # no number
        "under 72 words",  # words are not characters
    ],
)
def test_unclear_feedback_gives_no_checks(text):
    assert checks_from_feedback([text]) == []


def test_checks_from_feedback_dedupes_and_combines():
    got = checks_from_feedback([SIGNOFF, SIGNOFF + ". Also keep it under 72 characters.",
                                'never use "WIP"'])
    assert got == [{"op": "contains", "arg": "Signed-off-by:"}, {"op": "max_chars", "arg": 72},
                   {"op": "not_contains", "arg": "WIP"}]


def test_cue_is_read_per_sentence():
    # "never" in the first sentence must not turn the second sentence's request negative
    got = checks_from_feedback(['Never mind. You forgot "Signed-off-by:" again'])
    assert got == [{"op": "contains", "arg": "Signed-off-by:"}]


def test_dont_forget_is_a_positive_request():
    assert checks_from_feedback(['Don\'t forget the "Signed-off-by:" line']) == [
        {"op": "contains", "arg": "Signed-off-by:"}]


@pytest.mark.parametrize(
    "text",
    ["Don't add 'WIP', it's noise",
     "You didn't include the 'Closes' line, it's required"],
)
def test_contractions_do_not_become_quoted_values(text):
    values = {c["arg"] for c in checks_from_feedback([text])}
    assert values <= {"WIP", "Closes"}


# -- mine ----------------------------------------------------------------------------------------


def commit_sessions() -> list[SessionDigest]:
    out = [complaint_session(f"c{i}", text) for i, text in enumerate(COMMIT_REQUESTS)]
    # a fourth session repeats the first request verbatim (different case) and is praised
    out.append(digest("c3", [(COMMIT_REQUESTS[0].upper(), "ok"), ("great", "")],
                      [Feedback("positive", "great", 0)]))
    # a fifth session, no feedback at all
    out.append(digest("c4", [("please write a commit message for the staged changes in utils", "x")]))
    return out


def test_mine_promotes_a_recurring_checkable_kind():
    result = mine(commit_sessions())
    tasks = result.tasks
    # one task per distinct request (the upper-cased repeat collapses into the first)
    assert sorted(t.intent.lower() for t in tasks) == sorted(
        [r.lower() for r in COMMIT_REQUESTS] + ["please write a commit message for the staged changes in utils"])
    judge = tasks[0].judge
    assert judge == {"kind": "rule", "checks": [{"op": "contains", "arg": "Signed-off-by:"},
                                                {"op": "no_refusal", "arg": None}]}
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
    sessions = [digest("a", [("write the commit message", "x"), ("great", "")], [Feedback("positive", "great", 0)]),
                complaint_session("b", "write a commit message")]
    by_session = {t.source_sessions[0]: t for t in mine(sessions).tasks}
    assert by_session["a"].outcome == "success"
    assert by_session["b"].outcome == "failure"


def test_one_off_groups_are_not_promoted():
    sessions = commit_sessions() + [complaint_session("o", "summarize yesterday's incident for the status page")]
    result = mine(sessions)
    assert result.one_off == 1 and result.groups == 2
    assert not any("incident" in t.intent for t in result.tasks)


def test_recurrence_counts_sessions_not_requests():
    d = digest("only", [("write the commit message", "x"), (SIGNOFF, ""),
                        ("write the commit message for the fix", "y"), (SIGNOFF, "")],
               [Feedback("negative", SIGNOFF, 0), Feedback("negative", SIGNOFF, 2)])
    result = mine([d])
    assert result.tasks == [] and result.one_off == 1
    assert len(mine([d], min_recurrence=1).tasks) == 2


def test_uncheckable_groups_are_not_promoted():
    sessions = [complaint_session(f"s{i}", text, complaint="hmm, that is not quite it")
                for i, text in enumerate(COMMIT_REQUESTS)]
    result = mine(sessions)
    assert result.tasks == [] and result.uncheckable == 1 and result.one_off == 0


def test_feedback_from_any_instance_makes_the_kind_checkable():
    sessions = [digest("a", [(COMMIT_REQUESTS[0], "x")]),
                digest("b", [(COMMIT_REQUESTS[1], "y")]),
                complaint_session("c", COMMIT_REQUESTS[2], complaint="keep it under 50 characters")]
    tasks = mine(sessions).tasks
    assert len(tasks) == 3
    assert all({"op": "max_chars", "arg": 50} in t.judge["checks"] for t in tasks)


def test_two_kinds_two_judges():
    sessions = [complaint_session(f"c{i}", t) for i, t in enumerate(COMMIT_REQUESTS)]
    sessions += [complaint_session(f"t{i}", t, complaint='you forgot "import pytest"')
                 for i, t in enumerate(TEST_REQUESTS)]
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
    sessions = [complaint_session(f"s{i}", f"write the commit message for change number {w}")
                for i, w in enumerate("alpha beta gamma delta epsilon zeta".split())]
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


# -- assign_splits -------------------------------------------------------------------------------


def make_tasks(kinds: dict[str, int], prefix: str = "t") -> list[TaskRecord]:
    return [TaskRecord(id=f"{prefix}-{kind}-{i}", intent=f"{kind} {i}", skill_hint=kind)
            for kind, n in kinds.items() for i in range(n)]


def splits_of(tasks: list[TaskRecord]) -> dict[str, str]:
    return {t.id: t.split for t in tasks}


def test_splits_are_stable_across_calls_and_input_order():
    tasks = make_tasks({"commit": 5, "tests": 4, "notes": 1, "pr": 3})
    assign_splits(tasks, seed=3)
    first = splits_of(tasks)
    assign_splits(tasks, seed=3)
    assert splits_of(tasks) == first
    for shuffle_seed in range(5):
        copy = make_tasks({"commit": 5, "tests": 4, "notes": 1, "pr": 3})
        random.Random(shuffle_seed).shuffle(copy)
        assign_splits(copy, seed=3)
        assert splits_of(copy) == first


def test_splits_depend_on_seed():
    outcomes = set()
    for seed in range(10):
        tasks = make_tasks({"commit": 6, "tests": 6})
        assign_splits(tasks, seed=seed)
        outcomes.add(tuple(sorted(splits_of(tasks).items())))
    assert len(outcomes) > 1


def test_previous_split_is_overwritten():
    tasks = make_tasks({"commit": 4})
    for t in tasks:
        t.split = "test"
    assign_splits(tasks)
    assert "test" not in {t.split for t in tasks}


def test_dream_tasks_are_always_train():
    for seed in range(20):
        real = make_tasks({"commit": 3})
        dreams = [TaskRecord(id=f"dream-{i}", intent="d", skill_hint="commit", origin="dream", split="val")
                  for i in range(6)]
        assign_splits(real + dreams, seed=seed, val_fraction=0.5, test_fraction=0.3)
        assert {t.split for t in dreams} == {"train"}
        assert any(t.split == "val" for t in real)


@pytest.mark.parametrize("n", range(2, 9))
@pytest.mark.parametrize("test_fraction", [0.0, 0.25])
def test_each_kind_keeps_train_and_val(n, test_fraction):
    for seed in range(15):
        tasks = make_tasks({"a": n, "b": n + 1})
        assign_splits(tasks, seed=seed, val_fraction=0.34, test_fraction=test_fraction)
        for kind in ("a", "b"):
            got = {t.split for t in tasks if t.skill_hint == kind}
            assert {"train", "val"} <= got, (kind, seed, got)


def test_each_kind_keeps_train_and_val_with_large_test_fraction():
    tasks = make_tasks({"a": 3, "b": 3}, prefix="x")
    assign_splits(tasks, seed=0, val_fraction=0.3, test_fraction=0.67)
    for kind in ("a", "b"):
        assert {"train", "val"} <= {t.split for t in tasks if t.skill_hint == kind}


def test_val_not_empty_with_two_real_tasks_of_one_kind():
    for seed in range(30):
        tasks = make_tasks({"a": 2})
        assign_splits(tasks, seed=seed, val_fraction=0.01)
        assert sorted(t.split for t in tasks) == ["train", "val"]


def test_val_not_empty_with_single_instance_kinds():
    for seed in range(30):
        tasks = make_tasks({f"k{i}": 1 for i in range(5)})
        assign_splits(tasks, seed=seed, val_fraction=0.01)  # hash alone would rarely pick val
        assert any(t.split == "val" for t in tasks)
        assert any(t.split == "train" for t in tasks)


def test_two_single_instance_tasks_get_train_and_val():
    for seed in range(40):
        tasks = make_tasks({"a": 1, "b": 1})
        assign_splits(tasks, seed=seed)
        assert sorted(t.split for t in tasks) == ["train", "val"], seed


def test_single_real_task_is_not_forced_into_val():
    # nothing to validate against: a single task is split by hash alone (no crash, no val forcing)
    seen = set()
    for seed in range(30):
        tasks = make_tasks({"a": 1})
        assign_splits(tasks, seed=seed)
        seen.add(tasks[0].split)
    assert seen == {"train", "val"}


def test_test_split_only_when_test_fraction_positive():
    tasks = make_tasks({"a": 6, "b": 5, **{f"s{i}": 1 for i in range(10)}})
    assign_splits(tasks, seed=1, test_fraction=0.0)
    assert not any(t.split == "test" for t in tasks)
    assign_splits(tasks, seed=1, test_fraction=0.3)
    assert any(t.split == "test" for t in tasks)


def test_val_fraction_is_roughly_respected():
    tasks = make_tasks({"a": 30})
    assign_splits(tasks, seed=0, val_fraction=0.34)
    assert Counter(t.split for t in tasks)["val"] == round(30 * 0.34)


# -- task files ----------------------------------------------------------------------------------


def sample_tasks() -> list[TaskRecord]:
    tasks = mine(commit_sessions()).tasks
    tasks.append(TaskRecord(id="release-notes", intent="write release notes for v2", reference_kind="exact",
                            reference="v2.0.0", judge={"kind": "exact"}, split="val"))
    tasks.append(TaskRecord(id="dream-1", intent="a variation", origin="dream", derived_from=tasks[0].id,
                            judge={"kind": "rule", "checks": [{"op": "contains", "arg": "x"}]}))
    return tasks


def write_doc(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_tasks_round_trip(tmp_path: Path):
    tasks = sample_tasks()
    path = tmp_path / "tasks.json"
    save_tasks(path, tasks, reviewed=True)
    loaded, reviewed = load_tasks(path)
    assert reviewed is True
    assert [t.to_dict() for t in loaded] == [t.to_dict() for t in tasks]
    save_tasks(path, loaded)
    again, reviewed = load_tasks(path)
    assert reviewed is False
    assert [t.to_dict() for t in again] == [t.to_dict() for t in tasks]


def test_tasks_document_shape():
    doc = tasks_document(sample_tasks()[:1])
    assert doc["format"] == TASKS_FORMAT and doc["reviewed"] is False and len(doc["tasks"]) == 1
    json.dumps(doc)  # serialisable


def test_reviewed_must_be_true_literally(tmp_path: Path):
    doc = tasks_document(sample_tasks()[:1])
    doc["reviewed"] = "yes"
    assert load_tasks(write_doc(tmp_path / "t.json", doc))[1] is False


def test_load_normalises_compact_checks(tmp_path: Path):
    doc = {"format": TASKS_FORMAT, "tasks": [{"id": "a", "intent": "x", "judge": {
        "kind": "rule", "checks": [{"op": "section_contains", "arg": "Testing::pytest"}]}}]}
    (task,), _ = load_tasks(write_doc(tmp_path / "t.json", doc))
    assert task.judge["checks"] == [{"op": "section_contains", "arg": {"section": "Testing", "text": "pytest"}}]


def good_item(**over) -> dict:
    item = {"id": "commit-1", "intent": "write the commit message",
            "judge": {"kind": "rule", "checks": [{"op": "contains", "arg": "Signed-off-by:"}]}}
    item.update(over)
    return item


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"tasks": [good_item()]}, "format"),
        ({"format": "something.else", "tasks": [good_item()]}, "format"),
        ([good_item()], "format"),
        ({"format": TASKS_FORMAT}, "tasks"),
        ({"format": TASKS_FORMAT, "tasks": {"id": "x"}}, "tasks"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(), good_item()]}, "duplicate task id 'commit-1'"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(judge={"kind": "rule", "checks": [{"op": "nope"}]})]},
         "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(judge={"kind": "rule", "checks": [
            {"op": "regex", "arg": "(unclosed"}]})]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(judge={"kind": "rule", "checks": []})]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(judge={})]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(origin="dream", split="val")]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(split="holdout")]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(intent="  ")]}, "commit-1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(), "not a task"]}, "#1"),
        ({"format": TASKS_FORMAT, "tasks": [good_item(), {"intent": "no id", "judge": {
            "checks": [{"op": "contains", "arg": "x"}]}}]}, "#1"),
    ],
)
def test_invalid_task_files_are_config_errors(tmp_path: Path, content, needle):
    path = write_doc(tmp_path / "tasks.json", content)
    with pytest.raises(UserError) as info:
        load_tasks(path)
    assert info.value.code == EXIT_CONFIG
    assert needle in info.value.message
    assert str(path) in info.value.message


def test_dream_task_in_val_names_the_task_and_reason(tmp_path: Path):
    path = write_doc(tmp_path / "tasks.json", {"format": TASKS_FORMAT, "tasks": [
        good_item(), good_item(id="dreamy", origin="dream", split="val")]})
    with pytest.raises(UserError, match="dreamy.*dream tasks may only be in the train split") as info:
        load_tasks(path)
    assert info.value.code == EXIT_CONFIG


def test_bad_json_and_missing_file(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "skillopt_sleep.tasks.v1", "tasks": [', encoding="utf-8")
    with pytest.raises(UserError, match="not valid JSON") as info:
        load_tasks(bad)
    assert info.value.code == EXIT_CONFIG
    with pytest.raises(UserError, match="does not exist") as info:
        load_tasks(tmp_path / "missing.json")
    assert info.value.code == EXIT_CONFIG
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UserError) as info:
        load_tasks(binary)
    assert info.value.code == EXIT_CONFIG


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
    assert all(t.judge["kind"] == "rubric" and t.reference_kind == "rubric"
               and t.reference == "Has a Signed-off-by trailer." for t in tasks)


def test_judge_maker_can_decline_a_group():
    result = mine(commit_sessions(), judge_maker=lambda label, group, checks: None)
    assert result.tasks == [] and result.uncheckable == 1
