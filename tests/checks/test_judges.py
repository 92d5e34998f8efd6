from __future__ import annotations

import pytest

from skillopt_sleep.checks.words import limit_check
from skillopt_sleep.checks import judges
from skillopt_sleep.checks.judges import (
    JudgeError,
    describe_check,
    normalize,
    parse_rubric_reply,
    run_check,
    score,
    score_exact,
    score_rule,
    sections,
    validate_check,
    validate_judge,
)

PR = """Summary of the change.

## Summary
Adds retries to the HTTP client.

## Testing
Ran pytest -q; all green.

### Notes:
Nothing else.
"""


def check(op: str, arg=None) -> dict:
    return validate_check({"op": op, "arg": arg})


# -- the rule ops ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "arg", "text", "expected"),
    [
        ("contains", "Signed-off-by:", "fix\n\nSigned-off-by: A", True),
        ("contains", "signed-off-by:", "fix\n\nSIGNED-OFF-BY: A", True),  # case-insensitive
        ("contains", "Signed-off-by:", "fix: a thing", False),
        ("not_contains", "WIP", "feat: add a thing", True),
        ("not_contains", "WIP", "wip: add a thing", False),  # case-insensitive
        ("regex", r"^feat(\(\w+\))?: ", "feat(api): add retries", True),
        ("regex", r"^feat: ", "Subject\nfeat: on line two", True),  # multiline anchors
        ("regex", r"^feat: ", "chore: nothing", False),
        ("regex", r"JIRA-\d+", "refs jira-12", False),  # regex is case-sensitive
        ("section_present", "Testing", PR, True),
        ("section_present", "testing", PR, True),
        ("section_present", "Notes", PR, True),  # trailing colon and level ignored
        ("section_present", "Risks", PR, False),
        ("section_present", "Testing", "We did some Testing here.", False),  # not a heading
        ("max_chars", 10, "0123456789", True),
        ("max_chars", 10, "  0123456789  \n", True),  # surrounding whitespace not counted
        ("max_chars", 10, "0123456789A", False),
        ("max_chars", 0, "", True),
        ("min_chars", 5, "abcde", True),
        ("min_chars", 5, "abcd    ", False),
        ("no_refusal", None, "Here is the commit message.", True),
        ("no_refusal", None, "I'm sorry, but I can't help with that.", False),
        ("no_refusal", None, "As an AI language model, I cannot write code.", False),
        ("no_refusal", None, "I am unable to do that.", False),
        ("no_refusal", None, "   ", False),  # an empty answer is not an answer
        ("no_refusal", None, "I'm sorry for the delay; here is the fix.", True),
    ],
)
def test_run_check(op, arg, text, expected):
    assert run_check(check(op, arg), text) is expected


def test_section_contains_looks_only_inside_that_section():
    c = check("section_contains", {"section": "Testing", "text": "pytest"})
    assert run_check(c, PR) is True
    # "retries" is in the document but under Summary, not Testing
    assert run_check(check("section_contains", {"section": "Testing", "text": "retries"}), PR) is False
    # missing section
    assert run_check(check("section_contains", {"section": "Risks", "text": "none"}), PR) is False
    # case-insensitive on both the heading and the text
    assert run_check(check("section_contains", {"section": "testing", "text": "PYTEST"}), PR) is True


def test_section_contains_compact_form_is_normalised():
    c = validate_check({"op": "section_contains", "arg": " Testing :: pytest "})
    assert c == {"op": "section_contains", "arg": {"section": "Testing", "text": "pytest"}}
    assert run_check(c, PR) is True


def test_tool_called():
    c = check("tool_called", "Bash")
    assert run_check(c, "done", ["Read", "Bash"]) is True
    assert run_check(c, "done", ["Read"]) is False
    assert run_check(c, "done", None) is False
    assert run_check(c, "I used Bash", []) is False  # mentioning the tool is not calling it


def test_sections_maps_normalised_headings_to_bodies():
    got = sections(PR)
    assert set(got) == {"summary", "testing", "notes"}
    assert "retries" in got["summary"] and "pytest" not in got["summary"]
    assert got["notes"].strip() == "Nothing else."


# -- hard / soft ---------------------------------------------------------------------------------


def test_score_rule_hard_and_soft():
    checks = [
        check("contains", "Summary"),
        check("section_present", "Testing"),
        check("max_chars", 20),
        check("not_contains", "WIP"),
    ]
    s = score_rule(checks, PR)
    assert s.hard == 0.0
    assert s.soft == pytest.approx(3 / 4)
    assert s.fail_reasons == ["must be at most 20 characters"]

    ok = score_rule(checks[:2] + checks[3:], PR)
    assert ok.hard == 1.0 and ok.soft == 1.0 and ok.fail_reasons == []

    none = score_rule([check("contains", "zzz"), check("section_present", "Risks")], PR)
    assert none.hard == 0.0 and none.soft == 0.0
    assert len(none.fail_reasons) == 2


def test_score_dispatches_on_kind():
    judge = validate_judge({"kind": "rule", "checks": [{"op": "tool_called", "arg": "Edit"}]})
    assert score(judge, "", "x", ["Edit"]).hard == 1.0
    assert score(judge, "", "x", []).hard == 0.0
    assert score({"kind": "exact"}, "Done", "it is done.").hard == 1.0


# -- describe_check ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ({"op": "contains", "arg": "X"}, 'must contain "X"'),
        ({"op": "not_contains", "arg": "X"}, 'must not contain "X"'),
        ({"op": "regex", "arg": "^a+$"}, "must match the pattern /^a+$/"),
        ({"op": "regex", "arg": r"[Cc]onfidence\s*[:=]"}, 'must contain text like "Confidence:"'),
        ({"op": "regex", "arg": r"Refs: ACME-\d+"}, 'must contain text like "Refs: ACME-<n>"'),
        (limit_check("words", 50), "must be at most 50 words"),
        (limit_check("lines", 1), "must be at most 1 line"),
        (limit_check("first_line_chars", 72), "must have a first line of at most 72 characters"),
        ({"op": "section_present", "arg": "Testing"}, 'must have a section headed "Testing"'),
        ({"op": "section_contains", "arg": "Testing::pytest"}, 'section "Testing" must contain "pytest"'),
        ({"op": "max_chars", "arg": 72}, "must be at most 72 characters"),
        ({"op": "min_chars", "arg": 3}, "must be at least 3 characters"),
        ({"op": "no_refusal"}, "must not refuse"),
        ({"op": "tool_called", "arg": "Bash"}, 'must call the tool "Bash"'),
    ],
)
def test_describe_check(raw, text):
    assert describe_check(validate_check(raw)) == text


def test_fail_reasons_are_the_descriptions():
    c = check("section_contains", "Risks::rollback")
    assert score_rule([c], PR).fail_reasons == [describe_check(c)]


def test_failed_checks_come_back_as_data():
    failing = [check("section_contains", "Risks::rollback"), check("max_chars", 10), check("contains", 'say "hi"')]
    passing = check("section_present", "Testing")
    result = score_rule([passing, *failing], PR)
    assert [judges.check_from_id(c) for c in result.failed_checks] == failing
    assert score_rule([passing], PR).failed_checks == []


def test_check_ids_are_canonical_and_reject_garbage():
    assert judges.check_id({"arg": 3, "op": "max_chars"}) == judges.check_id({"op": "max_chars", "arg": 3})
    for bad in ('"just text"', "[1]", '{"arg": 1}'):
        with pytest.raises(JudgeError):
            judges.check_from_id(bad)


# -- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "contains",
        None,
        ["contains", "x"],
        {"op": "includes", "arg": "x"},
        {"arg": "x"},
        {"op": "contains"},
        {"op": "contains", "arg": ""},
        {"op": "contains", "arg": "   "},
        {"op": "contains", "arg": 5},
        {"op": "not_contains", "arg": ["a"]},
        {"op": "section_present", "arg": None},
        {"op": "tool_called", "arg": 1},
        {"op": "regex", "arg": "("},
        {"op": "regex", "arg": "[a-"},
        {"op": "regex", "arg": ""},
        {"op": "regex", "arg": 3},
        {"op": "section_contains", "arg": "Testing"},
        {"op": "section_contains", "arg": "::text"},
        {"op": "section_contains", "arg": "Testing::"},
        {"op": "section_contains", "arg": {"section": "Testing"}},
        {"op": "section_contains", "arg": {"section": "", "text": "x"}},
        {"op": "section_contains", "arg": {"section": "A", "text": 3}},
        {"op": "max_chars", "arg": "72"},
        {"op": "max_chars", "arg": 7.5},
        {"op": "max_chars", "arg": -1},
        {"op": "max_chars", "arg": True},
        {"op": "min_chars", "arg": False},
        {"op": "min_chars", "arg": None},
    ],
)
def test_validate_check_rejects(raw):
    with pytest.raises(JudgeError):
        validate_check(raw)


def test_validate_check_names_the_problem():
    with pytest.raises(JudgeError, match="unknown check op 'includes'"):
        validate_check({"op": "includes", "arg": "x"})
    with pytest.raises(JudgeError, match="does not compile"):
        validate_check({"op": "regex", "arg": "("})


def test_validate_check_normalises():
    assert validate_check({"op": "no_refusal", "arg": "whatever"}) == {"op": "no_refusal", "arg": None}
    assert validate_check({"op": "contains", "arg": "x", "extra": 1}) == {"op": "contains", "arg": "x"}
    assert validate_check({"op": "max_chars", "arg": 0}) == {"op": "max_chars", "arg": 0}


@pytest.mark.parametrize(
    "judge",
    [
        {"kind": "rule", "checks": []},
        {"kind": "rule"},
        {"kind": "rule", "checks": {"op": "contains", "arg": "x"}},
        {"kind": "rule", "checks": [{"op": "contains", "arg": "x"}, {"op": "bogus"}]},
        {"kind": "vibes"},
        "rule",
        ["contains"],
    ],
)
def test_validate_judge_rejects(judge):
    with pytest.raises(JudgeError):
        validate_judge(judge)


def test_validate_judge_defaults_and_references():
    assert validate_judge({"checks": [{"op": "contains", "arg": "x"}]}) == {
        "kind": "rule",
        "checks": [{"op": "contains", "arg": "x"}],
    }
    assert validate_judge(None, "exact", "42") == {"kind": "exact"}
    assert validate_judge({}, "rubric", "is polite") == {"kind": "rubric"}
    with pytest.raises(JudgeError):
        validate_judge({}, "exact", "")
    with pytest.raises(JudgeError):
        validate_judge(None, "rule", "")
    with pytest.raises(JudgeError):
        validate_judge({"kind": "exact"}, "exact", "")
    with pytest.raises(JudgeError):
        validate_judge({"kind": "rubric"}, "rubric", "")
    assert validate_judge({"kind": "rubric", "rubric": "be kind"}, "none", "")["rubric"] == "be kind"


# -- exact ---------------------------------------------------------------------------------------


def test_normalize():
    assert normalize("  **Done**.  ") == "done"
    assert normalize("“Hello”   `world`") == "hello world"
    assert normalize("ＡＢＣ") == "abc"  # NFKC full-width


@pytest.mark.parametrize(
    ("reference", "text", "ok"),
    [
        ("v1.2.3", "The release is **v1.2.3**.", True),
        ("Hello World", "hello\n  world", True),
        ("it's done", "It’s done", True),
        ("v1.2.3", "v1.2.4", False),
    ],
)
def test_score_exact(reference, text, ok):
    s = score_exact(reference, text)
    assert (s.hard, s.soft) == ((1.0, 1.0) if ok else (0.0, 0.0))
    assert bool(s.fail_reasons) is (not ok)


# -- rubric --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"score": 0.7, "reason": "ok"}', 0.7),
        ('{"score": 1.5, "reason": "great"}', 1.0),
        ('{"score": -0.3, "reason": "bad"}', 0.0),
        ('{"score": "0.25"}', 0.25),
        ('Sure.\n```json\n{"score": 0.5, "reason": "meh"}\n```', 0.5),
        ('{"score": 1e9}', 1.0),
    ],
)
def test_parse_rubric_reply_clamps(reply, value):
    got, _ = parse_rubric_reply(reply)
    assert got == pytest.approx(value)
    assert 0.0 <= got <= 1.0


def test_parse_rubric_reply_reason():
    assert parse_rubric_reply('{"score": 1, "reason": "covers it"}') == (1.0, "covers it")
    assert parse_rubric_reply('{"score": 1}') == (1.0, "")


@pytest.mark.parametrize(
    "reply",
    [
        '{"score": NaN, "reason": "?"}',
        '{"score": "high"}',
        '{"score": null}',
        '{"score": [1]}',
        '{"reason": "no score"}',
        "[0.5]",
        "I'd give it a 7/10",
        "",
    ],
)
def test_parse_rubric_reply_rejects(reply):
    with pytest.raises(JudgeError):
        parse_rubric_reply(reply)


def test_rubric_without_a_model_is_an_error():
    with pytest.raises(JudgeError, match="optimizer"):
        score({"kind": "rubric", "rubric": "be brief"}, "", "hi", rubric=None)


def test_rubric_uses_judge_rubric_then_reference():
    seen = []

    def model(rubric: str, response: str) -> str:
        seen.append((rubric, response))
        return '{"score": 0.4, "reason": "too long"}'

    s = score({"kind": "rubric", "rubric": "be brief"}, "the reference", "answer", rubric=model)
    assert seen == [("be brief", "answer")]
    assert (s.hard, s.soft, s.fail_reasons) == (0.0, 0.4, ["too long"])

    score({"kind": "rubric"}, "the reference", "answer", rubric=model)
    assert seen[-1] == ("the reference", "answer")


def test_rubric_full_marks_is_hard_pass():
    s = score({"kind": "rubric", "rubric": "r"}, "", "a", rubric=lambda r, t: '{"score": 2}')
    assert (s.hard, s.soft, s.fail_reasons) == (1.0, 1.0, [])


def test_rubric_garbage_reply_raises_instead_of_scoring_zero():
    with pytest.raises(JudgeError):
        score({"kind": "rubric", "rubric": "r"}, "", "a", rubric=lambda r, t: "no idea")


def test_unknown_kind_in_score_raises():
    with pytest.raises(JudgeError):
        score({"kind": "vibes"}, "", "x")


# -- known gaps ----------------------------------------------------------------------------------


def test_refusal_with_typographic_apostrophe():
    assert run_check(check("no_refusal"), "I’m sorry, but I can’t help with that.") is False


def test_comment_in_a_code_fence_is_not_a_section():
    text = "Run this:\n```bash\n# Testing\nmake test\n```\n"
    assert run_check(check("section_present", "Testing"), text) is False


def test_section_arg_with_hashes_is_normalised_or_rejected():
    try:
        c = validate_check({"op": "section_present", "arg": "## Testing"})
    except JudgeError:
        return
    assert run_check(c, "## Testing\nran pytest") is True


def test_a_rule_judge_keeps_the_complaints_of_its_own_checks_only():
    check = {"op": "contains", "arg": "Refs:"}
    judge = judges.validate_judge(
        {
            "kind": "rule",
            "checks": [check],
            "said": {
                judges.check_id(check): "  Missing the   Refs: trailer. " + "x" * 400,
                judges.check_id({"op": "contains", "arg": "other"}): "not one of its checks",
                "junk": 3,
            },
        }
    )
    assert list(judge["said"]) == [judges.check_id(check)]
    assert judge["said"][judges.check_id(check)].startswith("Missing the Refs: trailer. x")
    assert len(judge["said"][judges.check_id(check)]) == judges.SAID_CHARS
    assert "said" not in judges.validate_judge({"kind": "rule", "checks": [check], "said": "no"})
