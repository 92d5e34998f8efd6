"""Precision and recall of the heuristic miner on hand-labelled phrasings; prints JSON.

Two parts, per labels file (``tests/fixtures/mining/``: ``dev.json``, and the held-out ``heldout.json``,
``heldout2.json``, ``heldout3.json`` and ``heldout4.json``; each file's ``about`` says when it was written and what had been
seen by then):

- **checks**: each follow-up message goes through what a night does with it — the feedback
  classifier (``sources.feedback.classify``) and, for a complaint, ``mining.checks_from_feedback``.
  A produced check is correct when its op and its normalised arg equal a labelled check's.
  Normalisation: strings are case-folded with whitespace collapsed and trailing ``:``/``.``
  dropped; section names lose leading ``#``; regexes lose backslashes before characters that are
  not letters or digits (``Refs:\\ ACME\\-\\d+`` equals ``Refs: ACME-\\d+``); numbers compare as
  numbers. A label ``{"limit": unit, "max": n}`` is ``mining.checks.limit_check(unit, n)``.
  Precision = correct / produced, recall = correct / labelled, summed over the items of a
  category ("chatter" and "praise" items are labelled with no check: they only add false
  positives). Polarity accuracy compares the classifier with the label.
- **clustering**: all requests of a file are clustered together (one session each) with
  ``mining.cluster``; pairwise precision = pairs put together that the labels put together /
  pairs put together, pairwise recall = labelled pairs put together / labelled pairs. A request
  labelled ``null`` is a one-off: it forms no labelled pair, so joining it to anything is a
  false positive.

    python scripts/bench_mining.py                  # every file
    python scripts/bench_mining.py --labels dev     # one file
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

from skillopt_sleep.mining import checks_from_feedback, cluster, requests_from
from skillopt_sleep.mining.checks import limit_check
from skillopt_sleep.sources.feedback import classify
from skillopt_sleep.types import SessionDigest

LABELS_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mining"
LABELS_FORMAT = "skillopt_sleep.mining-labels.v1"
LABEL_SETS = ("dev", "heldout", "heldout2", "heldout3", "heldout4")


def normalise(check: dict[str, Any]) -> tuple[str, Any]:
    """The comparable form of a check (see the module docstring)."""
    if "limit" in check:
        check = limit_check(check["limit"], check["max"])
    op, arg = check["op"], check.get("arg")
    if isinstance(arg, str):
        if op == "regex":
            arg = re.sub(r"\\([^A-Za-z0-9])", r"\1", arg)
        elif op in ("section_present", "section_contains"):
            arg = arg.strip().lstrip("#")
        if op != "regex":
            arg = re.sub(r"\s+", " ", arg).strip().rstrip(":.").strip().casefold()
    return op, arg


def ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def score_checks(items: list[dict[str, Any]]) -> dict[str, Any]:
    per: dict[str, dict[str, int]] = defaultdict(lambda: {"items": 0, "tp": 0, "fp": 0, "fn": 0})
    polarity_right = 0
    misses: list[dict[str, Any]] = []
    for item in items:
        polarity = classify(item["text"])
        polarity_right += polarity == item["polarity"]
        produced = checks_from_feedback([item["text"]]) if polarity == "negative" else []
        got = {normalise(c) for c in produced}
        want = {normalise(c) for c in item["checks"]}
        for key in (item["category"], "all"):
            row = per[key]
            row["items"] += 1
            row["tp"] += len(got & want)
            row["fp"] += len(got - want)
            row["fn"] += len(want - got)
        if got != want or polarity != item["polarity"]:
            misses.append({"text": item["text"], "polarity": polarity, "expected_polarity": item["polarity"],
                           "extra": sorted(map(str, got - want)), "missing": sorted(map(str, want - got))})
    out = {key: {"items": row["items"], "precision": ratio(row["tp"], row["tp"] + row["fp"]),
                 "recall": ratio(row["tp"], row["tp"] + row["fn"]), "false_positives": row["fp"],
                 "false_negatives": row["fn"]}
           for key, row in sorted(per.items())}
    return {"by_category": out, "polarity_accuracy": ratio(polarity_right, len(items)), "misses": misses}


def score_clusters(items: list[dict[str, Any]]) -> dict[str, Any]:
    digests = [SessionDigest(source="claude", session_id=f"r{i}", project="/bench", path=f"/bench/r{i}.jsonl",
                             user_prompts=[item["text"]], assistant_finals=[""])
               for i, item in enumerate(items)]
    label_of = {f"r{i}": item["cluster"] for i, item in enumerate(items)}
    predicted: dict[str, int] = {}
    groups = cluster(requests_from(digests))
    for g, group in enumerate(groups):
        for r in group:
            predicted[r.session.session_id] = g
    per: dict[str, dict[str, int]] = defaultdict(lambda: {"tp": 0, "fp": 0, "fn": 0})
    for a, b in combinations(sorted(label_of), 2):
        together = predicted[a] == predicted[b]
        same = label_of[a] is not None and label_of[a] == label_of[b]
        keys = {label_of[a] or "one-off", label_of[b] or "one-off", "all"}
        for key in keys:
            if together and same:
                per[key]["tp"] += 1
            elif together:
                per[key]["fp"] += 1
            elif same:
                per[key]["fn"] += 1
    out = {key: {"pair_precision": ratio(row["tp"], row["tp"] + row["fp"]),
                 "pair_recall": ratio(row["tp"], row["tp"] + row["fn"]),
                 "false_pairs": row["fp"], "missed_pairs": row["fn"]}
           for key, row in sorted(per.items())}
    found = [sorted(item_text for item_text in (items[int(r.session.session_id[1:])]["text"] for r in group))
             for group in groups if len(group) > 1]
    return {"requests": len(items), "groups": len(groups), "by_cluster": out, "multi_request_groups": found}


def evaluate(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != LABELS_FORMAT:
        raise SystemExit(f"{path} is not a {LABELS_FORMAT} file")
    return {"file": path.name, "follow_ups": len(data["follow_ups"]), "requests": len(data["requests"]),
            "checks": score_checks(data["follow_ups"]), "clustering": score_clusters(data["requests"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", action="append", choices=LABEL_SETS,
                        help="which labels file(s) to evaluate (default: all)")
    parser.add_argument("--misses", action="store_true", help="list every item the miner got wrong")
    args = parser.parse_args(argv)
    results = []
    for name in args.labels or LABEL_SETS:
        result = evaluate(LABELS_DIR / f"{name}.json")
        if not args.misses:
            result["checks"].pop("misses")
            result["clustering"].pop("multi_request_groups")
        results.append(result)
    json.dump({"benchmark": "mining", "results": results}, sys.stdout, indent=2, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
