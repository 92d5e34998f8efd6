"""From a config to the night's two roles: shared layers, one backend per distinct spec, and what
the night asks the backends (``offline``, ``price``) instead of reading spec strings."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.backends import assembly
from skillopt_sleep.backends.assembly import build_models
from skillopt_sleep.backends.pricing import FREE
from skillopt_sleep.config import Config
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_USAGE, UserError
from skillopt_sleep.night import NightOptions, run_night

from tests.support.fake_backend import FakeBackend, forward
from tests.support.tasks import make_tasks, write_tasks_file


def test_both_roles_share_the_layers_and_one_backend_per_distinct_spec():
    models = build_models(Config(backend="sim:seed=1", concurrency=3))
    target, optimizer = models.target, models.optimizer
    assert target.backend is optimizer.backend
    assert target.limiter is optimizer.limiter and target.limiter.limit == 3
    assert target.budget is optimizer.budget and target.deadline is optimizer.deadline
    assert target.stats is optimizer.stats and (target.role, optimizer.role) == ("target", "optimizer")

    split = build_models(Config(backend="sim:seed=1", optimizer_backend="sim:seed=2"))
    assert split.target.backend is not split.optimizer.backend
    assert split.target.limiter is split.optimizer.limiter


def test_config_defaults_reach_the_backend_the_spec_names():
    config = Config(
        backend="openai",
        backend_options={"openai": {"model": "gpt-4o-mini", "max_output": 64}, "anthropic": {"model": "not-this-one"}},
    )
    backend = build_models(config).target.backend
    assert backend.id == "openai:gpt-4o-mini" and backend.max_output == 64


def test_a_bad_spec_is_a_usage_error_naming_it():
    with pytest.raises(UserError) as info:
        build_models(Config(backend="sim:bogus=1"))
    assert info.value.code == EXIT_USAGE and info.value.message.startswith("--backend:")


@pytest.mark.parametrize(
    ("target", "optimizer", "simulated", "offline"),
    [
        ("sim", "sim", True, True),
        ("sim", "openai:base_url=http://127.0.0.1:9/v1", True, False),
        ("claude-cli", "anthropic", False, False),
    ],
)
def test_the_models_say_whether_a_real_model_answers(target, optimizer, simulated, offline):
    models = build_models(Config(target_backend=target, optimizer_backend=optimizer))
    assert (models.simulated, models.offline) == (simulated, offline)


def test_every_registered_backend_declares_its_price_and_whether_it_is_offline():
    for spec in ("sim", "anthropic", "openai", "claude-cli", "codex-cli"):
        backend = build_models(Config(backend=spec)).target.backend
        assert isinstance(backend.offline, bool), spec
        assert backend.price is None or hasattr(backend.price, "cost"), spec
    assert build_models(Config(backend="sim")).target.backend.price == FREE


def replay(inner, offline: bool) -> FakeBackend:
    return FakeBackend(forward(inner), id="replay-" + inner.id, price=FREE, offline=offline)


@pytest.mark.parametrize("offline", [True, False])
def test_the_night_asks_the_backend_not_the_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: bool
) -> None:
    """A backend that is not called "sim" (here: one the simulator answers through): the night
    goes by what it declares."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# proj\n", encoding="utf-8")
    real = assembly.make_backend
    monkeypatch.setattr(assembly, "make_backend", lambda *a, **k: replay(real(*a, **k), offline))
    config = Config(backend="sim:correct=1,harmful=0,seed=1", agent="claude", retries=1)
    unreviewed = write_tasks_file(tmp_path / "tasks.json", make_tasks(), reviewed=False)
    opts = NightOptions(project=project, config=config, mode="dry-run", tasks_file=unreviewed)
    if offline:
        assert run_night(opts).simulated is True
    else:
        with pytest.raises(UserError) as info:
            run_night(opts)
        assert info.value.code == EXIT_CONFIG and "reviewed" in info.value.message
