from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_sleep.config import Config
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_PROVIDER, UserError
from skillopt_sleep.night import NightOptions, run_night
from skillopt_sleep.paths import project_dirs, user_dirs
from skillopt_sleep.store.history import History

from tests.support.fake_backend import FakeBackend, forward
from tests.support.staged_project import project_with_memory
from tests.support.tasks import make_tasks, write_tasks_file


def options(
    project: Path, tasks_file: Path, mode: str = "run", backend: str = "sim:correct=1,harmful=0,seed=1", **kw
) -> NightOptions:
    config = Config(backend=backend, agent="claude", retries=2, retry_base_delay=0.0)
    return NightOptions(project=project, config=config, mode=mode, tasks_file=tasks_file, **kw)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return project_with_memory(tmp_path, b"# proj\n\nHand-written notes.\n")


def test_run_stages_a_proposal_with_manifest_and_saves_history(project: Path, tmp_path: Path) -> None:
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    report = run_night(options(project, tasks_file))
    assert report.status == "staged"
    staged = Path(report.staging_dir)
    assert staged.parent == project_dirs(project).staging
    for name in ("report.md", "report.json", "manifest.json", "evidence.jsonl"):
        assert (staged / name).is_file(), name
    manifest = json.loads((staged / "manifest.json").read_text())
    assert manifest["files"], "accepted edits produce proposed documents"
    for entry in manifest["files"]:
        assert len(entry["proposal_sha256"]) == 64
    nights = History().nights(project)
    assert [n["night_id"] for n in nights] == [report.night_id]
    assert (project / "CLAUDE.md").read_text() == "# proj\n\nHand-written notes.\n", "nothing adopted"


def test_dry_run_stages_and_saves_nothing(project: Path, tmp_path: Path) -> None:
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    report = run_night(options(project, tasks_file, mode="dry-run"))
    assert report.accepted_edits
    assert report.staging_dir is None
    assert not project_dirs(project).staging.exists()
    assert not user_dirs().history.exists()
    assert not user_dirs().edit_evidence.exists(), "a dry run pools no evidence"


def test_a_night_pools_its_val_evidence_for_the_next(project: Path, tmp_path: Path) -> None:
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    opts = options(project, tasks_file, backend="sim:correct=0,harmful=1,seed=2")
    opts.config.learning.screen_pool = 1  # gate the harmful rules rather than drop them when they fix nothing on train
    run_night(opts)
    records = json.loads(user_dirs().edit_evidence.read_text())["records"]
    assert all(r["project"] == str(project.resolve()) for r in records)
    assert any(r.get("edit", {}).get("nights") == 1 for r in records), "each gated edit is recorded"


def test_provider_down_fails_loudly_and_advances_nothing(project: Path, tmp_path: Path) -> None:
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    with pytest.raises(UserError) as info:
        run_night(options(project, tasks_file, backend="sim:down=1"))
    assert info.value.code == EXIT_PROVIDER
    assert "sim" in info.value.message and "server" in info.value.message
    assert not project_dirs(project).staging.exists()
    assert not user_dirs().history.exists()


def test_real_backends_refuse_an_unreviewed_tasks_file(project: Path, tmp_path: Path) -> None:
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks(), reviewed=False)
    with pytest.raises(UserError) as info:
        run_night(options(project, tasks_file, backend="openai:base_url=http://127.0.0.1:9/v1"))
    assert info.value.code == EXIT_CONFIG and "reviewed" in info.value.message


def test_test_split_scores_are_reported(project: Path, tmp_path: Path) -> None:
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks(per_kind=5, test=True))
    report = run_night(options(project, tasks_file, mode="dry-run"))
    data = report.to_dict()
    assert data["test_baseline"] is not None and data["test_candidate"] is not None


def test_target_skill_path_is_the_document_evolved(project: Path, tmp_path: Path) -> None:
    skill = tmp_path / "my-skill" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text("---\nname: my-skill\ndescription: mine\n---\n\nBody.\n", encoding="utf-8")
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    report = run_night(options(project, tasks_file, target_skill_path=skill))
    assert report.documents["skill"] == str(skill)
    manifest = json.loads((Path(report.staging_dir) / "manifest.json").read_text())
    assert str(skill) in {e["live_path"] for e in manifest["files"]}


def test_a_token_budget_ends_the_night_with_a_partial_report(project: Path, tmp_path: Path) -> None:
    from skillopt_sleep.errors import EXIT_BUDGET
    from skillopt_sleep.night import NightStopped

    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    opts = options(project, tasks_file)
    opts.config.budgets.max_tokens = 20_000
    with pytest.raises(NightStopped) as info:
        run_night(opts)
    assert info.value.code == EXIT_BUDGET and "tokens" in info.value.message
    report = info.value.report
    assert report.status == "budget" and sum(report.calls.values()) > 0
    assert report.usage.input_tokens + report.usage.output_tokens <= 20_000
    assert not project_dirs(project).staging.exists(), "nothing staged or adopted"
    assert [n["status"] for n in History().nights(project)] == ["budget"]


def test_dry_run_reads_like_run_but_advances_no_checkpoint(tmp_path: Path) -> None:
    from skillopt_sleep.commands.demo import build_demo_home

    _, claude, demo_project = build_demo_home(tmp_path / "demo")
    config = Config(backend="sim:seed=1", agent="claude", source="claude", claude_home=str(claude))
    state = user_dirs().state
    dry = run_night(NightOptions(project=demo_project, config=config, mode="dry-run"))
    assert dry.n_sessions == 21
    assert not state.exists() or not any(state.rglob("*checkpoint*")), "dry-run saved harvest state"
    real = run_night(NightOptions(project=demo_project, config=config, mode="run"))
    assert real.n_sessions == 21 and any(state.rglob("*checkpoint*"))
    again = run_night(NightOptions(project=demo_project, config=config, mode="dry-run"))
    assert again.n_sessions == 21, "cached sessions still count on the next night"


@pytest.mark.parametrize("backend", ["no-such-backend", "sim:down=1"])
def test_a_failed_night_leaves_no_temp_dir(project: Path, tmp_path: Path, monkeypatch, backend: str) -> None:
    import tempfile

    scratch = tmp_path / "system-tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    with pytest.raises(UserError):
        run_night(options(project, tasks_file, backend=backend))
    assert list(scratch.iterdir()) == []
    assert not project_dirs(project).tmp.exists() or list(project_dirs(project).tmp.iterdir()) == []


def test_the_next_night_removes_what_a_killed_night_left(project: Path, tmp_path: Path) -> None:
    dirs = project_dirs(project)
    leftovers = [
        dirs.tmp / "evidence-20260101T000000Z-dead.jsonl",
        dirs.staging / ".tmp-20260101T000000Z-dead-0a0b" / "manifest.json",
    ]
    for path in leftovers:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    report = run_night(options(project, tasks_file))
    assert (Path(report.staging_dir) / "evidence.jsonl").stat().st_size > 0
    assert not leftovers[1].parent.exists()
    assert list(dirs.tmp.iterdir()) == []


def test_auto_adopt_happens_under_the_night_lock(project: Path, tmp_path: Path) -> None:
    from skillopt_sleep.staging.adoption import adoptions
    from skillopt_sleep.errors import EXIT_LOCKED
    from skillopt_sleep.store.locks import ProjectLock

    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    with ProjectLock(project_dirs(project).lock, "adopt", wait=0.0):
        with pytest.raises(UserError) as info:
            run_night(options(project, tasks_file, auto_adopt=True))
        assert info.value.code == EXIT_LOCKED and "another adopt" in info.value.message
        assert run_night(options(project, tasks_file, mode="dry-run")).accepted_edits  # takes no lock
    report = run_night(options(project, tasks_file, auto_adopt=True))
    assert any(n.startswith("auto-adopted") for n in report.notes)
    (adopted,) = adoptions(project)
    assert adopted["night_id"] == report.night_id and adopted["files"]
    for entry in adopted["files"]:
        assert "skillopt-sleep:learned:start" in Path(entry["path"]).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("wrap", "miner", "expected"),
    [(True, "auto", "llm"), (False, "auto", "heuristic"), (True, "heuristic", "heuristic"), (False, "llm", "llm")],
)
def test_the_miner_follows_the_resolved_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wrap: bool, miner: str, expected: str
) -> None:
    from skillopt_sleep.backends import assembly
    from skillopt_sleep.commands.demo import build_demo_home

    home, claude, demo_project = build_demo_home(tmp_path)
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(home))
    built: list = []
    real = assembly.make_backend

    def make(*args, **kwargs):
        backend = real(*args, **kwargs)
        # any backend that is not the simulator (here: one that lets it answer)
        built.append(
            FakeBackend(forward(backend), id="wrapped-" + backend.id, price=backend.price) if wrap else backend
        )
        return built[-1]

    monkeypatch.setattr(assembly, "make_backend", make)
    config = Config(
        backend="sim:correct=1,harmful=0,seed=1",
        agent="claude",
        source="claude",
        claude_home=str(claude),
        k=1,
        val_samples=1,
        max_val_samples=1,
        miner=miner,
    )
    report = run_night(NightOptions(project=demo_project, config=config, mode="dry-run"))
    assert report.n_tasks > 0
    mined_with_model = any("mine" in getattr(b, "purposes", []) for b in built)
    if wrap:
        assert mined_with_model == (expected == "llm")
    assert any(f"miner: {expected} (auto" in n for n in report.notes) == (miner == "auto")


def test_a_night_with_a_real_optimizer_asks_it_to_merge_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The LLM merge pass runs in the night whenever the LLM miner does; its outcome is a note."""
    from skillopt_sleep.backends import assembly
    from skillopt_sleep.commands.demo import build_demo_home

    home, claude, demo_project = build_demo_home(tmp_path)
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(home))
    built: list[FakeBackend] = []
    real = assembly.make_backend

    def make(*args, **kwargs):
        backend = real(*args, **kwargs)

        def answer(request):  # a real model that merges nothing, and the simulator for the rest
            return {"same_kind": []} if request.payload.get("grouping") else forward(backend)(request)

        built.append(FakeBackend(answer, id="wrapped-" + backend.id, price=backend.price))
        return built[-1]

    monkeypatch.setattr(assembly, "make_backend", make)
    config = Config(
        backend="sim:correct=1,harmful=0,seed=1",
        agent="claude",
        source="claude",
        claude_home=str(claude),
        k=1,
        val_samples=1,
        max_val_samples=1,
        miner="auto",
    )
    report = run_night(NightOptions(project=demo_project, config=config, mode="dry-run"))
    asked = [r for b in built for r in b.requests if r.payload.get("grouping")]
    assert len(asked) == 1 and asked[0].purpose == "mine"
    assert report.n_tasks > 0 and not any("LLM grouping" in n for n in report.notes)  # merged nothing, said nothing


def test_a_lone_surrogate_in_every_prompt_still_records_the_night(tmp_path: Path, home: Path) -> None:
    """Node can split an emoji into a lone "\\ud83d"; the night stages, records its
    history and advances its checkpoints instead of crashing after staging."""
    from skillopt_sleep.commands.demo import build_demo_home
    from skillopt_sleep.config import Config
    from skillopt_sleep.night import NightOptions, run_night
    from skillopt_sleep.store.history import History

    _, claude, project = build_demo_home(tmp_path / "demo")
    for path in claude.rglob("*.jsonl"):
        path.write_text(
            path.read_text(encoding="utf-8").replace('"content": "', '"content": "\\ud83d'), encoding="utf-8"
        )
    config = Config(
        backend="sim:follow=0.9,base=0.15,correct=0.6,seed=1", agent="claude", source="claude", claude_home=str(claude)
    )
    report = run_night(NightOptions(project=project, config=config, mode="run", progress=lambda _m: None))
    assert report.n_sessions > 0
    nights = History().nights(project)
    assert [n["night_id"] for n in nights] == [report.night_id]
