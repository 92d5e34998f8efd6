"""Where a document may live, and writing it without following a link.

A repository (git stores symlinks) or a person's dotfiles can make ``CLAUDE.md``, ``AGENTS.md``,
``.claude/``, ``.agents/``, a skill's folder or its ``SKILL.md`` a link. The rule:

- a project document, and every folder between the project root and it, must resolve inside the
  project; a user-level skill must resolve inside the user's own agent directory (``~/.claude`` or
  ``~/.agents``, itself resolved, so an agent directory kept in dotfiles is fine as a whole);
- a link that stays inside (``CLAUDE.md -> docs/CLAUDE.md``) is allowed: the night reads, and
  adoption writes, the file it points to, and the report names both;
- anything else is refused with one line naming the document and where it points, before any
  model call, and again by ``adopt`` and ``revert`` right before they write.

A path named on the command line (``--target-skill-path``) is the person's own choice and is
taken as given (resolved).

Writes walk the resolved path one folder at a time without following links (``O_NOFOLLOW``) and
replace the file by rename inside the folder so opened, so a link planted after the check is
never followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from skillopt_sleep.errors import EXIT_CONFIG, EXIT_CONFLICT, UserError
from skillopt_sleep.files import UnreadableFile, atomic_write_bytes, read_bytes_or_none, temp_name
from skillopt_sleep.paths import project_dirs


class OutsideDocument(UserError):
    """A document that resolves outside the place it must live in."""


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a link loop
        raise OutsideDocument(
            f"{path} is a link that never ends (a loop); refusing to read or write it", EXIT_CONFIG
        ) from None


def contained(path: Path, root: Path, where: str) -> Path:
    """``path`` resolved, after checking that it and every folder from ``root`` down to it resolve
    inside ``root`` (``where`` names the root in the refusal: "the project", "~/.claude")."""
    path, root = Path(path), Path(root)
    base = _resolved(root)
    parts = path.relative_to(root).parts  # the caller found ``path`` under ``root``
    current = root
    for part in parts:
        current = current / part
        real = _resolved(current)
        if real != base and base not in real.parents:
            shown = "" if current == path else f" (on the way to {path})"
            raise OutsideDocument(
                f"{current}{shown} is a link to {real}, outside {where} ({base}); refusing to read or write "
                "it (make it a regular file or folder, or point the link inside)",
                EXIT_CONFIG,
            )
    return _resolved(path)


def document_root(project: Path, path: Path) -> tuple[Path, str] | None:
    """The root a document must resolve inside, and its name; None for a path elsewhere (given
    explicitly on the command line)."""
    home = Path.home()
    for folder in (".claude", ".agents", ".codex"):
        agent_dir = home / folder
        if agent_dir in path.parents:
            return agent_dir, f"~/{folder}"
    if path == project or project in path.parents:
        return project, "the project"
    return None


def checked_document(project: Path, path: Path) -> Path:
    """A document path, resolved, refused (``OutsideDocument``) when it resolves outside its root."""
    root = document_root(Path(project), Path(path).expanduser())
    if root is None:
        return _resolved(Path(path).expanduser())
    return contained(Path(path).expanduser(), *root)


def described(path: Path) -> str:
    """How a report names a document: its path, and the file it points to when it is a link."""
    real = _resolved(Path(path))
    return str(path) if real == Path(path) else f"{path} (a link to {real})"


# --------------------------------------------------------------------------- writing


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)


def _can_walk() -> bool:
    return os.name == "posix" and hasattr(os, "O_NOFOLLOW") and os.open in os.supports_dir_fd


def _open_folder(folder: Path, create: bool) -> int:
    """A descriptor of ``folder`` (absolute, resolved) reached without following any link."""
    fd = os.open(folder.anchor or "/", _DIR_FLAGS)
    try:
        for part in folder.parts[1:]:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o777, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def replace_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace the file at ``path`` (absolute, resolved) with ``data``, atomically, without following
    a link anywhere on the way: a folder on the path that became a link raises ``OSError`` (ELOOP or
    ENOTDIR), and a link in the file's place is replaced, not followed. Elsewhere (no ``dir_fd``
    support) the same temp-file-and-rename, after checking no folder on the path is a link."""
    target = Path(path)
    if not _can_walk():
        _refuse_linked_folders(target)
        atomic_write_bytes(target, data)
        return
    fd = _open_folder(target.parent, create=True)
    try:
        tmp = temp_name(target).name
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=fd)
        try:
            with os.fdopen(out, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            try:  # an existing file keeps its permission bits
                mode = os.stat(target.name, dir_fd=fd, follow_symlinks=False).st_mode
                if stat.S_ISREG(mode):
                    os.chmod(tmp, mode & 0o7777, dir_fd=fd)
            except FileNotFoundError:
                pass
            os.replace(tmp, target.name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            raise
        try:
            os.fsync(fd)
        except OSError:
            pass
    finally:
        os.close(fd)


def remove_file(path: str | os.PathLike[str]) -> None:
    """Remove the file at ``path`` without following a link on the way (missing: nothing to do)."""
    target = Path(path)
    if not _can_walk():
        _refuse_linked_folders(target)
        Path(target).unlink(missing_ok=True)
        return
    try:
        fd = _open_folder(target.parent, create=False)
    except FileNotFoundError:
        return
    try:
        os.unlink(target.name, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def _refuse_linked_folders(target: Path) -> None:
    for folder in [target.parent, *target.parent.parents]:
        if folder.is_symlink():
            raise OSError(f"{folder} became a link")


def read_live(path: str | os.PathLike[str]) -> bytes | None:
    """A live document's bytes before adopt or revert writes it (None: it does not exist); a path
    that cannot be read (a folder on it is now a file or a FIFO, a special file in its place) is one
    line, exit 6, and nothing is written."""
    try:
        return read_bytes_or_none(path)
    except UnreadableFile as exc:
        raise UserError(f"{exc.message}; nothing was written", EXIT_CONFLICT) from None
    except OSError as exc:
        raise UserError(f"cannot read {path} ({exc.strerror or exc}); nothing was written", EXIT_CONFLICT) from None


def check_state_dir(project: Path) -> None:
    """The project's ``.skillopt-sleep/`` and the folders the engine writes in it must be folders
    that resolve inside the project (a cloned repository can ship any of them as a link, a file or
    a FIFO); refused in one line (exit 3) before anything is read or written there."""
    dirs = project_dirs(project)
    root = dirs.project
    for folder in (dirs.root, dirs.staging, dirs.backups, dirs.tmp, dirs.root / "nights"):
        if folder.exists() or folder.is_symlink():
            contained(folder, root, "the project")
            if not folder.is_dir():
                raise OutsideDocument(
                    f"{folder} is not a folder; refusing to use it (remove it, and skillopt-sleep makes it again)",
                    EXIT_CONFIG,
                )
    for name in ("adoptions.jsonl", "journal.json", "scores.jsonl", "night.lock"):
        if (dirs.root / name).is_symlink():  # appended to or locked in place: never through a link
            raise OutsideDocument(f"{dirs.root / name} is a link; refusing to use it (remove it)", EXIT_CONFIG)
