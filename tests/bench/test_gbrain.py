"""bench_gbrain converts a seed skill's published files (here a small seed written for the test in
the same format) and learns on it: the skill in its own document, train and held-out splits, the
checks the judges do not know listed as dropped, and per night the score, the substance kept and
what was adopted where."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.scripts import script_module

SKILL = (
    "---\nname: release-noter\ndescription: Release Noter\n---\n\n# Release Noter\n\n"
    "Write the release notes for the change.\n"
)


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from script_module("bench_gbrain")


def seed(root: Path) -> Path:
    folder = root / "skillopt-v1" / "seed-no-fixes"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL, encoding="utf-8")
    checks = [{"op": "section_present", "arg": "Fixes"}, {"op": "min_citations", "arg": 1}]
    for name, count, what in (("benchmark.jsonl", 6, "version"), ("held-out.jsonl", 3, "hotfix")):
        lines = [
            json.dumps(
                {
                    "task_id": f"t-{i}",
                    "task": f"Write release notes for {what} {i}.",
                    "judge": {"kind": "rule", "checks": checks},
                }
            )
            for i in range(count)
        ]
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder.parent


def test_a_seed_is_converted_and_learned(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SKILLOPT_SLEEP_HOME", str(tmp_path / "home"))
    data = seed(tmp_path)
    assert (
        bench.main(
            [
                "--data",
                str(data),
                "--seeds",
                "seed-no-fixes",
                "--knobs",
                "follow=1.0,base=0.1",
                "--nights",
                "2",
                "--samples",
                "4",
            ]
        )
        == 0
    )
    [run] = json.loads(capsys.readouterr().out)["runs"]
    assert (run["skill"], run["train"], run["val"]) == ("release-noter", 6, 3)
    assert run["dropped_checks"] == [
        "seed-no-fixes/benchmark.jsonl: min_citations",
        "seed-no-fixes/held-out.jsonl: min_citations",
    ]
    first, *later = run["nights"]
    assert first["night"] == 0 and first["substance"] == 1.0
    adopted = [a for n in later for a in n["adopted"]]
    assert adopted and all(a["document"] == "SKILL.md" and a["quotes_syntax"] is None for a in adopted)
    assert later[-1]["score"] > first["score"] and run["memory_rules"] == []


def test_a_missing_seed_is_one_line(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        bench.main(["--data", str(tmp_path), "--seeds", "seed-verbose"])
    assert "no seed skill under" in capsys.readouterr().err
