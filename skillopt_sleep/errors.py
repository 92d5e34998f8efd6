"""Exit codes and the one user-facing error type.

Anything a user can cause (bad flags, broken config, a conflicting adoption, a provider outage)
is raised as ``UserError`` with a one-line message; ``cli.main`` prints it and exits with its code.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1  # unexpected internal error (a bug): message + log path
EXIT_USAGE = 2  # bad flags or arguments
EXIT_CONFIG = 3  # broken config file or invalid tasks file
EXIT_PROVIDER = 4  # a model provider kept failing; nothing staged, no state advanced
EXIT_BUDGET = 5  # a token/cost budget ended the night; partial report, nothing adopted
EXIT_CONFLICT = 6  # adopt/revert refused: a live file changed, or nothing to adopt/revert
EXIT_LOCKED = 7  # another night, adopt or revert holds this project's lock
EXIT_SCHEDULER = 8  # the OS scheduler (crontab, systemctl, launchctl, schtasks) failed or is missing
EXIT_NOT_WRITABLE = 9  # a path the command must write is read-only (e.g. an agent's sandbox)
EXIT_HANDOFF = 10  # a handoff night stopped for answers: prompt files wait for the person's agent

EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_ERROR: "internal error (a bug; see the log)",
    EXIT_USAGE: "bad command-line usage",
    EXIT_CONFIG: "invalid config or tasks file",
    EXIT_PROVIDER: "model provider failed; nothing staged, no state advanced",
    EXIT_BUDGET: "token/cost budget reached; partial report, nothing adopted",
    EXIT_CONFLICT: "adopt/revert refused (live file changed, or nothing to do)",
    EXIT_LOCKED: "another night, adopt or revert holds this project's lock",
    EXIT_SCHEDULER: "the OS scheduler failed or is missing (schedule / unschedule)",
    EXIT_NOT_WRITABLE: "a path it must write is read-only (e.g. inside an agent's sandbox)",
    EXIT_HANDOFF: "handoff: prompts wait for your agent's answers; run the same command again after",
}


class UserError(Exception):
    """A failure to report as one clear line, with an exit code."""

    def __init__(self, message: str, code: int = EXIT_ERROR):
        super().__init__(message)
        self.message = message
        self.code = code
        # set once the verb printed its own --json object for this failure (adopt's error object,
        # a stopped night's partial report), so ``cli.main`` does not print a second one
        self.json_printed = False
