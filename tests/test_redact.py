"""Secret redaction (the redact package's ``redact`` and ``redact_obj``): every known shape, no
leaks anywhere the harvest writes. Also credentials found by their form rather than a listed vendor
prefix, and the look-alikes that must stay: ids the model APIs write, names, digests, base64 of
text or files."""

from __future__ import annotations

import base64
import json
import random
import shutil
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_sleep.redact import redact, redact_obj
from skillopt_sleep.sources import harvest
from tests.fixtures.redaction.corpus import SHAPES, secret_fragments, secret_samples
from tests.fixtures.redaction.ordinary import ORDINARY

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
_GENERATED = secret_samples(seed=3, per_shape=1)  # one of every corpus shape, planted in transcripts
ALNUM = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"

# (kind, text with the secret in context, the secret itself). Built from pieces so that no
# complete credential-shaped literal sits in the repository.
PEM_BODY = "MIIEowIBAAKCAQEA1x2y3z4" + "\n" + "q9r8s7t6u5v4w3x2y1z0" + "\n"
SECRETS = [
    ("anthropic_key", "key is {s} ok", "sk-" + "ant-api03-" + ALNUM + "_-xy"),
    ("openai_key", "OPENAI key {s}", "sk-" + ALNUM + "abcdEFGH1234"),
    ("openai_key", "project key {s}", "sk-" + "proj-" + ALNUM + "-_" + ALNUM),
    ("github_token", "clone with {s}", "ghp" + "_" + ALNUM),
    ("github_token", "oauth {s}", "gho" + "_" + ALNUM),
    ("github_token", "app {s}", "ghs" + "_" + ALNUM),
    ("github_token", "fine grained {s}", "github_" + "pat_11AB" + ALNUM + "_" + ALNUM),
    ("aws_access_key_id", "id {s} in config", "AKIA" + "IOSFODNN7EXAMPL"[:16].upper().ljust(16, "Q")),
    ("aws_access_key_id", "session {s}", "ASIA" + "Y3FDSNDKFKSIDJSW"),
    ("aws_secret_key", "aws_secret_access_key = {s}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"),
    ("slack_token", "bot {s}", "xox" + "b-123456789012-1234567890123-" + ALNUM[:24]),
    ("slack_webhook", "post to {s}", "https://hooks.slack" + ".com/services/T0000/B0000/" + ALNUM[:24]),
    ("google_api_key", "maps {s}", "AI" + "za" + "SyA" + ALNUM[:32]),
    ("stripe_key", "charge with {s}", "sk_" + "live_" + ALNUM[:24]),
    ("stripe_key", "restricted {s}", "rk_" + "test_" + ALNUM[:24]),
    (
        "jwt",
        "cookie={s};",
        "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("auth_header", "curl -H 'Authorization: Bearer {s}' x", "opaque-token-" + ALNUM[:20]),
    ("auth_header", "Authorization: Basic {s}", base64.b64encode(b"admin:hunter2").decode()),
    ("bearer_token", "send bearer {s} now", "a1b2c3d4e5f6" + ALNUM[:16]),
    ("basic_auth", "header Basic {s} end", base64.b64encode(b"deploy:s3cr3t-pass").decode()),
    (
        "private_key",
        "key:\n{s}\nafter",
        "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "-----END RSA PRIVATE KEY-----",
    ),
    (
        "private_key",
        "{s}",
        "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----",
    ),
    ("private_key", "truncated {s}", "-----BEGIN " + "PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),
    ("secret", "password={s}", "hunter2hunter2"),
    ("secret", '{{"api_key": "{s}"}}', "abcd1234efgh5678"),
    ("secret", "TOKEN: {s}", "s3cr3tvalue99"),
    ("secret", "export GH_TOKEN={s}", "plainvalue123456"),
    ("secret", "DB_PASSWORD='{s}'", "x1y2z3w4v5"),
    ("secret", "client_secret: {s}", "zyxwvu987654"),
    ("url_credentials", "git remote add origin https://{s}@example.com/r.git", "deploy:pa55word"),
    ("url_credentials", "DATABASE_URL=postgres://{s}@db:5432/app", "admin:supersecret"),
]


@pytest.mark.parametrize("kind, template, secret", SECRETS, ids=[f"{k}-{i}" for i, (k, _t, _s) in enumerate(SECRETS)])
def test_each_shape_is_redacted(kind, template, secret):
    text = template.format(s=secret)
    out = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert redact(out) == out  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 4000 and token_count: 12",
        "sort(items, key=lambda x: x.name)",
        "primary_key=True",
        "the token: we need to refresh it",
        "password: hi",
        "password=${DB_PASSWORD}",
        'api_key=os.environ["OPENAI_API_KEY"]',
        "task-abcdefghijklmnopqrstuvwxyz use sk-learn-compatible-estimator-interface",
        "a basic understanding of the Basic idea",
        "see https://example.com/a:b/c and user@example.com",
        "git commit -m 'feat: add token refresh'",
        "",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert redact(text) == text


def test_redact_obj_walks_structures_and_catches_structured_secrets():
    github = "ghp" + "_" + ALNUM
    data = {
        "password": "hunter2hunter2",
        "note": f"use {github}",
        "list": [("x", github)],
        "n": 5,
        "max_tokens": "4000",
        "token": "${TOKEN}",
    }
    out = redact_obj(data)
    assert out["password"] == "[REDACTED:secret]"
    assert github not in json.dumps(out)
    assert out["n"] == 5 and out["max_tokens"] == "4000" and out["token"] == "${TOKEN}"
    assert data["password"] == "hunter2hunter2"  # input untouched


@settings(max_examples=200, deadline=None)
@given(prefix=st.text(max_size=60), suffix=st.text(max_size=60), index=st.integers(0, len(SECRETS) - 1))
def test_secrets_in_arbitrary_context_never_survive(prefix, suffix, index):
    _kind, template, secret = SECRETS[index]
    text = prefix + " " + template.format(s=secret) + " " + suffix
    assert secret not in redact(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_redact_never_raises(text):
    assert isinstance(redact(text), str)


# --- nothing planted in a transcript reaches a digest, the cache or a checkpoint -------------


def _plant(claude_home: Path, codex_home: Path) -> None:
    texts = [template.format(s=secret) for _kind, template, secret in SECRETS] + [s.text for s in _GENERATED]
    session = "5a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d"
    records = []
    for i, text in enumerate(texts):
        ts = f"2026-11-22T10:{i:02d}:00.000Z"
        base = {
            "cwd": "/work/demo-app",
            "sessionId": session,
            "entrypoint": "cli",
            "gitBranch": "main",
            "timestamp": ts,
        }
        records += [
            base | {"type": "user", "message": {"role": "user", "content": f"please use this: {text}"}},
            base
            | {
                "type": "assistant",
                "message": {
                    "id": f"m{i}",
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"I used {text}"},
                        {
                            "type": "tool_use",
                            "id": f"t{i}",
                            "name": "Write",
                            "input": {"file_path": f"/work/demo-app/{text}.txt", "content": text},
                        },
                        {"type": "tool_use", "id": f"s{i}", "name": "Skill", "input": {"skill": text}},
                    ],
                },
            },
            base
            | {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"output {text}"},
                        {"type": "text", "text": f"also {text}"},
                    ],
                },
            },
        ]
    project = claude_home / "projects" / "-work-demo-app"
    (project / f"{session}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    rollout = codex_home / "sessions/2026/11/22/rollout-2026-11-22T10-00-00-019aa000-0000-7000-8000-000000000001.jsonl"
    rollout.parent.mkdir(parents=True)
    lines = [
        {
            "timestamp": "2026-11-22T10:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": "x", "cwd": "/work/demo-app", "originator": "codex_cli_rs", "git": {"branch": "main"}},
        }
    ]
    for text in texts:
        lines += [
            {
                "timestamp": "2026-11-22T10:00:01.000Z",
                "type": "event_msg",
                "payload": {"type": "user_message", "message": text},
            },
            {
                "timestamp": "2026-11-22T10:00:02.000Z",
                "type": "response_item",
                "payload": {
                    "type": "custom_tool_call",
                    "name": "apply_patch",
                    "call_id": "c",
                    "input": f"*** Begin Patch\n*** Add File: {text}\n*** End Patch\n",
                },
            },
            {
                "timestamp": "2026-11-22T10:00:03.000Z",
                "type": "response_item",
                "payload": {"type": "function_call_output", "call_id": "c", "output": text},
            },
            {
                "timestamp": "2026-11-22T10:00:04.000Z",
                "type": "event_msg",
                "payload": {"type": "agent_message", "message": f"done with {text}"},
            },
        ]
    rollout.write_text("".join(json.dumps(r) + "\n" for r in lines))


def test_no_planted_secret_survives_anywhere(tmp_path):
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    _plant(tmp_path / "claude", tmp_path / "codex")
    state = tmp_path / "state"
    result = harvest(
        "/work/demo-app", source="all", claude_home=tmp_path / "claude", codex_home=tmp_path / "codex", state_dir=state
    )
    result.commit()
    assert len(result.digests) == 6  # the planted sessions were harvested, not dropped
    dumped = json.dumps([d.to_dict() for d in result.digests], ensure_ascii=False)
    assert "[REDACTED:" in dumped
    stored = "".join(p.read_text() for p in state.rglob("*") if p.is_file())
    assert "[REDACTED:" in stored
    for _kind, _template, secret in SECRETS:
        for fragment in {secret, secret.split("\n")[-1]} - {""}:
            assert fragment not in dumped, fragment
            assert fragment not in stored, fragment
        assert json.dumps(secret)[1:-1] not in stored
    for sample in _GENERATED:
        for fragment in secret_fragments(sample.secret):
            assert fragment not in dumped, (sample.shape, fragment)
            assert json.dumps(fragment)[1:-1] not in stored, (sample.shape, fragment)


# --- the generated, labelled corpus (issue 9 item 3): tests/fixtures/redaction ---------------


CORPUS = secret_samples(seed=20261123, per_shape=8)


def test_the_corpus_is_big_enough():
    assert len(SHAPES) >= 80 and len(ORDINARY) >= 100
    assert sum(s.kind == "prefix" for s in SHAPES) >= 80


@pytest.mark.parametrize("shape", [s.name for s in SHAPES])
def test_every_generated_shape_is_redacted(shape):
    """Every shape with a documented prefix, and every context shape of the corpus, is caught."""
    for sample in (s for s in CORPUS if s.shape == shape):
        out = redact(sample.text)
        for fragment in secret_fragments(sample.secret):
            assert fragment not in out, (sample.text, out)
        assert "[REDACTED:" in out
        assert redact(out) == out


def test_ordinary_lines_are_not_mangled():
    mangled = [(line, redact(line)) for line in ORDINARY if redact(line) != line]
    assert len(mangled) <= 0.02 * len(ORDINARY), mangled


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    prefix=st.sampled_from(["", " ", "\n", "(", "'", '"', "=", ": ", "> ", "x-", "id.", "a_", "é "]),
    suffix=st.sampled_from(["", " ", "\n", ")", "'", '"', ",", ";", ". ", "\t", "_old", ".txt", " é"]),
)
def test_prefixed_shapes_survive_no_seed_or_punctuation(seed, prefix, suffix):
    for sample in secret_samples(seed, 1):
        if sample.kind != "prefix":
            continue
        out = redact(prefix + sample.text + suffix)
        assert not any(f in out for f in secret_fragments(sample.secret)), (sample.shape, out)


@pytest.mark.parametrize("text", ["password=mypassword1", "password=testpass99", "token: the_token_v2x9"])
def test_a_weak_password_is_not_mistaken_for_a_placeholder(text):
    assert "[REDACTED:secret]" in redact(text)


# --- credentials found by their form, and the look-alikes that stay --------------------------

RNG = random.Random(20261126)
B62 = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = B62) -> str:
    """``n`` random characters of ``alphabet``, with each class the alphabet has (digits, cases)."""
    classes = [cls for cls in (str.isdigit, str.isupper, str.islower) if any(cls(c) for c in alphabet)]
    while True:
        value = "".join(RNG.choice(alphabet) for _ in range(n))
        if all(any(cls(c) for c in value) for cls in classes):
            return value


PREFIXED = rand(32)
LOWER = rand(48, string.ascii_lowercase + string.digits)


@pytest.mark.parametrize(
    "text, secret",
    [
        # a short service prefix that no list names, then a generated body
        (f"export ZQX_KEY_FILE=/tmp/x; zqx_{PREFIXED} is the one", PREFIXED),
        (f"use qwk-{PREFIXED[:20]}_{PREFIXED[20:]}", PREFIXED[:20]),
        (f"token=abc; xk.live.{PREFIXED}", PREFIXED),
        (f"key {LOWER[:4]}-{PREFIXED}", PREFIXED),
        # base64url without a prefix: long, random, both cases and digits
        (f"it printed {rand(44, B62 + '-_')} and stopped", None),
        # <id>-<64 characters>
        (f"api key 3-{rand(64)}", None),
    ],
)
def test_a_generated_token_is_redacted_without_a_listed_prefix(text, secret):
    out = redact(text)
    assert "[REDACTED:" in out
    if secret is not None:
        assert secret not in out
    assert redact(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "msg_01XFDUDYJgAACzvnptvVoYEL and toolu_01A09q90qw90lq917835lq9x",
        "req_011CT6fZ3Yd9gN6VQ7P1o8sH failed; chatcmpl-9BhXy2oK3mQpL5nR7sT1uV4wX6yZ8a",
        "run-7c9e6679-7425-40de-944b-e07fc1f90ae7 finished",
        "from .beta_memory_tool_20250818_view_command import BetaMemoryTool20250818ViewCommand",
        "    SecurityConst.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,",
        "Host key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8.",
        "golang.org/x/net v0.21.0 h1:AQyHROFCyhKIBlEZpc2TMtsZu2ix1yiD8SPWXo0AnE4=",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl jane@host",
        "ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'",
        "msg = '" + base64.b64encode(b"The quick brown fox jumps over the lazy dog again").decode() + "'",
        "PNG = '" + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode() + "'",
        "django.contrib.auth.hashers.Argon2PasswordHasher",
        "commit-" + "3f2a9c" * 6 + "1b2c",
        'GRANT_TYPE_REFRESH_TOKEN = "refresh_token"',
        "token_type: 'access-token'",
        "            _enforce_credentials=_enforce_credentials,",
        'ENV_IDENTITY_TOKEN = "ANTHROPIC_IDENTITY_TOKEN"',
    ],
)
def test_look_alikes_stay(text):
    assert redact(text) == text


@pytest.mark.parametrize(
    "hashed",
    [
        "$1$OKgLCmVl$d02jECa4DXn/oXX0R.MoQ/",
        "$2b$12$" + rand(53, B62 + "./"),
        "$6$rounds=5000$" + rand(16) + "$" + rand(86, B62 + "./"),
        "$argon2id$v=19$m=65536,t=3,p=4$" + rand(22) + "$" + rand(43),
        "$krb5asrep$23$user@example.com:" + rand(32, "0123456789abcdef") + "$" + rand(64, "0123456789abcdef"),
    ],
)
def test_a_password_hash_is_redacted(hashed):
    out = redact(f"root:{hashed}:19000:0:99999:7:::")
    assert hashed not in out and "[REDACTED:password_hash]" in out


def test_shell_positional_dollars_stay():
    for text in ('echo "$1$2"', "awk '{print $1$3}' file", "price: $5$ and $6$"):
        assert redact(text) == text


SECRET = "Tr0ub4dor&3x"


@pytest.mark.parametrize(
    "text",
    [
        f"The default password is '{SECRET}'",
        f'if user.password == "{SECRET}":',
        f"if creds.Secret != '{SECRET}' {{",
        f"credentials {{\n  username 'deploy'\n  password '{SECRET}'\n}}",
        f"Connect-VIServer -Server vc.lab -User admin -Password {SECRET}",
        f"psexec \\\\10.0.0.5 -u Administrator -p {SECRET} cmd",
        f'new NetworkCredential("deploy@example.com", "{SECRET}")',
        f'<add key="SmtpPassword" value="{SECRET}"/>',
        f"  :password       => '{SECRET}',",
    ],
)
def test_a_password_in_code_prose_or_config_is_redacted(text):
    out = redact(text)
    assert SECRET not in out and "[REDACTED:" in out


@pytest.mark.parametrize(
    "text",
    [
        "Reset the password in the settings page",
        "if password == confirm_password:",
        "-Password $password -User $user",
        "the password is stored in the vault",
        '<add key="PasswordPolicy" value="strict"/>',
    ],
)
def test_passwords_named_but_not_given_stay(text):
    assert redact(text) == text


@pytest.mark.parametrize(
    "text, secret",
    [
        (f"clarifai SECRET {rand(32)}", None),
        (f"newsapi key {rand(32, '0123456789abcdef')}", None),
        (f"os.environ.get('WEATHER_API_KEY', '{PREFIXED}')", PREFIXED),
        (f'  fbApiKey:            "{PREFIXED}",', PREFIXED),
        ('"scalewayKey": "qldbcyko-9quq-dr47-g6h3-dwrmibiusteg",', "qldbcyko-9quq-dr47-g6h3-dwrmibiusteg"),
        (f"sonar.login={rand(40, '0123456789abcdef')}", None),
    ],
)
def test_a_labelled_value_is_redacted_in_more_forms(text, secret):
    out = redact(text)
    assert "[REDACTED:" in out
    if secret is not None:
        assert secret not in out


def test_a_vault_unseal_key_a_teams_webhook_and_a_base64_pem_are_redacted():
    unseal = base64.b64encode(bytes(RNG.randrange(256) for _ in range(33))).decode()
    assert unseal not in redact(f"Unseal Key 2: {unseal}")
    hook = f"https://contoso.webhook.office.com/webhookb2/{rand(8)}@{rand(8)}/IncomingWebhook/{rand(32)}/{rand(8)}"
    assert "office.com" not in redact(f"curl -d @msg.json {hook}")
    pem = base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\n" + bytes(RNG.randrange(256) for _ in range(90))).decode()
    assert redact(f"PRIVATE_KEY_B64={pem}") == "PRIVATE_KEY_B64=[REDACTED:private_key]"
