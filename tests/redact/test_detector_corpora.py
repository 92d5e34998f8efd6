"""Redaction against corpora generated from maintained detectors' rule sets, the documented shapes
that used to leak, and the ordinary lines that must stay byte-exact."""

from __future__ import annotations

import json

import pytest

from skillopt_sleep.redact import redact, redact_obj
from skillopt_sleep.redact.keyed import looks_generated
from tests.fixtures.redaction.corpus import secret_fragments
from tests.fixtures.redaction.detectors import ACCEPTED_LEAKS, HELD_OUT, TUNED, load
from tests.fixtures.redaction.ordinary import ORDINARY
from tests.fixtures.redaction.ordinary_more import ORDINARY_MORE


def _leaks(name: str) -> list[tuple[str, str, str]]:
    _meta, examples = load(name)
    out = []
    for e in examples:
        redacted = redact(e.line)
        if any(fragment in redacted for fragment in secret_fragments(e.secret)):
            out.append((e.rule, e.line, redacted))
    return out


@pytest.mark.parametrize("name", TUNED + HELD_OUT)
def test_a_detector_corpus_is_recorded_with_its_source_and_is_big_enough(name):
    meta, examples = load(name)
    assert meta["source"] == name.split("-")[0] and len(meta["commit"]) == 40
    # the held-out set is what the public rule sets have beyond the tuned ones' vendors
    assert len({e.rule for e in examples}) >= (40 if name in HELD_OUT else 100)
    for e in examples:
        assert e.secret in e.line and len(e.secret) >= 8


@pytest.mark.parametrize("name", TUNED)
def test_no_line_of_a_tuned_detector_corpus_leaks(name):
    """Every leak of a tuned corpus is one of the few accepted ones, each with its reason, and
    every accepted one still leaks (the list says what redaction does, not what it once did)."""
    accepted = ACCEPTED_LEAKS.get(name, {})
    leaks = _leaks(name)
    assert [leak for leak in leaks if leak[0] not in accepted] == []
    assert sorted(accepted) == sorted({leak[0] for leak in leaks})
    assert len(accepted) <= 0.05 * len({e.rule for e in load(name)[1]})


def test_the_held_out_half_is_disjoint_from_everything_tuned():
    """No held-out rule is a tuned rule, by id or (for the rule set copied from another) by name."""
    tuned_rules = {e.rule for name in TUNED for e in load(name)[1]}
    tuned_names = {e.name for name in TUNED for e in load(name)[1] if e.name}
    for name in HELD_OUT:
        held = load(name)[1]
        assert {e.rule for e in held}.isdisjoint(tuned_rules)
        assert {e.name for e in held}.isdisjoint(tuned_names)


@pytest.mark.parametrize("lines", [ORDINARY, ORDINARY_MORE], ids=["ordinary", "ordinary_more"])
def test_at_most_two_percent_of_ordinary_lines_are_mangled(lines):
    mangled = [(line, redact(line)) for line in lines if redact(line) != line]
    assert len(lines) >= 100
    assert len(mangled) <= 0.02 * len(lines), mangled


def test_the_first_ordinary_set_stays_untouched():
    assert [line for line in ORDINARY if redact(line) != line] == []


# --- documented shapes that used to pass: the whole credential goes, not only its label --------

ALNUM = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


@pytest.mark.parametrize(
    "text, secret",
    [
        ("Authorization: SSWS 00" + ALNUM + "_-x1", "00" + ALNUM + "_-x1"),
        ("token xoxe.xoxp-1-" + ALNUM * 4, "xoxe.xoxp-1-" + ALNUM * 4),
        ("sshpass -p 'Tr0ub4dor&3x' ssh deploy@10.0.0.5", "Tr0ub4dor&3x"),
        ("wandb login " + "0123456789abcdef" * 2 + "01234567", "0123456789abcdef" * 2 + "01234567"),
        ("co = cohere.Client('" + ALNUM + "wxyz')", ALNUM + "wxyz"),
        (
            "export AZURE_DEVOPS_EXT_PAT=" + "abcdefghijklmnopqrstuvwxyz234567" + "a2b3c4d5e6f7g2h3i4j5",
            "abcdefghijklmnopqrstuvwxyz234567",
        ),
        ("ngrok config add-authtoken 2" + ALNUM[:26] + "_" + ALNUM[:21], ALNUM[:21]),
    ],
)
def test_a_labelled_credential_is_redacted_whole(text, secret):
    out = redact(text)
    assert secret not in out and "[REDACTED:" in out
    assert redact(out) == out


def test_a_slack_refresh_token_is_redacted_from_its_head():
    out = redact("refresh with xoxe.xoxp-1-" + ALNUM * 4 + " now")
    assert out == "refresh with [REDACTED:slack_token] now"


def test_putty_private_lines_are_redacted_and_the_public_part_kept():
    body = ["QUFBQUIzTnphQzFsWkRJMU5URTVBQUFBSUwyZ2FtZW9uZ3JlYXRzdG9yeXRlbGxlcg==", "AAAAIGtleWJvZHk5ODc2NTQzMjE="]
    text = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ci\nPublic-Lines: 1\n"
        "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5\nPrivate-Lines: 2\n"
        + "\n".join(body)
        + "\nPrivate-MAC: 5ae2b7"
    )
    out = redact(text)
    assert not any(line in out for line in body)
    assert "Public-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5" in out


def test_a_structured_value_under_a_key_name_is_redacted_when_generated():
    out = redact_obj(
        {"fastlyKey": "w6pm27il6ugjd9v5vb32ndyhey6sr0c1", "primaryKey": "orderId", "sortKey": "created_at_2024"}
    )
    assert out["fastlyKey"] == "[REDACTED:secret]"
    assert out["primaryKey"] == "orderId" and out["sortKey"] == "created_at_2024"
    assert "w6pm27il" not in json.dumps(out)


@pytest.mark.parametrize(
    "value, generated",
    [
        ("w6pm27il6ugjd9v5vb32ndyhey6sr0c1", True),
        ("7c9e6679-7425-40de-944b-e07fc1f90ae7", True),
        ("NYJxMoVaPxuDRNOVhBREzMNgpGftpCVtERKzMbzI", True),
        ("user_profile_cache_v2", False),
        ("v2.14.0-rc.3+build.20240514", False),
        ("AbstractSingletonProxyFactory", False),
        ("ArrowUpShiftCtrl2024", False),
        ("sha256:6a92cd1fcdc8d8cdec60f33dda4db2cb1fcdcacf3410a8e05b3741f44a9b5998", False),
        ("1700000000000", False),
        ("secret_configuration_loader", False),
    ],
)
def test_looks_generated(value, generated):
    assert looks_generated(value) is generated


# --- shapes found by titus', trivy's and the pooled rules: the whole credential goes ---------------------------------------

LOWER = "e2knhj8h3h4erp6crfx6rh52tvecj4xnwmtjf3mtrvtt54et"  # lower-case letters and digits, no words
UPPER = "R69SQK"


@pytest.mark.parametrize(
    "text, secret",
    [
        ("we call it with csk-" + LOWER + " for now", LOWER),
        ("<Server><Host>ftp.example.com</Host><Pass>superS3cret!</Pass></Server>", "superS3cret!"),
        ('<Pass encoding="base64">' + "c3VwZXJTM2NyZXQhMjAyNQ==" + "</Pass>", "c3VwZXJTM2NyZXQhMjAyNQ=="),
        ("WEBHOOK_URL=https://chat.example.com:8065/hooks/" + LOWER[:26], LOWER[:26]),
        (
            "sign in with A3-" + UPPER + "-TZ9KPW-8MXYD-6W373-V7GHJ-EDJQW on the new Mac",
            "TZ9KPW-8MXYD-6W373-V7GHJ-EDJQW",
        ),
        ("riot = 'RGAPI-" + "4sb3f6a1-2941-5a81-9c23-4bf3a83c14f3'", "4sb3f6a1-2941-5a81-9c23-4bf3a83c14f3"),
        ("it works with live_" + "54d1bd2d1e62430bb2d521d298ec4231 again", "54d1bd2d1e62430bb2d521d298ec4231"),
        ("deploy with FlyV1 " + ALNUM * 3 + "=,fm2_" + ALNUM + " set", ALNUM * 3),
        # found by trivy's rules and the pooled ones
        ("<settings><server><password>" + ALNUM[20:32] + "</password></server></settings>", ALNUM[20:32]),
        ("< passphrase > Xq7vR2mK9pLw < / passphrase >", "Xq7vR2mK9pLw"),
        ("  .dockerconfigjson: " + "eyJhdXRocyI6eyJyLmlvIjp7ImF1dGgiOiJ" + ALNUM, ALNUM),
        ('".dockercfg": "ewogICJyZWdpc3RyeSI6' + ALNUM[:20] + '"', ALNUM[:20]),
        ("enc key FLWSECK_TEST" + "8d2b1c0a9e3f set", "8d2b1c0a9e3f"),
        ("access_token$production$" + "xddxb7lhp3143400$" + LOWER[:32], LOWER[:32]),
        ("export SLACK_TOKEN=xoxo-" + "8-110010-547047-QjE" + ALNUM[:8], "QjE" + ALNUM[:8]),
        ("https://api.softlayer.com/soap/v3.1/" + (ALNUM * 2)[:64], (ALNUM * 2)[:64]),
        ("pw = Xq7vR2mK9pLw", "Xq7vR2mK9pLw"),
        ('"passwrd": "' + ALNUM[:10] + '"', ALNUM[:10]),
        ("pword: Xq7vR2mK9pLw", "Xq7vR2mK9pLw"),
        ('"cloudantKey": "wzeuzstsckfcpqtknsevhxds",', "wzeuzstsckfcpqtknsevhxds"),
        ("LINKEDIN_KEY='ayxsjslhnzojlsmc'", "ayxsjslhnzojlsmc"),
    ],
)
def test_a_credential_titus_trivy_or_the_pooled_rule_sets_find_is_redacted(text, secret):
    out = redact(text)
    assert secret not in out and "[REDACTED:" in out
    assert redact(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "<Pass>${FTP_PASSWORD}</Pass>",
        "<password>your password here</password>",
        "cp scripts/pre-commit .git/hooks/pre-commit",
        "https://github.com/acme/widgets/settings/hooks/412345678",
        "https://hooks.example.com/hooks/deployment_status_changed",
        "https://example.com/hooks/deployment_status_changed_v2_2024",
        "lib-argon2-password-hasher-bindings-for-python",
        "live_streaming_settings_panel_toggle_button",
    ],
)
def test_what_looks_like_those_credentials_but_is_not_stays(text):
    assert redact(text) == text


@pytest.mark.parametrize(
    "text, secret",
    [
        ("dotmailer password: AOJIWr}G9x", "G9x"),
        ("db_password=Tr0ub4dor}3x rest", "}3x"),
        ("password: a]b9Xq2)w", "b9Xq2"),
    ],
)
def test_a_closing_bracket_inside_an_unquoted_password_does_not_end_it(text, secret):
    out = redact(text)
    assert "[REDACTED:secret]" in out and secret not in out


@pytest.mark.parametrize(
    "text",
    [
        "auth(token=self.token)+1",
        "run(password=args.password)if ok",
        "client(token=tok).get()",
        "x = dict(password=pwd)}",
    ],
)
def test_a_closing_bracket_that_closes_the_code_around_a_key_ends_its_value(text):
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "<master>node-1</master>",
        "<passphrase>${GPG_PASSPHRASE}</passphrase>",
        "type: kubernetes.io/dockerconfigjson",
        "  .dockerconfigjson: |",
        "she signed it xoxo-gossip-girl-forever",
        "CACHE_KEY='backgroundcolorscheme'",
        "sort_key: transactionhistorylength",
        "pw = getpass()",
        "pw = request.form['pw']",
        "npw = 5",
        "https://api.softlayer.com/rest/v3.1/SoftLayer_Account/getObject",
    ],
)
def test_what_looks_like_the_new_shapes_but_is_not_stays(text):
    assert redact(text) == text
