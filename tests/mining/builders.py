"""Digests for mining tests: sessions of requests, replies and follow-ups."""

from __future__ import annotations

from skillopt_sleep.types import Feedback, SessionDigest

PROJECT = "/home/dev/acme"
SIGNOFF = 'you forgot the "Signed-off-by:" line'


def digest(
    sid: str,
    turns: list[tuple[str, str]],
    feedback: list[Feedback] = (),
    project: str = PROJECT,
    branch: str | None = "main",
) -> SessionDigest:
    """A session from (user prompt, assistant final) turns; feedback prompts are turns too."""
    return SessionDigest(
        source="claude",
        session_id=sid,
        project=project,
        path=f"/t/{sid}.jsonl",
        branch=branch,
        user_prompts=[p for p, _ in turns],
        assistant_finals=[a for _, a in turns],
        feedback=list(feedback),
    )


def complaint_session(
    sid: str, request: str, complaint: str = SIGNOFF, reply: str = "feat: add retries"
) -> SessionDigest:
    return digest(sid, [(request, reply), (complaint, "Sorry, fixed.")], [Feedback("negative", complaint, 0)])


COMMIT_REQUESTS = [
    "write the commit message for the staged changes",
    "Write a commit message for my staged changes",
    "commit message for the staged diff please",
]
TEST_REQUESTS = [
    "add a unit test for the parser module",
    "add unit tests for the parser module edge cases",
]


def commit_sessions() -> list[SessionDigest]:
    out = [complaint_session(f"c{i}", text) for i, text in enumerate(COMMIT_REQUESTS)]
    # a fourth session repeats the first request verbatim (different case) and is praised
    out.append(digest("c3", [(COMMIT_REQUESTS[0].upper(), "ok"), ("great", "")], [Feedback("positive", "great", 0)]))
    # a fifth session, no feedback at all
    out.append(digest("c4", [("please write a commit message for the staged changes in utils", "x")]))
    return out
