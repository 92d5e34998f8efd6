"""A per-user secret that binds what the engine keeps in a project to where and why it was kept.

The call journal (``call_journal``), the score cache (``score_cache``), the adoption journal and
the ledger's adopt entries (``journal``) and staged manifests (``staging``) live inside the project,
where anything that can write the project (a cloned repository, another tool, a person) can edit
them, and each decides which rule a night proposes or what ``adopt``/``revert`` write. So every
record they keep carries an HMAC-SHA256 (``seal``) over its place (the night id, the project's
resolved path) and its content, made with a key the project cannot see: ``<user state dir>/keys/state.key``, 32
random bytes written as hex, created on first use with mode 0600 in a 0700 directory. A record whose
MAC is missing or wrong is not used (the call is made again); a record moved to another night or
another project no longer verifies.

The key is trusted only if it is a regular file (not a link, FIFO or device), owned by the user
running the engine and readable by nobody else, inside a directory that is likewise the user's own
and closed to others. A key file that fails those checks is replaced by a fresh one (every record
sealed with the old key is then made again: safe, at the cost of calls); a key directory that fails
them is not touched, and the engine works without a key: nothing read back is trusted, nothing is
kept for later and a staged proposal is not adoptable (``state_key`` returns ``None`` and says why).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from skillopt_sleep.files import fsync_dir, open_regular
from skillopt_sleep.paths import user_dirs

KEY_BYTES = 32
KEY_FILE = "state.key"


def key_path() -> Path:
    return user_dirs().state / "keys" / KEY_FILE


def _owned_and_private(info: os.stat_result) -> str | None:
    """Why a file or directory's owner or mode is not to be trusted, or None."""
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return "owned by another user"
    if os.name == "posix" and info.st_mode & 0o077:
        return f"open to other users (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def _trusted_dir(directory: Path) -> str | None:
    """Make the key directory (0700) and say why it cannot be trusted, or None."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    try:
        directory.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode):
        return f"{directory} is not a directory (a link or another file)"
    problem = _owned_and_private(info)
    return f"{directory} is {problem}" if problem else None


def _read_key(path: Path) -> bytes | str:
    """The key, or why the file at ``path`` is not one to trust (FileNotFoundError if absent)."""
    try:
        handle = open_regular(path, nofollow=True)
    except FileNotFoundError:
        raise
    except OSError as exc:  # a link (ELOOP), a FIFO, a device, a directory
        return f"{path} is not a regular file of ours ({exc.strerror or exc})"
    with handle:
        problem = _owned_and_private(os.fstat(handle.fileno()))
        data = handle.read(4 * KEY_BYTES + 1)
    if problem:
        return f"{path} is {problem}"
    try:
        key = bytes.fromhex(data.decode("ascii").strip())
    except ValueError:
        return f"{path} is not a key"
    return key if len(key) == KEY_BYTES else f"{path} is not a key"


def _write_key(path: Path, *, replace: bool, key: bytes | None = None) -> bytes:
    key = key if key is not None else secrets.token_bytes(KEY_BYTES)
    temp = path.with_name(f".{KEY_FILE}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(temp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(key.hex().encode("ascii") + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(temp, path)  # replaces a link itself, never what it points to
        else:
            os.link(temp, path)  # FileExistsError: another night made one first
    finally:
        if temp.exists():
            temp.unlink()
    fsync_dir(path.parent)
    return key


def state_key(*, create: bool = True) -> tuple[bytes | None, str | None]:
    """(the user's key, None), or (None, why there is none to trust). ``create=False`` only reads:
    no key is made or replaced (for a reader that writes nothing, such as a dry run)."""
    path = key_path()
    if not create:
        try:
            found = _read_key(path) if os.path.isdir(path.parent) and not _trusted_dir(path.parent) else None
        except OSError:
            found = None
        return (found, None) if isinstance(found, bytes) else (None, f"no trusted key at {path}")
    try:
        problem = _trusted_dir(path.parent)
        if problem:
            return None, problem
        for _ in range(3):
            try:
                found = _read_key(path)
            except FileNotFoundError:
                try:
                    return _write_key(path, replace=False), None
                except FileExistsError:
                    continue  # made by someone else meanwhile: read theirs
            if isinstance(found, bytes):
                return found, None
            return _write_key(path, replace=True), None  # untrusted: a new key, old records redone
    except OSError as exc:
        return None, f"no key at {path}: {exc.strerror or exc}"
    return None, f"no key at {path}"


def share_key(key: bytes, path: Path | None = None) -> None:
    """Keep ``key`` as the key at ``path`` (default: the current state directory's). A demo's
    throwaway home shares the user's key, so what the demo stages verifies both under the demo's
    home (its printed commands) and under the person's own (``status`` from their usual state). A
    key directory that cannot be trusted is left alone: a night then makes its own key there."""
    path = path or key_path()
    if not _trusted_dir(path.parent):
        _write_key(path, replace=True, key=key)


def canonical(fields: list[Any]) -> bytes:
    """The bytes a MAC is made over: one JSON array, keys sorted, ASCII only."""
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str).encode("ascii")


def seal(key: bytes, fields: list[Any]) -> str:
    return hmac.new(key, canonical(fields), hashlib.sha256).hexdigest()


def verifies(key: bytes | None, fields: list[Any], mac: Any) -> bool:
    """Whether ``mac`` is this key's seal over ``fields`` (never, without a key)."""
    if key is None or not isinstance(mac, str):
        return False
    return hmac.compare_digest(seal(key, fields), mac)


def _record_fields(what: str, place: str, record: dict[str, Any]) -> list[Any]:
    """What a record's ``mac`` field covers: the kind of record, where it lives, every other field."""
    return [what, place, {k: v for k, v in record.items() if k != "mac"}]


def with_mac(what: str, place: str, record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with a ``mac`` field sealing it as a ``what`` kept at ``place`` (as is without a
    trusted key: it then does not verify)."""
    key, _ = state_key()
    return record if key is None else {**record, "mac": seal(key, _record_fields(what, place, record))}


def mac_verifies(what: str, place: str, record: dict[str, Any], *, create: bool = False) -> bool:
    """Whether ``record``'s ``mac`` field seals it as a ``what`` kept at ``place`` with this user's key."""
    return verifies(state_key(create=create)[0], _record_fields(what, place, record), record.get("mac"))


def trust_notes(stores: list[Any]) -> list[str]:
    """One line per kind of store whose records did not verify (``untrusted``, told with the
    store's ``REDONE``), and one if there is no trusted key (``key_problem``)."""
    counts: dict[str, int] = {}
    for store in stores:
        if getattr(store, "untrusted", 0):
            counts[store.REDONE] = counts.get(store.REDONE, 0) + store.untrusted
    notes = [f"{n} {what}" for what, n in counts.items()]
    problem = next((store.key_problem for store in stores if getattr(store, "key_problem", None)), None)
    if problem:
        notes.append(
            f"no trusted key for the project's sealed files ({problem}): nothing is kept for "
            "a resume, and the proposal cannot be adopted"
        )
    return notes
