#!/usr/bin/env bash
# Install the real Claude Code and Codex CLIs (pinned) from the npm registry into a cache, once,
# and print the directory holding the `claude` and `codex` executables.
#
#   scripts/install_real_clis.sh            install if missing; print the bin directory
#   scripts/install_real_clis.sh --check    print the bin directory if installed, else exit 1
#
# Tests that drive the real clients find them through SKILLOPT_REAL_CLIS=<that directory>
# (see tests/support/real_clients.py). Exit 3 when npm itself is missing (the only reason tests may skip).
# Cache: ${SKILLOPT_CI_CACHE:-~/.cache/skillopt-sleep-ci}/npm-clis-<versions>.
set -euo pipefail

CLAUDE_CODE_VERSION=2.1.328
CODEX_VERSION=0.169.0
CACHE="${SKILLOPT_CI_CACHE:-$HOME/.cache/skillopt-sleep-ci}"
PREFIX="$CACHE/npm-clis-claude-$CLAUDE_CODE_VERSION-codex-$CODEX_VERSION"
BIN="$PREFIX/node_modules/.bin"

log() { echo "install_real_clis.sh: $*" >&2; }

installed() {
    [[ -x "$BIN/claude" && -x "$BIN/codex" ]] \
        && "$BIN/claude" --version 2>/dev/null | grep -q "^$CLAUDE_CODE_VERSION" \
        && "$BIN/codex" --version 2>/dev/null | grep -q "$CODEX_VERSION"
}

if [[ "${1:-}" == "--check" ]]; then
    installed && { echo "$BIN"; exit 0; }
    exit 1
fi

if installed; then
    echo "$BIN"
    exit 0
fi
command -v npm >/dev/null || { log "npm is not on PATH: the real-client tests will skip"; exit 3; }
log "installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION and @openai/codex@$CODEX_VERSION"
mkdir -p "$PREFIX"
npm install --silent --no-audit --no-fund --prefix "$PREFIX" \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION" >&2
installed || { log "installed, but the CLIs do not report the pinned versions"; exit 1; }
echo "$BIN"
