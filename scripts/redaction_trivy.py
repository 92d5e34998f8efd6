"""Rules of trivy's built-in secret scanner for ``scripts/redaction_corpus.py``, read from
``pkg/fanal/secret/builtin-rules.go``: each rule's id, its regex with the wrappers trivy puts
around it, the group that holds the secret, and the keywords that name it.

Format facts (Go source, read as text): a rule is a ``{ ID: "…", … Regex: <expr>, …,
SecretGroupName: "secret", Keywords: []string{…} }`` literal. ``<expr>`` is
``MustCompile(s)``, ``MustCompileWithoutWordPrefix(s)`` (``startWord + "(" + s + ")"``) or
``MustCompileWithBoundaries(s)`` (the same, then ``endWord``), where ``s`` is a raw string or
``fmt.Sprintf(format, consts…)`` over the file's ``const`` block. A rule without
``SecretGroupName`` reports its whole match: the quotes it may start and end with are not part of
the value, so the value is the match less those (less the label too, where it has one)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from regex_values import go_to_python  # noqa: E402

_WRAPPERS = {
    "MustCompile": "{}",
    "MustCompileWithoutWordPrefix": "{startWord}({})",
    "MustCompileWithBoundaries": "{startWord}({}){endWord}",
}
# Rules that find no value anyone was issued: a file's marker line, a framework's published
# default, a public key.
NOT_SECRETS = {
    "gcp-service-account": "the marker line of a service account file, not its key",
    "symfony-default-secret": "the framework's published default value, not an issued secret",
}
_QUOTE = r"""['\"]"""


def _go_literal(text: str) -> str:
    if text.startswith("`"):
        return text[1:-1]
    return json.loads(text)


def _consts(source: str) -> dict[str, str]:
    consts: dict[str, str] = {}
    for block in re.findall(r"(?ms)^const \((.*?)^\)", source):
        for name, literal in re.findall(r"(?m)^\s*(\w+)\s*=\s*(`[^`]*`|\"(?:[^\"\\]|\\.)*\")\s*$", block):
            consts[name] = _go_literal(literal)
    return consts


_DOUBLE_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def _code(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(index, character)`` of each character of Go source from ``start`` outside its string
    literals (a regex's brackets, braces and commas are not the code's)."""
    i = start
    while i < len(text):
        c = text[i]
        if c == "`":
            i = text.index("`", i + 1) + 1
        elif c == '"':
            m = _DOUBLE_QUOTED.match(text, i)
            i = m.end() if m else i + 1
        else:
            yield i, c
            i += 1


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated arguments of a Go call (strings may hold commas)."""
    cuts, depth = [], 0
    for i, c in _code(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            cuts.append(i)
    pieces = (text[a + 1 : b] for a, b in zip([-1, *cuts], [*cuts, len(text)], strict=True))
    return [piece.strip() for piece in pieces if piece.strip()]


def _call(expr: str) -> tuple[str, str] | None:
    """``Name(args)`` -> (name, args) for the outermost call of ``expr``."""
    m = re.match(r"\s*([\w.]+)\(", expr)
    if not m:
        return None
    depth = 0
    for j, c in _code(expr, m.end() - 1):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return m.group(1), expr[m.end() : j]
    return None


def _string_expr(expr: str, consts: dict[str, str]) -> str | None:
    expr = expr.strip()
    if expr.startswith(("`", '"')):
        return _go_literal(expr)
    call = _call(expr)
    if call and call[0] == "fmt.Sprintf":
        fmt, *args = _split_args(call[1])
        values = [consts.get(a, _go_literal(a) if a[:1] in '`"' else None) for a in args]
        if None in values:
            return None
        return _go_literal(fmt) % tuple(values)
    return None


def _rule_blocks(source: str) -> list[str]:
    body = source[source.index("var builtinRules = []Rule{") :]
    blocks, depth, start = [], 0, None
    for i, c in _code(body):
        if c == "{":
            depth += 1
            if depth == 2:
                start = i
        elif c == "}":
            if depth == 2 and start is not None:
                blocks.append(body[start : i + 1])
            depth -= 1
            if depth == 0:
                break
    return blocks


def _value_group(regex: str) -> str:
    """A rule reporting its whole match: its value without the quotes around it, as a named group."""
    lead = re.match(r"(?:\(\?i\))?(?:\[['\\\"]+\]\??)?", regex)
    head = lead.group(0) if lead else ""
    rest = regex[len(head) :]
    tail = re.search(r"\[['\\\"]+\]\??$", rest)
    core, end = (rest[: tail.start()], tail.group(0)) if tail else (rest, "")
    return f"{head}(?P<value>{core}){end}"


def trivy_rules(path: Path) -> list[dict]:
    """The rules of ``builtin-rules.go`` as ``redaction_corpus`` rules (``NOT_SECRETS`` left out)."""
    source = path.read_text(encoding="utf-8")
    consts = _consts(source)
    rules = []
    for block in _rule_blocks(source):
        rule_id = re.search(r'\bID:\s*"([^"]+)"', block)
        regex_at = re.search(r"\bRegex:\s*", block)
        if not rule_id or not regex_at or rule_id.group(1) in NOT_SECRETS:
            continue
        call = _call(block[regex_at.end() :])
        if not call or call[0] not in _WRAPPERS:
            continue
        inner = _string_expr(call[1], consts)
        if inner is None:
            continue
        named = re.search(r'\bSecretGroupName:\s*"(\w+)"', block)
        if not named:  # the value follows the label's ``.{0,5}``, or is the whole match
            cut = inner.rindex(".{0,5}") + 6 if ".{0,5}" in inner else 0
            inner = inner[:cut] + _value_group(inner[cut:])
        regex = go_to_python(_WRAPPERS[call[0]].format(inner, **consts))
        try:
            compiled = re.compile(regex)
        except re.error:
            continue
        group = compiled.groupindex.get(named.group(1) if named else "value", 0)
        words = re.findall(r'"([^"]+)"', (re.search(r"Keywords:\s*\[\]string\{([^}]*)\}", block) or ["", ""])[1])
        keywords = [w for w in words if w.isalpha()] or [rule_id.group(1).split("-")[0]]
        rules.append(
            {
                "id": rule_id.group(1),
                "regex": regex,
                "group": group,
                "keywords": keywords,
                "keyed": "(?P<key>" in inner or "(=|>|:=" in inner,
            }
        )
    return rules
