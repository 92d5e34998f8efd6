"""Grouping requests into kinds of task: average-link similarity over an inverted index.

Each request becomes two unit vectors (see ``_features``): TF-IDF over its content words, with
the words of its object weighing most, and over its object alone; both with the character
trigrams of its object for spelling variants. A request joins a group only when

- both say the same *mode* (``shape.RequestShape``: "commit the lockfile" does not join "write the
  commit message"); a request whose kind of work is recognised (``vocabulary``) is grouped by that
  kind (``shape.grouping_shape``);
- its object is, on average over the group's members, similar enough (``OBJECT_THRESHOLD``): the
  group must be about the same thing, not merely share a word somewhere;
- its **average** similarity to the group's members is the highest and reaches the threshold —
  not its similarity to one nearest member or to a normalised centroid, which lets one shared
  word pull an unrelated request in. The average over a group is one dot product with the sum of
  its members' vectors.

Near-linear: a request is compared only with the groups of its mode that share an informative
key with it (an object word, the first letters of one, or a word other requests have as their
object) — at most ``MAX_CANDIDATES`` of them, found through its rarest keys and ranked by how many
of those they hold; a key already held by more than ``MAX_GROUPS_PER_KEY`` groups of a mode says
nothing about kind and yields no candidates. The index follows the requests as they move between
groups, so a group is found only by keys its members hold. The work per request is bounded (its
keys, ``MAX_CANDIDATES + MAX_GROUPS_PER_KEY`` index entries, ``MAX_CANDIDATES`` comparisons a
pass), never proportional to the groups; a text typed many times is clustered once.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from itertools import repeat
from operator import mul

from skillopt_sleep.mining.requests import UserRequest
from skillopt_sleep.mining.shape import RequestShape, grouping_shape
from skillopt_sleep.mining.text import WORD_RE, canonical, stem

OBJECT_WEIGHT = 3.0  # a word of a request's object (what the work is about) counts this much more
KIND_WEIGHT = 2.0  # ... and a word other requests have as their object, wherever it stands
KIND_IN_OBJECT = 0.3  # a kind word outside the object still says what the work is about (object vector)
GRAM_SHARE = 0.35  # share of the similarity that comes from the object's character trigrams
PREFIX = 4  # candidate key: the first letters of an object word ("dock" for docker, Dockerfile)
MAX_GROUPS_PER_KEY = 64
MAX_CANDIDATES = 8  # groups a request is compared with, at most
DEFAULT_THRESHOLD = 0.1
OBJECT_THRESHOLD = 0.1  # a request's object must be, on average, this similar to the group's
Vector = dict[str, float]
# A request's unit vector, packed: its features and their weights (a dot product with a group's sums
# walks two tuples, and a heavy user's history holds hundreds of thousands of them).
Packed = tuple[tuple[str, ...], tuple[float, ...]]


def _unit(vec: Vector) -> Vector:
    norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {k: v / norm for k, v in vec.items()}


def _features(shapes: list[RequestShape], weights: list[int]) -> tuple[list[Packed], list[Packed], list[set[str]]]:
    """Per distinct request (typed ``weights[i]`` times), its candidate keys (see ``_keys``) and two
    unit vectors whose dot products are ``(1 - GRAM_SHARE)`` × a word cosine + ``GRAM_SHARE`` × the
    object-trigram cosine: one over the whole request, one over its object only.

    Words shared by many requests ("file", "code") weigh little; in the whole-request vector a word
    of the request's object weighs ``OBJECT_WEIGHT`` times more than its subject matter, and a word
    that at least two requests have as their object names a kind of work even where it stands later
    ("add the fix to the *changelog*"): it weighs ``KIND_WEIGHT`` times more."""
    n = sum(weights)
    df: Counter[str] = Counter()
    gram_df: Counter[str] = Counter()
    as_object: Counter[str] = Counter()
    for s, weight in zip(shapes, weights, strict=True):
        for counter, items in ((df, s.words), (gram_df, s.grams), (as_object, set(s.object_words))):
            for item in items:
                counter[item] += weight
    word_scale, gram_scale = math.sqrt(1 - GRAM_SHARE), math.sqrt(GRAM_SHARE)

    def idf(word: str) -> float:
        return math.log((1 + n) / (1 + df[word])) + 1.0

    def combined(words: Vector, grams: Vector) -> Packed:
        vec = {w: v * word_scale for w, v in _unit(words).items()}
        vec.update({"\0" + g: v * gram_scale for g, v in _unit(grams).items()})
        vec = _unit(vec)
        return tuple(vec), tuple(vec.values())

    whole, objects, keys = [], [], []
    for s in shapes:
        object_words = set(s.object_words)
        grams = {g: math.log((1 + n) / (1 + gram_df[g])) + 1.0 for g in s.grams}
        whole.append(
            combined(
                {
                    w: idf(w) * (OBJECT_WEIGHT if w in object_words else KIND_WEIGHT if as_object[w] >= 2 else 1.0)
                    for w in s.words
                },
                grams,
            )
        )
        objects.append(
            combined(
                {
                    w: idf(w) * (1.0 if w in object_words else KIND_IN_OBJECT)
                    for w in s.words
                    if w in object_words or as_object[w] >= 2
                },
                grams,
            )
        )
        keys.append(_keys(s, {w for w in s.words if as_object[w] >= 2}))
    return whole, objects, keys


def _keys(shape: RequestShape, kind_words: set[str]) -> set[str]:
    """What a request is looked up by: its object words and their first letters, and the words
    it shares with other requests' objects. Only a group holding one of these can pass the object
    check, so subject matter ("the parser", "in utils.py") fetches no candidates."""
    return set(shape.object_words) | kind_words | {"\1" + w[:PREFIX] for w in shape.object_words if len(w) >= PREFIX}


def _dot(vec: Packed, total: Vector) -> float:
    return sum(map(mul, vec[1], map(total.get, vec[0], repeat(0.0))))


class _Groups:
    """Groups as sums of their members' vectors (whole request and object), with the inverted
    index from keys to the groups whose members hold them (kept exact as requests move)."""

    def __init__(self) -> None:
        self.sums: list[Vector] = []
        self.object_sums: list[Vector] = []
        self.sizes: list[int] = []
        self.modes: list[str] = []
        self.key_counts: list[Counter[str]] = []  # group -> key -> distinct members holding it
        self.by_key: dict[str, dict[str, set[int]]] = {}  # mode -> key -> groups

    def new(self, mode: str) -> int:
        self.sums.append({})
        self.object_sums.append({})
        self.sizes.append(0)
        self.modes.append(mode)
        self.key_counts.append(Counter())
        return len(self.sums) - 1

    def add(self, g: int, vec: Packed, object_vec: Packed, keys: set[str], weight: int) -> None:
        """Add ``weight`` copies of a request to group ``g`` (a negative weight takes them out)."""
        for total, part in ((self.sums[g], vec), (self.object_sums[g], object_vec)):
            for k, v in zip(*part, strict=True):
                total[k] = total.get(k, 0.0) + weight * v
        self.sizes[g] += weight
        by_key, counts = self.by_key.setdefault(self.modes[g], {}), self.key_counts[g]
        step = 1 if weight > 0 else -1
        for key in keys:
            counts[key] += step
            if step > 0:
                by_key.setdefault(key, set()).add(g)
            elif not counts[key]:
                del counts[key]
                by_key[key].discard(g)

    def candidates(self, keys: set[str], mode: str) -> list[int]:
        """The groups of this mode most likely to hold the request's kind, in index order, at most
        ``MAX_CANDIDATES``: its keys are looked up rarest first (a key held by more than
        ``MAX_GROUPS_PER_KEY`` groups says nothing) until that many groups are found, and those
        holding most of the keys looked up, a rarer key counting more, are kept."""
        by_key = self.by_key.get(mode, {})
        held = sorted(
            (len(groups), key) for key in keys if (groups := by_key.get(key)) and len(groups) <= MAX_GROUPS_PER_KEY
        )
        score: dict[int, float] = {}
        for size, key in held:
            if len(score) >= MAX_CANDIDATES:
                break
            share = 1.0 / size
            for g in by_key[key]:
                score[g] = score.get(g, 0.0) + share
        if len(score) > MAX_CANDIDATES:
            return sorted(heapq.nlargest(MAX_CANDIDATES, score, key=lambda g: (score[g], -g)))
        return sorted(score)

    def average_link(self, g: int, vec: Packed, object_vec: Packed, own: int = 0) -> float:
        """Mean similarity of a request to the group's members, leaving out its own ``own`` copies
        (when it is in the group), or -1 when its object is not, on average, the object of the
        group's members (``OBJECT_THRESHOLD``). Both vectors are unit vectors: a copy of the
        request adds exactly 1 to a dot product with the sums."""
        size = self.sizes[g] - own
        if size <= 0:
            return -1.0
        if object_vec[0] and (_dot(object_vec, self.object_sums[g]) - own) / size < OBJECT_THRESHOLD:
            return -1.0  # (a request whose object is empty is not held to it)
        return (_dot(vec, self.sums[g]) - own) / size


def cluster(
    requests: list[UserRequest], threshold: float = DEFAULT_THRESHOLD, rounds: int = 2
) -> list[list[UserRequest]]:
    """Group requests into kinds of task.

    A leader pass in a stable order (case-insensitive text) puts each request in the group it is
    most similar to on average, or a new one; reassignment rounds then move each request to the
    group it is now most similar to (its own group counted without itself), so a request that
    seeded a group alone can still join a better one. The result does not depend on input order.
    """
    if not requests:
        return []
    order = sorted(
        range(len(requests)), key=lambda i: (requests[i].text.lower(), requests[i].text, requests[i].session.session_id)
    )
    typed: dict[str, list[int]] = {}  # each distinct text once, weighted by how often it was typed
    for i in order:
        typed.setdefault(requests[i].text, []).append(i)
    texts = list(typed)
    weights = [len(typed[t]) for t in texts]
    shapes = [grouping_shape(t) for t in texts]
    vectors, object_vectors, keys = _features(shapes, weights)
    groups = _Groups()
    assignment: list[int] = []
    for i, shape in enumerate(shapes):
        best, best_sim = -1, threshold
        for g in groups.candidates(keys[i], shape.mode):
            sim = groups.average_link(g, vectors[i], object_vectors[i])
            if sim >= best_sim:
                best, best_sim = g, sim
        if best < 0:
            best = groups.new(shape.mode)
        groups.add(best, vectors[i], object_vectors[i], keys[i], weights[i])
        assignment.append(best)
    for _ in range(rounds):
        changed = False
        for i, shape in enumerate(shapes):
            own, weight = assignment[i], weights[i]
            best, best_sim = own, groups.average_link(own, vectors[i], object_vectors[i], own=weight)
            for g in groups.candidates(keys[i], shape.mode):
                if g == own:
                    continue
                sim = groups.average_link(g, vectors[i], object_vectors[i])
                if sim > best_sim + 1e-9:
                    best, best_sim = g, sim
            if best_sim < threshold:  # nothing close enough: stand alone
                if groups.sizes[own] == weight:
                    continue
                best = groups.new(shape.mode)
            if best != own:
                groups.add(own, vectors[i], object_vectors[i], keys[i], -weight)
                groups.add(best, vectors[i], object_vectors[i], keys[i], weight)
                assignment[i], changed = best, True
        if not changed:
            break
    by_group: dict[int, list[UserRequest]] = {}
    for text, g in zip(texts, assignment, strict=True):
        by_group.setdefault(g, []).extend(requests[i] for i in typed[text])
    return sorted(by_group.values(), key=lambda g: (-len(g), g[0].text.lower(), g[0].text))


def label_for(group: list[UserRequest]) -> str:
    """A short name for a kind: its most shared object words, in the order a request says them."""
    counts: Counter[str] = Counter()
    for r in group:
        shape = grouping_shape(r.text)
        counts.update(set(shape.object_words) or shape.words)
    shared = [w for w, n in counts.most_common() if n >= max(2, len(group) // 2)][:3]
    words = shared or [w for w, _ in counts.most_common(3)]
    first = [stem(w) for w in WORD_RE.findall(canonical(group[0].text))]
    words.sort(key=lambda w: first.index(w) if w in first else len(first))
    spelled: dict[str, Counter[str]] = {}
    for r in group:
        for w in WORD_RE.findall(canonical(r.text)):
            spelled.setdefault(stem(w), Counter())[w] += 1
    return "-".join(spelled[w].most_common(1)[0][0] if w in spelled else w for w in words) or "task"
