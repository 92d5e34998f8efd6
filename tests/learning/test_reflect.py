from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.documents.managed_block import DocumentSet, Limits, apply_edit, load_documents
from skillopt_sleep.checks.judges import check_id
from skillopt_sleep.learning.reflect import minibatches, parse_edits, reflect, select, spread, violates_contract
from skillopt_sleep.types import Attempt, Edit, TaskRecord

from tests.support.fake_backend import FakeBackend

SIGNOFF = 'must contain "Signed-off-by:"'


def answering_by_mode(replies: dict[str, object]) -> FakeBackend:
    """A backend that answers each reflect call by its mode ("contrastive" / "failure")."""
    return FakeBackend(lambda request: replies.get(request.payload.get("mode"), {"edits": []}))


def client(backend: FakeBackend) -> Client:
    return Client(backend, retry=RetryPolicy(attempts=1, sleep=lambda s: None), cache=False, role="optimizer")


def task(tid: str, system: str = "") -> TaskRecord:
    return TaskRecord(
        id=tid,
        intent=f"request for {tid}",
        system=system,
        judge={"kind": "rule", "checks": [{"op": "contains", "arg": "x"}]},
    )


def runs(tid: str, softs: list[float], reasons: list[str] | None = None) -> list[Attempt]:
    return [
        Attempt(
            task_id=tid,
            sample=i,
            response=f"{tid} response {i} soft={s}",
            hard=float(s == 1.0),
            soft=s,
            fail_reasons=[] if s == 1.0 else list(reasons or [SIGNOFF]),
        )
        for i, s in enumerate(softs)
    ]


def edit(content: str, target: str = "skill", op: str = "add", **kw) -> dict:
    return {"target": target, "op": op, "content": content, **kw}


@pytest.fixture
def docs(tmp_path: Path) -> DocumentSet:
    return load_documents(tmp_path)


# a night where one task is contrastive and one failed every time
TASKS = [task("mixed"), task("failing")]
ATTEMPTS = {"mixed": runs("mixed", [1.0, 0.5, 1.0]), "failing": runs("failing", [0.5, 0.5, 0.5])}


# -- select --------------------------------------------------------------------------------------


def test_spread():
    assert spread(runs("a", [0.2, 1.0, 0.6])) == pytest.approx(0.8)
    assert spread(runs("a", [0.5])) == 0.0
    assert spread([]) == 0.0


def test_select_contrastive_from_highest_spread_and_failures_for_all_fail():
    tasks = [task(t) for t in ("wide", "narrow", "allfail", "allpass", "zero")]
    for t in tasks:
        t.kind = "one kind"
    attempts = {
        "narrow": runs("narrow", [0.75, 1.0, 0.75]),
        "wide": runs("wide", [0.0, 1.0, 0.5, 1.0]),
        "allfail": runs("allfail", [0.5, 0.5]),
        "allpass": runs("allpass", [1.0, 1.0]),
        "zero": runs("zero", [0.0, 0.0]),
        "unknown": runs("unknown", [0.0, 1.0]),  # not one of the tasks: ignored
    }
    [group] = select(tasks, attempts, tasks_per_kind=10)
    assert group.kind == "one kind"
    assert [t.id for t, _, _ in group.contrastive] == ["wide", "narrow"]
    t, best, worst = group.contrastive[0]
    assert (best.soft, best.sample) == (1.0, 1)  # ties go to the earliest sample
    assert (worst.soft, worst.sample) == (0.0, 0)
    assert {t.id for t, _ in group.failures} == {"allfail", "zero"}
    assert all(len(xs) == 2 for _, xs in group.failures)


def test_select_covers_every_failing_kind_with_a_few_tasks_each():
    tasks = [task(f"t{i}") for i in range(12)]
    for i, t in enumerate(tasks):
        t.kind = f"kind {i % 4}"
    attempts = {t.id: runs(t.id, [0.0 if i % 4 == 0 else 0.5, 0.5]) for i, t in enumerate(tasks)}
    attempts["t3"] = runs("t3", [1.0, 1.0])  # passes: nothing to learn from it
    groups = select(tasks, attempts, tasks_per_kind=2)
    assert {g.kind for g in groups} == {"kind 0", "kind 1", "kind 2", "kind 3"}
    assert all(len(g.items()) == 2 for g in groups)
    assert groups[0].kind == "kind 0"  # the worst-off kind first
    assert select(tasks, attempts, tasks_per_kind=1)[0].items()[0][0].id == "t0"


def test_tasks_without_a_kind_are_grouped_by_skill_hint_then_alone():
    a, b, c = task("a"), task("b"), task("c")
    a.skill_hint = b.skill_hint = "commit"
    groups = select([a, b, c], {x: runs(x, [0.0, 0.0]) for x in "abc"})
    assert sorted(g.kind for g in groups) == ["c", "commit"]


def test_minibatches():
    groups = select([task(f"t{i}") for i in range(7)], {f"t{i}": runs(f"t{i}", [0.0]) for i in range(7)})
    assert [len(b) for b in minibatches(groups, 3)] == [3, 3, 1]
    assert [len(b) for b in minibatches(groups, 0)] == [1] * 7


def test_select_with_nothing_to_learn():
    assert select([task("a")], {"a": runs("a", [1.0, 1.0]), "b": []}) == []
    assert select([], {}) == []


# -- parse_edits ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no edits today",
        '{"edits": "none"}',
        '{"edits": null}',
        '{"other": []}',
        "42",
        '[1, 2, "x"]',
        "{broken json",
    ],
)
def test_parse_edits_garbage_is_empty(text: str):
    assert parse_edits(text) == []


def test_parse_edits_skips_non_dict_items_and_fills_defaults():
    text = json.dumps(
        {
            "edits": [
                "add a rule",
                None,
                ["skill", "add"],
                {"target": " Skill ", "content": "Always sign off.", "evidence": "t1"},
                {
                    "target": "memory",
                    "op": "REPLACE",
                    "content": None,
                    "anchor": "old",
                    "rationale": "r" * 900,
                    "evidence": [f"t{i}" for i in range(30)],
                },
            ]
        }
    )
    edits = parse_edits(text)
    assert len(edits) == 2
    first, second = edits
    assert (first.target, first.op, first.content, first.anchor, first.evidence) == (
        "skill",
        "add",
        "Always sign off.",
        "",
        [],
    )
    assert (second.target, second.op, second.content, second.anchor) == ("memory", "replace", "", "old")
    assert len(second.rationale) == 500 and len(second.evidence) == 20


def test_parse_edits_fenced_and_bare_list():
    fenced = 'Here are my edits:\n```json\n{"edits": [{"target": "skill", "op": "add", "content": "A."}]}\n```'
    assert [e.content for e in parse_edits(fenced)] == ["A."]
    bare = '[{"target": "memory", "content": "B."}]'
    assert [(e.target, e.op, e.content) for e in parse_edits(bare)] == [("memory", "add", "B.")]


def test_parse_edits_ignores_bracketed_prose_before_the_json():
    text = 'Task [1] failed twice. {"edits": [{"target": "skill", "op": "add", "content": "A."}]}'
    assert [e.content for e in parse_edits(text)] == ["A."]


# -- violates_contract ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "contracts", "violates"),
    [
        ("Always respond in plain text.", ["Return JSON only."], True),
        ("Format the answer as YAML.", ["Output JSON matching the schema."], True),
        ("Reply in markdown with headings.", ["Respond with CSV rows."], True),
        ("Respond in JSON with a summary key.", ["Return JSON only."], False),
        ("Respond in JSON.", ["Return JSON or YAML."], False),
        ("Respond in JSON.", ["Be concise."], False),  # the contract names no format
        ("Respond in JSON.", [], False),
        ("Mention the JSON schema version.", ["Respond in plain text."], False),  # not a format demand
        ("Always respond concisely.", ["Return JSON only."], False),  # no format named
        ("Respond in JSON.", ["Be concise.", "Respond in plain text."], True),  # any contract
    ],
)
def test_violates_contract(rule: str, contracts: list[str], violates: bool):
    assert violates_contract(rule, contracts) is violates


# -- reflect: calls and payloads -----------------------------------------------------------------


def test_no_calls_when_nothing_failed(docs: DocumentSet):
    backend = answering_by_mode({})
    proposal = reflect(client(backend), [task("a")], {"a": runs("a", [1.0, 1.0])}, docs)
    assert proposal.calls == 0 and proposal.edits == [] and proposal.refused == []
    assert backend.requests == []


def test_one_call_per_kind_of_evidence(docs: DocumentSet):
    docs = apply_edit(docs, Edit("memory", "add", "Existing memory rule."))
    backend = answering_by_mode({})
    proposal = reflect(client(backend), TASKS, ATTEMPTS, docs, max_edits=3, kinds_per_request=1)
    assert proposal.calls == 2
    by_mode = {r.payload["mode"]: r for r in backend.requests}
    assert set(by_mode) == {"contrastive", "failure"}
    for r in backend.requests:
        assert r.purpose == "reflect"
        assert r.payload["max_edits"] == 3
        assert r.payload["current_rules"] == {"skill": [], "memory": ["Existing memory rule."]}
        assert "Existing memory rule." in r.user
        assert r.json_schema is not None
    assert [t["task_id"] for t in by_mode["contrastive"].payload["tasks"]] == ["mixed"]
    assert [t["task_id"] for t in by_mode["failure"].payload["tasks"]] == ["failing"]
    assert by_mode["failure"].payload["tasks"][0]["fail_reasons"] == [SIGNOFF]
    # the evidence the model reads is the same the payload describes
    assert "failing response 0" in by_mode["failure"].user
    assert "mixed response 0" in by_mode["contrastive"].user  # the better attempt
    assert "mixed response 1" in by_mode["contrastive"].user  # the worse attempt
    assert SIGNOFF in by_mode["contrastive"].user


def test_only_contrastive_call_when_no_task_failed_everywhere(docs: DocumentSet):
    backend = answering_by_mode({})
    proposal = reflect(client(backend), [task("mixed")], {"mixed": ATTEMPTS["mixed"]}, docs)
    assert proposal.calls == 1 and backend.requests[0].payload["mode"] == "contrastive"


def test_edits_from_both_calls_are_collected(docs: DocumentSet):
    backend = answering_by_mode(
        {
            "contrastive": {"edits": [edit("Always add Signed-off-by.")]},
            "failure": {"edits": [edit("Keep the subject short.", target="memory")]},
        }
    )
    proposal = reflect(client(backend), TASKS, ATTEMPTS, docs, kinds_per_request=1)
    assert sorted(e.content for e in proposal.edits) == ["Always add Signed-off-by.", "Keep the subject short."]
    assert proposal.refused == []


def test_a_reply_that_is_not_json_is_repaired_once_then_reported(docs: DocumentSet):
    backend = answering_by_mode({"contrastive": "I think the agent should try harder.", "failure": '["not an edit"]'})
    optimizer = client(backend)
    proposal = reflect(optimizer, TASKS, ATTEMPTS, docs, kinds_per_request=1)
    assert proposal.edits == [] and proposal.refused == []
    # the JSON list of non-edits is a real "no edits"; the prose is not silently read as one
    assert proposal.calls == 3 and proposal.unusable == [
        "optimizer reply was not JSON after one repair (the reply is not JSON)"
    ]
    assert optimizer.stats.left_out == {"reflect: optimizer reply was not JSON after one repair": 1}
    repair = backend.requests[-1]
    assert repair.payload["repair"] and repair.payload["mode"] == "contrastive"
    assert "I think the agent should try harder." in repair.user and "the reply is not JSON" in repair.user
    assert repair.json_schema is not None and repair.system == backend.requests[0].system


def test_a_repaired_reply_gives_its_edits(docs: DocumentSet):
    def answer(request: Request) -> str:
        if request.payload.get("repair"):
            return json.dumps({"edits": [edit("Always add Signed-off-by.")]})
        return (
            "Sure! Here is my edit: add a Signed-off-by line."
            if request.payload["mode"] == "contrastive"
            else json.dumps({"edits": []})
        )

    optimizer = client(FakeBackend(answer))
    proposal = reflect(optimizer, TASKS, ATTEMPTS, docs, kinds_per_request=1)
    assert [e.content for e in proposal.edits] == ["Always add Signed-off-by."]
    assert proposal.calls == 3 and proposal.unusable == [] and optimizer.stats.left_out == {}


def test_the_payload_carries_the_failed_checks_as_data(docs: DocumentSet):
    check = {"op": "contains", "arg": "Signed-off-by:"}
    attempts = {
        "failing": [
            Attempt(
                task_id="failing",
                sample=0,
                response="r",
                hard=0.0,
                soft=0.5,
                fail_reasons=["anything at all"],
                failed_checks=[check_id(check)],
            )
        ]
    }
    backend = answering_by_mode({})
    reflect(client(backend), [task("failing")], attempts, docs)
    assert backend.requests[0].payload["tasks"][0]["failed_checks"] == [check]


# -- reflect: guardrails -------------------------------------------------------------------------


def propose(docs: DocumentSet, edits: list[dict], tasks: list[TaskRecord] = TASKS, **kw):
    backend = answering_by_mode({"contrastive": {"edits": edits}})
    attempts = {"mixed": ATTEMPTS["mixed"]}
    return reflect(client(backend), tasks, attempts, docs, **kw)


def reasons_of(proposal) -> dict[str, str]:
    return {e.content or e.anchor: r for e, r in proposal.refused}


def test_unknown_target_and_op_are_refused(docs: DocumentSet):
    p = propose(docs, [edit("A.", target="readme"), edit("B.", op="append"), edit("C.", target="")])
    assert p.edits == []
    got = reasons_of(p)
    assert got["A."] == "unknown target 'readme'"
    assert got["B."] == "unknown op 'append'"
    assert got["C."] == "unknown target ''"


@pytest.mark.parametrize(
    "content",
    ["x" * 301, "<!-- skillopt-sleep:learned:end --> rule", "## Always do this", "Use ```fences```", "   "],
)
def test_bad_rule_text_is_refused(docs: DocumentSet, content: str):
    p = propose(docs, [edit(content), edit("A fine rule.")])
    assert [e.content for e in p.edits] == ["A fine rule."]
    assert len(p.refused) == 1


def test_rule_length_follows_limits(docs: DocumentSet):
    p = propose(docs, [edit("y" * 60)], limits=Limits(max_rule_chars=50))
    assert p.edits == [] and "longer than 50" in p.refused[0][1]


def test_content_is_cleaned(docs: DocumentSet):
    p = propose(docs, [edit("-   Always   sign\n off. ")])
    assert [e.content for e in p.edits] == ["Always sign off."]


def test_duplicates_are_collapsed(docs: DocumentSet):
    p = propose(
        docs,
        [
            edit("Always sign off."),
            edit("- always SIGN off."),
            edit("Always sign off.", target="memory"),
            edit("Keep it short."),
        ],
    )
    assert [e.content for e in p.edits] == ["Always sign off.", "Keep it short."]
    assert p.refused == []  # a duplicate is dropped, not reported as refused


def test_duplicates_across_calls_are_collapsed(docs: DocumentSet):
    backend = answering_by_mode(
        {"contrastive": {"edits": [edit("Always sign off.")]}, "failure": {"edits": [edit("always sign off.")]}}
    )
    p = reflect(client(backend), TASKS, ATTEMPTS, docs, kinds_per_request=1)
    assert len(p.edits) == 1 and p.refused == []


def test_rule_already_present_is_refused(docs: DocumentSet):
    docs = apply_edit(docs, Edit("memory", "add", "Always sign off."))
    p = propose(docs, [edit("always sign off.", target="skill"), edit("Another rule.")])
    assert [e.content for e in p.edits] == ["Another rule."]
    assert reasons_of(p) == {"always sign off.": "rule already present"}


def test_replace_and_delete_of_present_rules_pass(docs: DocumentSet):
    docs = apply_edit(docs, Edit("skill", "add", "Old rule."))
    p = propose(docs, [edit("New rule.", op="replace", anchor="Old rule."), edit("", op="delete", anchor="Old rule.")])
    assert [(e.op, e.anchor) for e in p.edits] == [("replace", "Old rule."), ("delete", "Old rule.")]


def test_already_refused_callback_is_honoured(docs: DocumentSet):
    seen = []

    def refused_before(e: Edit) -> bool:
        seen.append(e.content)
        return "short" in e.content

    p = propose(docs, [edit("Keep it short."), edit("Always sign off.")], already_refused=refused_before)
    assert [e.content for e in p.edits] == ["Always sign off."]
    assert reasons_of(p) == {"Keep it short.": "refused by the gate on an earlier night"}
    assert "Keep it short." in seen


def answering_rank(edits: list[dict], rank_reply: object) -> FakeBackend:
    """Reflect requests get ``edits``; the rank request gets ``rank_reply``."""
    return FakeBackend(lambda r: rank_reply if r.purpose == "rank" else {"edits": edits})


def test_more_candidates_than_the_budget_are_ranked_by_the_optimizer(docs: DocumentSet):
    proposed = [edit(f"Rule number {i}.", evidence=["mixed"]) for i in range(6)]
    backend = answering_rank(proposed, {"order": [6, 2, 5, 1, 3, 4]})
    p = reflect(client(backend), [task("mixed")], {"mixed": ATTEMPTS["mixed"]}, docs, max_edits=4)
    assert [e.content for e in p.edits] == ["Rule number 5.", "Rule number 1.", "Rule number 4.", "Rule number 0."]
    assert sorted(e.content for e, _ in p.refused) == ["Rule number 2.", "Rule number 3."]
    assert {r for _, r in p.refused} == {"ranked below the best 4 of 6 candidates"}
    [ranking] = [r for r in backend.requests if r.purpose == "rank"]
    assert [c["content"] for c in ranking.payload["candidates"]] == [f"Rule number {i}." for i in range(6)]
    assert ranking.payload["keep"] == 4 and ranking.payload["tasks"][0]["task_id"] == "mixed"
    assert "6. [skill, for all kinds] Rule number 5." in ranking.user and "task mixed" in ranking.user
    assert p.calls == 2 and p.candidates == 6 and p.unusable == []


def test_the_cut_after_ranking_reaches_every_kind_before_any_kind_gets_a_second_rule(docs: DocumentSet):
    tasks = [kinded("c1", "commit message"), kinded("c2", "commit message"), kinded("n1", "release notes")]
    attempts = {t.id: runs(t.id, [0.5, 0.5]) for t in tasks}
    proposed = [
        edit("End with a Refs trailer.", evidence=["c1"]),
        edit("Use the imperative mood.", evidence=["c2"]),
        edit("Wrap the body at 72 columns.", evidence=["c1", "c2"]),
        edit("Group the changes by area.", evidence=["n1"]),
        edit("Never mention ticket numbers.", evidence=["c1", "n1"]),
    ]
    backend = answering_rank(proposed, {"order": [1, 2, 3, 4, 5]})
    p = reflect(client(backend), tasks, attempts, docs, max_edits=3)
    assert [e.content for e in p.edits] == [
        "When working on a commit message task, end with a Refs trailer.",
        "When working on a release notes task, group the changes by area.",
        "Never mention ticket numbers.",
    ]
    assert [e.content for e, _ in p.refused] == [
        "When working on a commit message task, use the imperative mood.",
        "When working on a commit message task, wrap the body at 72 columns.",
    ]


def test_no_rank_request_when_the_candidates_fit_the_budget(docs: DocumentSet):
    backend = answering_rank([edit("A."), edit("B.")], {"order": [2, 1]})
    p = reflect(client(backend), [task("mixed")], {"mixed": ATTEMPTS["mixed"]}, docs, max_edits=2)
    assert [e.content for e in p.edits] == ["A.", "B."] and p.calls == 1
    assert [r.purpose for r in backend.requests] == ["reflect"]


def test_an_unusable_ranking_is_repaired_once_then_reported_and_support_decides(docs: DocumentSet):
    proposed = [
        edit("Rule A.", evidence=["x"]),
        edit("Rule B.", evidence=["x", "y", "z"]),
        edit("Rule C.", evidence=["x", "y"]),
    ]
    backend = answering_rank(proposed, "The second one looks best to me.")
    optimizer = client(backend)
    p = reflect(optimizer, [task("mixed")], {"mixed": ATTEMPTS["mixed"]}, docs, max_edits=2)
    assert [e.content for e in p.edits] == ["Rule B.", "Rule C."]
    assert p.calls == 3  # reflect, rank, the rank's repair
    assert p.unusable == [
        'rank: optimizer reply was not JSON after one repair (the reply has no JSON "order" list); '
        "kept the best supported"
    ]
    assert optimizer.stats.left_out == {"rank: optimizer reply was not JSON after one repair": 1}


def test_near_duplicates_from_different_batches_are_merged_with_their_evidence(docs: DocumentSet):
    tasks = [kinded("mixed", "commit message"), kinded("failing", "commit message")]
    backend = answering_by_mode(
        {
            "contrastive": {"edits": [edit("Always sign off the message.", evidence=["mixed"])]},
            "failure": {"edits": [edit("always sign off the message", evidence=["failing"])]},
        }
    )
    p = reflect(client(backend), tasks, ATTEMPTS, docs, kinds_per_request=1)
    # one kind, so one request holding both the contrastive and the failure evidence
    assert [r.payload["mode"] for r in backend.requests] == ["mixed"]
    backend = answering_by_mode(
        {
            "mixed": {
                "edits": [
                    edit("Always sign off the message.", evidence=["mixed"]),
                    edit("always sign off the message", evidence=["failing"]),
                ]
            }
        }
    )
    p = reflect(client(backend), tasks, ATTEMPTS, docs)
    [e] = p.edits
    assert e.evidence == ["mixed", "failing"] and p.refused == []


def test_every_failing_kind_reaches_the_optimizer_in_a_few_requests(docs: DocumentSet):
    tasks = [kinded(f"t{i}", f"kind {i}") for i in range(7)]
    attempts = {t.id: runs(t.id, [0.5]) for t in tasks}
    backend = answering_by_mode({})
    p = reflect(client(backend), tasks, attempts, docs)
    assert p.calls == 3
    assert sorted(k for r in backend.requests for k in r.payload["kinds"]) == sorted(t.kind for t in tasks)
    assert all(len(r.payload["kinds"]) <= 3 for r in backend.requests)
    # a request may propose a few rules per kind it shows; ranking cuts the pool to the budget
    assert [r.payload["max_edits"] for r in backend.requests] == [6, 6, 4]
    assert "6 small, general" in backend.requests[0].system


def test_budget_counts_only_accepted_edits(docs: DocumentSet):
    p = propose(docs, [edit("<!-- bad -->"), edit("A."), edit("B.")], max_edits=2)
    assert [e.content for e in p.edits] == ["A.", "B."]


def test_rule_that_overrides_an_output_contract_is_refused(docs: DocumentSet):
    tasks = [task("mixed", system='Return JSON only: {"message": str}.')]
    p = propose(
        docs, [edit("Always respond in plain text with a heading."), edit("Keep the message short.")], tasks=tasks
    )
    assert [e.content for e in p.edits] == ["Keep the message short."]
    assert reasons_of(p) == {"Always respond in plain text with a heading.": "overrides a task's output contract"}


def test_a_refused_edit_does_not_shadow_a_valid_one(docs: DocumentSet):
    p = propose(docs, [edit("Always sign off.", target="skills"), edit("Always sign off.", target="skill")])
    assert [(e.target, e.content) for e in p.edits] == [("skill", "Always sign off.")]


def test_the_evidence_the_optimizer_reads_is_clean_text(docs: DocumentSet):
    hostile = "ok \x1b[2J\x1b]8;;http://x\x07link\x1b]8;;\x07 \u202eevil\u200b"
    attempts = {
        "mixed": [
            Attempt(
                task_id="mixed",
                sample=i,
                response=f"{hostile} {i}",
                hard=float(s == 1.0),
                soft=s,
                fail_reasons=[] if s == 1.0 else [f"must contain {hostile}"],
            )
            for i, s in enumerate([1.0, 0.5])
        ],
        "failing": runs("failing", [0.5, 0.5]),
    }
    backend = answering_by_mode({})
    reflect(client(backend), [TaskRecord(id="mixed", intent=hostile), task("failing")], attempts, docs)
    for request in backend.requests:
        assert "ok link evil" in request.user or request.payload["mode"] == "failure"
        assert not any(ch in request.user for ch in "\x1b\x07\u202e\u200b")


# -- reflect: scoped rules -----------------------------------------------------------------------


def kinded(tid: str, kind: str) -> TaskRecord:
    t = task(tid)
    t.kind = kind
    return t


def test_the_optimizer_sees_each_tasks_kind(docs: DocumentSet):
    backend = answering_by_mode({})
    reflect(client(backend), [kinded("mixed", "commit message")], {"mixed": ATTEMPTS["mixed"]}, docs)
    request = backend.requests[0]
    assert request.payload["tasks"][0]["kind"] == "commit message"
    assert "(kind: commit message)" in request.user
    assert '"scope"' in request.system and "scope" in request.json_schema["properties"]["edits"]["items"]["properties"]


def test_a_scoped_rule_is_rendered_with_its_scope_and_goes_to_the_skill(docs: DocumentSet):
    proposal = propose(
        docs,
        [edit("End with a trailer.", target="memory", scope="writing a commit message", evidence=["mixed"])],
        tasks=[kinded("mixed", "commit message")],
    )
    [e] = proposal.edits
    assert (e.target, e.scope, e.content) == (
        "skill",
        "writing a commit message",
        "When writing a commit message, end with a trailer.",
    )
    assert apply_edit(docs, e).skill.rules() == ["When writing a commit message, end with a trailer."]


def test_an_unscoped_rule_from_one_kinds_evidence_is_scoped_by_the_engine(docs: DocumentSet):
    proposal = propose(
        docs,
        [edit('Always include "Refs:".', target="memory", evidence=["mixed"])],
        tasks=[kinded("mixed", "commit message")],
    )
    [e] = proposal.edits
    assert e.target == "skill" and e.content.startswith("When working on a commit message task, always")


def test_a_scope_that_makes_the_rule_too_long_is_refused(docs: DocumentSet):
    proposal = propose(
        docs,
        [edit("x" * 50, scope="writing a commit message", evidence=["mixed"])],
        tasks=[kinded("mixed", "commit message")],
        limits=Limits(max_rule_chars=60),
    )
    assert proposal.edits == [] and "longer than 60" in proposal.refused[0][1]


# -- whole-document awareness --------------------------------------------------------------------


FORBID = "Do NOT look anything up, search, or use any tools."


def test_the_optimizer_sees_the_hand_written_text_and_may_supersede_a_line(tmp_path: Path):
    (tmp_path / "CLAUDE.md").write_text(f"# Project\n\n{FORBID}\n", encoding="utf-8")
    docs = load_documents(tmp_path)
    backend = answering_by_mode(
        {
            "failure": {
                "edits": [
                    edit("Use the search tool.", target="memory", supersedes=FORBID),
                    edit("", target="skill", op="delete_line", anchor=FORBID),
                ]
            }
        }
    )
    proposal = reflect(client(backend), TASKS, ATTEMPTS, docs, kinds_per_request=1)
    for request in backend.requests:
        assert FORBID in request.user and "supersedes" in request.system
        assert request.payload["documents"]["memory"]["hand_written"] == ["# Project", FORBID]
        assert request.payload["documents"]["skill"]["whole_skill"] is False
    assert [(e.op, e.supersedes) for e in proposal.edits] == [("add", FORBID), ("delete_line", "")]
    # the gate applies them; a line edit of a skill not opted in is refused there. The rule's
    # evidence is one kind's, so it goes to the skill, overriding the memory file's line from there
    assert proposal.edits[0].target == "skill"
    assert apply_edit(docs, proposal.edits[0]).skill.rules()[-1].endswith(f'(supersedes: "{FORBID}")')


def test_each_request_can_be_read_more_than_once_and_the_readings_are_merged(docs: DocumentSet):
    def by_sample(request: Request) -> object:
        rules = ["Always add Signed-off-by.", "Keep the subject short."]
        # both readings name the first rule (one reworded); only the second names the other
        return {
            "edits": [edit(rules[0] if request.sample == 0 else rules[0].lower())]
            + ([edit(rules[1])] if request.sample == 1 else [])
        }

    backend = FakeBackend(by_sample)
    proposal = reflect(client(backend), [task("mixed")], {"mixed": ATTEMPTS["mixed"]}, docs, samples=2)
    assert [r.sample for r in backend.requests] == [0, 1] and proposal.calls == 2
    assert len({r.user for r in backend.requests}) == 1, "the same evidence, read twice"
    assert sorted(e.content for e in proposal.edits) == ["Always add Signed-off-by.", "Keep the subject short."]
    one = FakeBackend(by_sample)
    assert [e.content for e in reflect(client(one), [task("mixed")], {"mixed": ATTEMPTS["mixed"]}, docs).edits] == [
        "Always add Signed-off-by."
    ] and len(one.requests) == 1
