"""Secret redaction, applied before anything is stored or sent (DESIGN §3).

``redact(text)`` replaces every recognised credential with ``[REDACTED:<kind>]``. Five passes:

1. ``tokens``: tokens with a documented prefix or fixed structure (``shapes``), wherever they
   appear.
2. ``context``: a value that is a secret because of what surrounds it (a PEM block, URL
   credentials, ``Authorization:`` headers, ``--password`` flags, …).
3. ``assignments``: a value assigned to a secret-named key (``password=...``), unless it is code,
   a placeholder or prose (``values``).
4. ``keyed``: a generated-looking value after any credential-ish label (``ADAFRUIT_KEY=…``,
   ``X-Okta-Key: …``, ``cohere.Client('…')``, ``wandb login …``).
5. ``prefixed``: a generated-looking token behind a short service prefix (``glsa_…``, ``tvly-…``),
   with no label and no listed prefix.

Every regex is written so that it cannot backtrack catastrophically: bounded repeats, no nested
quantifiers over overlapping classes.
"""

from __future__ import annotations

import re
from typing import Any

from .assignments import ASSIGNMENT_NEEDLES, SECRET_KEY_NAME, redact_assignments
from .context import apply_rules, redact_private_keys
from .keyed import looks_generated, redact_keyed
from .prefixed import redact_prefixed
from .tokens import redact_tokens
from .values import MARK, is_secret_value, mark

# a structured key whose value is a secret when it looks generated (``{"fastlyKey": "…"}``)
_KEYED_NAME = re.compile(r"(?i)(?:key|pat|auth|authtoken|session|sid)s?$")

__all__ = ["MARK", "SECRET_KEY_NAME", "is_secret_value", "redact", "redact_obj"]


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    if not text or not isinstance(text, str):
        return text
    text = redact_private_keys(text)
    text = redact_tokens(text)
    text = apply_rules(text)
    if "=" in text or ":" in text:  # no assignment without its operator (=, :=, :, =>)
        lowered = text.lower()
        for needle in ASSIGNMENT_NEEDLES:
            if needle in lowered:
                text = redact_assignments(text)
                break
    return redact_prefixed(redact_keyed(text))


def redact_obj(obj: Any) -> Any:
    """Redact every string inside ``obj`` (dicts, lists, tuples), returning a new object.

    A string value stored under a secret-looking key (``{"password": "hunter2"}``) is redacted
    whole, since the key/value pair no longer looks like an assignment once it is structured.
    """
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            new_key = redact(key) if isinstance(key, str) else key
            if (
                isinstance(key, str)
                and isinstance(value, str)
                and (
                    (SECRET_KEY_NAME.match(key) and is_secret_value(value, quoted=True))
                    or (_KEYED_NAME.search(key) is not None and looks_generated(value))
                )
            ):
                out[new_key] = mark("secret")
            else:
                out[new_key] = redact_obj(value)
        return out
    if isinstance(obj, list):
        return [redact_obj(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(redact_obj(v) for v in obj)
    return obj
