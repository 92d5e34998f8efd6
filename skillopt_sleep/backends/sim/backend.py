"""``sim``: an offline, seeded, stochastic instruction-following simulator (DESIGN §4).

It reads only the request's structured ``payload`` — the same task, documents and failure
evidence a real model is shown in the rendered prompt — and never anything the engine keeps from a
model (val tasks are never in an optimizer payload).

As a *target* (``target.py``) it satisfies each of a task's judge checks with probability
``follow`` when the documents hold a directive covering that check, ``1 - follow`` when a directive
contradicts it, and ``base`` otherwise; then it renders a real text response that the real judges
score. A length cap found in the documents is obeyed (truncating the response) with probability
``follow``.
As an *optimizer* (``optimizer.py``) it turns each failed check in the evidence (``failed_checks``:
the checks as data, never the judges' human-readable reasons) into a covering rule with probability
``correct`` and, independently, into a plausible-but-harmful rule with probability ``harmful``.
As a writer of dream variants (``vary.py``) it gives the source request a new concrete subject and
never touches what is checked.
How it reads documents is in ``reading.py``; its knobs in ``knobs.py``.

Knobs (spec ``sim:follow=0.9,base=0.15,correct=0.6,harmful=0.2,seed=7``): follow, base, correct,
harmful, seed, latency (seconds per call), down (1 = every call fails with a server error).

Which lines apply to a task: a scoped line (``When <scope>, ...``) applies only to a task whose own
text (intent, context, output contract — never an engine label) holds more than half of the
scope's content words; a learned rule ending ``(supersedes: "<line>")`` hides that hand-written
line wherever the rule applies (``reading.py`` states both rules).

Honesty knobs (each off by default; every benchmark that turns one on prints it):

- ``leak`` (0..1, default None = off): each ``"X"`` an applicable "always include / mention ..."
  line asks for goes into a response whose checks do not ask for X, with probability ``leak`` (so a
  task whose check forbids X fails it). An unscoped line applies to every task, so it leaks
  everywhere; a scoped line never leaks outside its scope. Off, such a line is read as an
  instruction against a task's ``not_contains X`` check (followed with probability follow) and
  adds nothing to other responses.
- ``verbose`` (chars, default 0 = off): responses are padded to this length; a task's
  ``max_chars`` check then passes only when an applicable length cap is obeyed (probability
  follow), and an obeyed cap drops the padding before it cuts content.
- ``overload`` (0..1, default 0) with ``free_rules`` (default 8): the follow rate used for every
  directive is ``follow * (1 - overload) ** max(0, n_rules - free_rules)``, where ``n_rules`` is
  the number of list items (rules, learned or hand-written) in the documents.
- ``conflict`` (0..1, default None = off): when a learned rule and a hand-written line take
  opposite stances on a check, the rule wins with probability ``conflict`` and the winner is then
  followed with the (effective) follow rate. Off, such a contradiction is a coin flip, as between
  any two contradicting lines. A rule that supersedes the line explicitly is simply followed.
- ``corr`` (0..1, default 0 = off) with ``drift`` (0..1, default 0): within-task correlation. Each
  check of a task (and an obeyed length cap, and a judged task's reference) has a latent
  propensity, so repeated answers to one task agree: on the probit scale two answers to the same
  task correlate by ``corr``, while the pass rate over tasks stays the probability above exactly.
  The latent is keyed by the task and the check, never by the sample; ``drift`` is the share of it
  redrawn when the documents change (0: a task hard under one document set stays hard under
  every other; 1: each document set reshuffles which tasks are hard). Off, every answer is an
  independent draw. ``latent.py`` states the model.
- ``substance`` (0..12 points, default 0 = off): every answer to a rule-judged task makes that
  many points of substance the work needs (the same for every answer to the task, after what its
  checks ask for), which no check sees; a length cap that cuts them, or an answer cut short, loses
  them. Only a judge asked whether an answer does the task as well as a reference (``quality``)
  sees them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.pricing import FREE
from skillopt_sleep.backends.sim import optimizer, target, vary
from skillopt_sleep.backends.sim.judge import judge, quality
from skillopt_sleep.backends.sim.knobs import SimKnobs, knobs_from_options
from skillopt_sleep.backends.sim.optimizer import COVERABLE_OPS, covering_rule, harmful_rule
from skillopt_sleep.backends.sim.reading import CAP_RE, FLOOR_RE, NEGATION_RE, coverage
from skillopt_sleep.backends.sim.regex_gen import regex_example
from skillopt_sleep.backends.sim.target import FILLER
from skillopt_sleep.types import Usage

__all__ = [
    "CAP_RE",
    "COVERABLE_OPS",
    "FILLER",
    "FLOOR_RE",
    "NEGATION_RE",
    "SimBackend",
    "SimKnobs",
    "coverage",
    "covering_rule",
    "from_options",
    "harmful_rule",
    "regex_example",
]

Handler = Callable[[SimKnobs, Request], tuple[str, list[str]]]
HANDLERS: dict[str, Handler] = {
    "attempt": target.attempt,
    "judge": judge,
    "quality": quality,
    "preflight": lambda knobs, request: ("ok", []),
    **optimizer.HANDLERS,
    "vary": vary.vary,
}


def from_options(options: dict[str, Any], model: str | None) -> SimBackend:
    return SimBackend(knobs_from_options(options))


class SimBackend:
    """No model: answers are drawn from the knobs, so they cost nothing and prove nothing."""

    price = FREE
    offline = True

    def __init__(self, knobs: SimKnobs | None = None):
        self.knobs = knobs or SimKnobs()
        k = self.knobs
        honesty = "".join(
            f",{name}={value if value is None else format(value, 'g')}" for name, value in k.honesty().items()
        )
        self.id = (
            f"sim(follow={k.follow:g},base={k.base:g},correct={k.correct:g},harmful={k.harmful:g},"
            f"seed={k.seed}{honesty})"
        )

    def can_offer_tools(self, names: tuple[str, ...]) -> bool:
        """The simulator plays any tool a task's checks name."""
        return True

    def complete(self, request: Request) -> Completion:
        started = time.monotonic()
        if self.knobs.latency:
            time.sleep(self.knobs.latency)
        if self.knobs.down:
            return Completion(text="", model="sim", error="server", error_message="simulated outage (down=1)")
        handler = HANDLERS.get(request.purpose)
        if handler is None:
            return Completion(
                text="",
                model="sim",
                error="bad_request",
                error_message=f"sim has no behaviour for purpose {request.purpose!r}",
            )
        text, tools = handler(self.knobs, request)
        usage = Usage(input_tokens=(len(request.system) + len(request.user)) // 4 + 1, output_tokens=len(text) // 4 + 1)
        return Completion(text=text, usage=usage, model="sim", tools_called=tools, latency=time.monotonic() - started)
