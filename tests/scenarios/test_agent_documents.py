"""A night for each agent writes that agent's documents, and a revert gives back the bytes that
were there: the memory file the agent reads (kept byte for byte outside the managed block) and
the skill in the folder it loads skills from, both checked where the bytes landed."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_sleep.config import Config
from skillopt_sleep.documents.agents import AGENT_DOCUMENTS
from skillopt_sleep.night import NightOptions, run_night
from skillopt_sleep.staging.adoption import adopt, revert

from tests.support.tasks import make_tasks, write_tasks_file

HAND_WRITTEN = b"# Team notes\r\n\r\nKeep it short.\r\n"
STATE = ".skillopt-sleep"  # the engine's own folder in the project: its state, not a document


def tree(root: Path) -> dict[str, bytes]:
    """Every file of the project but the engine's own state, by path."""
    files = (p for p in sorted(root.rglob("*")) if p.is_file())
    return {str(p.relative_to(root)): p.read_bytes() for p in files if p.relative_to(root).parts[0] != STATE}


@pytest.mark.parametrize("agent", sorted(AGENT_DOCUMENTS))
def test_a_night_writes_the_agents_own_documents_and_revert_restores_them(tmp_path: Path, agent: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    memory = project / AGENT_DOCUMENTS[agent].memory
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_bytes(HAND_WRITTEN)
    before = tree(project)
    tasks_file = write_tasks_file(tmp_path / "tasks.json", make_tasks())
    config = Config(backend="sim:correct=1,harmful=0,seed=3", agent=agent, k=2, val_samples=2, max_val_samples=4)
    report = run_night(NightOptions(project=project, config=config, mode="run", tasks_file=tasks_file))
    assert report.accepted, "the simulator's correct rules pass the gate"
    assert tree(project) == before, "a night stages; it writes no document"

    adopt(project)
    after = tree(project)
    changed = sorted(name for name in after if after[name] != before.get(name))
    skill = f"{AGENT_DOCUMENTS[agent].skills}/skillopt-sleep-learned/SKILL.md"
    assert set(changed) <= {AGENT_DOCUMENTS[agent].memory, skill} and changed, changed
    if AGENT_DOCUMENTS[agent].memory in changed:  # the hand-written text stays as it was, first
        assert after[AGENT_DOCUMENTS[agent].memory].startswith(before[AGENT_DOCUMENTS[agent].memory])

    revert(project)
    assert tree(project) == before
    folders = {p.name for p in project.iterdir()} - {Path(name).parts[0] for name in before} - {STATE}
    assert not folders, f"revert leaves no folder adopt created: {folders}"
