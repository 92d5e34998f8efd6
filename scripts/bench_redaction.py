#!/usr/bin/env python3
"""Benchmark redaction: recall, precision and speed. Prints one JSON object.

1. Recall: every secret shape of the generated, labelled corpus (tests/fixtures/redaction), in
   context, ``--per-shape`` samples each. A sample is caught when no fragment of its secret
   survives ``redact``. Reported per shape, overall, and for the shapes with a documented prefix
   (target 100 %) and those that need context.
2. Recall on corpora generated from maintained detectors' rule sets (``scripts/redaction_corpus.py``):
   gitleaks', trufflehog's, noseyparker's, kingfisher's, titus', trivy's, and semgrep's, earlybird's,
   detect-secrets' and truffleHogRegexes' pooled (redaction was tuned on them, each after a first
   measurement) and secrets-patterns-db's rules for vendors none of those has a rule for (held out:
   never used to tune). Per corpus: rules, example lines, and the leaks (rule ids) — a line leaks when any
   fragment of its secret survives.
3. Precision: the ordinary secret-ish lines, per set; a line that ``redact`` changes at all is
   mangled (target <= 2 %). ``--real-files N``: also N distinct lines holding a 20-character token
   run, sampled (seeded) from the source and text files of the installed packages — text nobody
   picked for the bench.
4. Throughput in MB/s of ``redact`` over transcript-like strings (clean, and with ~2 % of the
   strings carrying a secret), since it runs on every string the harvest keeps; and seconds per
   MB on adversarial inputs (every rule's trigger repeated).

Usage: python scripts/bench_redaction.py [--seed 1] [--per-shape 20] [--mb 20] [--real-files 30000] [--show]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skillopt_sleep.redact import redact  # noqa: E402
from tests.fixtures.redaction.corpus import SHAPES, secret_fragments, secret_samples  # noqa: E402
from tests.fixtures.redaction.detectors import HELD_OUT, TUNED, load  # noqa: E402
from tests.fixtures.redaction.ordinary import ORDINARY  # noqa: E402
from tests.fixtures.redaction.ordinary_more import ORDINARY_MORE  # noqa: E402

WORDS = (
    "the a to of and in for with on is that this it be as test file function return value error "
    "module import class def self config path string list dict update add fix refactor commit "
    "branch merge review release notes changelog docs api client server request response token "
    "retry cache parse json yaml build lint format type check coverage fixture mock assert key "
    "password secret session cookie header bearer basic auth credentials"
).split()


def caught(text: str, secret: str) -> bool:
    out = redact(text)
    return not any(fragment in out for fragment in secret_fragments(secret))


def recall(seed: int, per_shape: int) -> dict:
    samples = secret_samples(seed, per_shape)
    per_shape_hits: dict[str, list[int]] = {}
    kinds = {}
    for sample in samples:
        hits = per_shape_hits.setdefault(sample.shape, [0, 0])
        hits[0] += caught(sample.text, sample.secret)
        hits[1] += 1
        kinds[sample.shape] = sample.kind

    def rate(names: list[str]) -> float:
        got = sum(per_shape_hits[n][0] for n in names)
        total = sum(per_shape_hits[n][1] for n in names)
        return round(got / total, 4) if total else 1.0

    prefix = [n for n in per_shape_hits if kinds[n] == "prefix"]
    context = [n for n in per_shape_hits if kinds[n] == "context"]
    return {
        "shapes": len(per_shape_hits),
        "prefix_shapes": len(prefix),
        "context_shapes": len(context),
        "samples": len(samples),
        "overall_recall": rate(list(per_shape_hits)),
        "documented_prefix_recall": rate(prefix),
        "context_recall": rate(context),
        "per_shape_recall": {n: round(h[0] / h[1], 4) for n, h in per_shape_hits.items()},
    }


def precision(show: bool, lines: tuple[str, ...] = ORDINARY) -> dict:
    mangled = [(line, redact(line)) for line in lines if redact(line) != line]
    out: dict[str, Any] = {
        "ordinary_lines": len(lines),
        "mangled": len(mangled),
        "mangled_rate": round(len(mangled) / len(lines), 4),
    }
    if show:
        out["mangled_lines"] = [{"line": a, "redacted": b} for a, b in mangled]
    return out


def detector_corpus(name: str, show: bool) -> dict:
    """Leaks on a corpus generated from a detector's rule set (one rule = one shape)."""
    meta, examples = load(name)
    leaked = [e for e in examples if not caught(e.line, e.secret)]
    rules = {e.rule for e in examples}
    leaky = sorted({e.rule for e in leaked})
    out = {
        "source": meta["source"],
        "commit": meta["commit"],
        "role": "tuned" if name in TUNED else "held_out",
        "shapes": len(rules),
        "lines": len(examples),
        "leaked_lines": len(leaked),
        "leaking_shapes": len(leaky),
        "shape_recall": round(1 - len(leaky) / len(rules), 4),
        "line_recall": round(1 - len(leaked) / len(examples), 4),
        "leaks": leaky,
    }
    if show:
        out["leaked"] = [{"rule": e.rule, "line": e.line, "redacted": redact(e.line)} for e in leaked]
    return out


def real_file_lines(count: int, seed: int) -> list[str]:
    """``count`` distinct lines with a 20-character token run from the installed packages' files."""
    import sysconfig

    root = Path(sysconfig.get_paths()["purelib"])
    run = re.compile(r"[A-Za-z0-9_\-.]{20,}")
    found: set[str] = set()
    for path in sorted(root.rglob("*")):
        if (
            path.suffix not in (".py", ".pyi", ".md", ".rst", ".txt", ".toml", ".cfg", ".json")
            and path.name != "RECORD"
        ):
            continue
        try:
            if not path.is_file() or path.stat().st_size > 2_000_000:
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found.update(line for line in text.splitlines() if len(line) < 400 and run.search(line))
    lines = sorted(found)
    random.Random(seed).shuffle(lines)
    return lines[:count]


def transcript_strings(rng: random.Random, mb: float, secret_rate: float, seed: int) -> list[str]:
    """Strings shaped like what the harvest keeps: prompts, replies, tool output, code."""
    secrets = [s.text for s in secret_samples(seed + 1, 2)]
    strings, size = [], 0
    while size < mb * 1e6:
        n = rng.choice((80, 300, 1200, 4000, 16000))
        parts, length = [], 0
        while length < n:
            piece = rng.choice(ORDINARY) if rng.random() < 0.1 else " ".join(rng.choices(WORDS, k=12))
            parts.append(piece)
            length += len(piece) + 1
        if rng.random() < secret_rate:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(secrets))
        text = "\n".join(parts)
        strings.append(text)
        size += len(text)
    return strings


def throughput(mb: float, seed: int) -> dict:
    out = {}
    for label, rate in (("clean", 0.0), ("with_secrets_2pct", 0.02)):
        strings = transcript_strings(random.Random(seed), mb, rate, seed)
        total = sum(len(s.encode("utf-8")) for s in strings)
        start = time.perf_counter()
        for s in strings:
            redact(s)
        seconds = time.perf_counter() - start
        out[label] = {
            "mb": round(total / 1e6, 2),
            "strings": len(strings),
            "seconds": round(seconds, 3),
            "mb_per_s": round(total / 1e6 / seconds, 1),
        }
    return out


ADVERSARIAL = {  # ~1 MB each: every trigger of a rule, over and over
    "keyword_spam": "password= token: api_key= secret: " * 30_000,
    "command_spam": "curl mysql login machine -p --password " * 25_000,
    "header_spam": "Authorization: Cookie: Bearer Basic " * 28_000,
    "url_spam": "://a:" * 200_000,
    "long_token_run": "a" * 1_000_000,
    "dense_secrets": "mysql -pA1b2c3d4 password=abc123def " * 28_000,
    "pem_without_end": "-----BEGIN PRIVATE KEY-----\n" + "A" * 1_000_000,
    "keyed_spam": "X_KEY: 'a1B2c3D4e5F6g7H8i9J0' login --x authtoken Client('k" * 18_000,
    "pipe_spam": "1234567890123456|" * 60_000,
    "xml_value_spam": '<add key="SmtpPassword" value="abc' * 30_000,
    "crypt_spam": "$1$ab$" * 150_000,
    "credential_call_spam": 'NetworkCredential("a", ' * 40_000,
    "flag_spam": "-Password x -p psexec -u a -p " * 35_000,
    "prose_spam": "password is 'x' token == \"abc\" != " * 25_000,
    "random_run_spam": ("Zx9" * 12 + " ") * 28_000,
    "xml_element_spam": '<Pass encoding="base64">abc<Password>' * 25_000,
    "webhook_spam": "https://a.example.com/hooks/" * 35_000 + "https://" + "a" * 100_000,
    "flyio_spam": "FlyV1 FlyV1\t" * 80_000,
    "bracket_spam": "(password=a}b]c)" * 60_000,
    "spaced_tag_spam": "< passphrase > ab < / pass a < b " * 30_000,
    "docker_config_spam": ".dockercfg: | .dockerconfigjson: " * 30_000 + "A" * 100_000,
    "short_label_spam": "pw = pword: passwrd=xoxo-1-" * 40_000,
}


def adversarial() -> dict:
    """Seconds per MB on inputs built to make the rules work hardest (bounded, never a hang)."""
    out = {}
    for label, text in ADVERSARIAL.items():
        start = time.perf_counter()
        redact(text)
        out[label] = round((time.perf_counter() - start) / (len(text) / 1e6), 3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-shape", type=int, default=20, help="generated samples per shape")
    parser.add_argument("--mb", type=float, default=20.0, help="MB of transcript text for throughput")
    parser.add_argument(
        "--real-files",
        type=int,
        default=0,
        metavar="N",
        help="also measure precision on N lines of the installed packages' files",
    )
    parser.add_argument("--show", action="store_true", help="list missed shapes, leaked and mangled lines")
    args = parser.parse_args()
    result = {"seed": args.seed, "shape_count": len(SHAPES)}
    result["recall"] = recall(args.seed, args.per_shape)
    result["missed_shapes"] = sorted(n for n, r in result["recall"]["per_shape_recall"].items() if r < 1)
    result["precision"] = precision(args.show)
    result["precision_more"] = precision(args.show, ORDINARY_MORE)
    if args.real_files:
        result["precision_real_files"] = precision(args.show, tuple(real_file_lines(args.real_files, args.seed)))
    result["detector_corpora"] = {name: detector_corpus(name, args.show) for name in TUNED + HELD_OUT}
    result["throughput"] = throughput(args.mb, args.seed)
    result["adversarial_seconds_per_mb"] = adversarial()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
