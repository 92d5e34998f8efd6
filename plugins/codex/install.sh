#!/bin/sh
# Install the skillopt-sleep skill for Codex into ~/.agents/skills/skillopt-sleep/ (without the
# plugin). Idempotent: running it again changes nothing when the skill is already up to date.
# AGENTS_SKILLS_DIR overrides the destination directory.
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
source="$here/skills/skillopt-sleep/SKILL.md"
dest_dir="${AGENTS_SKILLS_DIR:-${HOME:?HOME is not set}/.agents/skills}/skillopt-sleep"
dest="$dest_dir/SKILL.md"

if [ ! -f "$source" ]; then
    echo "install.sh: $source is missing; run this script from a checkout of skillopt-sleep" >&2
    exit 1
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
