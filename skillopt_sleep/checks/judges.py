"""Scoring one response against a task's judge: rule checks, exact match, rubric.

Rule checks: hard = 1 when every check passes, soft = fraction passed; the failed checks come
back as data (``failed_checks``) beside their human-readable reasons. Invalid checks are rejected
when tasks load (``validate_judge``), never silently scored 0. A rubric needs the optimizer model:
a night grades rubric replies through ``rubric.RubricJudge`` (concurrently, with one repair of a
reply that is not JSON); ``score(..., rubric=)`` is the one-call form and raises on a bad reply.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

from skillopt_sleep.checks.words import limit_of, limit_words, readable_regex

RULE_OPS = (
    "contains",
    "not_contains",
    "regex",
    "section_present",
    "section_contains",
    "max_chars",
    "min_chars",
    "no_refusal",
    "tool_called",
)
JUDGE_KINDS = ("rule", "exact", "rubric")

REFUSAL_RE = re.compile(
    r"\b(i'?m sorry,? but i can'?t|i cannot help|i can'?t help with|i am unable to|i'?m unable to|"
    r"as an ai(?: language model)?,? i|i won'?t be able to)\b",
    re.IGNORECASE,
)
_HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FENCE_RE = re.compile(r"^\s{0,3}(```|~~~).*?(?:^\s{0,3}\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


class JudgeError(ValueError):
    """A judge spec that cannot be scored. Raised at load time."""


CheckId = str  # a validated check as canonical JSON (``check_id``): the data behind a fail reason


@dataclass
class Score:
    hard: float
    soft: float
    fail_reasons: list[str] = field(default_factory=list)  # human-readable, for people and prompts
    failed_checks: list[CheckId] = field(default_factory=list)  # the rule checks that failed


def check_id(check: dict[str, Any]) -> CheckId:
    """A validated check's identity: its canonical JSON (``check_from_id`` reads it back)."""
    return json.dumps({"op": check["op"], "arg": check.get("arg")}, sort_keys=True, ensure_ascii=False)


def check_from_id(identity: CheckId) -> dict[str, Any]:
    check = json.loads(identity)
    if not isinstance(check, dict) or "op" not in check:
        raise JudgeError(f"not a check id: {identity!r}")
    return check


def describe_check(check: dict[str, Any]) -> str:
    """A human (and optimizer-readable) statement of what a check requires."""
    op = check["op"]
    arg: Any = check.get("arg")  # its type depends on op
    if op == "contains":
        return f'must contain "{arg}"'
    if op == "not_contains":
        return f'must not contain "{arg}"'
    if op == "regex":
        limit = limit_of(arg)
        if limit:
            return (
                f"must have {limit_words(*limit)}"
                if limit[0] == "first_line_chars"
                else f"must be {limit_words(*limit)}"
            )
        text = readable_regex(arg)
        return f'must contain text like "{text}"' if text else f"must match the pattern /{arg}/"
    if op == "section_present":
        return f'must have a section headed "{arg}"'
    if op == "section_contains":
        return f'section "{arg["section"]}" must contain "{arg["text"]}"'
    if op == "max_chars":
        return f"must be at most {arg} characters"
    if op == "min_chars":
        return f"must be at least {arg} characters"
    if op == "no_refusal":
        return "must not refuse"
    if op == "tool_called":
        return f'must call the tool "{arg}"'
    return f"{op} {arg!r}"


def required_tools(judge: dict[str, Any]) -> tuple[str, ...]:
    """The tools a judge's ``tool_called`` checks name: a backend must offer them (as stubs) for
    the task to be measurable at all."""
    checks = judge.get("checks") if isinstance(judge, dict) else None
    return tuple(dict.fromkeys(c["arg"] for c in checks or [] if isinstance(c, dict) and c.get("op") == "tool_called"))


def validate_check(check: Any) -> dict[str, Any]:
    if not isinstance(check, dict):
        raise JudgeError(f"a check must be an object, got {check!r}")
    op = check.get("op")
    if op not in RULE_OPS:
        raise JudgeError(f"unknown check op {op!r} (known: {', '.join(RULE_OPS)})")
    arg = check.get("arg")
    if op in ("contains", "not_contains", "section_present", "tool_called"):
        if not isinstance(arg, str) or not arg.strip():
            raise JudgeError(f"check {op} needs a non-empty string arg, got {arg!r}")
        if op == "section_present":
            arg = _heading_title(arg)
    elif op == "regex":
        if not isinstance(arg, str) or not arg:
            raise JudgeError(f"check regex needs a pattern string, got {arg!r}")
        try:
            re.compile(arg)
        except re.error as exc:
            raise JudgeError(f"check regex {arg!r} does not compile: {exc}") from None
    elif op == "section_contains":
        if isinstance(arg, str) and "::" in arg:  # compact form "Section::text"
            section, _, text = arg.partition("::")
            arg = {"section": section.strip(), "text": text.strip()}
        if not (
            isinstance(arg, dict)
            and isinstance(arg.get("section"), str)
            and isinstance(arg.get("text"), str)
            and arg["section"]
            and arg["text"]
        ):
            raise JudgeError(f'check section_contains needs arg {{"section": str, "text": str}}, got {arg!r}')
        arg = {"section": _heading_title(arg["section"]), "text": arg["text"]}
    elif op in ("max_chars", "min_chars"):
        if isinstance(arg, bool) or not isinstance(arg, int) or arg < 0:
            raise JudgeError(f"check {op} needs a non-negative integer arg, got {arg!r}")
    elif op == "no_refusal":
        arg = None
    return {"op": op, "arg": arg}


def _heading_title(title: str) -> str:
    """A section is named by its title: "## Testing" and "Testing" mean the same heading."""
    bare = title.strip().lstrip("#").strip()
    if not bare:
        raise JudgeError(f"section name {title!r} is empty")
    return bare


def validate_judge(judge: Any, reference_kind: str = "rule", reference: str = "") -> dict[str, Any]:
    """Normalise a task's judge spec or raise JudgeError. An empty judge is derived from the
    reference kind (exact / rubric)."""
    if judge in (None, {}):
        if reference_kind == "exact" and reference:
            return {"kind": "exact"}
        if reference_kind == "rubric" and reference:
            return {"kind": "rubric"}
        raise JudgeError("task has no judge and no exact/rubric reference to score against")
    if not isinstance(judge, dict):
        raise JudgeError(f"judge must be an object, got {judge!r}")
    kind = judge.get("kind", "rule")
    if kind not in JUDGE_KINDS:
        raise JudgeError(f"unknown judge kind {kind!r} (known: {', '.join(JUDGE_KINDS)})")
    if kind == "rule":
        checks = judge.get("checks")
        if not isinstance(checks, list) or not checks:
            raise JudgeError("a rule judge needs a non-empty list of checks")
        valid = [validate_check(c) for c in checks]
        out: dict[str, Any] = {"kind": "rule", "checks": valid}
        said = _said(judge.get("said"), {check_id(c) for c in valid})
        if said:
            out["said"] = said
        return out
    if kind == "exact" and not reference:
        raise JudgeError("an exact judge needs the task's reference")
    if kind == "rubric" and not (reference or judge.get("rubric")):
        raise JudgeError("a rubric judge needs a rubric (judge.rubric or the task's reference)")
    return dict(judge)


SAID_MAX = 20  # complaints kept per judge
SAID_CHARS = 200


def _said(said: Any, ids: set[str]) -> dict[str, str]:
    """A rule judge's ``said``: for some of its checks (by id), the person's complaint that asked
    for it, as the report shows it beside the rule that answers it; anything else is dropped."""
    if not isinstance(said, dict):
        return {}
    out: dict[str, str] = {}
    for key, text in said.items():
        if key in ids and isinstance(text, str) and text.strip() and len(out) < SAID_MAX:
            out[key] = " ".join(text.split())[:SAID_CHARS]
    return out


def sections(text: str) -> dict[str, str]:
    """Markdown headings (normalised lower-case) -> body text until the next heading."""
    out: dict[str, str] = {}
    text = _FENCE_RE.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # '# comments' in code are not headings
    matches = list(_HEADING_RE.finditer(text))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        out[_norm_heading(m.group(2))] = text[m.end() : end]
    return out


def _norm_heading(title: str) -> str:
    return re.sub(r"\s+", " ", title.strip().strip(":").strip()).lower()


def run_check(check: dict[str, Any], text: str, tools_called: list[str] | None = None) -> bool:
    op = check["op"]
    arg: Any = check.get("arg")  # its type depends on op
    if op == "contains":
        return arg.lower() in text.lower()
    if op == "not_contains":
        return arg.lower() not in text.lower()
    if op == "regex":
        return re.search(arg, text, re.MULTILINE) is not None
    if op == "section_present":
        return _norm_heading(arg) in sections(text)
    if op == "section_contains":
        body = sections(text).get(_norm_heading(arg["section"]))
        return body is not None and arg["text"].lower() in body.lower()
    if op == "max_chars":
        return len(text.strip()) <= arg
    if op == "min_chars":
        return len(text.strip()) >= arg
    if op == "no_refusal":
        return bool(text.strip()) and REFUSAL_RE.search(text.translate(_APOSTROPHES)) is None
    if op == "tool_called":
        return arg in (tools_called or [])
    raise JudgeError(f"unknown check op {op!r}")


def score_rule(checks: list[dict[str, Any]], text: str, tools_called: list[str] | None = None) -> Score:
    failed = [c for c in checks if not run_check(c, text, tools_called)]
    n = len(checks)
    return Score(
        hard=1.0 if not failed else 0.0,
        soft=(n - len(failed)) / n,
        fail_reasons=[describe_check(c) for c in failed],
        failed_checks=[check_id(c) for c in failed],
    )


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[`*_\"'“”‘’]", "", text)
    return re.sub(r"\s+", " ", text).strip(" .\n\t")


def score_exact(reference: str, text: str) -> Score:
    ok = normalize(reference) in normalize(text)
    return Score(1.0 if ok else 0.0, 1.0 if ok else 0.0, [] if ok else ["does not match the reference"])


RubricCall = Callable[[str, str], str]  # (rubric, response) -> model text


def parse_rubric_reply(text: str) -> tuple[float, str]:
    """Parse ``{"score", "reason"}`` from a rubric judge's reply; score clamped to 0..1."""
    from skillopt_sleep.reply_json import extract_json
    from skillopt_sleep.sanitize import clean_text

    data = extract_json(text)
    if not isinstance(data, dict) or "score" not in data:
        raise JudgeError('rubric judge reply has no {"score", "reason"} object')
    try:
        score = float(data["score"])
    except (TypeError, ValueError):
        raise JudgeError(f"rubric score {data['score']!r} is not a number") from None
    if score != score:  # NaN
        raise JudgeError("rubric score is NaN")
    return min(1.0, max(0.0, score)), clean_text(data.get("reason", ""))[:500]


def rubric_score(value: float, reason: str) -> Score:
    """The score of a parsed rubric verdict: a hard pass only at full marks."""
    passed = value >= 0.999
    return Score(1.0 if passed else 0.0, value, [] if passed else [reason or "rubric"])


def rubric_text(task_judge: dict[str, Any], reference: str) -> str:
    """What a rubric judge grades against: the judge's own rubric, else the task's reference."""
    return task_judge.get("rubric") or reference


def score(
    task_judge: dict[str, Any],
    reference: str,
    text: str,
    tools_called: list[str] | None = None,
    rubric: RubricCall | None = None,
) -> Score:
    """Score one response. ``task_judge`` must already be validated."""
    kind = task_judge.get("kind", "rule")
    if kind == "rule":
        return score_rule(task_judge["checks"], text, tools_called)
    if kind == "exact":
        return score_exact(reference, text)
    if kind == "rubric":
        if rubric is None:
            raise JudgeError("a rubric judge needs the optimizer model")
        return rubric_score(*parse_rubric_reply(rubric(rubric_text(task_judge, reference), text)))
    raise JudgeError(f"unknown judge kind {kind!r}")
