#!/usr/bin/env bash
# Install each agent CLI of scripts/agent_clis.versions (name, npm package, version) from the npm
# registry into the CI cache, once: ${SKILLOPT_CI_CACHE:-~/.cache/skillopt-sleep-ci}/npm-<name>-<version>
# (tests/support/agent_clis.py finds them there).
#
#   scripts/install_agent_clis.sh           install what is missing
#   scripts/install_agent_clis.sh --check   exit 1 if any is missing
#
# Exit 3 when npm itself is missing.
set -euo pipefail

VERSIONS="$(dirname "$0")/agent_clis.versions"
CACHE="${SKILLOPT_CI_CACHE:-$HOME/.cache/skillopt-sleep-ci}"
log() { echo "install_agent_clis.sh: $*" >&2; }

missing=0
while read -r name package version; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    prefix="$CACHE/npm-$name-$version"
    [[ -x "$prefix/node_modules/.bin/$name" ]] && continue
    if [[ "${1:-}" == "--check" ]]; then
        missing=1
        continue
    fi
    command -v npm >/dev/null || { log "npm is not on PATH"; exit 3; }
    log "installing $package@$version"
    mkdir -p "$prefix"
    npm install --silent --no-audit --no-fund --prefix "$prefix" "$package@$version" >&2
    [[ -x "$prefix/node_modules/.bin/$name" ]] || { log "installed $package@$version, but it has no $name"; exit 1; }
done < "$VERSIONS"
exit "$missing"
