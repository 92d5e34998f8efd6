"""A night for a Codex user: the demo's recurring requests as Codex rollouts (sessions/YYYY/MM/DD
with each prompt and reply written twice, injected AGENTS.md context, and a headless exec run that
must not count), harvested with --source auto, evolving AGENTS.md and .agents/skills."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from skillopt_sleep.config import Config
from skillopt_sleep.night import NightOptions, run_night

REQUESTS = [
    ("Write the commit message for the footer layout change.", 'You forgot the "Refs: ACME-" trailer again.'),
    ("Write a commit message for the currency rounding fix.", 'Missing the "Refs: ACME-" trailer.'),
    ("write the commit message for the mailer retries", 'Again, the commit needs the "Refs: ACME-" trailer.'),
    ("Write a commit message for the due_date index migration.", None),
    ("Draft the release notes for v1.4.0.", 'The release notes need a "## Breaking changes" section.'),
    ("Please draft the v1.5.0 release notes.", 'You forgot the "## Breaking changes" section.'),
    ("Draft release notes for v1.5.1.", None),
    ("draft the release notes for v1.6.0", 'Still missing the "## Breaking changes" section.'),
]


def _line(ts: datetime, kind: str, payload: dict) -> str:
    return json.dumps({"timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "type": kind, "payload": payload})


def write_rollout(
    codex_home: Path, cwd: Path, start: datetime, turns: list[str], originator: str = "codex_cli_rs"
) -> Path:
    sid = str(uuid.uuid4())
    folder = codex_home / "sessions" / start.strftime("%Y/%m/%d")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{start.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl"
    t = start
    lines = [
        _line(
            t,
            "session_meta",
            {
                "id": sid,
                "timestamp": t.isoformat(),
                "cwd": str(cwd),
                "originator": originator,
                "cli_version": "0.58.0",
                "source": "cli",
            },
        ),
        _line(t, "turn_context", {"cwd": str(cwd), "model": "gpt-5-codex"}),
        _line(
            t,
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"# AGENTS.md instructions for {cwd}\n\nBe terse."}],
            },
        ),
    ]
    for text in turns:
        t += timedelta(seconds=30)
        lines += [
            _line(
                t,
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
            ),
            _line(t, "event_msg", {"type": "user_message", "message": text, "images": []}),
        ]
        t += timedelta(seconds=20)
        reply = "Done: " + text[:40]
        lines += [
            _line(t, "event_msg", {"type": "agent_message", "message": reply}),
            _line(
                t,
                "response_item",
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]},
            ),
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def codex_project(tmp_path: Path) -> tuple[Path, Path]:
    project, codex_home = tmp_path / "acme", tmp_path / "codex"
    project.mkdir()
    (project / "AGENTS.md").write_text("# acme\n\nUse Decimal for money.\n", encoding="utf-8")
    day = datetime(2026, 11, 3, 9, tzinfo=timezone.utc)
    for n, (request, complaint) in enumerate(REQUESTS):
        write_rollout(codex_home, project, day + timedelta(hours=7 * n), [request] + ([complaint] if complaint else []))
    # our own kind of headless replay: must not count as user work
    write_rollout(codex_home, project, day, ["Write the commit message for X."] * 3, originator="codex_exec")
    return project, codex_home


def test_a_codex_night_evolves_agents_md_and_the_agents_skill(codex_project, tmp_path: Path) -> None:
    project, codex_home = codex_project
    config = Config(
        backend="sim:correct=1,harmful=0,seed=3",
        source="auto",
        agent="auto",
        codex_home=str(codex_home),
        claude_home=str(tmp_path / "no-claude"),
    )
    report = run_night(NightOptions(project=project, config=config, mode="run"))
    assert report.n_sessions == len(REQUESTS), "the exec session is not user work"
    assert report.documents["memory"] == str(project / "AGENTS.md")
    assert report.documents["skill"] == str(project / ".agents" / "skills" / "skillopt-sleep-learned" / "SKILL.md")
    assert report.accepted_edits and report.candidate > report.baseline
    manifest = json.loads((Path(report.staging_dir) / "manifest.json").read_text())
    assert {Path(e["live_path"]).name for e in manifest["files"]} <= {"AGENTS.md", "SKILL.md"}
