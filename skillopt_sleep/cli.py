"""``skillopt-sleep <verb>``: one argparse dispatcher; each verb lives in ``commands/<verb>.py``.

Every command module exposes ``register(subparsers)``, which adds its own subparser with only its
own flags and sets ``func`` to a callable taking the parsed namespace and returning an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback
from collections.abc import Sequence

from skillopt_sleep import __version__
from skillopt_sleep.errors import EXIT_CODES, EXIT_ERROR, EXIT_USAGE, UserError
from skillopt_sleep.files import UnreadableFile

COMMAND_MODULES: tuple[str, ...] = (
    "run",
    "status",
    "review",
    "adopt",
    "revert",
    "harvest",
    "schedule",
    "demo",
    "notice",
)
COMMAND_MODULES += ("uninstall",)


def _exit_code_help() -> str:
    return "exit codes:\n" + "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillopt-sleep",
        description=(
            "A nightly sleep for coding agents: harvest the day's Claude Code / Codex sessions, "
            "replay recurring tasks, learn bounded rules, keep only those that measurably help on "
            "held-out tasks, and stage them for review."
        ),
        epilog=_exit_code_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="<verb>")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"skillopt_sleep.commands.{name}")
        except ImportError as exc:
            # a broken install (a file lost, a partial upgrade, a dependency gone): one clear line
            # and a failure, never a verb silently missing from the CLI
            if getattr(exc, "name", None) == f"skillopt_sleep.commands.{name}":
                problem = f"its module skillopt_sleep/commands/{name}.py is missing"
            else:
                problem = f"it cannot be loaded ({exc})"
            raise UserError(
                f"this installation is broken: the '{name}' command: {problem}; reinstall skillopt-sleep",
                code=EXIT_ERROR,
            ) from exc
        module.register(sub)
    return parser


def _say_missed_night() -> None:
    """With cron, a night the machine slept through never runs; the next CLI use says so."""
    from skillopt_sleep.scheduler.timing import missed_night_notice

    notice = missed_night_notice()
    if notice:
        print(notice, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb. A reader that closes the pipe early (``status | head -1``) ends the command
    quietly with 141 (128 + SIGPIPE, as a shell reports it), never a traceback."""
    try:
        code = _dispatch(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at /dev/null so that flush is silent too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141


def _dispatch(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
    except UserError as exc:
        from skillopt_sleep.sanitize import sanitize

        message = sanitize(exc.message)
        if "--json" in (sys.argv[1:] if argv is None else argv):
            _print_json_failure(message, exc.code)
        print(f"skillopt-sleep: {message}", file=sys.stderr)
        return exc.code
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    as_json = bool(getattr(args, "json", False))
    if args.verb not in ("nightly", "schedule", "unschedule", "notice"):  # notice prints its own
        _say_missed_night()
    try:
        return int(args.func(args) or 0)
    except (UserError, UnreadableFile) as exc:
        # a message can quote a provider's error body or a path: untrusted, possibly a secret
        from skillopt_sleep.redact import redact
        from skillopt_sleep.sanitize import sanitize

        message = sanitize(redact(exc.message))
        if as_json and not exc.json_printed:
            _print_json_failure(message, exc.code)
        print(f"skillopt-sleep: {message}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        if as_json:
            _print_json_failure("interrupted", 130)
        print("skillopt-sleep: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except Exception as exc:  # a bug: one clear line, the traceback in a log
        from skillopt_sleep.sandbox import report_not_writable

        refused = report_not_writable(exc, as_json)
        if refused is not None:  # not a bug: the place it runs in may not be written
            return refused
        from skillopt_sleep.paths import user_dirs

        log_dir = user_dirs().logs
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
            log = log_dir / "crash.log"
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(traceback.format_exc() + "\n")
            where = f"details in {log}"
        except OSError:
            where = "and the crash log could not be written"
        message = f"internal error ({sys.exc_info()[1]!r}); {where}"
        if as_json:
            from skillopt_sleep.sanitize import sanitize

            _print_json_failure(sanitize(message), EXIT_ERROR)
        print(f"skillopt-sleep: {message}", file=sys.stderr)
        return EXIT_ERROR


def _print_json_failure(message: str, code: int) -> None:
    """Every verb's ``--json`` prints one object on failure too: ``{"ok": false, "error", "code"}``."""
    print(json.dumps({"ok": False, "error": message, "code": code}))
