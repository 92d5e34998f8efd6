"""Credential shapes with a documented prefix or fixed structure, for ``redact``.

Each is recognisable on its own, whatever surrounds it. The formats are the providers' documented
ones, cross-checked against the shapes maintained detectors look for (gitleaks' rule set, the
detect-secrets plugins). Adding a shape is adding a row: ``redact`` finds candidate tokens with
one scan and only then looks a token's prefix up here, so the cost of a row is negligible.

A row's pattern is matched (anchored) where a candidate token starts; it may run past the token
(base64 padding, ``=`` after a key). ``check`` rejects look-alikes of the loosest shapes.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass


def _mixed_case(token: str) -> bool:
    return any(c.isupper() for c in token) and any(c.islower() for c in token)


def _has_digit(token: str) -> bool:
    return any(c.isdigit() for c in token)


def _newrelic(token: str) -> bool:
    """A New Relic key: any with a digit, and a user key of its documented shape (``NRAK-`` and 27
    upper-case letters or digits) also without one — one key in about 6,500 is letters only."""
    return _has_digit(token) or re.fullmatch(r"NRAK-[A-Z]{27}", token) is not None


def _random_looking(token: str) -> bool:
    """Generated text mixes digits with letters or upper with lower case; identifiers such as
    ``sk-learn-compatible-estimator`` or ``secret_configuration_loader`` do not."""
    tail = token.split("_", 1)[-1] if token.startswith("secret_") else token
    return _has_digit(tail) or _mixed_case(tail)


def _user_id_part(token: str) -> bool:
    """A Discord bot token starts with the bot's user id (digits), base64-encoded."""
    head = token.split(".", 1)[0]
    try:
        return base64.b64decode(head + "=" * (-len(head) % 4), altchars=b"-_", validate=True).isdigit()
    except (binascii.Error, ValueError):
        return False


@dataclass(frozen=True)
class TokenShape:
    kind: str  # the label in ``[REDACTED:<kind>]``
    prefixes: tuple[str, ...]  # every match starts with one of these
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None


def _shape(
    kind: str, prefixes: tuple[str, ...] | str, body: str, check: Callable[[str], bool] | None = None
) -> TokenShape:
    prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
    # ends at a token boundary, so a longer identifier that merely starts alike is left alone
    return TokenShape(kind, prefixes, re.compile(body + r"(?![A-Za-z0-9])"), check)


_B64URL = r"[A-Za-z0-9_\-]"
_HEX = r"[0-9a-fA-F]"

SHAPES: tuple[TokenShape, ...] = (
    # model providers
    _shape("anthropic_key", "sk-ant-", rf"sk-ant-(?:api|admin|sid|oat)\d\d-{_B64URL}{{20,}}"),
    _shape("openai_key", "sk-", rf"sk-(?:proj-|svcacct-|admin-|None-)?{_B64URL}{{20,}}", _has_digit),
    _shape("huggingface_token", "hf_", r"hf_[A-Za-z]{30,40}", _mixed_case),
    _shape("huggingface_token", "api_org_", r"api_org_[A-Za-z]{30,40}", _mixed_case),
    _shape("groq_key", "gsk_", r"gsk_[A-Za-z0-9]{48,56}"),
    _shape("xai_key", "xai-", r"xai-[A-Za-z0-9]{60,100}"),
    _shape("perplexity_key", "pplx-", r"pplx-[A-Za-z0-9]{40,60}"),
    _shape("replicate_token", "r8_", r"r8_[A-Za-z0-9]{37}"),
    # code hosting, CI and registries
    _shape("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{30,255}"),
    _shape("github_token", "github_pat_", r"github_pat_[A-Za-z0-9_]{22,255}"),
    _shape("gitlab_token", "gl", rf"gl(?:pat|ptt|dt|rt|cbt|soat|ffct|imt|oas|agent|ft)-{_B64URL}{{20,300}}"),
    _shape("gitlab_token", "GR1348941", rf"GR1348941{_B64URL}{{20,}}"),
    _shape("bitbucket_token", "ATBB", r"ATBB[A-Za-z0-9_=.\-]{32,}"),
    _shape("circleci_token", "CCIPAT_", r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}"),
    _shape("buildkite_token", "bkua_", r"bkua_[a-f0-9]{40}"),
    _shape("npm_token", "npm_", r"npm_[A-Za-z0-9]{36}"),
    _shape("pypi_token", "pypi-", rf"pypi-AgE[A-Za-z0-9]{{5,}}{_B64URL}{{40,}}"),
    _shape("docker_token", "dckr_pat_", rf"dckr_pat_{_B64URL}{{27,}}"),
    _shape("postman_key", "PMAK-", r"PMAK-[A-Za-z0-9\-]{59}"),
    # clouds and platforms
    _shape("aws_access_key_id", ("AKIA", "ASIA", "ABIA", "ACCA"), r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"),
    _shape("google_api_key", "AIza", rf"AIza{_B64URL}{{35}}"),
    _shape("google_oauth_secret", "GOCSPX-", rf"GOCSPX-{_B64URL}{{28}}"),
    _shape("google_oauth_token", "ya29.", rf"ya29\.{_B64URL}{{20,}}"),
    _shape("alibaba_key_id", "LTAI", r"LTAI[A-Za-z0-9]{20}"),
    _shape("digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"do[por]_v1_[a-f0-9]{64}"),
    _shape("databricks_token", "dapi", r"dapi[a-f0-9]{32}(?:-\d)?"),
    _shape("vault_token", ("hvs.", "hvb.", "hvr."), rf"hv[sbr]\.{_B64URL}{{24,}}"),
    _shape("doppler_token", "dp.", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}"),
    _shape("pulumi_token", "pul-", r"pul-[a-z0-9]{40}", _has_digit),
    _shape("flutterwave_key", "FLWSECK", r"FLWSECK(?:_TEST)?(?:-[A-Za-z0-9]{32}-X|[A-Za-z0-9]{12})"),
    _shape("flyio_token", "fo1_", rf"fo1_{_B64URL}{{43}}"),
    _shape("netlify_token", "nfp_", r"nfp_[A-Za-z0-9]{36}"),
    _shape("supabase_token", "sbp_", r"sbp_[a-z0-9]{40}"),
    _shape("supabase_token", "sb_secret_", rf"sb_secret_{_B64URL}{{31,}}"),
    _shape("planetscale_token", "pscale_", rf"pscale_(?:tkn|pw|oauth)_{_B64URL}{{32,64}}"),
    _shape("heroku_token", "HRKU-", rf"HRKU-{_B64URL}{{58,60}}"),
    _shape("grafana_token", "glc_", r"glc_[A-Za-z0-9+/]{32,400}={0,2}"),
    _shape("grafana_token", "glsa_", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    _shape(
        "newrelic_key",
        ("NRAK-", "NRII-", "NRJS-", "NRIQ-", "NRBR-", "NRAA-"),
        r"NR(?:AK|II|JS|IQ|BR|AA)-[A-Za-z0-9_\-]{19,40}",
        _newrelic,
    ),
    _shape("prefect_token", "pnu_", r"pnu_[A-Za-z0-9]{36}"),
    _shape("onepassword_token", "ops_eyJ", rf"ops_eyJ{_B64URL}{{100,}}={{0,2}}"),
    # SaaS
    _shape("slack_token", "xoxe.", r"xoxe\.xox[a-z]-[A-Za-z0-9\-]{10,}"),  # a refresh token, whole
    _shape("slack_token", "xox", r"xox[abprse]-[A-Za-z0-9\-]{10,}"),
    _shape("slack_token", "xapp-", r"xapp-\d-[A-Za-z0-9\-]{10,}"),
    _shape("stripe_key", ("sk_live_", "sk_test_", "rk_live_", "rk_test_"), r"[sr]k_(?:live|test)_[0-9A-Za-z]{10,}"),
    _shape("stripe_key", "whsec_", r"whsec_[0-9A-Za-z]{24,}"),
    _shape("sendgrid_key", "SG.", rf"SG\.{_B64URL}{{22}}\.{_B64URL}{{43}}"),
    _shape("twilio_key", "SK", r"SK[0-9A-Za-z]{32}", lambda t: _has_digit(t) and not t.isupper()),
    _shape("shopify_token", ("shpat_", "shpss_", "shpca_", "shppa_"), r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    _shape("square_token", "EAAA", rf"EAAA{_B64URL}{{60}}"),
    _shape("square_token", ("sq0csp-", "sq0atp-"), rf"sq0(?:csp|atp)-{_B64URL}{{22,43}}"),
    _shape("atlassian_token", ("ATATT", "ATCTT"), r"AT[AC]TT[A-Za-z0-9_\-=]{100,}"),
    _shape("sentry_token", ("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9_=+/\-]{64,}"),
    _shape("linear_key", ("lin_api_", "lin_oauth_"), r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    _shape("notion_token", "ntn_", r"ntn_[0-9]{11}[A-Za-z0-9]{35}"),
    _shape("notion_token", "secret_", r"secret_[A-Za-z0-9]{43}", _random_looking),
    _shape("airtable_token", "pat", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    _shape("figma_token", "figd_", rf"figd_{_B64URL}{{40,}}"),
    _shape("mapbox_token", "sk.eyJ", rf"sk\.eyJ{_B64URL}{{10,}}\.{_B64URL}{{10,}}"),
    # more registries, clouds and SaaS (their documented formats)
    _shape("artifactory_token", "AKCp", r"AKCp[A-Za-z0-9]{60,80}"),
    _shape("artifactory_token", "cmVmd", r"cmVmd[A-Za-z0-9]{59}"),
    _shape("aws_bedrock_key", "ABSK", r"ABSK[A-Za-z0-9+/]{100,280}={0,2}"),
    _shape("clickhouse_key", "4b1d", r"4b1d[A-Za-z0-9]{38}", _mixed_case),
    _shape("clojars_token", "CLOJARS_", r"CLOJARS_[A-Za-z0-9]{60}"),
    _shape("cloudflare_origin_ca_key", "v1.0-", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    _shape("contentful_token", "CFPAT-", rf"CFPAT-{_B64URL}{{43}}"),
    _shape("crates_io_token", "cio", r"cio[A-Za-z0-9]{32}", _random_looking),
    _shape("dropbox_token", "sl.", rf"sl\.(?:u\.)?{_B64URL}{{100,1400}}"),
    _shape("flyio_token", ("fm1", "fm2"), r"fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}"),
    _shape("grafana_token", "eyJrIjoi", r"eyJrIjoi[A-Za-z0-9+/]{60,400}={0,3}"),
    _shape("harness_token", ("pat.", "sat."), rf"[ps]at\.{_B64URL}{{22}}\.[A-Za-z0-9]{{24}}\.[A-Za-z0-9]{{20}}"),
    _shape("infracost_key", "ico-", r"ico-[A-Za-z0-9]{32}"),
    _shape("mailgun_key", ("key-", "pubkey-"), rf"(?:pub)?key-{_HEX}{{32}}"),
    _shape("nuget_key", "oy2", r"oy2[a-z0-9]{43}"),
    _shape("octopus_key", "API-", r"API-[A-Z0-9]{26}", _has_digit),
    _shape("openshift_token", "sha256~", rf"sha256~{_B64URL}{{43}}"),
    _shape("readme_key", "rdme_", r"rdme_[a-z0-9]{70}"),
    _shape("scalingo_token", "tk-us-", rf"tk-us-{_B64URL}{{48}}"),
    _shape("settlemint_token", ("sm_pat_", "sm_aat_", "sm_sat_"), r"sm_[pas]at_[A-Za-z0-9]{16}"),
    _shape("shippo_token", ("shippo_live_", "shippo_test_"), r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    _shape("sourcegraph_token", "sgp_", r"sgp_(?:(?:[a-fA-F0-9]{16}|local)_)?[a-fA-F0-9]{40}"),
    _shape("rubygems_key", "rubygems_", r"rubygems_[a-f0-9]{48}"),
    _shape("dfuse_key", "web_", r"web_[0-9a-z]{32}", _has_digit),
    _shape("gocardless_token", "live_", rf"live_{_B64URL}{{40}}", _random_looking),
    _shape("klaviyo_key", "pk_", r"pk_[A-Za-z0-9]{34}", _has_digit),
    _shape("mapbox_token", "sk.", r"sk\.[A-Za-z0-9.\-]{80,240}", _random_looking),
    _shape(
        "pubnub_key",
        ("pub-c-", "sub-c-"),
        r"(?:pub|sub)-c-[0-9a-z]{8}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{12}",
    ),
    _shape(
        "onepassword_secret_key",
        "A3-",
        r"A3-[A-Z0-9]{6}-[A-Z0-9]{6}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
        _has_digit,
    ),
    _shape("riot_key", "RGAPI-", r"RGAPI-[0-9a-z]{8}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{12}"),
    _shape("scale_key", ("live_", "test_"), r"(?:live|test)_[0-9a-f]{32}", _has_digit),
    _shape("tencent_secret_id", "AKID", r"AKID[A-Za-z0-9]{32}"),
    _shape("vault_token", ("s.", "b."), rf"[sb]\.{_B64URL}{{24,}}", lambda t: _has_digit(t) and _mixed_case(t[2:])),
    # standard formats
    _shape("age_secret_key", "AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _shape("jwt", "eyJ", rf"eyJ{_B64URL}{{6,}}\.eyJ{_B64URL}{{6,}}\.{_B64URL}*"),
    _shape("jwt", "eyJhbGciOi", r"eyJhbGciOi[A-Za-z0-9_\-.]{20,}={0,2}"),  # a JWS header ('{"alg":'), any body
    _shape("jwt", "ey", r"ey[A-Za-z0-9_\-.]{17,}\.ey[A-Za-z0-9/_\-.]{17,}={0,2}", _has_digit),
)

PREFIXES: tuple[str, ...] = tuple(sorted({p for s in SHAPES for p in s.prefixes}))

# Shapes without a prefix, found by a fixed infix inside a candidate token.
INFIX_SHAPES: tuple[tuple[str, TokenShape], ...] = (
    (
        "Q~",
        TokenShape(
            "azure_client_secret", (), re.compile(r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9])")
        ),
    ),
    (".atlasv1.", TokenShape("terraform_token", (), re.compile(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}"))),
    (
        ".",
        TokenShape(
            "discord_bot_token",
            (),
            re.compile(
                r"(?<![A-Za-z0-9])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}(?![A-Za-z0-9])"
            ),
            _user_id_part,
        ),
    ),
    ("-us", TokenShape("mailchimp_key", (), re.compile(r"(?<![A-Za-z0-9])[0-9a-f]{32}-us\d{1,2}(?![A-Za-z0-9])"))),
    ("-NRMA", TokenShape("newrelic_key", (), re.compile(r"(?<![A-Za-z0-9])AA[a-f0-9]{40}-NRMA(?![A-Za-z0-9])"))),
    ("NRAL", TokenShape("newrelic_key", (), re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{36}NRAL(?![A-Za-z0-9])"))),
    # Azure's keys carry a signature at a fixed place: "JQQJ9" (most services), "AZDO" (DevOps PATs)
    (
        "JQQJ9",
        TokenShape(
            "azure_key", (), re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{40,60}JQQJ9[A-Za-z0-9]{20,35}(?![A-Za-z0-9])")
        ),
    ),
    (
        "AZDO",
        TokenShape(
            "azure_devops_token", (), re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{70,80}AZDO[A-Za-z0-9]{4}(?![A-Za-z0-9])")
        ),
    ),
)

# A candidate: a run of token characters long enough to hold any shape above.
CANDIDATE = re.compile(r"(?<![A-Za-z0-9_.~\-])[A-Za-z0-9_.~\-]{20,}")
