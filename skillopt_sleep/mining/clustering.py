"""Grouping requests into kinds of task: TF-IDF cosine to group centroids."""

from __future__ import annotations

import math
from collections import Counter

from skillopt_sleep.mining.requests import UserRequest
from skillopt_sleep.mining.text import WORD_RE, canonical, stem

HEAD_WEIGHT = 3.0  # a word in a request's head (its kind of work) counts this much more
KIND_WEIGHT = 2.0  # ... and a word other requests name their kind of work with, wherever it stands


def _tfidf(signatures: list[frozenset[str]], heads: list[frozenset[str]]) -> list[dict[str, float]]:
    """Unit-length TF-IDF vectors: words shared by many requests ("write", "file") weigh little,
    words that name a kind of work ("commit", "release") weigh a lot, and words in a request's
    head weigh ``HEAD_WEIGHT`` times more than its subject matter. A word found in the heads of at
    least two requests names a kind of work even where it stands later ("add the fix to the
    *changelog*", "the description for my *PR*"): it weighs ``KIND_WEIGHT`` times more."""
    n = len(signatures)
    df: Counter[str] = Counter(w for sig in signatures for w in sig)
    in_heads: Counter[str] = Counter(w for head in heads for w in head)

    def weight(word: str, head: frozenset[str]) -> float:
        if word in head:
            return HEAD_WEIGHT
        return KIND_WEIGHT if in_heads[word] >= 2 else 1.0

    vectors = []
    for sig, head in zip(signatures, heads, strict=True):
        vec = {w: (math.log((1 + n) / (1 + df[w])) + 1.0) * weight(w, head) for w in sig}
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


def cluster(requests: list[UserRequest], threshold: float = 0.3, rounds: int = 5) -> list[list[UserRequest]]:
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
    groups: dict[int, list[UserRequest]] = {}
    for i in order:
        groups.setdefault(assignment[i], []).append(requests[i])
    return sorted(groups.values(), key=lambda g: (-len(g), g[0].text.lower(), g[0].text))


def label_for(group: list[UserRequest]) -> str:
    """A short name for a kind: its most shared head words, in the order a request says them."""
    counts: Counter[str] = Counter()
    for r in group:
        counts.update(r.head or r.tokens)
    shared = [w for w, n in counts.most_common() if n >= max(2, len(group) // 2)][:3]
    words = shared or [w for w, _ in counts.most_common(3)]
    first = [stem(w) for w in WORD_RE.findall(canonical(group[0].text))]
    words.sort(key=lambda w: first.index(w) if w in first else len(first))
    spelled: dict[str, Counter[str]] = {}
    for r in group:
        for w in WORD_RE.findall(canonical(r.text)):
            spelled.setdefault(stem(w), Counter())[w] += 1
    return "-".join(spelled[w].most_common(1)[0][0] if w in spelled else w for w in words) or "task"
