"""SessionDigests -> recurring, checkable TaskRecords, with stable train/val/test splits.

Heuristic path (no model): requests are grouped across sessions by word overlap; a group seen in
at least ``min_recurrence`` sessions becomes a *kind* of task. The user's own follow-up
complaints in that group ("you forgot the Signed-off-by line", "keep it under 72 characters")
become the kind's judge checks. Each distinct request of the kind becomes one TaskRecord sharing
that judge, so rules learned on some instances (train) are measured on others (val).

Task files (``skillopt_sleep.tasks.v1``) are loaded and saved here; invalid judges are rejected at
load time with the task id and the reason.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterable

from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.judges import JudgeError, validate_judge
from skillopt_sleep.types import SPLITS, TASKS_FORMAT, SessionDigest, TaskRecord

STOPWORDS = frozenset(
    """a an the and or but if then else for to of in on at by with from into onto about as is are was
    were be been being it its this that these those i me my we our you your he she they them their
    please can could would should will shall may might must do does did done have has had not no
    yes so just also too very some any all each every more most less few other such own same than
    up down out over again further once here there when where why how what which who whom whose
    let lets us go get got make made new one two now today tomorrow yesterday hey hi thanks thank ok
    okay right want need like use using used im ive id dont doesnt isnt""".split()
)
HEAD_SPLIT_RE = re.compile(r"\b(?:for|about|of|on|in|from|to|that|with|where|which|because)\b")
HEAD_WEIGHT = 3.0
WORD_RE = re.compile(r"[a-z][a-z0-9_+-]{1,}")
# Single quotes only when they are not apostrophes: "Don't add 'WIP', it's noise" quotes WIP alone.
QUOTED_RE = re.compile(
    r'"([^"\n]{1,80})"|“([^”\n]{1,80})”|`([^`\n]{1,80})`|(?<![A-Za-z])\'([^\'\n]{2,80})\'(?![A-Za-z])'
)
REMINDER_RE = re.compile(r"\b(?:don'?t|do not|never) forget\b|\bremember\b", re.I)  # a positive cue
NEGATIVE_CUE_RE = re.compile(r"\b(don'?t|do not|never|no more|stop|remove|without|drop|avoid|get rid of|not use)\b", re.I)
POSITIVE_CUE_RE = re.compile(
    r"\b(forgot|forget|missing|include|add|needs?|should (?:have|include|contain)|always|where(?:'s| is)|lacks?|put)\b",
    re.I,
)
CAP_RE = re.compile(
    r"\b(?:under|at most|no more than|max(?:imum)?(?: of)?|within|keep (?:it|them|the \w+) (?:to|under)|shorter than|fewer than)\s+(\d{1,5})\s*(?:characters|chars)\b",
    re.I,
)
FIRST_LINE_RE = re.compile(r"\b(subject|title|first line|summary line|headline|header line)\b", re.I)
FLOOR_RE = re.compile(r"\b(?:at least|minimum of|no fewer than|longer than)\s+(\d{1,5})\s*(?:characters|chars)\b", re.I)
SECTION_RE = re.compile(
    r"(?:#{1,6}\s*([A-Z][\w /&-]{1,40}?)\s*(?:section|heading)\b)|(?:\b(?:section|heading)\s+(?:called|named|headed|titled)\s+[\"“`']?#*\s*([\w /&-]{2,40}?)[\"”`']?(?=[\s.,;!?]|$))",
)


@dataclass
class Request:
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


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def signature(text: str) -> frozenset[str]:
    """Content words of a request, lower-cased and lightly stemmed."""
    words = WORD_RE.findall(text.lower()[:2000])
    return frozenset(_stem(w) for w in words if w not in STOPWORDS and not w.isdigit())


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def requests_from(digests: Iterable[SessionDigest]) -> list[Request]:
    """User requests (not feedback messages) with the feedback that followed each."""
    out: list[Request] = []
    for digest in digests:
        feedback_texts = {f.text for f in digest.feedback}
        by_prompt: dict[int, list] = {}
        for f in digest.feedback:
            by_prompt.setdefault(f.prompt_index, []).append(f)
        for i, prompt in enumerate(digest.user_prompts):
            if prompt in feedback_texts or not prompt.strip():
                continue
            fbs = by_prompt.get(i, [])
            reply = digest.assistant_finals[i] if i < len(digest.assistant_finals) else ""
            out.append(Request(
                session=digest, index=i, text=prompt.strip(),
                feedback=[f.text for f in fbs if f.polarity == "negative"],
                praised=any(f.polarity == "positive" for f in fbs),
                reply=reply,
            ))
    return out


def _tfidf(signatures: list[frozenset[str]], heads: list[frozenset[str]]) -> list[dict[str, float]]:
    """Unit-length TF-IDF vectors: words shared by many requests ("write", "file") weigh little,
    words that name a kind of work ("commit", "release") weigh a lot, and words in a request's
    head weigh ``HEAD_WEIGHT`` times more than its subject matter."""
    n = len(signatures)
    df: Counter[str] = Counter(w for sig in signatures for w in sig)
    vectors = []
    for sig, head in zip(signatures, heads, strict=True):
        vec = {w: (math.log((1 + n) / (1 + df[w])) + 1.0) * (HEAD_WEIGHT if w in head else 1.0) for w in sig}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        vectors.append({w: v / norm for w, v in vec.items()})
    return vectors


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(w, 0.0) for w, v in a.items())


def _normalized(vec: dict[str, float]) -> dict[str, float]:
    norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {w: v / norm for w, v in vec.items()}


def cluster(requests: list[Request], threshold: float = 0.3, rounds: int = 5) -> list[list[Request]]:
    """Group requests by TF-IDF cosine similarity to group centroids.

    A leader pass seeds groups in a stable order (case-insensitive text), then reassignment
    rounds move each request to the most similar centroid *computed without itself*, so a
    request that seeded a group alone can still join a better one, and unrelated requests are not
    chained together the way single-link grouping does.
    """
    if not requests:
        return []
    order = sorted(range(len(requests)),
                   key=lambda i: (requests[i].text.lower(), requests[i].text, requests[i].session.session_id))
    vectors = _tfidf([r.tokens for r in requests], [r.head for r in requests])
    assignment: dict[int, int] = {}
    centroids: list[dict[str, float]] = []
    for i in order:
        sims = [_cosine(vectors[i], c) for c in centroids]
        best = max(range(len(sims)), key=sims.__getitem__) if sims else -1
        if best >= 0 and sims[best] >= threshold:
            assignment[i] = best
            merged = Counter(centroids[best])
            merged.update(vectors[i])
            centroids[best] = _normalized(dict(merged))
        else:
            assignment[i] = len(centroids)
            centroids.append(dict(vectors[i]))
    for _ in range(rounds):
        sums: dict[int, Counter[str]] = {}
        for i, g in assignment.items():
            sums.setdefault(g, Counter()).update(vectors[i])
        sizes = Counter(assignment.values())
        normed = {g: _normalized(dict(total)) for g, total in sums.items()}
        by_word: dict[str, set[int]] = {}
        for g, total in sums.items():
            for w in total:
                by_word.setdefault(w, set()).add(g)
        changed = False
        next_id = max(sums) + 1
        for i in order:
            own = assignment[i]
            candidates = {g for w in vectors[i] for g in by_word.get(w, ())}
            best, best_sim = own, -1.0
            for g in sorted(candidates):
                if g == own:
                    rest = Counter(sums[g])
                    rest.subtract(vectors[i])
                    centroid = _normalized({w: v for w, v in rest.items() if v > 1e-12})
                else:
                    centroid = normed[g]
                sim = _cosine(vectors[i], centroid)
                if sim > best_sim + 1e-12:
                    best, best_sim = g, sim
            if best_sim < threshold:  # nothing close enough: stand alone
                if sizes[own] == 1:
                    continue
                best, next_id = next_id, next_id + 1
            if best != own:
                sizes[own] -= 1
                sizes[best] += 1
                assignment[i], changed = best, True
        if not changed:
            break
    groups: dict[int, list[Request]] = {}
    for i in order:
        groups.setdefault(assignment[i], []).append(requests[i])
    return sorted(groups.values(), key=lambda g: (-len(g), g[0].text.lower(), g[0].text))


def checks_from_feedback(texts: Iterable[str]) -> list[dict[str, Any]]:
    """Rule checks a user's complaints imply. Precision over recall: unclear phrases give none."""
    checks: list[dict[str, Any]] = []

    def add(check: dict[str, Any]) -> None:
        if check not in checks:
            checks.append(check)

    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
            for m in CAP_RE.finditer(sentence):
                limit = int(m.group(1))
                if FIRST_LINE_RE.search(sentence[: m.start()]):  # "keep the subject under 50 chars"
                    add({"op": "regex", "arg": rf"\A[^\n]{{1,{limit}}}(?:\n|\Z)"})
                else:
                    add({"op": "max_chars", "arg": limit})
            for m in FLOOR_RE.finditer(sentence):
                add({"op": "min_chars", "arg": int(m.group(1))})
            for m in SECTION_RE.finditer(sentence):
                name = (m.group(1) or m.group(2) or "").strip()
                if name:
                    add({"op": "section_present", "arg": name})
            for m in QUOTED_RE.finditer(sentence):
                value = next(g for g in m.groups() if g is not None).strip()
                if not value or value.startswith("#"):
                    if value.startswith("#") and value.lstrip("# ").strip():
                        add({"op": "section_present", "arg": value.lstrip("# ").strip()})
                    continue
                before = sentence[: m.start()]
                if REMINDER_RE.search(before):
                    add({"op": "contains", "arg": value})
                elif NEGATIVE_CUE_RE.search(before):
                    add({"op": "not_contains", "arg": value})
                elif POSITIVE_CUE_RE.search(before):
                    add({"op": "contains", "arg": value})
    return checks


def label_for(group: list[Request]) -> str:
    """A short name for a kind: its most shared head words, in the order a request says them."""
    counts: Counter[str] = Counter()
    for r in group:
        counts.update(r.head or r.tokens)
    shared = [w for w, n in counts.most_common() if n >= max(2, len(group) // 2)][:3]
    words = shared or [w for w, _ in counts.most_common(3)]
    first = [_stem(w) for w in WORD_RE.findall(group[0].text.lower())]
    words.sort(key=lambda w: first.index(w) if w in first else len(first))
    return "-".join(words) or "task"


def task_id(project: str, text: str) -> str:
    """Stable id from the request alone and the project's folder name — not the kind's label
    (which shifts as a group gains members) nor the absolute path (a moved checkout keeps its
    ids) — so a task keeps its id, and its split, from night to night."""
    name = Path(project).name if project else ""
    normalized = re.sub(r"\s+", " ", text.strip().lower())
    digest = hashlib.sha256(f"{name}\0{normalized}".encode()).hexdigest()
    words = [w for w in WORD_RE.findall(normalized) if w not in STOPWORDS][:4]
    return f"{'-'.join(words)[:40] or 'task'}-{digest[:8]}"


@dataclass
class MineResult:
    tasks: list[TaskRecord]
    groups: int  # request groups seen
    one_off: int  # groups not promoted because they did not recur
    uncheckable: int  # recurring groups with no checkable feedback


# A model-backed miner: (kind label, the group's requests, heuristic checks) -> a judge or None.
JudgeMaker = Callable[[str, list[Request], list[dict[str, Any]]], "dict[str, Any] | None"]


def mine(digests: list[SessionDigest], *, min_recurrence: int = 2, threshold: float = 0.3,
         seed: int = 0, val_fraction: float = 0.34, test_fraction: float = 0.0,
         max_instances: int = 8, judge_maker: JudgeMaker | None = None) -> MineResult:
    """Digests -> recurring TaskRecords with splits assigned.

    ``judge_maker`` (the LLM miner, see ``mine_llm``) turns each recurring group into a judge;
    without it the heuristic checks from the user's complaints are the judge."""
    groups = cluster(requests_from(digests), threshold)
    tasks: list[TaskRecord] = []
    one_off = uncheckable = 0
    for group in groups:
        sessions = {r.session.session_id for r in group}
        if len(sessions) < min_recurrence:
            one_off += 1
            continue
        checks = checks_from_feedback(fb for r in group for fb in r.feedback)
        label = label_for(group)
        if judge_maker is not None:
            judge = judge_maker(label, group, checks)
        elif checks:
            judge = {"kind": "rule", "checks": checks + [{"op": "no_refusal", "arg": None}]}
        else:
            judge = None
        if judge is None:
            uncheckable += 1
            continue
        seen: set[str] = set()
        for r in group:
            key = re.sub(r"\s+", " ", r.text.lower())
            if key in seen or len(seen) >= max_instances:
                continue
            seen.add(key)
            outcome = "failure" if r.feedback else ("success" if r.praised else "unknown")
            tasks.append(TaskRecord(
                id=task_id(r.session.project, r.text),
                project=r.session.project,
                intent=r.text[:4000],
                context_excerpt=r.session.branch and f"branch: {r.session.branch}" or "",
                attempted_solution=r.reply[:4000],
                outcome=outcome,
                reference_kind="rubric" if judge["kind"] == "rubric" else "rule",
                reference=judge.get("rubric", "") if judge["kind"] == "rubric" else "",
                judge=judge,
                tags=[label],
                source_sessions=[r.session.session_id],
                skill_hint=label,
                recurrence=len(sessions),
            ))
    assign_splits(tasks, seed=seed, val_fraction=val_fraction, test_fraction=test_fraction)
    return MineResult(tasks=tasks, groups=len(groups), one_off=one_off, uncheckable=uncheckable)


def _unit(task_id: str, seed: int) -> float:
    h = hashlib.sha256(f"{seed}:{task_id}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def assign_splits(tasks: list[TaskRecord], *, seed: int = 0, val_fraction: float = 0.34,
                  test_fraction: float = 0.0) -> None:
    """Stable splits from a hash of id + seed, stratified by kind of task (``skill_hint``).

    Within a kind, instances are ordered by their hash; the first ones go to test and val, the
    rest to train, and a kind with >= 2 instances keeps at least one train and one val instance,
    so a rule learned on one instance is measured on another. Kinds with a single instance split
    by hash alone. Dream tasks are always train; with >= 2 real tasks val is never empty.
    """
    real = [t for t in tasks if t.origin != "dream"]
    for t in tasks:
        t.split = "train"
    by_kind: dict[str, list[TaskRecord]] = {}
    for t in real:
        by_kind.setdefault(t.skill_hint or t.id, []).append(t)
    for kind_tasks in by_kind.values():
        ordered = sorted(kind_tasks, key=lambda t: _unit(t.id, seed))
        n = len(ordered)
        if n == 1:
            u = _unit(ordered[0].id, seed)
            ordered[0].split = ("test" if u < test_fraction
                                else "val" if u < test_fraction + val_fraction else "train")
            continue
        n_test = min(int(n * test_fraction), n - 2) if n >= 3 else 0
        n_val = min(max(1, round(n * val_fraction)), n - n_test - 1)  # >= 1: n - n_test >= 2
        for i, t in enumerate(ordered):
            t.split = "test" if i < n_test else "val" if i < n_test + n_val else "train"
    # Only single-instance kinds can leave these empty; fix them up from single-instance tasks.
    singles = sorted((t for ts in by_kind.values() if len(ts) == 1 for t in ts), key=lambda t: _unit(t.id, seed))
    if len(real) >= 2 and not any(t.split == "val" for t in real) and singles:
        singles[-1].split = "val"
    if len(real) >= 2 and not any(t.split == "train" for t in real) and singles:
        next((t for t in singles if t.split != "val"), singles[0]).split = "train"


# -- task files ---------------------------------------------------------------------------------


def validate_task(task: TaskRecord) -> TaskRecord:
    if not task.id or not isinstance(task.id, str):
        raise JudgeError("task has no id")
    if not isinstance(task.intent, str) or not task.intent.strip():
        raise JudgeError("task has no intent")
    if task.split not in SPLITS:
        raise JudgeError(f"split {task.split!r} is not one of {', '.join(SPLITS)}")
    if task.origin == "dream" and task.split != "train":
        raise JudgeError("dream tasks may only be in the train split")
    task.judge = validate_judge(task.judge, task.reference_kind, task.reference)
    return task


def load_tasks(path: Path) -> tuple[list[TaskRecord], bool]:
    """Read a ``skillopt_sleep.tasks.v1`` file -> (tasks, reviewed). Invalid input raises
    UserError naming the file, the task and the problem."""
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"tasks file {path} does not exist", EXIT_CONFIG) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read tasks file {path}: {exc}", EXIT_CONFIG) from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise UserError(f"tasks file {path} is not valid JSON: {exc}", EXIT_CONFIG) from None
    if not isinstance(data, dict) or data.get("format") != TASKS_FORMAT:
        raise UserError(f"tasks file {path} is not a {TASKS_FORMAT} file (missing \"format\")", EXIT_CONFIG)
    items = data.get("tasks")
    if not isinstance(items, list):
        raise UserError(f"tasks file {path} has no \"tasks\" list", EXIT_CONFIG)
    tasks: list[TaskRecord] = []
    ids: set[str] = set()
    for n, item in enumerate(items):
        label = item.get("id", f"#{n}") if isinstance(item, dict) else f"#{n}"
        try:
            task = validate_task(TaskRecord.from_dict(item))
        except (JudgeError, ValueError) as exc:
            raise UserError(f"tasks file {path}: task {label}: {exc}", EXIT_CONFIG) from None
        if task.id in ids:
            raise UserError(f"tasks file {path}: duplicate task id {task.id!r}", EXIT_CONFIG)
        ids.add(task.id)
        tasks.append(task)
    return tasks, data.get("reviewed") is True


def tasks_document(tasks: list[TaskRecord], reviewed: bool = False) -> dict[str, Any]:
    return {"format": TASKS_FORMAT, "reviewed": reviewed, "tasks": [t.to_dict() for t in tasks]}


def save_tasks(path: Path, tasks: list[TaskRecord], reviewed: bool = False) -> None:
    from skillopt_sleep.files import atomic_write_text

    atomic_write_text(Path(path), json.dumps(tasks_document(tasks, reviewed), indent=2) + "\n")
