"""The evidence log (``evidence.py``): every model call of a night, redacted, one JSON line each."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from skillopt_sleep.backends.base import Completion, Request
from skillopt_sleep.backends.evidence import EvidenceLog
from skillopt_sleep.types import Usage

SECRET = "sk-ant-api03-" + "a" * 40


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_call_is_one_line_redacted_bounded_and_cleaned(tmp_path: Path) -> None:
    path = tmp_path / "night" / "evidence.jsonl"
    log = EvidenceLog(path)
    request = Request(purpose="reflect", system="the documents", user="q\x1b[2J" + "u" * 5000, sample=2)
    log(
        "optimizer",
        request,
        Completion(text=f"rule {SECRET}", model="m", usage=Usage(input_tokens=4), latency=0.123456),
    )
    log.reused("target", request, Completion(text="", error="server", error_message=f"bad key {SECRET}"))
    log.close()
    first, second = _lines(path)
    assert (first["role"], first["purpose"], first["sample"], first["model"]) == ("optimizer", "reflect", 2, "m")
    assert first["system_sha256"] == hashlib.sha256(b"the documents").hexdigest()
    assert "\x1b" not in first["user"] and len(first["user"]) <= 4000
    assert SECRET not in first["text"] and "[REDACTED:" in first["text"]
    assert first["usage"]["input_tokens"] == 4 and first["latency"] == 0.1235 and first["reused"] is False
    assert second["reused"] is True and second["error"] == "server" and SECRET not in second["error_message"]


def test_calls_from_many_threads_each_write_one_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "evidence.jsonl"
    log = EvidenceLog(path)
    request = Request(purpose="attempt", system="s", user="x" * 3000)

    def write() -> None:
        for _ in range(50):
            log("target", request, Completion(text="y" * 3000))

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.close()
    assert len(_lines(path)) == 200
