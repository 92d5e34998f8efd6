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
- ``--noseyparker DIR`` / ``--kingfisher DIR`` / ``--titus DIR``: a folder of YAML rule files in the
  format the three share
  (``rules:`` entries with ``id``, ``pattern`` in Rust regex syntax, ``examples``, ``min_entropy``,
  ``visible``). Besides generated lines, each rule's own documented ``examples`` become lines: the
  part of an example the pattern matches, with the lines around it — unless the example's secret is
  a made-up value rather than one anyone was issued (``sequence_placeholder``: a variable, words
  naming what belongs there (``SOME_PASSWORD``), a run of five
  or more consecutive letters or digits such as ``abcde`` / ``12345``, in the value or in its letters
  or digits taken apart (``a1b2c3d4e5``), a character or pair repeated four times, or less
  randomness than the rule itself demands). Rules that find an identifier
  rather than a secret (``visible: false``: an account id or host another rule needs; or
  categorised ``identifier`` without ``secret``) are left out. Where a pattern captures several
  groups (a user and a password, an account and its key, a URL's user, password and host), the
  secret is the last group whose name names a secret (``(?P<password>…)``); failing that, the last
  group whose pattern text just before it names a secret (password, token,
  API key, …); failing that, in a URL pattern, the last group before its ``@``; else the last.
  ``--exclude-from DIR …`` leaves out every rule whose id, name or pattern is also in those folders
  (the rule sets copy from each other: what is left is what only this one has).
- ``--trivy FILE``: trivy's ``pkg/fanal/secret/builtin-rules.go`` (``scripts/redaction_trivy.py``
  reads the Go rule literals). A rule whose pattern needs context no template gives is drawn
  whole: a random match of its full pattern, said in a sentence.
- ``--pooled SEMGREP_DIR EARLYBIRD_DIR REGEXES_JSON --also earlybird=SHA …``: semgrep's own secret
  rules, earlybird's, detect-secrets' and truffleHogRegexes' (``scripts/redaction_pooled.py``), one
  corpus.
- ``--secrets-patterns-db FILE --exclude-corpus CORPUS …``: secrets-patterns-db's
  ``db/rules-stable.yml`` (``patterns:`` entries with ``name``, ``regex``, ``confidence``), less every
  rule for a vendor that a generated corpus already has a rule for (the vendor is the rule's name
  without the words that say what kind of value it is: ``Figmapersonalaccesstoken`` -> figma), rules
  whose name names an identifier (a host, an ARN, a user) and no secret, and rules whose value is an
  e-mail address or has fewer than 8 drawn characters (a pattern that only names a setting).
  Reading YAML needs PyYAML (``pip install pyyaml``); the engine does not.

The output is JSON lines: a first ``{"meta": ...}`` record (source, its commit, rule counts), then
one record per example: ``{"rule", "enil", "terces"}``, the line and the secret stored reversed
(``text[::-1]``) so that no credential-shaped string, fake as it is, sits in the repository for a
secret scanner to flag.

Usage: python scripts/redaction_corpus.py --gitleaks gitleaks.toml --commit SHA --out FILE [--seed 1]
       python scripts/redaction_corpus.py --trufflehog pkg/detectors --commit SHA --out FILE
       python scripts/redaction_corpus.py --kingfisher data/rules --commit SHA --out FILE
       python scripts/redaction_corpus.py --titus pkg/rule/rules --exclude-from NP_RULES KF_RULES ...
       python scripts/redaction_corpus.py --trivy pkg/fanal/secret/builtin-rules.go --commit SHA --out FILE
       python scripts/redaction_corpus.py --secrets-patterns-db db/rules-stable.yml --exclude-corpus tests/fixtures/redaction/*.jsonl ...
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, published as tomli for older Pythons
    import tomli as tomllib

from regex_values import entropy, go_to_python, secret_group, secret_value  # noqa: E402
from redaction_spdb import spdb_rules  # noqa: E402
from redaction_pooled import pooled_rules  # noqa: E402
from redaction_trivy import trivy_rules  # noqa: E402

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
    '{NAME}_SECRET="{s}"',
    "{name}_api_key: {s}",
    '"{name}Key": "{s}",',
    '{name}: {{ apiKey: "{s}" }}',
    "{name}.api_key = '{s}'",
    '{Name}(api_key="{s}")',
    "curl -H 'X-{Name}-Key: {s}' https://api.{name}.example/v1/me",
    "{name} auth --api-key {s}",
    '{name}_token = "{s}"',
)


def _names(keyword: str) -> dict[str, str]:
    word = re.sub(r"[^A-Za-z0-9]+", "_", keyword).strip("_") or "service"
    return {"name": word.lower(), "NAME": word.upper(), "Name": word[:1].upper() + word[1:].lower()}


def unwritten(secret: str) -> bool:
    """A drawn value no file or command holds: wrapped in mismatched quotes (a pattern's
    ``['"]…['"]`` admits ``'value"``), opened or closed by a quote alone, holding white space (a
    group that takes the rest of the line) or markup (``<tag>…</tag>`` drawn with random names)."""
    quotes = "'\""
    if (secret[0] in quotes or secret[-1] in quotes) and not (len(secret) > 1 and secret[0] == secret[-1]):
        return True
    return any(c.isspace() for c in secret) or ("<" in secret and ">" in secret)


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
        if len(secret) < 8 or entropy(secret) < max(rule.get("entropy", 0), 2.5) or unwritten(secret):
            continue
        usable = [t for t in templates if not (secret[0] in "'\"" and re.search(r"['\"]\{s\}", t))]
        template = rng.choice([t for t in usable if t not in seen_templates] or usable)
        line = template.format(s=secret, **_names(rng.choice(keywords)))
        for m in full.finditer(line):
            got = m.group(group) if group else m.group(0)
            if got == secret:
                seen_templates.add(template)
                out.append({"rule": rule["id"], "name": rule.get("name", ""), "line": line, "secret": secret})
                break
    return out or whole_match_lines(rng, rule, count)


# Where a rule needs context no template gives (``AccountKey=…;``, ``<password>…</password>``), the
# line is a random match of the whole pattern, said in a sentence.
AROUND = ("{m}", "the config has {m} in it", "I set {m} and it still fails")


def whole_match_lines(rng: random.Random, rule: dict, count: int) -> list[dict]:
    """Up to ``count`` lines, each a random match of the rule's whole pattern in a sentence."""
    full = re.compile(rule["regex"])
    group = rule["group"]
    out: list[dict] = []
    for _attempt in range(count * 25):
        if len(out) >= count:
            break
        try:
            drawn = secret_value(rng, rule["regex"], 0)
        except (ValueError, RecursionError, OverflowError):
            return out
        # one line, single spaces; a pattern's ``.{0,50}`` is drawn as dots: one space stands for them
        drawn = re.sub(r"\.{3,}", " ", " ".join(drawn.split()))
        line = rng.choice(AROUND).format(m=drawn)
        m = full.search(line)
        secret = (m.group(group) if group else m.group(0)) if m else None
        if not secret or len(secret) < 8 or unwritten(secret) or entropy(secret) < max(rule.get("entropy", 0), 2.5):
            continue
        out.append({"rule": rule["id"], "name": rule.get("name", ""), "line": line, "secret": secret})
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
        rules.append(
            {
                "id": rule["id"],
                "regex": regex,
                "group": group,
                "keywords": [k for k in rule.get("keywords", []) if k.isalnum()] or rule.get("keywords", []),
                "keyed": ":{1,3}=" in rule["regex"] or "(?:=|>" in rule["regex"],
                "entropy": float(rule.get("entropy", 0)),
            }
        )
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
                expr = expr[prefix.end() :]
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
            rules.append(
                {
                    "id": source.parent.name,
                    "regex": regex,
                    "group": 1 if compiled.groups else 0,
                    "keywords": keywords or [source.parent.name],
                    "keyed": bool(keywords),
                }
            )
            break  # one secret pattern per detector
    return rules


def _rule_word(rule_id: str) -> str:
    """The service a rule id names: ``np.artifactory.1`` and ``kingfisher.artifactory.1`` -> artifactory."""
    parts = [p for p in rule_id.split(".") if p and not p.isdigit()]
    return parts[1] if len(parts) > 1 else parts[0]


_ALPHABETS = ("abcdefghijklmnopqrstuvwxyz", "0123456789", "qwertyuiop", "asdfghjkl", "zxcvbnm")


_NAMES_ITSELF = re.compile(r"(?i)pass|pwd|secret|token|user|example|sample")


def sequence_placeholder(secret: str, min_entropy: float = 0.0) -> bool:
    """A documented example's secret that no service issued: ``abcdef1234…``, ``XxXx…``, ``aaaa…``,
    a variable (``$password``, ``%PASS%``, ``{{ token }}``), or words naming what should be there
    (``SOME_PASSWORD``, ``mypassword``)."""
    if secret.lstrip("\"'").startswith(("$", "%", "{{", "<")):
        return True
    if re.fullmatch(r"[A-Za-z_\-]+", secret) and _NAMES_ITSELF.search(secret):
        return True
    low = secret.lower()
    # the letters and the digits each on their own: "a1b2c3d4e5" is "abcde" and "12345"
    for text in (low, "".join(c for c in low if c.isalpha()), "".join(c for c in low if c.isdigit())):
        for alphabet in _ALPHABETS:
            for seq in (alphabet, alphabet[::-1]):
                if any(seq[i : i + 5] in text for i in range(len(seq) - 4)):
                    return True
    if re.search(r"(.)\1{3}", low) or re.search(r"(..)\1{3}", low):
        return True
    return entropy(secret) < max(min_entropy, 3.0)


def documented_lines(rule: dict) -> list[dict]:
    """The rule's own examples, cut to the lines its pattern matches, each with its secret."""
    full = re.compile(rule["regex"])
    out = []
    for example in rule["examples"]:
        for m in full.finditer(example):
            secret = m.group(rule["group"]) if rule["group"] else m.group(0)
            if not secret or len(secret) < 8 or "\n" in secret or sequence_placeholder(secret, rule["entropy"]):
                continue
            start = example.rfind("\n", 0, m.start()) + 1
            end = example.find("\n", m.end())
            line = example[start : end if end >= 0 else len(example)].strip("\n")
            if secret in line:
                out.append(
                    {
                        "rule": rule["id"],
                        "name": rule.get("name", ""),
                        "line": line,
                        "secret": secret,
                        "from": "documented",
                    }
                )
    return out


def _yaml_entries(directory: Path) -> list[dict]:
    try:
        import yaml
    except ModuleNotFoundError:
        raise SystemExit("reading YAML rule files needs PyYAML: pip install pyyaml") from None
    entries: list[dict] = []
    for source in sorted(directory.glob("*.yml")):
        entries += (yaml.safe_load(source.read_text(encoding="utf-8")) or {}).get("rules") or []
    return entries


def yaml_rules(directory: Path, exclude_from: list[Path] | None = None) -> list[dict]:
    others = [rule for other in exclude_from or [] for rule in _yaml_entries(other)]
    taken_names = {str(r.get("name", "")) for r in others}
    taken_patterns = {str(r.get("pattern", "")).strip() for r in others}
    taken_ids = {str(r.get("id", "")) for r in others}
    rules = []
    for rule in _yaml_entries(directory):
        if (
            str(rule.get("name", "")) in taken_names
            or str(rule.get("pattern", "")).strip() in taken_patterns
            or str(rule.get("id", "")) in taken_ids
        ):
            continue
        categories = set(rule.get("categories") or [])
        if (
            rule.get("visible") is False
            or "pattern" not in rule
            or ("identifier" in categories and "secret" not in categories)
        ):
            continue
        regex = go_to_python(rule["pattern"])
        try:
            compiled = re.compile(regex)
        except re.error:
            continue
        word = _rule_word(rule["id"])
        rules.append(
            {
                "id": rule["id"],
                "regex": regex,
                "group": secret_group(regex, compiled.groups),
                "name": str(rule.get("name", "")),
                "keywords": [word],
                "keyed": not compiled.search("A1b2C3d4E5f6G7h8"),
                "entropy": float(rule.get("min_entropy") or 0),
                "examples": [str(e) for e in rule.get("examples") or []],
            }
        )
    return rules


# ---------------------------------------------------------------------------- secrets-patterns-db


# words of a rule name that say what kind of value it is, not whose: left out of the vendor
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--gitleaks", type=Path, help="gitleaks' config/gitleaks.toml")
    source.add_argument("--trufflehog", type=Path, help="trufflehog's pkg/detectors directory")
    source.add_argument("--noseyparker", type=Path, help="noseyparker's builtin rules directory")
    source.add_argument("--kingfisher", type=Path, help="kingfisher's data/rules directory")
    source.add_argument("--titus", type=Path, help="titus' pkg/rule/rules directory")
    source.add_argument("--secrets-patterns-db", type=Path, help="secrets-patterns-db's db/rules-stable.yml")
    source.add_argument("--trivy", type=Path, help="trivy's pkg/fanal/secret/builtin-rules.go")
    source.add_argument(
        "--pooled",
        type=Path,
        nargs=3,
        metavar=("SEMGREP_DIR", "EARLYBIRD_DIR", "REGEXES_JSON"),
        help="semgrep's generic/secrets/security, earlybird's config/rules, truffleHogRegexes' regexes.json,"
        " and detect-secrets (installed)",
    )
    parser.add_argument("--also", nargs="*", default=[], help="NAME=COMMIT of the other pooled rule sets")
    parser.add_argument(
        "--exclude-corpus",
        type=Path,
        nargs="*",
        default=[],
        help="generated corpora (JSON lines) whose vendors are left out (secrets-patterns-db)",
    )
    parser.add_argument(
        "--exclude-from",
        type=Path,
        nargs="*",
        default=[],
        help="YAML rule folders whose rules (by name or pattern) are left out",
    )
    parser.add_argument("--commit", required=True, help="the rule set's commit, recorded in the output")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-rule", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    if args.gitleaks:
        name, rules = "gitleaks", gitleaks_rules(args.gitleaks)
    elif args.trufflehog:
        name, rules = "trufflehog", trufflehog_rules(args.trufflehog)
    elif args.trivy:
        name, rules = "trivy", trivy_rules(args.trivy)
    elif args.pooled:
        name, rules = "pooled", pooled_rules(*args.pooled)
    elif args.secrets_patterns_db:
        name, rules = "spdb", spdb_rules(args.secrets_patterns_db, args.exclude_corpus)
    else:
        name = "noseyparker" if args.noseyparker else "kingfisher" if args.kingfisher else "titus"
        rules = yaml_rules(args.noseyparker or args.kingfisher or args.titus, args.exclude_from)
    records, skipped = [], []
    for rule in rules:
        lines = documented_lines(rule) if rule.get("examples") else []
        lines += example_lines(rng, rule, args.per_rule)
        (records.extend(lines) if lines else skipped.append(rule["id"]))
    meta = {
        "source": name,
        "commit": args.commit,
        "rules_read": len(rules),
        "rules_with_examples": len({r["rule"] for r in records}),
        "examples": len(records),
        "seed": args.seed,
        "per_rule": args.per_rule,
        "stored": "enil = line[::-1], terces = secret[::-1]",
        "excluded_rule_sets": [str(p.name) for p in args.exclude_from + args.exclude_corpus],
        "also": dict(item.split("=", 1) for item in args.also),
        "rules_without_examples": skipped,
    }
    with args.out.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"meta": meta}) + "\n")
        for record in records:
            stored = {"rule": record["rule"], "enil": record["line"][::-1], "terces": record["secret"][::-1]}
            if "from" in record:
                stored["from"] = record["from"]
            if record.get("name"):
                stored["name"] = record["name"]
            fh.write(json.dumps(stored) + "\n")
    print(
        json.dumps(
            {k: v for k, v in meta.items() if k != "rules_without_examples"} | {"rules_without_examples": len(skipped)}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
