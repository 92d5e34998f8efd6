"""Time is always bounded. A hanging or dripping provider (the fakes' ``Hang`` and
``Drip``) ends a call at its total deadline and a night at the night's deadline; when one call fails
for good, the calls in flight stop and nothing retries."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from tests.support.http_base import Drip, Fail, Hang

from skillopt_sleep.backends.anthropic_api import AnthropicBackend
from skillopt_sleep.backends.base import ProviderError, Request
from skillopt_sleep.backends.deadline import Deadline
from skillopt_sleep.backends.client import Client
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.config import Config
from skillopt_sleep.errors import EXIT_PROVIDER, UserError
from skillopt_sleep.night import NightOptions, run_night
from skillopt_sleep.paths import project_dirs

from tests.support.tasks import make_tasks, write_tasks_file

# A bound that is far below what an unbounded call costs (5 tries x the SDK's 120 s read timeout,
# or forever for a drip) and far above any scheduling noise on a loaded machine.
SLACK = 30.0


def client(server, *, deadline: Deadline | None = None, call_timeout: float | None = None, attempts: int = 5) -> Client:
    backend = AnthropicBackend("claude-haiku-4-5", api_key=server.key, base_url=server.base_url, timeout=120)
    return Client(
        backend,
        limiter=Limiter(4),
        retry=RetryPolicy(attempts=attempts, base_delay=0.01),
        deadline=deadline,
        call_timeout=call_timeout,
        cache=False,
    )


def req(user: str = "Write the commit message.") -> Request:
    return Request(purpose="attempt", system="Be brief.", user=user)


@pytest.mark.parametrize("fault", [Hang(), Drip(interval=0.2)], ids=["hang", "drip"])
def test_one_call_ends_at_its_total_deadline(anthropic_server, fault) -> None:
    c = client(anthropic_server, call_timeout=30.0)
    assert c.complete(req("warm up")).ok  # the SDK's import and client set-up are not the call's
    c.call_timeout = 2.0
    anthropic_server.push(*([fault] * 5))
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        c.complete(req())
    assert info.value.kind == "timeout"
    assert time.monotonic() - started < 2.0 + SLACK
    # the call's time was used up by its first try: no second try was started
    assert len(anthropic_server.seen("/v1/messages")) == 2


def test_a_failed_call_cancels_the_calls_in_flight(anthropic_server) -> None:
    deadline = Deadline(None)
    c = client(anthropic_server, deadline=deadline, call_timeout=600.0)
    assert c.complete(req("warm up")).ok
    # whichever request arrives first is refused for good (401); the other hangs
    anthropic_server.push(Fail(401, "bad key"), Hang(), Hang(), Hang())
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        c.map([req("one"), req("two")])
    assert info.value.kind == "auth"  # the root cause, whichever call reports it
    assert deadline.cancelled
    assert time.monotonic() - started < SLACK  # not the 600 s the hanging call was allowed
    # and nothing new starts once the night is cancelled
    with pytest.raises(ProviderError) as after:
        c.complete(req("three"))
    assert after.value.kind == "auth"
    time.sleep(0.5)  # a request of the cancelled map still on its way may land now; "three" may not
    bodies = [json.dumps(r.body) for r in anthropic_server.seen("/v1/messages")]
    assert not any("three" in body for body in bodies)
    # the warm-up and the refused call; the other one too when it went out before the refusal
    # came back (on a loaded machine the cancel may stop it first)
    assert len(bodies) in (2, 3)


def test_a_cancel_cuts_a_retry_backoff_short(anthropic_server) -> None:
    deadline = Deadline(None)
    c = client(anthropic_server, deadline=deadline, call_timeout=None)
    c.retry.max_total_wait = 10_000
    assert c.complete(req("warm up")).ok
    anthropic_server.push(*([Fail(529, "overloaded", {"retry-after": "600"})] * 3))
    threading.Timer(1.0, deadline.cancel, args=("the night failed",)).start()
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        c.complete(req())
    assert info.value.kind == "cancelled" and "the night failed" in info.value.message
    assert time.monotonic() - started < SLACK  # not the 600 s Retry-After
    assert len(anthropic_server.seen("/v1/messages")) == 2


@pytest.mark.slow  # whole nights waiting out their deadline
@pytest.mark.parametrize("fault", [Hang(), Drip(interval=0.5)], ids=["hang", "drip"])
def test_a_night_against_a_stuck_provider_ends_within_its_deadline(
    anthropic_server, fault, tmp_path: Path, home: Path
) -> None:
    anthropic_server.push(*([fault] * 20))
    project = tmp_path / "proj"
    project.mkdir()
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    config = Config(
        backend=f"anthropic:base_url={anthropic_server.base_url},api_key={anthropic_server.key}",
        model="claude-haiku-4-5",
        agent="claude",
        night_deadline=3.0,
    )
    started = time.monotonic()
    with pytest.raises(UserError) as info:
        run_night(NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file))
    elapsed = time.monotonic() - started
    assert info.value.code == EXIT_PROVIDER
    assert "deadline" in info.value.message and "nothing staged" in info.value.message
    assert elapsed < 3.0 + SLACK
    assert not project_dirs(project).staging.exists()
