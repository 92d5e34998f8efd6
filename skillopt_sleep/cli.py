"""``skillopt-sleep <verb>``: one argparse dispatcher; each verb lives in ``commands/<verb>.py``.

Every command module exposes ``register(subparsers)``, which adds its own subparser with only its
own flags and sets ``func`` to a callable taking the parsed namespace and returning an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence

from skillopt_sleep import __version__
from skillopt_sleep.errors import EXIT_CODES, EXIT_ERROR, EXIT_USAGE, UserError

COMMAND_MODULES = ("run", "status", "review", "adopt", "revert", "harvest", "schedule", "demo", "notice")


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
        except ModuleNotFoundError as exc:
            if exc.name == f"skillopt_sleep.commands.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        # a message can quote a provider's error body or a path: untrusted, possibly a secret
        from skillopt_sleep.redact import redact
        from skillopt_sleep.sanitize import sanitize

        print(f"skillopt-sleep: {sanitize(redact(exc.message))}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("skillopt-sleep: interrupted", file=sys.stderr)
        return 130
    except Exception:  # a bug: one clear line, the traceback in a log
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
        print(f"skillopt-sleep: internal error ({sys.exc_info()[1]!r}); {where}", file=sys.stderr)
        return EXIT_ERROR
