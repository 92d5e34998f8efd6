"""The user's requests in a night's digests, each with the feedback that followed it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from skillopt_sleep.mining.text import HEAD_SPLIT_RE, signature
from skillopt_sleep.types import SessionDigest


@dataclass
class UserRequest:
    session: SessionDigest
    index: int
    text: str
    feedback: list[str] = field(default_factory=list)  # negative follow-ups about this request
    praised: bool = False
    reply: str = ""

    @property
    def tokens(self) -> frozenset[str]:
        return signature(self.text)

    @property
    def head(self) -> frozenset[str]:
        """Words before the first preposition: where a request names its kind of work
        ("write the *commit message* for …", "draft *release notes* for …")."""
        return signature(HEAD_SPLIT_RE.split(self.text.lower(), maxsplit=1)[0])


def requests_from(digests: Iterable[SessionDigest]) -> list[UserRequest]:
    """User requests (not feedback messages) with the feedback that followed each.

    A follow-up to a follow-up is about the same request: "you forgot the trailer", then "and
    no TODOs" both correct the work asked before them, so a chain of feedback messages is
    attributed to the request that opened it."""
    out: list[UserRequest] = []
    for digest in digests:
        feedback_texts = {f.text for f in digest.feedback}
        reacted_to = {f.prompt_index for f in digest.feedback}
        owner: dict[int, int] = {}  # prompt index -> index of the request it belongs to
        for i, prompt in enumerate(digest.user_prompts):
            is_feedback = i - 1 in reacted_to or prompt in feedback_texts
            owner[i] = owner.get(i - 1, i) if is_feedback else i
        by_request: dict[int, list] = {}
        for f in digest.feedback:
            by_request.setdefault(owner.get(f.prompt_index, f.prompt_index), []).append(f)
        for i, prompt in enumerate(digest.user_prompts):
            if owner[i] != i or not prompt.strip():
                continue
            fbs = by_request.get(i, [])
            reply = digest.assistant_finals[i] if i < len(digest.assistant_finals) else ""
            out.append(
                UserRequest(
                    session=digest,
                    index=i,
                    text=prompt.strip(),
                    feedback=[f.text for f in fbs if f.polarity == "negative"],
                    praised=any(f.polarity == "positive" for f in fbs),
                    reply=reply,
                )
            )
    return out
