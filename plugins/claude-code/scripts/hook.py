#!/usr/bin/env python3
"""skillopt-sleep's session hooks. Standard library only; never imports or starts the engine.

    hook.py session-start [--agent claude|codex] [--format hook|text] [--project PATH]
    hook.py session-end   [--agent claude|codex] [--project PATH]

session-start prints the notices that apply now for the project: a proposal waiting for review,
a scheduled night that did not run. The engine precomputes them into two small files in its state
directory (``notices/project-<key>.json`` and ``notices/schedule.json``, in the tab-separated
format ``skillopt-sleep notice v1`` of ``skillopt_sleep/store/notices.py``); this only reads them.
Output (``--format hook``, the default) is one JSON object, the SessionStart shape Claude Code and
Codex both read: ``{"systemMessage": <lines>, "hookSpecificOutput": {"hookEventName":
"SessionStart", "additionalContext": <lines + a note>}}``; ``--format text`` prints the bare
lines. Nothing at all when there is nothing to say. ``--agent`` picks the wording of the review
hint.

session-end appends ``{"project", "at", "agent"}`` to the engine's sessions record
(``sessions-seen.jsonl``), so a scheduled night knows which projects had sessions. It prints
nothing.

It imports no ``json``, ``re`` or ``datetime``: at a session start, on a busy machine, importing
them would cost more than all the rest.

The project is ``--project``, else ``$CLAUDE_PROJECT_DIR`` (with ``--agent claude``), else the
``cwd`` of the hook's JSON on stdin, else the working directory. The state directory is
``$SKILLOPT_SLEEP_HOME/state``, else the platform's, computed as the engine's platformdirs does.

Every file is opened without blocking and read only when it is a regular file within a size
bound; every line printed is re-sanitized. Exit status is always 0, and on any error (a missing,
unreadable, oversized, malformed or foreign file, a FIFO or a device in its place) nothing is
printed.
"""

from __future__ import annotations

import os
import sys
import time

APP = "skillopt-sleep"
HEADER = "skillopt-sleep notice v1"
AGENTS = ("claude", "codex")
ENGINE_AGENTS = 3  # agents a notice file has a line for (claude, codex, cli)
MAX_FILE_BYTES = 16 * 1024
MAX_NOTICES = 6
MAX_SHOWN = 3
MAX_LINE = 240
MAX_STDIN = 64 * 1024
STDIN_WAIT = 0.1  # seconds to wait for the hook's JSON on stdin (it may stay open)
SESSIONS_COMPACT_BYTES = 64 * 1024  # the engine's bound (store/sessions.py)
SESSIONS_READ_LIMIT = 4 * 1024 * 1024
CONTEXT_NOTE = (
    "(From the skillopt-sleep plugin. The user reviews, adopts and reverts its proposals "
    "with the command named above; never edit CLAUDE.md, AGENTS.md or skills for it.)"
)

# C0/C1 controls (ESC with them, so no escape sequence survives), line/paragraph separators, and
# invisible or direction-changing characters: each becomes a space.
_CONTROLS = dict.fromkeys(
    [
        *range(0x20),
        *range(0x7F, 0xA0),
        0xAD,
        0x61C,
        *range(0x200B, 0x2010),
        *range(0x2028, 0x202F),
        *range(0x2060, 0x2070),
        0xFEFF,
        0xFFF9,
        0xFFFA,
        0xFFFB,
        *range(0xE0000, 0xE0080),
    ],
    " ",
)
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_OPEN_FLAGS = (
    os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    if hasattr(os, "O_NONBLOCK")
    else getattr(os, "O_BINARY", 0)
)


def clean_line(text: str) -> str:
    """One printable line: no control or invisible characters, bounded length."""
    line = " ".join(text.translate(_CONTROLS).split())
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1].rstrip() + "…"


def json_string(text: str) -> str:
    """``text`` as a JSON string, ASCII only: what ``json.dumps(text)`` writes."""
    out = []
    for ch in text:
        if " " <= ch <= "~":
            out.append(_SHORT_ESCAPES.get(ch, ch))
        elif ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        else:
            code = ord(ch)
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}")
            else:
                out.append(f"\\u{code:04x}")
    return '"' + "".join(out) + '"'


def json_object(pairs: dict) -> str:
    """A JSON object of strings and nested such objects, as ``json.dumps`` writes it."""
    return (
        "{"
        + ", ".join(
            f"{json_string(key)}: {json_object(value) if isinstance(value, dict) else json_string(value)}"
            for key, value in pairs.items()
        )
        + "}"
    )


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


def sha256_hex(data: bytes) -> str:
    try:  # the built-in module: importing hashlib loads OpenSSL, which costs more than the rest
        from _sha256 import sha256  # Python <= 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # Python >= 3.12
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def project_fingerprint(project: str) -> str:
    """The engine's ``paths.project_fingerprint`` of a resolved project path."""
    return sha256_hex(os.path.normcase(project).encode("utf-8", "surrogateescape"))


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

        deadline = time.monotonic() + STDIN_WAIT
        try:
            while sum(map(len, chunks)) < MAX_STDIN:
                if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
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
    if not chunks:
        return {}
    import json  # only here: most hooks never need it

    try:
        data = json.loads(b"".join(chunks).decode("utf-8", "replace"))
    except (ValueError, RecursionError):
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


def _regular(mode: int) -> bool:
    return mode & 0o170000 == 0o100000  # stat.S_ISREG, without importing stat


def read_bounded(path: str, limit: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes, else None.
    Opened without blocking (a FIFO has no writer to wait for) and without following a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not _regular(info.st_mode) or info.st_size > limit:
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


def _bound_holds(field: str, now: int, is_start: bool) -> bool:
    if field == "-":
        return True
    if not (field.isascii() and field.isdigit()):
        return False
    return now >= int(field) if is_start else now < int(field)


def notice_lines(path: str, agent: str, now: int, fingerprint: str) -> list[str]:
    """The lines of one notice file that apply at ``now`` for ``agent``; [] for anything that is
    not a whole, valid notice file of this project (the engine's ``notices.parse_notice_file``)."""
    data = read_bounded(path, MAX_FILE_BYTES)
    if data is None:
        return []
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return []
    if (
        len(lines) < 4
        or lines[0] != HEADER
        or lines[1] != "project\t" + fingerprint
        or not lines[2].startswith("written\t")
        or lines[-1] != ""
    ):
        return []
    shown = []
    for line in lines[3:-1][: MAX_NOTICES * ENGINE_AGENTS]:
        fields = line.split("\t", 3)
        if len(fields) != 4:
            return []
        start, end, whose, text = fields
        if whose == agent and _bound_holds(start, now, True) and _bound_holds(end, now, False):
            text = clean_line(text)
            if text:
                shown.append(text)
    return shown


def session_start(project: str, agent: str, output: str) -> None:
    notices = os.path.join(state_dir(), "notices")
    fingerprint = project_fingerprint(project)
    now = int(time.time())
    lines = notice_lines(os.path.join(notices, f"project-{fingerprint[:16]}.json"), agent, now, fingerprint)
    lines += notice_lines(os.path.join(notices, "schedule.json"), agent, now, "-")
    if not lines:
        return
    text = "\n".join(lines[:MAX_SHOWN])
    if output == "text":
        sys.stdout.buffer.write(text.encode("utf-8", "replace") + b"\n")
        return
    sys.stdout.write(
        json_object(
            {
                "systemMessage": text,
                "hookSpecificOutput": {
                    "hookEventName": "SessionStart",
                    "additionalContext": text + "\n" + CONTEXT_NOTE,
                },
            }
        )
        + "\n"
    )


# --------------------------------------------------------------------------- the sessions record


def _compact(path: str) -> None:
    """Keep the last session of each project (what the engine's record_session does)."""
    import json  # only here: a compaction is rare

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
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = (json_object({"project": project, "at": at, "agent": agent}) + "\n").encode("ascii")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | _OPEN_FLAGS, 0o600)
    try:
        info = os.fstat(fd)
        if not _regular(info.st_mode):
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
        sys.stderr.write(
            "hook.py: usage: hook.py session-start|session-end [--agent claude|codex] "
            "[--format hook|text] [--project PATH]\n"
        )
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
