"""The documents as the optimizer is shown them: each whole, redacted, headed by what a night may do
to it, with the agent's read-only context beside them."""

from __future__ import annotations

from skillopt_sleep.documents.managed_block import DocumentSet
from skillopt_sleep.redact import redact
from skillopt_sleep.sanitize import clean_text

OPTIMIZER_VIEW_CHARS = 8000  # of each document, in the optimizer's prompt; the rest is marked as left out


def optimizer_view(docs: DocumentSet, max_chars: int = OPTIMIZER_VIEW_CHARS) -> str:
    """Both documents in full (hand-written text included) as the optimizer is shown them: redacted,
    without control characters, each cut at ``max_chars`` with a marker saying how much is left
    out, and each headed by what a night may do to it."""
    parts = []
    for doc in (docs.memory, docs.skill):
        body = _shown(doc.text, doc.path.name, max_chars) or "(empty: the file does not exist yet)"
        if doc.read_only:
            may = "read-only: no edit is applied to it"
        elif doc.whole_skill:
            may = (
                "whole-skill editing is on: besides rules, you may replace or delete a hand-written "
                "line (op replace_line / delete_line, anchor = that exact line)"
            )
        else:
            may = (
                "rules go in the learned block; a rule that must override a hand-written line "
                'names it in "supersedes" (that exact line)'
            )
        parts.append(f'<document name="{doc.path.name}" role="{doc.role}">\n({may})\n{body}\n</document>')
    for extra in docs.context:  # what the agent loads beside them: a rule need not repeat it
        body = _shown(extra.text, extra.name, max_chars)
        may = "read-only context the agent loads with these documents: no edit is applied to it"
        parts.insert(len(parts) - 1, f'<document name="{extra.name}" role="context">\n({may})\n{body}\n</document>')
    return "\n\n".join(parts)


def _shown(text: str, name: str, max_chars: int) -> str:
    """``text`` redacted and cleaned, cut at ``max_chars`` with a marker saying how much of ``name``
    is left out."""
    body = redact(clean_text(text)).strip()
    if len(body) <= max_chars:
        return body
    return body[:max_chars] + f"\n[... {len(body) - max_chars} more characters of {name} not shown ...]"


def optimizer_payload(docs: DocumentSet) -> dict[str, dict[str, object]]:
    """The same as data for a simulated optimizer: each document's hand-written lines (redacted) and
    what a night may do to it."""
    return {
        doc.role: {
            "hand_written": doc.redacted_hand_written(),
            "whole_skill": doc.whole_skill,
            "read_only": doc.read_only,
        }
        for doc in docs.all()
    }
