"""``run --estimate``: a night priced before any model call, from tonight's tasks and settings,
corrected by the project's past nights; ``run`` records what it spent beside its estimate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt_sleep import estimate
from skillopt_sleep.commands.demo import build_demo_home
from skillopt_sleep.config import Config
from skillopt_sleep.files import append_jsonl
from skillopt_sleep.store.history import project_key
from skillopt_sleep.night import NightOptions
from tests.support.openai_server import FakeOpenAI
from tests.support.tasks import make_tasks, write_tasks_file


def engine(*args: str, home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SKILLOPT_SLEEP_") and k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    env["SKILLOPT_SLEEP_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "skillopt_sleep", *args], capture_output=True, text=True, env=env, timeout=300, cwd=cwd
    )


@pytest.mark.slow  # an estimate and a whole night through the CLI
def test_estimate_calls_no_model_and_stages_nothing_while_the_night_does(tmp_path: Path) -> None:
    """The same project, backend and flags: ``--estimate`` sends nothing to the (counting) provider
    and leaves the project as it was; a dry-run of the same night reaches it."""
    home, claude, project = build_demo_home(tmp_path / "demo")
    before = sorted(p.relative_to(project) for p in project.rglob("*"))
    with FakeOpenAI() as fake:
        fake.responder = lambda body: json.dumps({"checkable": False, "checks": []})
        spec = f"openai:base_url={fake.base_url},api_key={fake.key},model=gpt-4.1-mini"
        common = [
            "--project",
            str(project),
            "--claude-home",
            str(claude),
            "--backend",
            spec,
            "--agent",
            "claude",
            "--source",
            "claude",
        ]
        done = engine("run", "--estimate", "--json", *common, home=home)
        assert done.returncode == 0, done.stderr
        assert fake.requests == []
        out = json.loads(done.stdout)
        assert sorted(p.relative_to(project) for p in project.rglob("*")) == before  # nothing staged
        dry = engine("dry-run", "--max-calls", "12", "--quiet", *common, home=home)
        assert fake.requests, dry.stderr  # the same night reaches the provider
    assert out["ok"] is True and out["calls"] > 0 and out["input_tokens"] > 0 and out["output_tokens"] > 0
    assert out["payer"]["kind"] == "api" and out["payer"]["login"] is None
    assert out["cost_usd"] > 0  # gpt-4.1-mini has a price in the table
    assert out["minutes"] > 0 and out["plan"]["sessions"] > 0 and out["plan"]["tasks"]["train"] > 0
    # the real optimizer mines with the LLM: the estimate counts those calls too
    assert out["plan"]["calls_by_phase"].get("mine", 0) > 0


def test_estimate_text_names_the_cli_login_that_pays(tmp_path: Path) -> None:
    home, claude, project = build_demo_home(tmp_path / "demo")
    done = engine(
        "run",
        "--estimate",
        "--project",
        str(project),
        "--claude-home",
        str(claude),
        "--backend",
        "claude-cli",
        "--agent",
        "claude",
        "--source",
        "claude",
        home=home,
    )
    assert done.returncode == 0, done.stderr
    assert "Claude Code login" in done.stdout and "`claude` CLI" in done.stdout
    assert "model calls" in done.stdout and "nothing was run or staged" in done.stdout
    assert "$" not in done.stdout  # a login is followed in calls and tokens, not dollars
    assert "capped at 400 calls a night (the default when a model answers" in done.stdout


def test_the_estimate_names_the_call_cap_in_force(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "home"))
    assert not any("capped at" in n for n in estimate.estimate(_options(tmp_path)).notes)  # the simulator: none
    notes = estimate.estimate(_options(tmp_path, max_calls=90)).notes
    assert [n for n in notes if n.startswith("capped at 90 calls a night: the night plans to fit it")], notes


@pytest.mark.parametrize(
    ("backend", "kind", "login"),
    [
        ("claude-cli:default", "login", "claude"),
        ("codex-cli:default", "login", "codex"),
        ("pi-cli:anthropic/claude-sonnet-4-5", "login", "pi"),
        ("anthropic:claude-sonnet-4-6", "api", None),
        ("sim(follow=0.9,seed=1)", "none", None),
    ],
)
def test_who_pays(backend: str, kind: str, login: str | None) -> None:
    payer = estimate.payer_of(backend)
    assert payer["kind"] == kind and payer["login"] == login


def _options(tmp_path: Path, backend: str = "sim:seed=3", **config: object) -> NightOptions:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    (project / "CLAUDE.md").write_text("# p\n", encoding="utf-8")
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks(4))
    return NightOptions(
        project=project, config=Config(backend=backend, agent="claude", **config), mode="run", tasks_file=tasks_file
    )


def test_past_nights_on_the_same_backend_correct_the_estimate(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "home"))
    opts = _options(tmp_path)
    first = estimate.estimate(opts)
    assert first.correction.nights == 0 and first.calls == first.rehearsal.calls
    target = first.rehearsal.backends["target"]
    raw = first.rehearsal.to_dict()
    doubled = {
        "calls": 2 * raw["calls"],
        "input_tokens": 3 * raw["input_tokens"],
        "output_tokens": raw["output_tokens"],
        "seconds": 2 * raw["calls"] * 0.5,
    }
    append_jsonl(
        estimate.log_path(),
        {"project": project_key(opts.project), "backend": target, "estimated": raw, "actual": doubled},
        {
            "project": project_key(opts.project),
            "backend": "claude-cli:default",
            "estimated": raw,
            "actual": {**doubled, "calls": 10 * raw["calls"]},
        },  # another backend: not this one's
        {"project": "/elsewhere", "backend": target, "estimated": raw, "actual": {"calls": 1}},
    )
    second = estimate.estimate(opts)
    assert second.correction.nights == 1
    assert second.calls == round(2 * second.rehearsal.calls)
    assert second.input_tokens == round(3 * second.rehearsal.input_tokens)
    assert second.output_tokens == second.rehearsal.output_tokens
    assert second.minutes == pytest.approx(second.calls * 0.5 / 60)  # the project's measured pace


def test_a_run_records_its_estimate_beside_what_it_spent(tmp_path: Path) -> None:
    from skillopt_sleep.cli import main

    home = tmp_path / "home"
    opts = _options(tmp_path)
    env_home = os.environ.get("SKILLOPT_SLEEP_HOME")
    os.environ["SKILLOPT_SLEEP_HOME"] = str(home)
    try:
        code = main(
            [
                "run",
                "--project",
                str(opts.project),
                "--tasks-file",
                str(opts.tasks_file),
                "--backend",
                "sim:seed=3",
                "--agent",
                "claude",
                "--quiet",
            ]
        )
        entries = estimate.past_nights(opts.project)
    finally:
        if env_home is None:
            os.environ.pop("SKILLOPT_SLEEP_HOME", None)
        else:
            os.environ["SKILLOPT_SLEEP_HOME"] = env_home
    assert code == 0 and len(entries) == 1
    entry = entries[0]
    assert entry["estimated"]["calls"] > 0 and entry["actual"]["calls"] > 0
    assert entry["actual"]["input_tokens"] > 0 and entry["actual"]["seconds"] is not None
    assert entry["backend"].startswith("sim(")


def test_dry_run_says_its_estimate_first_and_that_nothing_was_staged(tmp_path: Path) -> None:
    opts = _options(tmp_path)
    done = engine(
        "dry-run",
        "--project",
        str(opts.project),
        "--tasks-file",
        str(opts.tasks_file),
        "--backend",
        "sim:seed=3",
        "--agent",
        "claude",
        home=tmp_path / "home",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    first_estimate = next(i for i, line in enumerate(lines) if "estimate for tonight" in line)
    first_call = next(i for i, line in enumerate(lines) if "model calls" in line and "for the night" in line)
    assert first_estimate < first_call
    assert "nothing was staged or saved" in done.stdout
    assert not (opts.project / ".skillopt-sleep").exists()


def test_run_keeps_its_answers_and_dry_run_does_not(tmp_path: Path) -> None:
    from skillopt_sleep import estimate_answers

    opts = _options(tmp_path)
    common = [
        "--project",
        str(opts.project),
        "--tasks-file",
        str(opts.tasks_file),
        "--backend",
        "sim:seed=3",
        "--agent",
        "claude",
        "--quiet",
    ]
    assert engine("dry-run", *common, home=tmp_path / "home").returncode == 0
    assert not estimate_answers.answers_path(opts.project).exists()
    done = engine("run", *common, home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert estimate_answers.load(opts.project)  # reflection's answers at least
