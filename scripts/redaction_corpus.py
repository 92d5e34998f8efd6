#!/usr/bin/env python3
"""Build a labelled redaction corpus from a maintained secret detector's rule set.

Each rule of the rule set becomes example lines: a random value generated from the rule's own
pattern (its secret group), embedded the way such a value appears in a transcript (an env
assignment, a config line, a CLI flag, a header, a code call, prose). A line is kept only when the
rule's full pattern matches it and its secret group is exactly the generated value, so every line
is one the detector itself would flag. Values are random: no real credential is in the output.

Sources (read from a local checkout; facts about formats, no code is copied):

- ``--gitleaks FILE``: gitleaks' ``config/gitleaks.toml`` (``[[rules]]`` with ``id``, ``regex``,
  ``secretGroup``, ``keywords``).
- ``--trufflehog DIR``: trufflehog's ``pkg/detectors`` (each detector's key/token/secret pattern,
  with the ``PrefixRegex`` keywords that must precede it).

The output is JSON lines: a first ``{"meta": ...}`` record (source, its commit, rule counts), then
one record per example: ``{"rule", "enil", "terces"}``, the line and the secret stored reversed
(``text[::-1]``) so that no credential-shaped string, fake as it is, sits in the repository for a
secret scanner to flag.

Usage: python scripts/redaction_corpus.py --gitleaks gitleaks.toml --commit SHA --out FILE [--seed 1]
       python scripts/redaction_corpus.py --trufflehog pkg/detectors --commit SHA --out FILE
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import string
import sys
from collections import Counter
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

try:
    from re import _constants as C  # noqa: N812
    from re import _parser as P  # noqa: N812
except ImportError:  # Python < 3.11
    import sre_constants as C  # type: ignore[no-redef] # noqa: N812
    import sre_parse as P  # type: ignore[no-redef] # noqa: N812

ALNUM = string.ascii_letters + string.digits
PRINTABLE = [chr(c) for c in range(33, 127)]
MAX_EXTRA = 6  # an unbounded repeat runs this many times past its minimum, at most

# ---------------------------------------------------------------------------- Go regex -> Python


_POSIX = {"alnum": "A-Za-z0-9", "alpha": "A-Za-z", "digit": "0-9", "lower": "a-z", "upper": "A-Z",
          "xdigit": "0-9A-Fa-f", "space": r"\s", "punct": r"!-/:-@\[-`{-~", "word": r"\w"}


def go_to_python(pattern: str) -> str:
    pattern = re.sub(r"\[:(\w+):\]", lambda m: _POSIX.get(m.group(1), m.group(0)), pattern)
    pattern = pattern.replace(r"\z", r"\Z").replace("(?s:.)", r"[\s\S]")
    # Go allows flags anywhere; Python only at the start: scope a leading (?i) / (?s) group-wide
    m = re.match(r"\(\?([ims]+)\)", pattern)
    if m:
        pattern = f"(?{m.group(1)}:{pattern[m.end():]})"
    return pattern


# ---------------------------------------------------------------------------- random strings


def _class_chars(items: list, ignore_case: bool) -> list[str]:
    negate = bool(items) and items[0][0] is C.NEGATE
    chars: set[str] = set()
    for op, av in items:
        if op is C.LITERAL:
            chars.add(chr(av))
        elif op is C.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1) if c < 0x250)
        elif op is C.CATEGORY:
            probe = {C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_SPACE: r"\s",
                     C.CATEGORY_NOT_SPACE: r"\S", C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W"}.get(av)
            if probe:
                chars.update(c for c in PRINTABLE + [" ", "\t", "\n"] if re.fullmatch(probe, c))
    if negate:
        chars = {c for c in PRINTABLE if c not in chars}
    if ignore_case:
        chars |= {c.swapcase() for c in chars if c.isascii()}
    return sorted(c for c in chars if c.isascii() and (c.isprintable() or c in " \t\n"))


def _pick(rng: random.Random, chars: list[str]) -> str:
    """Generated values are alphanumeric where the class allows it, as issued tokens mostly are."""
    alnum = [c for c in chars if c in ALNUM]
    if alnum and (rng.random() < 0.9 or len(alnum) == len(chars)):
        return rng.choice(alnum)
    visible = [c for c in chars if not c.isspace()] or chars
    return rng.choice(visible)


class Generator:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.groups: dict[int, str] = {}

    def run(self, tree, ignore_case: bool = False) -> str:
        out = []
        for op, av in tree:
            out.append(self.node(op, av, ignore_case))
        return "".join(out)

    def node(self, op, av, ic: bool) -> str:
        rng = self.rng
        if op is C.LITERAL:
            c = chr(av)
            return c.swapcase() if ic and rng.random() < 0.0 else c
        if op is C.NOT_LITERAL:
            return _pick(rng, [c for c in PRINTABLE if c != chr(av)])
        if op is C.ANY:
            return "."  # an unescaped dot in a rule mostly stands for a literal one (a host name)
        if op is C.IN:
            chars = _class_chars(av, ic)
            return _pick(rng, chars) if chars else ""
        if op is C.BRANCH:
            return self.run(rng.choice(av[1]), ic)
        if op is C.SUBPATTERN:
            group, add_flags, del_flags, sub = av
            flags_ic = (ic or bool(add_flags & re.IGNORECASE)) and not (del_flags & re.IGNORECASE)
            text = self.run(sub, flags_ic)
            if group:
                self.groups[group] = text
            return text
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            hi = lo + MAX_EXTRA if hi is C.MAXREPEAT else hi
            # bounded-range tokens sit anywhere in their range; optional parts mostly absent
            n = lo if hi - lo > 12 and lo > 0 and rng.random() < 0.5 else rng.randint(lo, hi)
            if lo == 0 and hi <= 1 and rng.random() < 0.7:
                n = 0
            return "".join(self.run(sub, ic) for _ in range(n))
        if op is C.GROUPREF:
            return self.groups.get(av, "")
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            return ""
        if op is C.CATEGORY:
            return self.node(C.IN, [(C.CATEGORY, av)], ic)
        raise ValueError(f"unsupported regex node {op}")


def _find_group(tree, group: int):
    for op, av in tree:
        if op is C.SUBPATTERN:
            if av[0] == group:
                return av[3], bool(av[1] & re.IGNORECASE)
            found = _find_group(av[3], group)
            if found:
                return found
        elif op is C.BRANCH:
            for branch in av[1]:
                found = _find_group(branch, group)
                if found:
                    return found
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            found = _find_group(av[2], group)
            if found:
                return found
    return None


def secret_value(rng: random.Random, pattern: str, group: int) -> str:
    tree = P.parse(pattern)
    if group:
        found = _find_group(tree, group)
        if found is None:
            raise ValueError("no such group")
        sub, ic = found
        return Generator(rng).run(sub, ic)
    return Generator(rng).run(tree)


def entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values()) if s else 0.0


# ---------------------------------------------------------------------------- embedding

# A self-identifying token (a documented prefix): anywhere, with or without a label.
FREE = (
    "{s}",
    "here is the token: {s}",
    "I pasted {s} into the settings page and it still fails",
    "export {NAME}_TOKEN={s}",
    "{name}_key: {s}",
    '"{name}Token": "{s}",',
    "client = {Name}Client('{s}')",
    "curl -H 'X-{Name}-Key: {s}' https://api.example.com/v1/me",
    "{name} login --token {s}",
    "echo {s} | pbcopy",
)
# A value the rule recognises only after its keyword: the keyword names the setting.
KEYED = (
    "export {NAME}_API_KEY={s}",
    "{NAME}_TOKEN={s}",
    "{NAME}_KEY='{s}'",
    "{NAME}_SECRET=\"{s}\"",
    "{name}_api_key: {s}",
    '"{name}Key": "{s}",',
    '{name}: {{ apiKey: "{s}" }}',
    "{name}.api_key = '{s}'",
    "{Name}(api_key=\"{s}\")",
    "curl -H 'X-{Name}-Key: {s}' https://api.{name}.example/v1/me",
    "{name} auth --api-key {s}",
    "{name}_token = \"{s}\"",
)


def _names(keyword: str) -> dict[str, str]:
    word = re.sub(r"[^A-Za-z0-9]+", "_", keyword).strip("_") or "service"
    return {"name": word.lower(), "NAME": word.upper(), "Name": word[:1].upper() + word[1:].lower()}


def example_lines(rng: random.Random, rule: dict, count: int) -> list[dict]:
    """Up to ``count`` lines for ``rule``, each matched by the rule with the secret in its group."""
    full = re.compile(rule["regex"])
    group = rule["group"]
    keywords = rule["keywords"] or ["service"]
    templates = KEYED if rule["keyed"] else FREE
    out: list[dict] = []
    seen_templates: set[str] = set()
    for _attempt in range(count * 25):
        if len(out) >= count:
            break
        try:
            secret = secret_value(rng, rule["regex"], group)
        except (ValueError, RecursionError, OverflowError):
            return out
        if len(secret) < 8 or entropy(secret) < max(rule.get("entropy", 0), 2.5) or "\n" in secret:
            continue
        usable = [t for t in templates if not (secret[0] in "'\"" and re.search(r"['\"]\{s\}", t))]
        template = rng.choice([t for t in usable if t not in seen_templates] or usable)
        line = template.format(s=secret, **_names(rng.choice(keywords)))
        for m in full.finditer(line):
            got = m.group(group) if group else m.group(0)
            if got == secret:
                seen_templates.add(template)
                out.append({"rule": rule["id"], "line": line, "secret": secret})
                break
    return out


# ---------------------------------------------------------------------------- rule sets


def gitleaks_rules(path: Path) -> list[dict]:
    config = tomllib.loads(path.read_text(encoding="utf-8"))
    rules = []
    for rule in config.get("rules", []):
        if "regex" not in rule:
            continue  # path-only rules (a file name, not a value)
        regex = go_to_python(rule["regex"])
        try:
            compiled = re.compile(regex)
        except re.error:
            continue
        group = rule.get("secretGroup", 1 if compiled.groups else 0)
        rules.append({"id": rule["id"], "regex": regex, "group": group,
                      "keywords": [k for k in rule.get("keywords", []) if k.isalnum()] or rule.get("keywords", []),
                      "keyed": ":{1,3}=" in rule["regex"] or "(?:=|>" in rule["regex"],
                      "entropy": float(rule.get("entropy", 0))})
    return rules


_MUST = re.compile(r"(\w+)\s*=\s*regexp\.MustCompile\((.*)\)\s*$", re.M)
_SECRET_VAR = re.compile(r"(?i)(key|token|secret|pass|pat|cred|auth)")
_NOT_SECRET_VAR = re.compile(r"(?i)(id|url|domain|email|user|host|name|endpoint|region|org|account|tenant|instance)")


def _go_string(expr: str) -> str | None:
    parts = re.findall(r"`([^`]*)`|\"((?:[^\"\\]|\\.)*)\"", expr)
    if not parts:
        return None
    return "".join(a if a else json.loads('"' + b + '"') for a, b in parts)


def trufflehog_rules(directory: Path) -> list[dict]:
    rules = []
    for source in sorted(directory.glob("*/*.go")):
        if source.name.endswith("_test.go") or source.parent.name != source.stem:
            continue
        text = source.read_text(encoding="utf-8", errors="replace")
        for var, expr in _MUST.findall(text):
            if not _SECRET_VAR.search(var) or _NOT_SECRET_VAR.search(var.replace("Pat", "")):
                continue
            keywords: list[str] = []
            prefix = re.search(r"PrefixRegex\(\[\]string\{([^}]*)\}\)", expr)
            if prefix:
                keywords = re.findall(r"\"([^\"]+)\"", prefix.group(1))
                expr = expr[prefix.end():]
            body = _go_string(expr)
            if not body:
                continue
            regex = go_to_python(body)
            if keywords:
                regex = "(?i:" + "|".join(re.escape(k) for k in keywords) + r")(?:.|[\n\r]){0,40}?" + regex
            try:
                compiled = re.compile(regex)
            except re.error:
                continue
            rules.append({"id": source.parent.name, "regex": regex, "group": 1 if compiled.groups else 0,
                          "keywords": keywords or [source.parent.name], "keyed": bool(keywords)})
            break  # one secret pattern per detector
    return rules


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--gitleaks", type=Path, help="gitleaks' config/gitleaks.toml")
    source.add_argument("--trufflehog", type=Path, help="trufflehog's pkg/detectors directory")
    parser.add_argument("--commit", required=True, help="the rule set's commit, recorded in the output")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-rule", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    name = "gitleaks" if args.gitleaks else "trufflehog"
    rules = gitleaks_rules(args.gitleaks) if args.gitleaks else trufflehog_rules(args.trufflehog)
    records, skipped = [], []
    for rule in rules:
        lines = example_lines(rng, rule, args.per_rule)
        (records.extend(lines) if lines else skipped.append(rule["id"]))
    meta = {"source": name, "commit": args.commit, "rules_read": len(rules),
            "rules_with_examples": len({r["rule"] for r in records}), "examples": len(records),
            "seed": args.seed, "per_rule": args.per_rule, "stored": "enil = line[::-1], terces = secret[::-1]",
            "rules_without_examples": skipped}
    with args.out.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"meta": meta}) + "\n")
        for record in records:
            stored = {"rule": record["rule"], "enil": record["line"][::-1], "terces": record["secret"][::-1]}
            fh.write(json.dumps(stored) + "\n")
    print(json.dumps({k: v for k, v in meta.items() if k != "rules_without_examples"}
                     | {"rules_without_examples": len(skipped)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
