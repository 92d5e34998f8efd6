"""Rules of secrets-patterns-db for ``scripts/redaction_corpus.py``: only those for vendors that
none of the other corpora covers (the held-out set), each with the secret group its pattern
captures and values its regex admits."""

from __future__ import annotations

import json
import os
import random
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from regex_values import go_to_python, secret_group, secret_value  # noqa: E402

_KIND_WORDS = frozenset(
    "api key keys token tokens secret secrets access id client auth authorization oauth private public "
    "password passwd credential credentials webhook url app application personal service account bot "
    "user refresh bearer basic pat sdk live test prod production legacy new old code hash signing "
    "signature sid v1 v2 v3 v4".split()
)
_IDENTIFIER_WORDS = frozenset(
    "id url uri host hostname domain endpoint arn email username ip address external internal elb "
    "gateway region bucket instance tenant".split()
)
_SECRET_NAME = re.compile(r"(?i)key|token|secret|pass|pwd|cred|auth|private|webhook|signature")
_GLUED_KIND = sorted((w for w in _KIND_WORDS if len(w) > 2), key=len, reverse=True)


def _vendor_words(text: str) -> list[str]:
    """The vendor a rule id or name names: ``Figmapersonalaccesstoken`` -> figma, ``AWS API Key`` -> aws."""
    words = [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w and not w.isdigit() and w not in _KIND_WORDS]
    if len(words) == 1:  # kind words glued on: "slackwebhook", "jiratoken"
        word = words[0]
        while stripped := next(
            (word[: -len(k)] for k in _GLUED_KIND if word.endswith(k) and len(word) - len(k) >= 3), None
        ):
            word = stripped
        words = [word]
    return words


def _corpus_vendors(paths: list[Path]) -> set[str]:
    """Every vendor a generated corpus (JSON lines of ``{"rule", "name"}``) has a rule for."""
    vendors: set[str] = set()
    for path in paths:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                record = json.loads(line)
                for text in (record.get("rule", ""), record.get("name", "")):
                    words = _vendor_words(re.sub(r"^(?:np|kingfisher)\.|\.\d+$", "", text))
                    vendors.add("".join(words))
    return vendors


def _generated_length(regex: str, group: int) -> int:
    """How many characters of the secret are drawn, not fixed: two values from the pattern, less
    their common prefix and suffix (a pattern that only names a setting draws none)."""
    a, b = (secret_value(random.Random(seed), regex, group) for seed in (1, 2))
    head = len(os.path.commonprefix([a, b]))
    tail = len(os.path.commonprefix([a[head:][::-1], b[head:][::-1]]))
    return min(len(a), len(b)) - head - tail


def spdb_rules(path: Path, exclude_corpora: list[Path]) -> list[dict]:
    """secrets-patterns-db's ``db/rules-stable.yml``, less the rules for a vendor the corpora already
    have a rule for (by the vendor the names give), rules whose name names an identifier (a host, an ARN, a user) rather than a secret, and rules
    whose value is an e-mail address or has fewer than 8 drawn characters."""
    try:
        import yaml
    except ModuleNotFoundError:
        raise SystemExit("reading YAML rule files needs PyYAML: pip install pyyaml") from None
    taken = _corpus_vendors(exclude_corpora)
    rules: list[dict] = []
    ids: Counter[str] = Counter()
    for entry in yaml.safe_load(path.read_text(encoding="utf-8"))["patterns"]:
        rule = entry["pattern"]
        name = str(rule["name"])
        words = _vendor_words(name)
        if not words or "".join(words) in taken:
            continue
        if set(re.split(r"[^a-z0-9]+", name.lower())) & _IDENTIFIER_WORDS and not _SECRET_NAME.search(name):
            continue
        regex = go_to_python(str(rule["regex"]))
        try:
            compiled = re.compile(regex)
            group = secret_group(regex, compiled.groups)
            value = secret_value(random.Random(0), regex, group)
            if _generated_length(regex, group) < 8 or re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", value):
                continue
        except (re.error, ValueError, RecursionError, OverflowError):
            continue
        keyword = re.match(r"\(\?:([A-Za-z0-9_-]+)", regex)
        slug = "-".join(re.split(r"[^a-z0-9]+", name.lower())).strip("-")
        ids[slug] += 1
        rules.append(
            {
                "id": f"spdb.{slug}" + (f".{ids[slug]}" if ids[slug] > 1 else ""),
                "regex": regex,
                "group": group,
                "name": name,
                "keywords": [keyword.group(1) if keyword else "".join(words)],
                "keyed": not compiled.search("A1b2C3d4E5f6G7h8"),
                "entropy": 0.0,
                "confidence": rule.get("confidence", ""),
            }
        )
    return rules
