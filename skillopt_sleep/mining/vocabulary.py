"""Kinds of software work and the words developers use for them: an intent-level grouping.

Two requests for the same piece of work often share no word: "translate this to German" / "put
this into French", "summarize the thread" / "tl;dr of this discussion", "explain this function" /
"what does this code do?", "Dockerfile for the api" / "dockerize the node service". This module
names the kind of work a request asks for, from a fixed, general vocabulary of how people ask for
common pieces of software work (what each kind is called, the verbs that ask for it by
themselves, the questions that ask for it). A request no entry recognises has no kind and is
grouped by its words alone (see ``clustering``).

How a kind is read (``work_kind_of``), most telling first:

1. a request that opens with a verb asking for one kind of work by itself ("translate ...",
   "summarize ...", "explain ...", "review ...", "dockerize ...");
2. a language the text is to be put into ("... into French", "a German version of ...");
3. a question asking what something does or how it works (explanation);
4. for a request asking for a piece of work to be written (mode ``produce``, or a bare noun
   phrase), the noun naming that piece in its head — the *last* one, as in English the last noun
   of a compound names the thing ("test *fixtures*", "standup *summary*"); the longer phrase wins
   a tie ("perf test" over "test") — or, when its head names none, elsewhere in it ("add a usage
   example to the *README*", "cover parse_date with a *test*").

Requests that operate on something ("run the migrations", "revert the last commit") have no kind:
their verb is their mode, and "run the migrations" is not "write a migration". ``OPERATION_VERBS``
are the verbs of such requests that say so by themselves ("bump python in the CI image"); words
that are as often nouns of a piece of work ("commit", "test", "release", "build", "file") are not
among them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TaskKind:
    name: str  # also the label of the kind's tasks: lower case, words joined by "-"
    nouns: tuple[str, ...] = ()  # regexes naming the piece of work, matched on whole words
    verbs: tuple[str, ...] = ()  # opening verbs that ask for this work by themselves


OPERATION_VERBS = frozenset(
    """run rerun fix bump upgrade downgrade revert undo delete remove rename move kill restart stop start
    deploy redeploy merge rebase squash cherry-pick push pull fetch clone checkout install uninstall
    reinstall format lint reformat close reopen find grep search list count profile debug investigate
    trace refactor clean cleanup migrate rollback roll pin unpin disable enable rotate purge prune
    reset resize scale backup restore archive sort dedupe retry reproduce""".split()
)

LANGUAGES = (
    "german",
    "french",
    "spanish",
    "italian",
    "portuguese",
    "brazilian portuguese",
    "dutch",
    "danish",
    "swedish",
    "norwegian",
    "finnish",
    "polish",
    "czech",
    "slovak",
    "hungarian",
    "romanian",
    "greek",
    "turkish",
    "russian",
    "ukrainian",
    "arabic",
    "hebrew",
    "persian",
    "farsi",
    "hindi",
    "bengali",
    "urdu",
    "chinese",
    "mandarin",
    "cantonese",
    "japanese",
    "korean",
    "vietnamese",
    "thai",
    "indonesian",
    "malay",
    "tagalog",
    "catalan",
    "basque",
    "swahili",
)
_LANGUAGE = "(?:" + "|".join(sorted(LANGUAGES, key=len, reverse=True)) + ")"

KINDS = (
    TaskKind(
        "commit-message",
        nouns=(
            r"commit (?:message|text|description|subject|title)",
            r"conventional commit",
            r"message (?:for|of) (?:the |this |that |these |my )?(?:\w+ )?(?:commit|staged|diff|change)",
        ),
    ),
    TaskKind(
        "pr-description",
        nouns=(
            r"pr (?:description|body|text|summary|template|writeup|title)",
            r"(?:description|body|summary) (?:for|of) (?:my |the |this |our )?pr",
            r"(?:merge request|mr) (?:description|body|text)",
        ),
    ),
    TaskKind(
        "release-notes",
        nouns=(
            r"release notes",
            r"release summary",
            r"what's new",
            r"whats new",
            r"notes (?:for|of|on) (?:the |this |our )?(?:[\w.]+ )?release",
        ),
    ),
    TaskKind("changelog", nouns=(r"changelog(?: entry| entries| line)?", r"news ?fragment")),
    TaskKind(
        "unit-tests",
        nouns=(
            r"(?:unit |integration |regression |snapshot |e2e |end-to-end )?tests?",
            r"test ?cases?",
            r"specs?",
            r"pytest(?: cases| tests)?",
            r"jest(?: tests)?",
            r"test coverage",
        ),
    ),
    TaskKind(
        "test-data",
        nouns=(
            r"(?:test|sample|fake|mock|dummy|seed|synthetic|example) (?:\w+ )?(?:data|records|rows|entries)",
            r"fixtures?",
            r"seed ?data",
        ),
    ),
    TaskKind(
        "benchmark",
        nouns=(r"benchmarks?", r"perf(?:ormance)? tests?", r"load tests?", r"stress tests?", r"microbenchmarks?"),
    ),
    TaskKind("docstring", nouns=(r"docstrings?", r"doc ?comments?", r"jsdoc", r"javadoc", r"rustdoc")),
    TaskKind(
        "type-hints",
        nouns=(r"type (?:hints?|annotations?)", r"return types?", r"typings?"),
        verbs=(r"type-?hint", r"annotate"),
    ),
    TaskKind(
        "refactor",
        nouns=(r"refactor(?:ing)?", r"clean-?up"),
        verbs=(
            r"refactor",
            r"clean ?up",
            r"tidy(?: up)?",
            r"restructure",
            r"reorgani[sz]e",
            r"simplify",
            r"modulari[sz]e",
            r"decouple",
            r"untangle",
            r"deduplicate",
        ),
    ),
    TaskKind("api-docs", nouns=(r"api (?:doc|reference)", r"endpoint doc", r"openapi(?: spec)?", r"swagger")),
    TaskKind("readme", nouns=(r"readme",)),
    TaskKind(
        "sql-query",
        nouns=(r"sql", r"(?:sql |postgres |postgresql |mysql |sqlite |bigquery )?quer(?:y|ies)", r"select statements?"),
    ),
    TaskKind("regex", nouns=(r"regexp?e?s?", r"regular expressions?")),
    TaskKind("bug-report", nouns=(r"bug reports?", r"(?:github |gh |gitlab |jira )?issues?", r"(?:jira )?tickets?")),
    TaskKind(
        "postmortem",
        nouns=(r"postmortems?", r"incident (?:report|review|writeup|summary)", r"rca", r"root cause analysis"),
    ),
    TaskKind("standup", nouns=(r"stand ?ups?(?: update| notes)?", r"(?:daily|status) (?:update|report)")),
    TaskKind(
        "dockerfile",
        nouns=(r"dockerfiles?", r"docker ?images?", r"container images?"),
        verbs=(r"dockeri[sz]e", r"containeri[sz]e"),
    ),
    TaskKind("k8s-manifest", nouns=(r"k8s", r"kubernetes", r"manifests?", r"helm charts?", r"deployment\.? ?ya?ml")),
    TaskKind(
        "ci-workflow",
        nouns=(
            r"ci",
            r"ci/cd",
            r"workflows?",
            r"(?:github|gh) actions?(?: job| workflow)?",
            r"pipelines?",
            r"gitlab-ci",
            r"jenkinsfile",
            r"circleci",
        ),
    ),
    TaskKind(
        "migration", nouns=(r"(?:db |database |schema )?migrations?", r"alembic(?: revision)?", r"schema changes?")
    ),
    TaskKind(
        "announcement",
        nouns=(
            r"announcements?",
            r"launch (?:post|blog|email)",
            r"blog ?posts?",
            r"(?:linkedin|social|twitter) posts?",
            r"tweets?",
            r"newsletter",
            r"press release",
        ),
        verbs=(r"announce",),
    ),
    TaskKind(
        "reply",
        nouns=(
            r"repl(?:y|ies)",
            r"answer",
            r"e-?mail (?:to|for|reply|response|draft)",
            r"(?:customer|support) (?:e-?mail|response|message)",
            r"responses? to",
        ),
        verbs=(r"reply", r"respond", r"answer"),
    ),
    TaskKind("design-doc", nouns=(r"design docs?", r"rfc", r"adr", r"tech(?:nical)? spec")),
    TaskKind(
        "translation",
        nouns=(r"translations?", _LANGUAGE + r" (?:version|translation|copy|text|strings?)"),
        verbs=(r"translate", r"locali[sz]e", r"i18n"),
    ),
    TaskKind(
        "summary",
        nouns=(r"summary", r"summaries", r"recap", r"tl;? ?dr", r"gist"),
        verbs=(r"summari[sz]e", r"recap", r"condense", r"tl;? ?dr", r"sum up", r"boil down"),
    ),
    TaskKind(
        "explanation",
        nouns=(r"explanation",),
        verbs=(r"explain", r"walk (?:me )?through", r"break down", r"help me understand", r"eli5"),
    ),
    TaskKind(
        "code-review",
        nouns=(r"code review", r"review(?: comments)?"),
        verbs=(r"review", r"critique", r"look over", r"go over", r"code-review"),
    ),
)

_NOUN_RES = tuple(
    (kind.name, re.compile(r"(?<![\w-])(?:" + "|".join(kind.nouns) + r")(?![\w-])")) for kind in KINDS if kind.nouns
)
# Any kind's noun, anywhere: most requests name none, and one search then saves a search per kind.
_ANY_NOUN_RE = re.compile(r"(?<![\w-])(?:" + "|".join(n for kind in KINDS for n in kind.nouns) + r")(?![\w-])")
_VERB_RE = re.compile(
    r"^(?:"
    + "|".join(f"(?P<k{n}>" + "|".join(kind.verbs) + ")" for n, kind in enumerate(KINDS) if kind.verbs)
    + r")(?![\w-])"
)
PHRASE_END_RE = re.compile(r"[:;,!?()]|\s[-–—]\s")  # "set up CI: run the tests" names CI, not tests
_INTO_LANGUAGE_RE = re.compile(r"\b(?:in|into|to)\s+" + _LANGUAGE + r"\b")
_LANGUAGE_VERSION_RE = re.compile(r"\b" + _LANGUAGE + r"\s+(?:version|translation|copy)\b")
_WHAT_IT_DOES_RE = re.compile(
    r"^(?:what(?:'s| is| does| do)|whats)\s+(?:this|that|the|these|those)\b[^?]*?\b(?:do|does|doing|mean|for)\b"
    r"|^what\s+(?:does|do)\s+\S+\s+(?:do|mean)\b"
    r"|^how\s+(?:does|do)\s+(?:this|that|the|these|those)\b[^?]*?\bwork"
    r"|^what(?:'s| is| are)\s+(?:this|that|these|those)\s+(?:\w+\s+)?(?:code|function|method|class|snippet|"
    r"script|regex|query|hook|line|file|module|decorator)s?\b"
)


def work_kind_of(body: str, head: str, *, produce: bool, asks: bool) -> str | None:
    """The kind of work a request asks for, or None (see the module docstring).

    ``body``: the request lower-cased, spelled one way, its opening filler ("can you", "pls")
    removed; ``head``: the words of its head (before the first preposition); ``produce``: it asks for a piece
    of work to be written; ``asks``: it opens as a question."""
    opening = _VERB_RE.match(body)
    if opening:
        return KINDS[int(str(opening.lastgroup)[1:])].name
    if _INTO_LANGUAGE_RE.search(body) or (not asks and _LANGUAGE_VERSION_RE.search(body)):
        return "translation"  # (a question about "the French translation" asks for none)
    if asks:
        return "explanation" if _WHAT_IT_DOES_RE.match(body) else None
    if not produce:
        return None
    if not _ANY_NOUN_RE.search(body):
        return None
    return _last_noun(PHRASE_END_RE.split(head, maxsplit=1)[0]) or _last_noun(body)


def _last_noun(text: str) -> str | None:
    """The kind whose noun ends last in ``text`` (the longer phrase on a tie), or None."""
    best: tuple[int, int, str] | None = None
    for name, noun_re in _NOUN_RES:
        for m in noun_re.finditer(text):
            key = (m.end(), m.end() - m.start(), name)
            if best is None or key[:2] > best[:2]:
                best = key
    return best[2] if best else None
