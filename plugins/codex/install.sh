#!/bin/sh
# Install the skillopt-sleep skill for Codex into $CODEX_HOME/skills/skillopt-sleep/ (~/.codex by
# default; without the plugin). Codex reads its own skills folder; Gemini CLI, Copilot CLI and
# OpenCode read ~/.agents/skills/ too and would take a skill of this name there for their own
# /skillopt-sleep, so a copy an earlier version of this script put there is removed.
# Idempotent: running it again changes nothing when the skill is already up to date.
# CODEX_SKILLS_DIR overrides the destination directory.
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
source="$here/skills/skillopt-sleep/SKILL.md"
codex_home="${CODEX_HOME:-${HOME:?HOME is not set}/.codex}"
dest_dir="${CODEX_SKILLS_DIR:-$codex_home/skills}/skillopt-sleep"
dest="$dest_dir/SKILL.md"
shared_dir="${HOME:?HOME is not set}/.agents/skills/skillopt-sleep"

if [ ! -f "$source" ]; then
    echo "install.sh: $source is missing; run this script from a checkout of skillopt-sleep" >&2
    exit 1
fi
# an earlier install into the folder every agent reads: only this skill's own file, nothing else
if [ -f "$shared_dir/SKILL.md" ] && grep -q '^name: skillopt-sleep$' "$shared_dir/SKILL.md" \
    && grep -q -- '--agent codex' "$shared_dir/SKILL.md"; then
    rm -f "$shared_dir/SKILL.md"
    rmdir "$shared_dir" 2>/dev/null || true
    echo "removed the earlier copy of the skill from $shared_dir (other agents read that folder)"
fi
if [ -f "$dest" ] && cmp -s "$source" "$dest"; then
    echo "skillopt-sleep skill already up to date: $dest"
    exit 0
fi
mkdir -p "$dest_dir"
tmp="$dest_dir/.SKILL.md.tmp.$$"
trap 'rm -f "$tmp"' EXIT
cp "$source" "$tmp"
mv -f "$tmp" "$dest"
echo "installed the skillopt-sleep skill: $dest"
if ! command -v skillopt-sleep >/dev/null 2>&1; then
    checkout=$(CDPATH= cd -- "$here/../.." && pwd)
    echo "note: the skillopt-sleep engine is not on PATH; install it from this checkout with: pipx install '$checkout'"
fi
