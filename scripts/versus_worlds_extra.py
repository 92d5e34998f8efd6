"""Two worlds for ``bench_versus.py`` beside ``default`` and ``subtle-harm`` (``versus_world.py``
holds the rest of the world), and the measure of how much repeated answers to one task agree.

``trade-off``: the optimizer is the default world's (a covering rule for a failing check with
probability ``correct``, a harmful one with probability ``harmful``), except that each covering rule
it writes comes out, with probability ``TRADEOFF``, as a trade-off: the same ``Always include "X"``
plus a clause carrying that layout over to another kind of task, drawn among the other three
(``Always include "Refs: ACME-" in the response, and use the same layout for release notes.``). The
clause asks against no check, so only its effect betrays it: wherever the rule is in the documents
(scoped or not: the clause names the other kind outright), every check of a task of the kind it
names passes with its probability x ``TRADEOFF_FACTOR``, once per such clause. Both engines see these
rules: the reference in its optimizer's replies, this engine in its reflect replies.

``correlated``: the default world with within-task correlation (corr 0.8 unless ``--corr`` says
otherwise; ``--corr`` / ``--drift`` apply to any world). The world's target answers through the
simulator's latent model (``skillopt_sleep/backends/sim/latent.py``): each check of each task has a
standard normal latent keyed by the task's id and the check's index (and, when ``drift`` > 0, partly
by the documents), never by the answer's sample, so repeats of one task under one document set agree
more than different tasks do. The ground truth is unchanged: the exact pass probability over the
latent's distribution (the knobs' formula), which is the expected pass rate of a new task of each
kind; a document set gets no credit for the luck of these twenty tasks' latents. Beside it, each
night reports ``ground_truth_tasks``: the mean over the twenty tasks of their latent pass chances
under the documents on disk (what these very tasks would score).

``Agreement`` measures what the correlation does to the answers given: over every pair of answers
to one task under one document set, the share that agree (both pass or both fail), beside the share
independent draws at the same pass probability would give (``p^2 + (1 - p)^2`` for each pair).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

from skillopt_sleep.backends.sim import covering_rule

EXTRA_WORLDS = ("trade-off", "correlated")
TRADEOFF = 0.3  # the share of covering rules the trade-off world's optimizer writes as trade-offs
TRADEOFF_FACTOR = 0.5  # what a trade-off clause does to each check of the kind it names
CORRELATED = 0.8  # the correlated world's corr when --corr does not say
LAYOUT = ", and use the same layout for {kinds}."


def logic(world: str) -> str:
    """The world whose optimizer and target rules apply: ``correlated`` is the default world's."""
    return "default" if world == "correlated" else world


def corr_for(world: str, corr: float | None) -> float:
    return corr if corr is not None else CORRELATED if world == "correlated" else 0.0


def world_knobs(world: str, corr: float, drift: float) -> dict[str, Any]:
    """What the JSON says of the world beside the sim's knobs."""
    out: dict[str, Any] = {"corr": corr, "drift": drift}
    if world == "trade-off":
        out |= {"tradeoff": TRADEOFF, "tradeoff_factor": TRADEOFF_FACTOR}
    return out


def plural(kind: str) -> str:
    return kind[:-1] + "ies" if kind.endswith("y") else kind + "s"


def tradeoff_rule(rule: str, victim: str) -> str:
    return rule.rstrip().rstrip(".") + LAYOUT.format(kinds=plural(victim))


def victims(text: str, kinds: list[str]) -> list[str]:
    """The kinds a line's trade-off clauses name (one entry per clause)."""
    low = text.lower()
    return [kind for kind in kinds for _ in range(low.count(LAYOUT.format(kinds=plural(kind))[2:-1]))]


def tradeoff_factor(lines: list[str], kind: str, kinds: list[str]) -> float:
    """What the trade-off clauses among the documents' lines do to a check of a task of ``kind``."""
    return TRADEOFF_FACTOR ** sum(victims(line, kinds).count(kind) for line in lines)


def as_tradeoffs(rules: list[str], kinds: list[tuple[str, str]], rng: random.Random) -> list[str]:
    """The optimizer's rules with each covering rule for a kind's token turned, with probability
    ``TRADEOFF``, into a trade-off naming another kind (``kinds``: (kind, token) pairs)."""
    covering = {covering_rule({"op": "contains", "arg": token}): kind for kind, token in kinds}
    out = []
    for rule in rules:
        kind = covering.get(rule)
        if kind is not None and rng.random() < TRADEOFF:
            rule = tradeoff_rule(rule, rng.choice([k for k, _ in kinds if k != kind]))
        out.append(rule)
    return out


@dataclass
class Agreement:
    """Answers to each (task, document set): how many, how many passed, their pass probability."""

    cells: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def add(self, task_id: str, documents: str, passed: bool, probability: float) -> None:
        key = (task_id, hashlib.sha256(documents.encode()).hexdigest())
        cell = self.cells.setdefault(key, [0, 0, probability])
        cell[0] += 1
        cell[1] += passed

    def clear(self) -> None:
        self.cells.clear()

    def summary(self) -> dict[str, Any]:
        """Pairs of answers to one task under one document set; the share that agree; the share
        independent draws would agree in; cells with two answers or more."""
        pairs = agree = expected = 0.0
        cells = 0
        for n, k, p in self.cells.values():
            if n < 2:
                continue
            cells += 1
            both = n * (n - 1) / 2
            pairs += both
            agree += k * (k - 1) / 2 + (n - k) * (n - k - 1) / 2
            expected += both * (p * p + (1 - p) * (1 - p))
        return {
            "cells": cells,
            "pairs": int(pairs),
            "measured": round(agree / pairs, 4) if pairs else None,
            "if_independent": round(expected / pairs, 4) if pairs else None,
        }
