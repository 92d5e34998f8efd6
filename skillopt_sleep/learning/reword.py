"""Rules a person would write: a proposed rule that quotes regex syntax or a check's internal form
(``check_words``), or that supersedes a hand-written line and drops what of it it does not mean to
override (``conflicts``), is said again: the dropped parts appended to it, a quoted pattern
reworded once by the optimizer and, if that fails, replaced by the text it asks for.

A rule such as ``Make the response match the pattern [Cc]onfidence\\s*[:=]`` passes the checks and
reads like their definition; a person writes "End with a line `Confidence: <level>`". A rule that
supersedes "Do not search — just reply directly and concisely" with "Use the search tool" loses
"directly and concisely" where it applies; said again, it keeps them. One optimizer request per
rule that still has a problem, all at once; a reply that is not the JSON asked for is repaired once
(``reply_repair.py``). Whatever still has the problem afterwards is refused by reflection's guardrails
(``problem``).
"""

from __future__ import annotations

from dataclasses import replace

from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.checks.words import quoted_syntax, readable_regex
from skillopt_sleep.rules.conflicts import dropped
from skillopt_sleep.documents.handwritten import superseded_lines
from skillopt_sleep.checks.judges import check_from_id
from skillopt_sleep.prompts import render
from skillopt_sleep.reply_repair import CONTENT_SCHEMA, Unusable, content_of, parse_replies
from skillopt_sleep.sanitize import clean_text
from skillopt_sleep.rules.scope import render_scoped, split_scoped
from skillopt_sleep.types import Attempt, Edit

LINE_OPS = ("delete", "delete_line", "replace_line")


def problem(edit: Edit) -> tuple[str, list[str]] | None:
    """Why ``edit``'s rule is not one a person would write (a sentence for the optimizer and the
    report), with the parts of a superseded line it must restate; None when there is nothing."""
    if edit.op in LINE_OPS:
        return None
    what = quoted_syntax(edit.content)
    if what:
        return f"it quotes {what} where a person writes plain words", []
    for line in superseded_lines(edit.supersedes):
        lost = dropped(split_scoped(edit.content)[1], line)
        if lost:
            parts = "; ".join(f'"{clause}"' for clause, _ in lost)
            return (
                f'it supersedes the hand-written line "{line}" but drops {parts}, which it does '
                "not override: restate what it keeps",
                [rest for _, rest in lost],
            )
    return None


def _request(edit: Edit, why: str, keep: list[str], attempts: dict[str, list[Attempt]], max_rule_chars: int) -> Request:
    seen = [a for tid in edit.evidence for a in attempts.get(tid, [])]
    failed = sorted({c for a in seen for c in a.failed_checks})
    reasons = "\n".join(f"- {clean_text(r)[:300]}" for r in sorted({r for a in seen for r in a.fail_reasons})[:20])
    scope, body = split_scoped(edit.content)
    return Request(
        purpose="reword",
        system=render("reword_system", max_rule_chars=max_rule_chars),
        user=render(
            "reword_user",
            rule=clean_text(edit.content),
            problem=clean_text(why),
            failures=reasons or "- (none recorded)",
        ),
        max_tokens=400,
        temperature=0.0,
        json_schema=CONTENT_SCHEMA,
        payload={
            "rule": clean_text(body),
            "scope": scope or edit.scope,
            "keep": keep,
            "failed_checks": [check_from_id(c) for c in failed],
        },
    )


def said_again(edit: Edit, attempts: dict[str, list[Attempt]], patterns: bool = True) -> Edit:
    """The rule mended without a model where that is exact: the parts of a superseded line it
    drops appended to it ("…; just reply directly and concisely."), and (``patterns``) a failed
    check's pattern it quotes replaced by the text the pattern asks for (``readable_regex``)."""
    scope, body = split_scoped(edit.content)
    failed = {c for tid in edit.evidence for a in attempts.get(tid, []) for c in a.failed_checks}
    for check in sorted(failed) if patterns else []:
        parsed = check_from_id(check)
        text = readable_regex(str(parsed.get("arg"))) if parsed.get("op") == "regex" else None
        if text and str(parsed["arg"]) in body:
            body = body.replace(str(parsed["arg"]), f'"{text}"')
    if edit.supersedes and not quoted_syntax(body):
        kept = [rest for line in superseded_lines(edit.supersedes) for _, rest in dropped(body, line)]
        if kept:
            body = "; ".join([body.rstrip(" .")] + [k[:1].lower() + k[1:] for k in kept]) + "."
    content = render_scoped(scope, body) if scope else body
    return replace(edit, content=content)


def reword(
    optimizer: Client, edits: list[Edit], attempts: dict[str, list[Attempt]], max_rule_chars: int
) -> tuple[list[Edit], int]:
    """``edits`` with every rule that has a ``problem`` mended: without a model where that is
    exact (``said_again``), else reworded by the optimizer (one request each, concurrently) and
    mended again; the requests made, repairs included. A rule still with a problem is returned as
    it is (the guardrails refuse it)."""
    # what a superseding rule drops is appended exactly; a quoted pattern goes to the optimizer
    # first, which says it as a person would, and is replaced mechanically only if that fails
    edits = [said_again(e, attempts, patterns=False) if problem(e) else e for e in edits]
    wordy = [(i, found) for i, e in enumerate(edits) if (found := problem(e))]
    if not wordy:
        return edits, 0
    requests = [_request(edits[i], why, keep, attempts, max_rule_chars) for i, (why, keep) in wordy]
    replies = optimizer.map(requests)
    parsed, repairs = parse_replies(optimizer, requests, replies, content_of, who="optimizer")
    out = list(edits)
    for (i, _), result in zip(wordy, parsed, strict=True):
        if isinstance(result, Unusable):
            optimizer.leave_out(f"reword: {result.reason}")
            continue
        edit = edits[i]
        scope, _ = split_scoped(edit.content)
        out[i] = replace(edit, content=result, scope=edit.scope or scope)
        if problem(out[i]):
            out[i] = said_again(out[i], attempts)
    return out, len(requests) + repairs
