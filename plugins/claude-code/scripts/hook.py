#!/usr/bin/env python3
"""skillopt-sleep's session hooks. Standard library only; never imports or starts the engine.

    hook.py session-start [--agent claude|codex] [--format hook|text] [--project PATH]
    hook.py session-end   [--agent claude|codex] [--project PATH]

session-start prints the notices that apply now for the project: a proposal waiting for review,
a scheduled night that did not run. The engine precomputes them into two small files in its state
directory (``notices/project-<key>.json`` and ``notices/schedule.json``, format
``skillopt_sleep.notice.v1``, see ``skillopt_sleep/notices.py``); this only reads them. Output
(``--format hook``, the default) is one JSON object, the SessionStart shape Claude Code and Codex
both read: ``{"systemMessage": <lines>, "hookSpecificOutput": {"hookEventName": "SessionStart",
"additionalContext": <lines + a note>}}``; ``--format text`` prints the bare lines. Nothing at
all when there is nothing to say. ``--agent`` picks the wording of the review hint.

session-end appends ``{"project", "at", "agent"}`` to the engine's sessions record
(``sessions-seen.jsonl``), so a scheduled night knows which projects had sessions. It prints
nothing.

The project is ``--project``, else ``$CLAUDE_PROJECT_DIR`` (with ``--agent claude``), else the
``cwd`` of the hook's JSON on stdin, else the working directory. The state directory is
``$SKILLOPT_SLEEP_HOME/state``, else the platform's, computed as the engine's platformdirs does.

Every file is opened without blocking and read only when it is a regular file within a size
bound; every line printed is re-sanitized. Exit status is always 0, and on any error (a missing,
unreadable, oversized, malformed or foreign file, a FIFO or a device in its place) nothing is
printed.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from datetime import datetime, timezone

APP = "skillopt-sleep"
FORMAT = "skillopt_sleep.notice.v1"
AGENTS = ("claude", "codex")
MAX_FILE_BYTES = 16 * 1024
MAX_NOTICES = 6
MAX_SHOWN = 3
MAX_LINE = 240
MAX_STDIN = 64 * 1024
STDIN_WAIT = 0.1  # seconds to wait for the hook's JSON on stdin (it may stay open)
SESSIONS_COMPACT_BYTES = 64 * 1024  # the engine's bound (commands/notice.py)
SESSIONS_READ_LIMIT = 4 * 1024 * 1024
CONTEXT_NOTE = ("(From the skillopt-sleep plugin. The user reviews, adopts and reverts its proposals "
                "with the command named above; never edit CLAUDE.md, AGENTS.md or skills for it.)")

_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.")
# C0/C1 controls, line/paragraph separators, and invisible or direction-changing characters.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                       r"\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]")
_OPEN_FLAGS = os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0) \
    if hasattr(os, "O_NONBLOCK") else getattr(os, "O_BINARY", 0)


def clean_line(text: str) -> str:
    """One printable line: no escape sequences or control characters, bounded length."""
    line = " ".join(_CONTROLS.sub(" ", _ESCAPES.sub("", text)).split())
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1].rstrip() + "…"


# --------------------------------------------------------------------------- where things are


def _home() -> str:
    home = os.environ.get("HOME")
    if sys.platform != "win32" and not (home and os.path.isabs(home)):
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    return os.path.expanduser("~")


def state_dir() -> str:
    """The engine's state directory: ``$SKILLOPT_SLEEP_HOME/state``, else platformdirs'
    ``user_state_dir("skillopt-sleep")``: ``$XDG_STATE_HOME/skillopt-sleep`` when that is an
    absolute path (Linux and macOS), else ``~/.local/state/skillopt-sleep`` (Linux),
    ``~/Library/Application Support/skillopt-sleep`` (macOS),
    ``%LOCALAPPDATA%\\skillopt-sleep\\skillopt-sleep`` (Windows)."""
    relocated = os.environ.get("SKILLOPT_SLEEP_HOME")
    if relocated:
        return os.path.join(os.path.realpath(os.path.expanduser(relocated)), "state")
    if sys.platform == "win32":
        base = os.environ.get("WIN_PD_OVERRIDE_LOCAL_APPDATA", "").strip()
        if not os.path.isabs(base):
            base = os.environ.get("LOCALAPPDATA") or os.path.join(_home(), "AppData", "Local")
        return os.path.join(os.path.normpath(base), APP, APP)
    xdg = os.environ.get("XDG_STATE_HOME", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, APP)
    if sys.platform == "darwin":
        return os.path.join(_home(), "Library", "Application Support", APP)
    return os.path.join(_home(), ".local", "state", APP)


def _sha256_hex(data: bytes) -> str:
    try:  # the built-in module: importing hashlib loads OpenSSL, which costs more than the rest
        from _sha256 import sha256  # Python <= 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # Python >= 3.12
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def notice_key(project: str) -> str:
    """The engine's ``paths.notice_key``: a hash of the resolved, case-folded project path."""
    return _sha256_hex(os.path.normcase(project).encode("utf-8", "surrogateescape"))[:16]


# --------------------------------------------------------------------------- the hook's input


def _stdin_json() -> dict:
    """The hook's JSON from stdin, waiting at most STDIN_WAIT (stdin may stay open)."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return {}
    chunks: list[bytes] = []
    if os.name == "posix":
        import select

        try:
            while sum(map(len, chunks)) < MAX_STDIN:
                if not select.select([fd], [], [], STDIN_WAIT)[0]:
                    break
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except (OSError, ValueError):
            return {}
    else:  # no select() on pipes: read in a thread, wait for it at most STDIN_WAIT
        import threading

        def read() -> None:
            try:
                chunks.append(os.read(fd, MAX_STDIN))
            except OSError:
                pass

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(STDIN_WAIT)
    try:
        data = json.loads(b"".join(chunks).decode("utf-8", "replace"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def hook_project(given: str | None, agent: str) -> str:
    """The project's resolved path (``OSError`` when ``--project`` is not a directory)."""
    if given is not None:
        if not os.path.isdir(given):
            raise NotADirectoryError(given)
        return os.path.realpath(os.path.expanduser(given))
    candidate = os.environ.get("CLAUDE_PROJECT_DIR") if agent == "claude" else None
    if not (candidate and os.path.isdir(candidate)):
        candidate = _stdin_json().get("cwd")
    if isinstance(candidate, str) and candidate and os.path.isdir(candidate):
        return os.path.realpath(candidate)
    return os.path.realpath(os.getcwd())


# --------------------------------------------------------------------------- reading a notice file


def read_bounded(path: str, limit: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes, else None.
    Opened without blocking (a FIFO has no writer to wait for) and without following a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _moment(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _applies(entry: dict, now: datetime) -> bool:
    start, end = entry.get("from"), entry.get("until")
    if start is not None:
        moment = _moment(start)
        if moment is None or now < moment:
            return False
    if end is not None:
        moment = _moment(end)
        if moment is None or now >= moment:
            return False
    return True


def notice_lines(path: str, agent: str, now: datetime, project: str | None) -> list[str]:
    """The lines of one notice file that apply now for ``agent``; [] for anything untrustworthy."""
    data = read_bounded(path, MAX_FILE_BYTES)
    if data is None:
        return []
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return []
    if not isinstance(document, dict) or document.get("format") != FORMAT \
            or document.get("project") != project or not isinstance(document.get("notices"), list):
        return []
    lines = []
    for entry in document["notices"][:MAX_NOTICES]:
        text = entry.get("text") if isinstance(entry, dict) else None
        line = text.get(agent) if isinstance(text, dict) else None
        if isinstance(line, str) and _applies(entry, now):
            line = clean_line(line)
            if line:
                lines.append(line)
    return lines


def session_start(project: str, agent: str, output: str) -> None:
    notices = os.path.join(state_dir(), "notices")
    now = datetime.now(timezone.utc)
    lines = notice_lines(os.path.join(notices, f"project-{notice_key(project)}.json"), agent, now, project)
    lines += notice_lines(os.path.join(notices, "schedule.json"), agent, now, None)
    if not lines:
        return
    text = "\n".join(lines[:MAX_SHOWN])
    if output == "text":
        sys.stdout.write(text + "\n")
        return
    sys.stdout.write(json.dumps({
        "systemMessage": text,
        "hookSpecificOutput": {"hookEventName": "SessionStart",
                               "additionalContext": text + "\n" + CONTEXT_NOTE},
    }) + "\n")


# --------------------------------------------------------------------------- the sessions record


def _compact(path: str) -> None:
    """Keep the last session of each project (what the engine's record_session does)."""
    data = read_bounded(path, SESSIONS_READ_LIMIT)
    if data is None:
        return
    latest: dict[str, str] = {}
    for raw in data.decode("utf-8", "replace").splitlines():
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(entry, dict) and isinstance(entry.get("project"), str) and isinstance(entry.get("at"), str):
            latest.pop(entry["project"], None)
            latest[entry["project"]] = raw.strip() + "\n"
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.urandom(6).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write("".join(latest.values()).encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def session_end(project: str, agent: str) -> None:
    directory = state_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, "sessions-seen.jsonl")
    at = datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    line = (json.dumps({"project": project, "at": at, "agent": agent}) + "\n").encode("ascii")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | _OPEN_FLAGS, 0o600)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return
        if info.st_size:
            os.lseek(fd, info.st_size - 1, os.SEEK_SET)
            if os.read(fd, 1) != b"\n":  # a writer died mid-line: start on a fresh one
                line = b"\n" + line
        os.write(fd, line)
        size = info.st_size + len(line)
    finally:
        os.close(fd)
    if size > SESSIONS_COMPACT_BYTES:
        _compact(path)


# --------------------------------------------------------------------------- command line


def parse(argv: list[str]) -> dict[str, str] | None:
    if not argv or argv[0] not in ("session-start", "session-end"):
        return None
    options = {"event": argv[0], "agent": "claude", "format": "hook"}
    rest = argv[1:]
    while rest:
        if len(rest) < 2 or rest[0] not in ("--agent", "--format", "--project"):
            return None
        options[rest[0][2:]] = rest[1]
        rest = rest[2:]
    if options["agent"] not in AGENTS or options["format"] not in ("hook", "text"):
        return None
    return options


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(__doc__ or "")
        return 0
    options = parse(argv)
    if options is None:
        sys.stderr.write("hook.py: usage: hook.py session-start|session-end [--agent claude|codex] "
                         "[--format hook|text] [--project PATH]\n")
        return 0  # a hook never fails the session
    try:
        project = hook_project(options.get("project"), options["agent"])
        if options["event"] == "session-start":
            session_start(project, options["agent"], options["format"])
        else:
            session_end(project, options["agent"])
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a hook never fails the session, and says nothing then
        _silence_stdout()
    return 0


def _silence_stdout() -> None:
    """Drop what is still buffered (a reader gone, a half-written answer): the interpreter's
    flush at exit must neither print it nor fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
