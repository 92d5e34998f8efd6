"""Rules of four smaller detectors, pooled into one corpus for ``scripts/redaction_corpus.py``:
semgrep's secret rules of its own (``generic/secrets/security``, not the copies of gitleaks' rules
beside them), earlybird's content and password rules, detect-secrets' plugins' patterns, and the
regex list of trufflehog's second version (``truffleHogRegexes``, a PyPI package; the tuned
``trufflehog`` corpus is its third version's detectors, written anew).

Format facts (no code is copied):

- semgrep: YAML files with ``rules:`` entries; a rule's patterns are ``pattern-regex`` values,
  top-level, in a ``pattern-either`` list (each one finds), or first in a ``patterns`` list (the
  rest there are conditions on the same line; ``pattern-not-regex`` excludes, so is not read).
- earlybird: ``config/rules/*.yaml`` with ``rules:`` entries of ``Code``, ``Pattern`` (Go syntax),
  ``Caption``, ``Category`` and a documented ``Example``. Categories other than ``key`` and
  ``password-secret`` (personal data, addresses, weak ciphers, comments) find no credential.
- detect-secrets (its PyPI package, imported): each plugin's ``denylist`` of compiled patterns.
  The entropy and keyword plugins have no pattern; the public-IP plugin finds no credential.
- truffleHogRegexes: ``regexes.json``, a name -> pattern object. A pattern without groups that
  has a label before ``.*`` reports the match; its value is what follows, less the quotes.

Left out everywhere: a pattern that matches only a marker (a ``BEGIN … PRIVATE KEY`` line without
the key), and one that draws fewer than 8 characters (a fixed word: a default password such as
``letmein``, a setting's name)."""

from __future__ import annotations

import json
import os
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from regex_values import go_to_python, secret_group, secret_value  # noqa: E402

_EARLYBIRD_CATEGORIES = {"key", "password-secret"}
_DETECT_SECRETS_SKIPPED = {"IPPublicDetector", "PrivateKeyDetector"}
_MARKER_ONLY = re.compile(r"BEGIN")


def _yaml():
    try:
        import yaml
    except ModuleNotFoundError:
        raise SystemExit("reading YAML rule files needs PyYAML: pip install pyyaml") from None
    return yaml


def _drawn(regex: str, group: int) -> int:
    """The most characters of the secret the pattern draws rather than fixes (a pattern with a short
    minimum, ``[^'"]{4,}``, can still draw a long value)."""
    most = 0
    for seeds in ((1, 2), (3, 4), (5, 6), (7, 8)):
        # case and the quotes around a value are not drawn characters
        a, b = (secret_value(random.Random(seed), regex, group).lower().strip("'\"") for seed in seeds)
        head = len(os.path.commonprefix([a, b]))
        tail = len(os.path.commonprefix([a[head:][::-1], b[head:][::-1]]))
        most = max(most, min(len(a), len(b)) - head - tail)
    return most


def _rule(rule_id: str, pattern: str, keyword: str, examples: list[str] | None = None) -> dict | None:
    """A corpus rule for one pattern, or None when it finds no drawn value of 8 characters."""
    regex = go_to_python(pattern.strip())
    try:
        compiled = re.compile(regex)
        group = secret_group(regex, compiled.groups)
        value = secret_value(random.Random(0), regex, group)
        if _drawn(regex, group) < 8 or (_MARKER_ONLY.search(value) and "\n" not in value):
            return None
    except (re.error, ValueError, RecursionError, OverflowError):
        return None
    return {
        "id": rule_id,
        "regex": regex,
        "group": group,
        "keywords": [keyword],
        "keyed": not compiled.search("A1b2C3d4E5f6G7h8"),
        "entropy": 0.0,
        "examples": examples or [],
    }


def _semgrep_patterns(node) -> list[str]:
    """The patterns that find a rule's value: every ``pattern-either`` alternative, and the first
    of a ``patterns`` list (the others there are conditions the same line must meet as well)."""
    if isinstance(node, list):
        return [p for item in node for p in _semgrep_patterns(item)]
    if not isinstance(node, dict):
        return []
    out = [str(v) for k, v in node.items() if k == "pattern-regex"]
    out += _semgrep_patterns(node.get("pattern-either") or [])
    return out + _semgrep_patterns(node.get("patterns") or [])[:1]


def semgrep_rules(directory: Path) -> list[dict]:
    yaml = _yaml()
    rules = []
    for source in sorted(directory.glob("*.yaml")):
        for entry in (yaml.safe_load(source.read_text(encoding="utf-8")) or {}).get("rules") or []:
            word = re.sub(r"^detected-", "", str(entry["id"])).split("-")[0]
            for i, pattern in enumerate(_semgrep_patterns(entry), 1):
                rule = _rule(f"semgrep.{entry['id']}.{i}", pattern, word)
                if rule:
                    rules.append(rule)
    return rules


def earlybird_rules(directory: Path) -> list[dict]:
    yaml = _yaml()
    rules = []
    for source in sorted(directory.glob("*.yaml")):
        for i, entry in enumerate((yaml.safe_load(source.read_text(encoding="utf-8")) or {}).get("rules") or []):
            if entry.get("Category") not in _EARLYBIRD_CATEGORIES:
                continue
            words = [w for w in re.findall(r"[a-z]+", str(entry["Pattern"]).lower()) if len(w) > 3]
            example = [str(entry["Example"])] if entry.get("Example") else []
            rule = _rule(
                f"earlybird.{source.stem}.{entry.get('Code', 'x')}.{i}",
                str(entry["Pattern"]),
                (words or ["key"])[0],
                example,
            )
            if rule:
                rules.append(rule)
    return rules


def detect_secrets_rules() -> list[dict]:
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except ModuleNotFoundError:
        raise SystemExit("reading detect-secrets' plugins needs it installed: pip install detect-secrets") from None
    rules = []
    for plugin in sorted(get_mapping_from_secret_type_to_class().values(), key=lambda c: c.__name__):
        if plugin.__name__ in _DETECT_SECRETS_SKIPPED:
            continue
        denylist = getattr(plugin(), "denylist", None) or []
        word = re.sub(r"(Detector|Token|Key)+$", "", plugin.__name__).lower() or "service"
        for i, compiled in enumerate(denylist, 1):
            flags = "".join(
                f for f, bit in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X)) if compiled.flags & bit
            )
            pattern = f"(?{flags}){compiled.pattern}" if flags else compiled.pattern
            rule = _rule(f"detect-secrets.{plugin.__name__}.{i}", pattern, word)
            if rule:
                rules.append(rule)
    return rules


def trufflehog2_rules(path: Path) -> list[dict]:
    rules = []
    for name, pattern in json.loads(path.read_text(encoding="utf-8")).items():
        if "(" not in pattern and ".*" in pattern:  # the label, then the value: the value is the secret
            head, value = pattern[: pattern.rindex(".*") + 2], pattern[pattern.rindex(".*") + 2 :]
            quote = re.escape("['|\"]")
            value = re.sub(f"^{quote}|{quote}$", "", value)
            pattern = f"{head}['|\"]({value})['|\"]" if pattern.endswith("['|\"]") else f"{head}({value})"
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        rule = _rule(f"trufflehog2.{slug}", pattern, re.findall(r"[a-z]+", name.lower())[0])
        if rule:
            rules.append(rule)
    return rules


def pooled_rules(semgrep: Path, earlybird: Path, trufflehog2: Path) -> list[dict]:
    return semgrep_rules(semgrep) + earlybird_rules(earlybird) + detect_secrets_rules() + trufflehog2_rules(trufflehog2)
