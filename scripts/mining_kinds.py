"""The labelled mining sets compared with what the miner made, for ``bench_mining.py``: a check's
comparable form (``normalise``), and the **kinds** part — a kinds file scored end to end, through the
harvest's digest builder and ``mining.mine`` as a night mines (the format and the measures are in
``bench_mining.py``'s docstring)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from skillopt_sleep.mining import mine
from skillopt_sleep.mining.checks import limit_check
from skillopt_sleep.mining.llm import LlmMiner
from skillopt_sleep.mining.llm_groups import LlmGrouper
from skillopt_sleep.sources.base import DigestBuilder
from skillopt_sleep.types import SessionDigest, TaskRecord

KINDS_FORMAT = "skillopt_sleep.mining-kinds.v1"
FOLLOW_UPS = ("complaint", "praise", "chatter")


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


def kinds_digests(sessions: list[dict[str, Any]]) -> list[SessionDigest]:
    """The labelled sessions as a harvest digests them: every message a typed prompt the agent
    answered (the reply's text is not labelled)."""
    digests = []
    for n, session in enumerate(sessions):
        builder = DigestBuilder(
            source=session["agent"], session_id=f"k{n}", path=f"/bench/k{n}.jsonl", project="/bench"
        )
        for message in session["messages"]:
            builder.add_prompt(message["text"])
            builder.new_reply("(the agent's reply)")
        digests.append(builder.to_digest())
    return digests


def mined_kinds(tasks: list[TaskRecord]) -> list[list[TaskRecord]]:
    """The mined tasks by the group they came from: one label, one judge."""
    by_group: dict[str, list[TaskRecord]] = {}
    for task in tasks:
        key = json.dumps([task.tags, task.judge], sort_keys=True, default=str)
        by_group.setdefault(key, []).append(task)
    return list(by_group.values())


def labelled_checks(kind: dict[str, Any]) -> list[frozenset[tuple[str, Any]]]:
    """A kind's labelled checks, each as the set of its accepted forms (``any_of``)."""
    return [frozenset(normalise(c) for c in check.get("any_of", [check])) for check in kind["checks"]]


def score_kinds(data: dict[str, Any], miner: LlmMiner | None = None) -> dict[str, Any]:
    """One kinds file end to end (see the module docstring)."""
    labelled = {name: labelled_checks(kind) for name, kind in data["kinds"].items()}
    role: dict[tuple[str, str], tuple[str, str | None]] = {}  # (session, text) -> what the message is
    requests_of: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for n, session in enumerate(data["sessions"]):
        for message in session["messages"]:
            key = (f"k{n}", message["text"].strip())
            if "follow_up" in message:
                if message["follow_up"] not in FOLLOW_UPS:
                    raise SystemExit(f"unknown follow_up {message['follow_up']!r}: one of {', '.join(FOLLOW_UPS)}")
                role[key] = ("follow_up", message["follow_up"])
                continue
            kind = message["kind"]
            if kind is not None and kind not in labelled:
                raise SystemExit(f"request kind {kind!r} has no entry in kinds")
            role[key] = ("request", kind)
            if kind is not None:
                requests_of[kind].add(key)
    grouper = LlmGrouper(miner.optimizer) if miner is not None else None
    result = mine(kinds_digests(data["sessions"]), judge_maker=miner, grouper=grouper)
    groups = mined_kinds(result.tasks)
    members = [{(t.source_sessions[0], t.intent.strip()) for t in group} for group in groups]
    produced = [
        {normalise(c) for c in group[0].judge.get("checks", []) if c.get("op") != "no_refusal"} for group in groups
    ]

    def kinds_in(held: set[tuple[str, str]]) -> Counter[str]:
        return Counter(kind for m in held if (kind := role.get(m, ("", None))[1]) and role[m][0] == "request")

    tp = fp = 0
    holding = 0
    for g, held in enumerate(members):
        if not (kinds := kinds_in(held)):
            continue
        holding += 1
        accepted = set().union(*labelled[kinds.most_common(1)[0][0]])
        tp += len(produced[g] & accepted)
        fp += len(produced[g] - accepted)
    found = recall_tp = recall_den = 0
    by_kind: dict[str, Any] = {}
    for name, keys in sorted(requests_of.items()):
        holders = [g for g, held in enumerate(members) if held & keys]
        checks = labelled[name]
        accepted = set().union(*checks)
        got = set().union(*(produced[g] for g in holders)) if holders else set()
        stated = [c for c in checks if c & got]
        row: dict[str, Any] = {"requests": len(keys), "mined_kinds_holding": len(holders)}
        ok = False
        if len(holders) == 1:
            g = holders[0]
            row["requests_held"] = len(members[g] & keys)
            row["other_requests_held"] = sorted(text for m in members[g] - keys if m in role for text in [m[1][:80]])
            row["spurious_checks"] = sorted(map(str, produced[g] - accepted))
            alone = set(kinds_in(members[g])) == {name}
            ok = 2 * len(members[g] & keys) > len(keys) and alone and bool(stated)
        row["missing_checks"] = [sorted(map(str, c)) for c in checks if not c & got]
        row["found"] = ok
        found += ok
        recall_tp += len(stated)
        recall_den += len(checks)
        by_kind[name] = row
    follow_ups = sorted(
        text for held in members for m in held if role.get(m, ("",))[0] == "follow_up" for text in [m[1]]
    )
    one_offs = sorted(text for held in members for m in held if role.get(m) == ("request", None) for text in [m[1]])
    return {
        "sessions": len(data["sessions"]),
        "kinds": len(requests_of),
        "kinds_found": f"{found}/{len(requests_of)}",
        "check_precision": ratio(tp, tp + fp),
        "check_recall": ratio(recall_tp, recall_den),
        "checks_right": tp,
        "checks_spurious": fp,
        "follow_ups_as_tasks": follow_ups,
        "one_offs_as_tasks": one_offs,
        "mined_kinds": len(groups),
        "mined_kinds_without_labelled_requests": len(groups) - holding,
        "by_kind": by_kind,
    }


def evaluate_kinds(path: Path, miner: LlmMiner | None = None) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != KINDS_FORMAT:
        raise SystemExit(f"{path} is not a {KINDS_FORMAT} file")
    return {"file": path.name, **score_kinds(data, miner)}
