#!/usr/bin/env bash
# Install the real Claude Code and Codex CLIs of every release in scripts/real_clis.versions (the
# oldest supported and the newest published) from the npm registry into a cache, once, and print
# the directories holding their `claude` and `codex` executables, oldest first, joined by ':'.
#
#   scripts/install_real_clis.sh            install what is missing; print the bin directories
#   scripts/install_real_clis.sh --check    print the bin directories if all are installed, else exit 1
#
# Tests that drive the real clients find them through SKILLOPT_REAL_CLIS=<what this prints> (see
# tests/support/real_clients.py). Exit 3 when npm itself is missing (the only reason tests may skip).
# Cache: ${SKILLOPT_CI_CACHE:-~/.cache/skillopt-sleep-ci}/npm-clis-claude-<version>-codex-<version>.
set -euo pipefail

VERSIONS="$(dirname "$0")/real_clis.versions"
CACHE="${SKILLOPT_CI_CACHE:-$HOME/.cache/skillopt-sleep-ci}"

log() { echo "install_real_clis.sh: $*" >&2; }

bin_dir() { echo "$CACHE/npm-clis-claude-$1-codex-$2/node_modules/.bin"; }

installed() {  # claude-version codex-version
    local bin
    bin="$(bin_dir "$1" "$2")"
    [[ -x "$bin/claude" && -x "$bin/codex" ]] \
        && "$bin/claude" --version 2>/dev/null | grep -q "^$1" \
        && "$bin/codex" --version 2>/dev/null | grep -q "$2"
}

dirs=()
missing=0
while read -r name claude codex; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    dirs+=("$(bin_dir "$claude" "$codex")")
    if ! installed "$claude" "$codex"; then
        if [[ "${1:-}" == "--check" ]]; then
            missing=1
            continue
        fi
        command -v npm >/dev/null || { log "npm is not on PATH: the real-client tests will skip"; exit 3; }
        log "installing $name: @anthropic-ai/claude-code@$claude and @openai/codex@$codex"
        prefix="$CACHE/npm-clis-claude-$claude-codex-$codex"
        mkdir -p "$prefix"
        npm install --silent --no-audit --no-fund --prefix "$prefix" \
            "@anthropic-ai/claude-code@$claude" "@openai/codex@$codex" >&2
        installed "$claude" "$codex" || { log "installed $name, but the CLIs do not report $claude / $codex"; exit 1; }
    fi
done < "$VERSIONS"
[[ "$missing" == 0 ]] || exit 1
(IFS=:; echo "${dirs[*]}")
