"""A secret in a model's reply never reaches what the engine writes or prints: a night whose
optimizer replies carry credentials of known shapes in every rule's text and rationale (accepted
and refused rules alike), checked in report.json / .md / .html, evidence.jsonl, ``run --json``,
``review``, ``review --json`` and the document ``adopt`` writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.backends import assembly
from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.commands.demo import build_demo_home
from skillopt_sleep.config import Config
from skillopt_sleep.reply_json import extract_json
from skillopt_sleep.night import NightOptions, run_night
from skillopt_sleep.night_bg import print_report

from tests.test_redact import SECRETS
from tests.support.fake_backend import FakeBackend

# shapes the redactor knows, one line of prose around each
KINDS = (
    "anthropic_key",
    "openai_key",
    "github_token",
    "aws_access_key_id",
    "slack_token",
    "stripe_key",
    "secret",
    "url_credentials",
    "auth_header",
)
PLANTED = [(template.format(s=secret), secret) for kind, template, secret in SECRETS if kind in KINDS]
OPTIMIZER = ("reflect", "vary")


def _with_secrets(text: str, used: set[str]) -> str:
    """The optimizer's reply with a planted secret in every rule's content and rationale."""
    try:
        data = extract_json(text)
    except ValueError:
        return text
    items = data.get("edits") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return text
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        n = (len(used) + i) % len(PLANTED)
        content, secret = PLANTED[n]
        why, other = PLANTED[(n + 1) % len(PLANTED)]
        if item.get("content"):
            item["content"] = f"{item['content']} (for example: {content})"
            used.add(secret)
        item["rationale"] = f"{item.get('rationale') or ''} seen with {why}"
        used.add(other)
    return json.dumps(data)


def _visible(value: str) -> list[str]:
    return [secret for _line, secret in PLANTED if secret in value]


def test_no_secret_from_a_model_reply_is_written_or_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home, claude, project = build_demo_home(tmp_path)
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(home))
    used: set[str] = set()
    real = assembly.make_backend

    def planting_backend(*args, **kwargs):
        inner = real(*args, **kwargs)

        def handler(request: Request) -> Completion:
            completion = inner.complete(request)
            if request.purpose in OPTIMIZER and completion.ok:
                completion.text = _with_secrets(completion.text, used)
            return completion

        return FakeBackend(handler, id=inner.id, price=inner.price, offline=inner.offline)

    monkeypatch.setattr(assembly, "make_backend", planting_backend)
    config = Config(
        backend="sim:correct=1,harmful=0.3,seed=2", agent="claude", source="claude", claude_home=str(claude)
    )
    report = run_night(NightOptions(project=project, config=config, mode="run"))
    assert report.status == "staged" and report.accepted_edits and report.rejected_edits
    assert len(used) >= 5, used  # several shapes went through the optimizer's replies

    staged = Path(report.staging_dir or "")
    for name in ("report.json", "report.md", "report.html", "evidence.jsonl"):
        assert not _visible((staged / name).read_text(encoding="utf-8")), f"secret in {name}"

    from skillopt_sleep.commands.review import review

    capsys.readouterr()
    print_report(report, True)
    print_report(report, False)
    assert review(project) == 0
    assert review(project, as_json=True) == 0
    printed = capsys.readouterr().out
    assert "[REDACTED:" in printed  # the rules are shown, their secrets are not
    assert not _visible(printed), "secret printed by run / review"

    from skillopt_sleep.staging.adoption import adopt

    result = adopt(project, allow_simulated=True)
    adopted = "".join(Path(f["path"]).read_text(encoding="utf-8") for f in result.files)
    assert "[REDACTED:" in adopted  # the accepted rules are written, their secrets are not
    assert not _visible(adopted), "secret written into the adopted document"
    written = [p for root in (home, project / ".skillopt-sleep") for p in root.rglob("*") if p.is_file()]
    for path in written:
        assert not _visible(path.read_bytes().decode("utf-8", "replace")), f"secret written to {path}"


def test_a_report_is_written_and_printed_without_secrets_whatever_put_them_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last boundary: a report whose rules carry raw secrets (a part of the engine that did
    not go through the client, an old or edited report.json) is still written and shown redacted."""
    from skillopt_sleep.commands.review import review
    from skillopt_sleep.staging.stage import StagedFile, stage
    from skillopt_sleep.types import Edit, GateDecision, NightReport

    from tests.support.staged_project import MEMORY_NEW, MEMORY_OLD, make_project

    project = make_project(tmp_path)
    lines = [line for line, _secret in PLANTED]
    accepted = Edit("memory", "add", f"Deploy with {lines[0]}.", rationale=f"seen: {lines[1]}")
    refused = Edit("memory", "add", f"Push with {lines[2]}.", rationale=f"seen: {lines[3]}")
    report = NightReport(
        night_id="night-1",
        project=str(project),
        mode="run",
        status="staged",
        accepted_edits=[accepted],
        rejected_edits=[{"edit": refused, "reasons": [f"regressed on {lines[4]}"]}],
        decisions=[
            GateDecision(True, "accept", 0.5, 0.7, edits=[accepted]),
            GateDecision(False, "reject", 0.5, 0.4, edits=[refused]),
        ],
        notes=[f"note {lines[5]}"],
    )
    staged = stage(project, report, [StagedFile("memory", project / "CLAUDE.md", MEMORY_OLD, MEMORY_NEW)])
    for name in ("report.json", "report.md", "report.html"):
        assert not _visible((staged / name).read_text(encoding="utf-8")), f"secret in {name}"
    capsys.readouterr()
    print_report(report, True)
    print_report(report, False)
    assert review(project) == 0
    assert review(project, as_json=True) == 0
    printed = capsys.readouterr().out
    assert "[REDACTED:" in printed and "Deploy with" in printed
    assert not _visible(printed), "secret printed by run / review"

    # a report.json written by anything else is read back redacted too
    raw = json.loads((staged / "report.json").read_text(encoding="utf-8"))
    raw["accepted_edits"][0]["content"] = f"Deploy with {lines[6]}."
    (staged / "report.json").write_text(json.dumps(raw), encoding="utf-8")
    assert review(project, as_json=True) == 0
    assert not _visible(capsys.readouterr().out), "secret in a stored report printed by review"


class _Store:
    """A call store holding a reply with a secret, as an edited journal would."""

    def __init__(self, text: str):
        self.text = text

    def get(self, key: str, request: Request) -> Completion | None:
        return Completion(text=self.text)

    def put(self, key: str, request: Request, completion: Completion) -> None:
        pass


def test_every_way_a_reply_reaches_the_client_is_redacted() -> None:
    """A direct call's reply and its error message, and a reply a store replays."""
    from skillopt_sleep.backends.client import Client
    from tests.support.fake_backend import script

    line, secret = PLANTED[0]
    request = Request(purpose="reflect", system="", user="rules?")
    direct = Client(FakeBackend(script(Completion(text=f"use {line}"))), cache=False)
    assert secret not in direct.complete(request).text
    replayed = Client(FakeBackend(script()), stores=[_Store(f"use {line}")])
    answer = replayed.complete(request)
    assert "[REDACTED:" in answer.text and secret not in answer.text


def test_the_refused_rule_ledger_keeps_no_secret(tmp_path: Path) -> None:
    from skillopt_sleep.store.refusals import RejectedLedger
    from skillopt_sleep.types import Edit

    ledger = RejectedLedger(tmp_path / "rejected.jsonl")
    ledger.add(
        tmp_path,
        Edit("memory", "add", f"Push with {PLANTED[0][0]}.", rationale=PLANTED[1][0]),
        [f"regressed on {PLANTED[2][0]}"],
        "night-1",
    )
    written = (tmp_path / "rejected.jsonl").read_text(encoding="utf-8")
    assert "Push with" in written and "[REDACTED:" in written and not _visible(written)
