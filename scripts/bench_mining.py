"""Precision and recall of the heuristic miner on hand-labelled phrasings; prints JSON.

Two parts, per labels file (``tests/fixtures/mining/``: ``dev.json``, and the held-out ``heldout.json``,
``heldout2.json`` … ``heldout6.json``; each file's ``about`` says when it was written and what had been
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
- **overall**: every file evaluated as one labelled set (true and false positives summed over the
  files; clustering pairs are formed within a file).

- **kinds** (``--kinds kinds-dev``; the held-out ``kinds-heldout`` only when named): end to end,
  as a night mines. A kinds file (format ``skillopt_sleep.mining-kinds.v1``) holds ``kinds``, each
  kind's labelled checks (``{"kinds": {"unit-tests": {"checks": [...]}}}``, limits written as
  above; ``{"any_of": [...]}`` is one check that may be stated either way), and ``sessions``, each ``{"agent": ..., "messages": [...]}`` with the messages in the
  order a person typed them: a request ``{"text": ..., "kind": "unit-tests"}`` (``"kind": null``
  for a one-off) or a follow-up to the request before it ``{"text": ..., "follow_up": "complaint"}``
  (or ``"praise"``, ``"chatter"``). Every session goes through the harvest's digest builder
  (``sources.base.DigestBuilder``: each message a typed prompt, each answered by a reply, so the
  feedback classifier sees the follow-ups as a harvest does) and all of them through
  ``mining.mine`` with a night's defaults. The tasks of one mined group (one label, one judge)
  are one mined kind. A labelled kind is **found** when exactly one mined kind holds its requests,
  holding more than half of them and no other kind's request, and carries at least one of its
  labelled checks. Check precision = produced checks (``no_refusal`` aside) equal to a labelled
  check of the kind whose requests the mined kind holds / all checks produced on the mined kinds
  that hold labelled requests; recall = labelled checks produced / labelled checks. Also counted:
  follow-ups and one-off requests that became tasks, and mined kinds that hold no labelled request.

- **scale** (``--scale 3500,35000``): mining time over seeded synthetic histories of that many
  sessions (1-9 requests each: recurring kinds phrased several ways, one-off operations and
  questions over a Zipf-distributed made-up vocabulary, all in one project: the worst case), for
  ``mining.cluster`` alone and the whole ``mining.mine``; ``cpu_growth`` is the CPU-time ratio
  between the largest and the smallest size divided by their size ratio (1.0 = linear), and
  ``comparisons_growth`` the same for comparisons per request (1.0 = a constant number per request).

    python scripts/bench_mining.py                  # every file
    python scripts/bench_mining.py --labels dev     # one file
    python scripts/bench_mining.py --kinds kinds-dev
    python scripts/bench_mining.py --scale 3500,35000
    python scripts/bench_mining.py --miner llm --backend openai:base_url=http://127.0.0.1:8080/v1,api_key=none

With ``--miner llm`` every complaint the classifier calls negative goes through the LLM miner
(``mining.llm.LlmMiner``, the heuristic checks shown to it and kept, as in a night); a call that
fails is listed under ``failed_calls`` and left out of the score, never counted wrong; the
clustering then also runs the LLM merge pass (``mining.llm_groups.LlmGrouper``), one call per file.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any
from unittest import mock

from skillopt_sleep.backends import BackendSpecError, ProviderError, make_backend
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.mining import (
    UserRequest,
    checks_from_feedback,
    cluster,
    clustering,
    mine,
    requests_from,
    shape,
    text,
)
from skillopt_sleep.mining.llm import LlmMiner
from skillopt_sleep.mining.llm_groups import LlmGrouper
from skillopt_sleep.sources.feedback import classify
from skillopt_sleep.types import SessionDigest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mining_kinds import FOLLOW_UPS, KINDS_FORMAT, evaluate_kinds, normalise, ratio, score_kinds  # noqa: E402

__all__ = [
    "FOLLOW_UPS",
    "KINDS_FORMAT",
    "evaluate_kinds",
    "normalise",
    "ratio",
    "score_kinds",
]  # the kinds part lives there

LABELS_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mining"
LABELS_FORMAT = "skillopt_sleep.mining-labels.v1"
LABEL_SETS = ("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6")
KIND_SETS = ("kinds-dev", "kinds-heldout")  # kinds-heldout is scored only when named


def llm_checks(miner: LlmMiner, complaint: str) -> list[dict[str, Any]]:
    """What the LLM miner makes of one complaint: its judge's checks (``no_refusal``, which it
    always adds, left out). The request it answered is not part of the labels."""
    session = SessionDigest(source="claude", session_id="bench", project="/bench", path="/bench/s.jsonl")
    request = UserRequest(
        session=session, index=0, text="(the request is not part of the labels)", feedback=[complaint]
    )
    judge = miner("follow-up", [request], checks_from_feedback([complaint]))
    if not judge or judge.get("kind") != "rule":
        return []
    return [c for c in judge["checks"] if c["op"] != "no_refusal"]


def score_checks(items: list[dict[str, Any]], miner: LlmMiner | None = None) -> dict[str, Any]:
    per: dict[str, dict[str, int]] = defaultdict(lambda: {"items": 0, "tp": 0, "fp": 0, "fn": 0})
    polarity_right = 0
    failed_calls: list[str] = []
    misses: list[dict[str, Any]] = []
    if miner is not None:
        miner.rejected.clear()  # counted per labels file
    for item in items:
        polarity = classify(item["text"])
        polarity_right += polarity == item["polarity"]
        if polarity != "negative":
            produced = []
        elif miner is None:
            produced = checks_from_feedback([item["text"]])
        else:
            try:
                produced = llm_checks(miner, item["text"])
            except ProviderError as exc:  # a failed call is not a wrong answer: left out of the score
                failed_calls.append(f"{item['text'][:60]}: {exc}"[:200])
                continue
        got = {normalise(c) for c in produced}
        want = {normalise(c) for c in item["checks"]}
        for key in (item["category"], "all"):
            row = per[key]
            row["items"] += 1
            row["tp"] += len(got & want)
            row["fp"] += len(got - want)
            row["fn"] += len(want - got)
        if got != want or polarity != item["polarity"]:
            misses.append(
                {
                    "text": item["text"],
                    "polarity": polarity,
                    "expected_polarity": item["polarity"],
                    "extra": sorted(map(str, got - want)),
                    "missing": sorted(map(str, want - got)),
                }
            )
    out = {
        key: {
            "items": row["items"],
            "precision": ratio(row["tp"], row["tp"] + row["fp"]),
            "recall": ratio(row["tp"], row["tp"] + row["fn"]),
            "true_positives": row["tp"],
            "false_positives": row["fp"],
            "false_negatives": row["fn"],
        }
        for key, row in sorted(per.items())
    }
    result: dict[str, Any] = {
        "by_category": out,
        "polarity_accuracy": ratio(polarity_right, len(items)),
        "misses": misses,
    }
    if miner is not None:
        result["failed_calls"] = failed_calls
        result["rejected_checks"] = dict(miner.rejected)
    return result


def score_clusters(items: list[dict[str, Any]], grouper: LlmGrouper | None = None) -> dict[str, Any]:
    digests = [
        SessionDigest(
            source="claude",
            session_id=f"r{i}",
            project="/bench",
            path=f"/bench/r{i}.jsonl",
            user_prompts=[item["text"]],
            assistant_finals=[""],
        )
        for i, item in enumerate(items)
    ]
    label_of = {f"r{i}": item["cluster"] for i, item in enumerate(items)}
    predicted: dict[str, int] = {}
    groups = cluster(requests_from(digests))
    grouping_failed = ""
    if grouper is not None:
        try:
            groups = grouper(groups)
        except ProviderError as exc:  # a failed call is not a wrong grouping: the heuristic groups are scored
            grouping_failed = str(exc)[:200]
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
    out = {
        key: {
            "pair_precision": ratio(row["tp"], row["tp"] + row["fp"]),
            "pair_recall": ratio(row["tp"], row["tp"] + row["fn"]),
            "true_pairs": row["tp"],
            "false_pairs": row["fp"],
            "missed_pairs": row["fn"],
        }
        for key, row in sorted(per.items())
    }
    found = [
        sorted(item_text for item_text in (items[int(r.session.session_id[1:])]["text"] for r in group))
        for group in groups
        if len(group) > 1
    ]
    result = {"requests": len(items), "groups": len(groups), "by_cluster": out, "multi_request_groups": found}
    if grouper is not None:
        result["llm_grouping"] = {"notes": grouper.notes, "failed_call": grouping_failed}
    return result


def evaluate(path: Path, miner: LlmMiner | None = None) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != LABELS_FORMAT:
        raise SystemExit(f"{path} is not a {LABELS_FORMAT} file")
    return {
        "file": path.name,
        "follow_ups": len(data["follow_ups"]),
        "requests": len(data["requests"]),
        "checks": score_checks(data["follow_ups"], miner),
        "clustering": score_clusters(data["requests"], LlmGrouper(miner.optimizer) if miner else None),
    }


def overall(results: list[dict[str, Any]]) -> dict[str, Any]:
    """All the files evaluated as one labelled set: phrasings (follow-ups + requests), the checks'
    precision and recall over every item, the pairwise clustering's over every file's pairs (pairs
    are formed within a file)."""
    checks = [r["checks"]["by_category"]["all"] for r in results if "all" in r["checks"]["by_category"]]
    pairs = [r["clustering"]["by_cluster"]["all"] for r in results if "all" in r["clustering"]["by_cluster"]]
    tp, fp, fn = (sum(row[k] for row in checks) for k in ("true_positives", "false_positives", "false_negatives"))
    ptp, pfp, pfn = (sum(row[k] for row in pairs) for k in ("true_pairs", "false_pairs", "missed_pairs"))
    return {
        "files": len(results),
        "phrasings": sum(r["follow_ups"] + r["requests"] for r in results),
        "follow_ups": sum(r["follow_ups"] for r in results),
        "requests": sum(r["requests"] for r in results),
        "checks": {"precision": ratio(tp, tp + fp), "recall": ratio(tp, tp + fn)},
        "clustering": {"pair_precision": ratio(ptp, ptp + pfp), "pair_recall": ratio(ptp, ptp + pfn)},
    }


def llm_miner(spec: str) -> LlmMiner:
    """The LLM miner on ``spec`` as a night builds it: the optimizer's client, one call at a time."""
    try:
        backend = make_backend(spec)
    except BackendSpecError as exc:
        raise SystemExit(f"bench_mining: {exc}") from None
    return LlmMiner(Client(backend, role="optimizer", limiter=Limiter(1), retry=RetryPolicy(attempts=2)))


OPERATIONS = (
    "run",
    "fix",
    "rename",
    "delete",
    "revert",
    "bump",
    "move",
    "kill",
    "profile",
    "format",
    "close",
    "merge",
    "deploy",
    "restart",
    "migrate",
    "check",
    "find",
    "explain",
    "convert",
    "split",
)
KIND_TEMPLATES = (
    "write the {obj} for the {s1} {s2}",
    "{obj} for {s1} please",
    "can you draft a {obj} for the {s1}",
    "add the {obj} for {s1} {s2}",
    "{obj}: {s1} {s2}",
    "pls {obj} for the {s1} change",
)


def synthetic_history(sessions: int, seed: int = 11) -> list[SessionDigest]:
    """A seeded made-up history of ``sessions`` sessions (see the module docstring)."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
    vocabulary = sorted(
        {"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(max(2000, sessions * 2))}
    )
    rng.shuffle(vocabulary)

    def subject() -> str:  # Zipf-like: a few subjects are everywhere, most are rare
        return vocabulary[int(len(vocabulary) * rng.random() ** 3)]

    kinds = [" ".join(rng.sample(vocabulary, rng.randint(1, 2))) for _ in range(max(10, sessions // 20))]
    digests = []
    for n in range(sessions):
        prompts = []
        for _ in range(rng.randint(1, 9)):
            roll = rng.random()
            if roll < 0.45:
                kind = kinds[int(len(kinds) * rng.random() ** 2)]
                prompts.append(rng.choice(KIND_TEMPLATES).format(obj=kind, s1=subject(), s2=subject()))
            elif roll < 0.85:
                prompts.append(f"{rng.choice(OPERATIONS)} the {subject()} {subject()} in {subject()}.py")
            else:
                prompts.append(f"why does the {subject()} {subject()} fail?")
        digests.append(
            SessionDigest(
                source="claude",
                session_id=f"s{n}",
                project="/bench",
                path=f"/bench/s{n}.jsonl",
                user_prompts=prompts,
                assistant_finals=[""] * len(prompts),
            )
        )
    return digests


def forget_shapes() -> None:
    """Empty the mining's caches of request shapes and stems, so each timing starts as a night's
    process does (otherwise ``mine`` would reuse what the ``cluster`` timed before it computed)."""
    for cached in (shape.shape_of, shape.grouping_shape, text.stem):
        cached.cache_clear()


def scale_run(sizes: list[int]) -> dict[str, Any]:
    """Mining time per history size: wall and CPU seconds (this machine is shared, CPU time is the
    steadier), each from cold caches (``forget_shapes``), and comparisons per request
    (request-to-group similarity computations, counted by wrapping the clustering's
    ``_Groups.average_link``), which do not depend on the machine."""
    counted = {"comparisons": 0}
    average_link = clustering._Groups.average_link

    def counting(self: Any, *args: Any, **kwargs: Any) -> float:
        counted["comparisons"] += 1
        return average_link(self, *args, **kwargs)

    rows = []
    with mock.patch.object(clustering._Groups, "average_link", counting):
        for sessions in sizes:
            digests = synthetic_history(sessions)
            requests = requests_from(digests)
            counted["comparisons"] = 0
            forget_shapes()
            wall, cpu = time.perf_counter(), time.process_time()
            groups = cluster(requests)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            comparisons = counted["comparisons"]
            forget_shapes()
            mine_wall, mine_cpu = time.perf_counter(), time.process_time()
            result = mine(digests)
            mine_wall, mine_cpu = time.perf_counter() - mine_wall, time.process_time() - mine_cpu
            rows.append(
                {
                    "sessions": sessions,
                    "requests": len(requests),
                    "groups": len(groups),
                    "cluster_seconds": round(wall, 3),
                    "cluster_cpu_seconds": round(cpu, 3),
                    "comparisons_per_request": round(comparisons / max(1, len(requests)), 1),
                    "mine_seconds": round(mine_wall, 3),
                    "mine_cpu_seconds": round(mine_cpu, 3),
                    "recurring_groups": result.groups - result.one_off,
                }
            )
    out: dict[str, Any] = {"sizes": rows}
    if len(rows) > 1 and rows[0]["cluster_cpu_seconds"] > 0:
        size_ratio = rows[-1]["requests"] / rows[0]["requests"]
        out["cpu_growth"] = round(rows[-1]["cluster_cpu_seconds"] / rows[0]["cluster_cpu_seconds"] / size_ratio, 2)
        out["comparisons_growth"] = round(
            rows[-1]["comparisons_per_request"] / max(0.1, rows[0]["comparisons_per_request"]), 2
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--labels", action="append", choices=LABEL_SETS, help="which labels file(s) to evaluate (default: all)"
    )
    parser.add_argument(
        "--kinds",
        action="append",
        choices=KIND_SETS,
        help="which kinds file(s) to evaluate end to end (default: kinds-dev; kinds-heldout only when named)",
    )
    parser.add_argument("--misses", action="store_true", help="list every item the miner got wrong")
    parser.add_argument(
        "--miner",
        choices=("heuristic", "llm"),
        default="heuristic",
        help="who turns complaints into checks (llm: the clustering gets the LLM merge pass too)",
    )
    parser.add_argument("--backend", help="backend spec for --miner llm, e.g. openai:base_url=http://127.0.0.1:8080/v1")
    parser.add_argument("--scale", help="comma-separated session counts: time mining on synthetic histories instead")
    args = parser.parse_args(argv)
    if args.scale:
        try:
            sizes = [int(n) for n in args.scale.split(",")]
        except ValueError:
            parser.error(f"--scale takes comma-separated session counts, not {args.scale!r}")
        json.dump({"benchmark": "mining-scale", **scale_run(sizes)}, sys.stdout, indent=2)
        print()
        return 0
    if args.miner == "llm" and not args.backend:
        parser.error("--miner llm needs --backend SPEC")
    miner = llm_miner(args.backend) if args.miner == "llm" else None
    results = []
    label_sets = args.labels or ([] if args.kinds else list(LABEL_SETS))
    for name in label_sets:
        result = evaluate(LABELS_DIR / f"{name}.json", miner)
        if not args.misses:
            result["checks"].pop("misses")
            result["clustering"].pop("multi_request_groups")
        results.append(result)
    kinds = [
        evaluate_kinds(LABELS_DIR / f"{name}.json", miner)
        for name in (args.kinds or ([] if args.labels else ["kinds-dev"]))
    ]
    header = {
        "benchmark": "mining",
        "miner": args.miner,
        "clustering_by": "heuristic + LLM merge pass" if miner else "heuristic",
    }
    if miner is not None:
        header["backend"] = miner.optimizer.id
    out: dict[str, Any] = {**header}
    if results:
        out.update({"overall": overall(results), "results": results})
    if kinds:
        out["kinds"] = kinds
    json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
