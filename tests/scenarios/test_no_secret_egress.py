"""Nothing the engine sends to a provider or writes to disk may contain an unredacted secret:
a whole night with secrets planted in the transcripts (prompts and complaints) and in the live
CLAUDE.md, through a backend that records every request it is sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.backends import assembly
from skillopt_sleep.commands.demo import build_demo_home
from skillopt_sleep.config import Config
from skillopt_sleep.night import NightOptions, run_night

from tests.fixtures.redaction.corpus import secret_fragments, secret_samples
from tests.test_redact import SECRETS
from tests.support.fake_backend import FakeBackend, forward

# the hand-written shapes plus one generated sample of every corpus shape
GENERATED = secret_samples(seed=9, per_shape=1)
PLANTED = [template.format(s=secret) for _kind, template, secret in SECRETS] + [s.text for s in GENERATED]
SECRET_VALUES = [secret for _kind, _template, secret in SECRETS] + [
    fragment for s in GENERATED for fragment in secret_fragments(s.secret)
]


def _plant(claude: Path, project: Path) -> None:
    n = 0
    for path in sorted(claude.rglob("*.jsonl")):
        lines = path.read_text().splitlines()
        out = []
        for line in lines:
            record = json.loads(line)
            msg = record.get("message") or {}
            if record.get("type") == "user" and isinstance(msg.get("content"), str) and not record.get("isMeta"):
                msg["content"] += " (context: " + PLANTED[n % len(PLANTED)] + ")"
                n += 1
            out.append(json.dumps(record))
        path.write_text("\n".join(out) + "\n")
    with open(project / "CLAUDE.md", "a") as fh:
        fh.write("\n".join(f"- note: {p}" for p in PLANTED) + "\n")


def _visible(value: str) -> bool:
    """Does any planted secret value appear in ``value``?"""
    return any(secret in value for secret in SECRET_VALUES)


def test_a_night_never_sends_or_writes_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, claude, project = build_demo_home(tmp_path)
    _plant(claude, project)
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(home))
    recorders: list[FakeBackend] = []
    real = assembly.make_backend

    def recording_backend(*args, **kwargs):
        inner = real(*args, **kwargs)
        recorders.append(FakeBackend(forward(inner), id=inner.id, price=inner.price, offline=inner.offline))
        return recorders[-1]

    monkeypatch.setattr(assembly, "make_backend", recording_backend)
    config = Config(
        backend="sim:correct=1,harmful=0.3,seed=2",
        agent="claude",
        source="claude",
        claude_home=str(claude),
        miner="llm",
    )
    report = run_night(NightOptions(project=project, config=config, mode="run"))
    assert report.n_tasks > 0 and report.status == "staged"

    sent = [r for rec in recorders for r in rec.requests]
    assert len(sent) > 50
    for request in sent:
        blob = request.system + request.user + json.dumps(request.payload, default=str)
        assert not _visible(blob), f"secret sent to the provider in a {request.purpose} request"

    from skillopt_sleep.staging.adoption import adopt

    adopt(project, allow_simulated=True)  # the adoption ledger must not copy secrets either (backups of a changed
    # CLAUDE.md: tests/staging/test_stage.py::test_no_copy_of_a_secret_in_the_live_file_is_written)
    written = [p for root in (home, project / ".skillopt-sleep") for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "evidence.jsonl" for p in written)
    for path in written:
        assert not _visible(path.read_bytes().decode("utf-8", "replace")), f"secret written to {path}"
