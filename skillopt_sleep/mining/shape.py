"""The shape of a request: what it asks to be done (its *mode*) and to what (its *object*).

Two requests are one kind of task only when they ask for the same thing to be done to the same
kind of object. A shared word is not enough: "commit the lockfile" shares "commit" with "write the
commit message" but *operates* on the repository instead of *producing* a message, and "why is the
test suite slow?" asks a question about tests instead of asking for one. So a request's mode is
read from how it opens, the way people type requests:

- ``produce``: it opens with a verb that asks for a piece of work to be written ("write", "draft",
  "add", "give me", ...), or with the thing itself ("commit msg for what's staged", "release notes
  for 1.4.1");
- ``ask``: it opens as a question ("why ...", "how do I ...", "is this ...");
- otherwise the stem of the verb it opens with, when a verb is recognisable by what follows it (an
  article, a pronoun, a possessive or a question word: "run *the* migration", "message *the* team",
  "test *whether* ..."): "run", "revert", "commit", "fix", ... each its own mode.

The object is the request's head (the words before the first preposition, see ``HEAD_SPLIT_RE``)
without that opening verb; its character trigrams let spelling variants meet ("post-mortem" /
"postmortem", "Dockerfile" / "docker image", "regexp" / "regex").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from skillopt_sleep.mining.text import GENERIC_VERBS, HEAD_SPLIT_RE, STOPWORDS, WORD_RE, canonical, stem
from skillopt_sleep.mining.vocabulary import OPERATION_VERBS, work_kind_of

PRODUCE = "produce"
ASK = "ask"
KIND_MODE = "kind"  # a request whose kind of work is recognised: grouped by that kind

# Openings that carry no meaning of their own: "can you", "pls", "I need", "go ahead and" ...
FILLER_RE = re.compile(
    r"^(?:\s*(?:(?:can|could|would|will) (?:you|u)|please|pls|plz|hey|hi|ok(?:ay)?|so|now|also|quick(?:ly)?|"
    r"i (?:need|want|would like|'d like)(?: you)?(?: to)?|i'd like(?: you)?(?: to)?|need(?: you)? to|need|"
    r"let's|lets|go ahead and|help me|time to)\b[\s,:!-]*)+"
)
QUESTION_WORDS = frozenset(
    "why how what where when who which whats what's wheres where's hows is are was were does did do should "
    "shall can could would will has have any anyone".split()
)
# What follows a verb in an imperative: "run *the* migration", "test *whether* it is up".
VERB_FOLLOWERS = frozenset(
    "the a an my our your their his her its this these those all every each some any it them me us "
    "everything anything something whether if why how what where up out off down".split()
)
# A request that opens with a noun phrase and goes on like this states a problem or asks about it
# ("the query planner ignores my index, why?", "email validation is broken on the signup form").
STATEMENT_RE = re.compile(
    r"\b(?:is|are|was|were|isn't|aren't|wasn't|doesn't|don't|didn't|won't|can't|cannot|keeps|fails|failed|failing|"
    r"broke|breaks|ignores|ignored|throws|threw|crashes|crashed|hangs|hung|leaks|loses|lost|drops|dropped|"
    r"returns|returned|times out|timed out|errors|stopped|stops|never|always)\b"
)
# Verbs that ask for a piece of writing, beyond the generic ones: "summarize the week for standup".
# "file an issue", "cover it with tests", "scaffold a CLI", "set up CI": verbs of making something.
WRITING_VERBS = frozenset(
    "summarize summarise document describe outline file cover scaffold craft author sketch setup".split()
)
PARTICLE_RE = re.compile(r"^\s*(?:in|up|out|together|down|me|us)\b")
GRAM = 3
INNER_HYPHEN_RE = re.compile(r"(?<=[a-z])-(?=[a-z])")


@dataclass(frozen=True)
class RequestShape:
    mode: str
    object_words: tuple[str, ...]  # stemmed content words of the head, in order, without the opening verb
    words: frozenset[str]  # stemmed content words of the whole request
    grams: frozenset[str]  # character trigrams of the object, spaces and punctuation removed
    kind: str | None = None  # the kind of work (``vocabulary.work_kind_of``), when it is recognised


def _canonical(text: str) -> str:
    """``text.canonical`` with hyphens inside words dropped: "post-mortem" is "postmortem"."""
    return INNER_HYPHEN_RE.sub("", canonical(text))


def _head(text: str) -> str:
    """The text before the first preposition; a particle right after a verb ("fill *in* the PR
    template", "write *up* the notes") does not end the head."""
    text = PARTICLE_RE.sub("", text, count=1)
    return HEAD_SPLIT_RE.split(text, maxsplit=1)[0]


def _opening(canonical_text: str) -> tuple[str, str, str, str]:
    """(mode, the head after the opening verb, the text without its opening filler, how it opens:
    ``question`` (a question word), ``statement`` (a problem stated or asked about), ``produce``
    or ``verb``)."""
    body = FILLER_RE.sub("", canonical_text, count=1)
    tokens = re.findall(r"[a-z0-9_'+-]+", body)
    if not tokens:
        return PRODUCE, "", body, "produce"
    first, second = tokens[0], (tokens[1] if len(tokens) > 1 else "")
    after_verb = body[body.index(first) + len(first) :]
    if first in QUESTION_WORDS and not (first == "do" and second in VERB_FOLLOWERS):
        return ASK, _head(body), body, "question"
    if first in GENERIC_VERBS or first in WRITING_VERBS or (first == "set" and second == "up"):
        return PRODUCE, _head(after_verb), body, "produce"
    if (second in VERB_FOLLOWERS and first not in STOPWORDS) or first in OPERATION_VERBS:
        return stem(first), _head(after_verb), body, "verb"
    head = HEAD_SPLIT_RE.split(body, maxsplit=1)[0]
    if STATEMENT_RE.search(head) or body.rstrip().endswith("?"):
        return ASK, head, body, "statement"
    return PRODUCE, head, body, "produce"


def _content(words: list[str]) -> list[str]:
    return [stem(w) for w in words if w not in STOPWORDS and w not in GENERIC_VERBS and not w.isdigit()]


@lru_cache(maxsize=1 << 16)
def shape_of(text: str) -> RequestShape:
    """The shape of a request (cached: a heavy user types many requests more than once)."""
    lowered = _canonical(text)
    mode, head, body, opens = _opening(lowered)
    head_words = WORD_RE.findall(head)
    object_words = tuple(dict.fromkeys(_content(head_words)))
    joined = "".join(w for w in head_words if w not in STOPWORDS and w not in GENERIC_VERBS and not w.isdigit())
    joined = re.sub(r"[^a-z]", "", joined)
    grams = frozenset(joined[i : i + GRAM] for i in range(len(joined) - GRAM + 1))
    kind = work_kind_of(body.strip(), head.strip(), produce=opens == "produce", asks=opens == "question")
    return RequestShape(
        mode=mode,
        object_words=object_words,
        words=frozenset(_content(WORD_RE.findall(lowered))),
        grams=grams,
        kind=kind,
    )


@lru_cache(maxsize=1 << 16)
def grouping_shape(text: str) -> RequestShape:
    """The shape requests are grouped by: a request whose kind of work is recognised
    (``vocabulary.work_kind_of``) has mode ``KIND_MODE`` and that kind as its whole object, so
    "translate this to German" and "put this into French" differ only in subject matter."""
    shape = shape_of(text)
    if shape.kind is None:
        return shape
    return RequestShape(
        mode=KIND_MODE, object_words=(shape.kind,), words=shape.words | {shape.kind}, grams=frozenset(), kind=shape.kind
    )
