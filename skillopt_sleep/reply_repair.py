"""Model replies that must be JSON: parse them, ask once for a repair, then say so.

A reply that is not the JSON a request asked for (prose, a broken object, a reply cut off at the
output-token limit) is neither scored as a wrong answer nor silently read as "nothing": the model
is shown its reply and the parse error once and asked for the JSON only (all repairs of a phase
concurrently, through the client's map). A reply still unusable after that is ``Unusable``, with
a reason the caller counts in the report (``Client.leave_out``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeVar
from collections.abc import Callable, Sequence

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.client import Client
from skillopt_sleep.reply_json import extract_json
from skillopt_sleep.prompts import render
from skillopt_sleep.sanitize import clean_text

T = TypeVar("T")

# a reply that is one rewritten rule: {"content": "..."} (``content_of``)
CONTENT_SCHEMA = {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}
REPLY_EXCERPT = 4000  # characters of the unusable reply shown back to the model
CUT_OFF = "it was cut off at the output-token limit"


@dataclass(frozen=True)
class Unusable:
    """A reply that could not be used, even after one repair request."""

    reason: str  # e.g. "optimizer reply was not JSON after one repair"
    detail: str = ""  # the last parse error


def repair_request(request: Request, reply: str, error: str) -> Request:
    """``request`` again, with the unusable reply and why it failed, asking for the JSON only."""
    reply = clean_text(reply)  # model output goes back to a provider: no escapes or invisibles
    shown = reply if len(reply) <= REPLY_EXCERPT else reply[:REPLY_EXCERPT] + " …"
    user = render("repair", request=request.user.strip(), error=error.rstrip("."), reply=shown.strip() or "(empty)")
    return replace(request, user=user, temperature=0.0, payload={**request.payload, "repair": True})


def content_of(text: str) -> str:
    """The ``content`` string of a ``CONTENT_SCHEMA`` reply; ValueError when there is none."""
    data = extract_json(text)
    if isinstance(data, dict) and isinstance(data.get("content"), str) and data["content"].strip():
        return data["content"]
    raise ValueError('the reply has no JSON object with a "content" string')


def _try(parse: Callable[[str], T], completion: Completion) -> tuple[T | None, str]:
    if completion.truncated:
        return None, CUT_OFF
    try:
        return parse(completion.text), ""
    except ValueError as exc:
        return None, str(exc) or type(exc).__name__


def parse_replies(
    client: Client, requests: Sequence[Request], replies: Sequence[Completion], parse: Callable[[str], T], *, who: str
) -> tuple[list[T | Unusable], int]:
    """``parse`` (raising ValueError when a reply is unusable) over ``replies``, with one
    concurrent round of repair requests for the unusable ones; returns the results in order and
    how many repair requests were made. ``who`` names the replier in the reason ("judge",
    "optimizer")."""
    results: list[T | Unusable | None] = [None] * len(replies)
    broken: list[tuple[int, str, str]] = []
    for i, completion in enumerate(replies):
        value, error = _try(parse, completion)
        if error:
            broken.append((i, completion.text, error))
        else:
            results[i] = value
    if broken:
        repaired = client.map([repair_request(requests[i], text, error) for i, text, error in broken])
        for (i, _, _), completion in zip(broken, repaired, strict=True):
            value, error = _try(parse, completion)
            if error == CUT_OFF:
                results[i] = Unusable(f"{who} reply was cut off at the output-token limit, also after one repair")
            elif error:
                results[i] = Unusable(f"{who} reply was not JSON after one repair", error)
            else:
                results[i] = value
    return results, len(broken)  # type: ignore[return-value]
