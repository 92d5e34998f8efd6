"""The session-start notices, precomputed: what an agent's SessionStart hook shows, written
whenever it changes, so the hook reads one small file and never imports the engine.

Two notice files live in the user state dir (``paths.UserDirs.notices``):

- ``project-<key>.json``, one per project (``paths.notice_key``): a proposal is waiting for
  review. Rewritten whenever a night stages and whenever the project lock is released (adopt,
  revert, a night, or finishing an interrupted adoption), from the proposals on disk.
- ``schedule.json``: the scheduled night did not run. Rewritten when the schedule changes and
  when a scheduled night starts or ends; the notice carries the time from which it applies.

Both have one format, UTF-8 text of at most ``MAX_FILE_BYTES``, fields separated by tabs, so
that a hook parses it with ``str.split`` (importing ``json`` would cost a hook more CPU than
everything else it does)::

    skillopt-sleep notice v1
    project <TAB> <sha-256 of the resolved project path (paths.project_fingerprint)> | -
    written <TAB> <ISO time, for people>
    <from> <TAB> <until> <TAB> <agent> <TAB> <one line of text>
    ...

One line per notice and agent (``claude``, ``codex``, ``cli``: only the review hint differs);
``from`` / ``until`` are Unix times in whole seconds, or ``-`` for an open bound, and the line
applies when ``from <= now < until``. Every text is already redacted and sanitized, one line of
at most ``NOTICE_MAX_CHARS``. ``write_notice_file`` is the only writer; readers (``read_notices``
here, ``plugins/claude-code/scripts/hook.py`` for the hooks) check the header, the bounds and
the project, re-sanitize, show at most ``MAX_SHOWN`` lines, and say nothing about a file they
cannot trust.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from skillopt_sleep.files import atomic_write_text, read_json, read_regular
from skillopt_sleep.store.proposals import list_proposals
from skillopt_sleep.paths import project_dirs, project_fingerprint, user_dirs
from skillopt_sleep.agent_surface import CLAUDE_COMMAND
from skillopt_sleep.redact import redact
from skillopt_sleep.sanitize import sanitize
from skillopt_sleep.types import parse_time

HEADER = "skillopt-sleep notice v1"
AGENTS = ("claude", "codex", "cli")
# How each agent's user reaches the review: the one place this wording lives.
REVIEW_HINTS = {
    "claude": f"{CLAUDE_COMMAND} review",
    "codex": "ask for the skillopt-sleep review",
    "cli": "skillopt-sleep review",
}
NOTICE_MAX_CHARS = 240
MAX_NOTICES = 6  # per file
MAX_SHOWN = 3  # lines a session start shows, all files together
MAX_FILE_BYTES = 16 * 1024
# A proposal staged this recently is "last night's"; after that it is named by its date.
RECENT = timedelta(hours=36)
# report.json is read only to count the proposed rules; a bigger file is not worth the time.
REPORT_READ_LIMIT = 2 * 1024 * 1024


@dataclass(frozen=True)
class Notice:
    texts: dict[str, str]  # agent -> one clean line
    start: int | None = None  # Unix seconds; None: open
    end: int | None = None


def clean_line(text: str) -> str:
    """One line, safe for a terminal and for a model's context: no control characters, no
    secrets, bounded length."""
    return sanitize(" ".join(redact(text).split()), NOTICE_MAX_CHARS)


def _seconds(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp())


def make_notice(texts: dict[str, str] | str, start: datetime | None = None, end: datetime | None = None) -> Notice:
    """A notice: one text for every agent, or one per agent (``AGENTS``); shown from ``start``
    until ``end`` (either may be open)."""
    by_agent = texts if isinstance(texts, dict) else dict.fromkeys(AGENTS, texts)
    return Notice({agent: clean_line(by_agent[agent]) for agent in AGENTS}, _seconds(start), _seconds(end))


# --------------------------------------------------------------------------- the only writer


def _bound(value: int | None) -> str:
    return "-" if value is None else str(value)


def render(notices: list[Notice], project: Path | None) -> str:
    """The file's text (see the module docstring)."""
    fingerprint = "-" if project is None else project_fingerprint(project)
    written = datetime.now(timezone.utc).isoformat(timespec="seconds")
    lines = [HEADER, f"project\t{fingerprint}", f"written\t{written}"]
    for notice in notices[:MAX_NOTICES]:
        for agent in AGENTS:
            text = clean_line(notice.texts[agent])  # one line: no tab, no newline
            if text:
                lines.append(f"{_bound(notice.start)}\t{_bound(notice.end)}\t{agent}\t{text}")
    return "\n".join(lines) + "\n"


def write_notice_file(path: Path, notices: list[Notice], project: Path | None = None) -> None:
    """Replace the notice file at ``path`` atomically; when there is nothing to say and no file,
    write nothing."""
    if not notices and not path.exists():
        return
    text = render(notices, project)
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:  # cannot happen with bounded lines; be sure
        raise ValueError(f"the notice file {path} would be {len(text)} characters")
    atomic_write_text(path, text)


def write_or_remove(path: Path, notices: list[Notice], project: Path | None) -> None:
    """Write; when that fails, remove the old file rather than leave a notice that is no longer
    true. Never raises: a notice must not fail the night, adopt or revert that changed it."""
    try:
        write_notice_file(path, notices, project)
    except (OSError, ValueError):
        try:
            path.unlink()
        except OSError:
            pass


# --------------------------------------------------------------------------- project notices


def _rules_proposed(staging_dir: Path) -> int | None:
    """How many rules the staged night accepted, from its report; None when unknown."""
    report = staging_dir / "report.json"
    try:
        data = read_json(report, REPORT_READ_LIMIT)
    except (OSError, ValueError):
        return None
    edits = data.get("accepted_edits") if isinstance(data, dict) else None
    return len(edits) if isinstance(edits, list) else None


def proposal_notices(project: Path) -> list[Notice]:
    """The newest proposal, while it waits for review (not adopted, not reverted, and it changes
    at least one document): "last night …" for ``RECENT`` hours, then "the night of <date> …"."""
    proposals = list_proposals(project)
    if not proposals:
        return []
    newest = proposals[0]
    if newest["state"] != "staged" or not newest["files"]:
        return []
    count = _rules_proposed(Path(newest["staging_dir"]))
    what = "1 rule" if count == 1 else f"{count} rules" if count else "changes"
    simulated = " (simulated, from the offline simulator)" if newest.get("simulated") else ""

    def line(when: str) -> dict[str, str]:
        return {
            agent: f"skillopt-sleep: {when} proposed {what} for this project{simulated} — {hint}"
            for agent, hint in REVIEW_HINTS.items()
        }

    created = parse_time(newest.get("created"))
    if created is None:
        return [make_notice(line("a night"))]
    fresh_until = created + RECENT
    return [
        make_notice(line("last night"), end=fresh_until),
        make_notice(line(f"the night of {created.date().isoformat()}"), start=fresh_until),
    ]


def refresh_project_notice(project: str | os.PathLike[str]) -> None:
    """Recompute the project's notice file from its proposals. Never raises."""
    root = project_dirs(project).project
    try:
        notices = proposal_notices(root)
    except Exception:  # noqa: BLE001 - an unreadable proposal must not fail adopt or a night
        notices = []
    write_or_remove(user_dirs().project_notice(root), notices, root)


# --------------------------------------------------------------------------- reading


def _read_bounded(path: Path) -> bytes | None:
    """The file's bytes when it is a regular file (not a link) no bigger than ``MAX_FILE_BYTES``;
    opened without blocking, so a FIFO planted in its place cannot hang the reader."""
    try:
        return read_regular(path, MAX_FILE_BYTES, nofollow=True)
    except OSError:
        return None


def _bound_holds(field: str, now: int, is_start: bool) -> bool:
    if field == "-":
        return True
    if not field.isdigit() or not field.isascii():
        return False
    return now >= int(field) if is_start else now < int(field)


def parse_notice_file(data: bytes, agent: str, now: int, fingerprint: str) -> list[str]:
    """The lines of a notice file's bytes that apply at ``now`` (Unix seconds) for ``agent``,
    re-sanitized; [] unless it is a whole, valid file of this format for ``fingerprint``."""
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return []
    if (
        len(lines) < 4
        or lines[0] != HEADER
        or lines[1] != f"project\t{fingerprint}"
        or not lines[2].startswith("written\t")
        or lines[-1] != ""
    ):
        return []
    shown = []
    for line in lines[3:-1][: MAX_NOTICES * len(AGENTS)]:
        fields = line.split("\t", 3)
        if len(fields) != 4:
            return []
        start, end, whose, text = fields
        if whose == agent and _bound_holds(start, now, True) and _bound_holds(end, now, False):
            text = clean_line(text)
            if text:
                shown.append(text)
    return shown


def read_notice_file(path: Path, agent: str, now: datetime, project: Path | None = None) -> list[str]:
    """The lines that apply now for ``agent``; [] for a file that is missing, too big, not a
    regular file, not valid, of another format, or of another project."""
    data = _read_bounded(path)
    if data is None:
        return []
    fingerprint = "-" if project is None else project_fingerprint(project)
    return parse_notice_file(data, agent, int(now.timestamp()), fingerprint)


def read_notices(project: str | os.PathLike[str], agent: str = "cli", now: datetime | None = None) -> list[str]:
    """What a session start in ``project`` shows now: the project's notices, then the
    schedule's, at most ``MAX_SHOWN`` lines."""
    moment = now or datetime.now(timezone.utc)
    root = project_dirs(project).project
    dirs = user_dirs()
    lines = read_notice_file(dirs.project_notice(root), agent, moment, root)
    lines += read_notice_file(dirs.schedule_notice, agent, moment)
    return lines[:MAX_SHOWN]
