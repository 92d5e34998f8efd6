"""Both SDK backends against a real local model: llama.cpp's llama-server serving gemma3-270m.

The model is a tiny *base* model: these tests check that calls complete, usage is counted,
schema-constrained JSON parses and junk answers are handled (never that answers are good).

Runs under ``.ci/run`` (SKILLOPT_REQUIRE_LIVE=1) or locally with ``SKILLOPT_LIVE=1``; skips otherwise.
Uses ``SKILLOPT_LLAMA_URL`` when set; otherwise starts ``scripts/llama_server.sh start`` and stops
the server by PID. Skips only when the llama-server binary has not been built
(``scripts/llama_server.sh build``; ``.ci/run`` builds it first and sets SKILLOPT_REQUIRE_LIVE=1,
which turns that skip into a failure).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from collections.abc import Iterator

import pytest

from skillopt_sleep.backends.anthropic_api import AnthropicBackend
from skillopt_sleep.backends.base import Request
from skillopt_sleep.backends.client import Client, preflight
from skillopt_sleep.backends.limits import Limiter
from skillopt_sleep.backends.retry import RetryPolicy
from skillopt_sleep.backends.openai_api import OpenAIBackend
from skillopt_sleep.config import Config
from skillopt_sleep.reply_json import extract_json
from skillopt_sleep.checks.judges import score_rule
from skillopt_sleep.night import NightOptions, run_night
from skillopt_sleep.paths import project_dirs

from tests.support.tasks import make_tasks, write_tasks_file

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "llama_server.sh"
DOCS = "# Skill\n- Commit subjects stay under 50 characters.\n- Mention the ticket as Refs: ACME-123.\n"
# maxLength bounds the string: a base model repeats itself until max_tokens cuts the JSON short
SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reason": {"type": "string", "maxLength": 40}},
    "required": ["score", "reason"],
}


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        state = Path(f"/proc/{pid}/status")
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if state.exists() and "\nState:\tZ" in state.read_text():
            return  # exited; waiting for its (re)parent to reap it
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("SKILLOPT_LLAMA_URL"):
        yield os.environ["SKILLOPT_LLAMA_URL"].rstrip("/")
        return
    required = os.environ.get("SKILLOPT_REQUIRE_LIVE") == "1"
    if not required and os.environ.get("SKILLOPT_LIVE") != "1":
        # A CPU model server is slow and heavy on a busy developer machine: opt in locally.
        pytest.skip(
            "live tests run under .ci/run, or locally with SKILLOPT_LIVE=1 (after `bash scripts/llama_server.sh build`)"
        )
    if subprocess.run(["bash", str(SCRIPT), "path"], capture_output=True).returncode != 0:
        reason = "llama-server is not built: run `bash scripts/llama_server.sh build` (.ci/run does)"
        if required:
            pytest.fail(reason)
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("llama-server") / "llama-server.log"  # pytest prunes old runs' tmp dirs
    env = {
        **os.environ,
        "LLAMA_PARENT_PID": str(os.getpid()),  # the server dies with this run
        "LLAMA_SERVER_LOG": str(log),
    }
    started = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=900, env=env)
    assert started.returncode == 0, f"llama-server did not start:\n{started.stderr[-3000:]}"
    url, pid = started.stdout.split()
    try:
        yield url
    finally:
        _stop(int(pid))


def client(backend) -> Client:
    return Client(backend, limiter=Limiter(2), retry=RetryPolicy(attempts=3, base_delay=0.5))


def openai_backend(url: str, **kw) -> OpenAIBackend:
    return OpenAIBackend("gemma3-270m", api_key="sk-no-key-required", base_url=url + "/v1", timeout=120, **kw)


def anthropic_backend(url: str, **kw) -> AnthropicBackend:
    return AnthropicBackend("gemma3-270m", api_key="no-key-required", base_url=url, timeout=120, **kw)


@pytest.mark.parametrize("make", [openai_backend, anthropic_backend], ids=["openai", "anthropic"])
def test_calls_complete_and_usage_is_counted(llama_url, make):
    # max_output: a base model rambles to max_tokens; with the cap binding, a cut-off reply is
    # not asked for again with a larger one (slow on CI's 2 cores), only marked
    c = client(make(llama_url, max_output=48))
    preflight(c)
    requests = [
        Request("attempt", DOCS, f"Write the commit message for change {i}.", max_tokens=48, sample=i) for i in range(3)
    ]
    out = c.map(requests)
    assert len(out) == 3 and all(o.ok and o.text.strip() for o in out)
    for o in out:
        assert o.usage.input_tokens + o.usage.cache_read_tokens > 0 and o.usage.output_tokens > 0
    # every provider call is counted once: the three requests, plus any call repeated after a timeout
    # or a cut-off reply (a loaded machine can slow the model past the call limit)
    repeated = c.stats.retries + c.stats.truncation_retries
    assert 3 <= c.stats.calls["attempt"] <= 3 + repeated and c.stats.usage.output_tokens >= 3
    score = score_rule([{"op": "contains", "arg": "Refs: ACME-"}, {"op": "max_chars", "arg": 2000}], out[0].text)
    assert 0.0 <= score.soft <= 1.0  # a junk answer is scored, not a crash


def test_schema_constrained_json_parses(llama_url):
    c = client(openai_backend(llama_url))
    answer = c.complete(
        Request(
            "judge",
            "You grade answers.",
            "Grade: 'fixed typo'. Give score and reason.",
            max_tokens=128,
            temperature=0.0,
            json_schema=SCHEMA,
        )
    )
    value = json.loads(answer.text)
    assert set(value) >= {"score", "reason"} and isinstance(value["score"], (int, float))


def test_unconstrained_junk_is_handled(llama_url):
    c = client(anthropic_backend(llama_url))  # llama-server's /v1/messages ignores output_config
    answer = c.complete(Request("reflect", "Return JSON edits.", "Propose edits as JSON.", max_tokens=48))
    parsed = extract_json(answer.text)
    assert parsed is None or isinstance(parsed, (dict, list))


@pytest.mark.parametrize("spec", ["openai", "anthropic"])
def test_dry_run_night(llama_url, tmp_path, spec):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# proj\n\nHand-written notes.\n", encoding="utf-8")
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks(per_kind=2))
    base_url = llama_url + "/v1" if spec == "openai" else llama_url
    config = Config(
        # max_output: a base model rambles to max_tokens, at ~20-70 tokens/s on CI's 2 cores
        backend=f"{spec}:base_url={base_url},api_key=no-key-required,timeout=120,max_output=48",
        model="gemma3-270m",
        agent="claude",
        k=2,
        val_samples=2,
        max_val_samples=2,
        max_edits=1,
        concurrency=2,
        retries=2,
        retry_base_delay=0.5,
    )
    report = run_night(NightOptions(project=project, config=config, mode="dry-run", tasks_file=tasks_file))
    assert report.status in ("proposed", "no-change"), report.notes  # a dry run stages nothing
    assert report.backends["target"] == f"{spec}:gemma3-270m"
    assert sum(report.calls.values()) > 0
    assert report.usage.output_tokens > 0 and report.usage.input_tokens + report.usage.cache_read_tokens > 0
    assert not project_dirs(project).staging.exists()  # a dry run stages nothing
