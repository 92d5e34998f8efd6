#!/bin/sh
# Install the /skillopt-sleep command for OpenCode into ~/.config/opencode/commands/ (OpenCode has
# no install command for commands: it reads every .md file in that directory). The installed copy
# names this checkout's launcher by its absolute path, since a command's template has no variable
# for where it came from; the launcher sets the engine up from this checkout on first use, so keep
# the checkout. Idempotent: running it again changes nothing when the command is already up to date.
# OPENCODE_COMMANDS_DIR overrides the destination directory.
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
source="$here/commands/skillopt-sleep.md"
launcher="$here/bin/skillopt-sleep"
config="${XDG_CONFIG_HOME:-${HOME:?HOME is not set}/.config}"
dest_dir="${OPENCODE_COMMANDS_DIR:-$config/opencode/commands}"
dest="$dest_dir/skillopt-sleep.md"

if [ ! -f "$source" ] || [ ! -x "$launcher" ]; then
    echo "install.sh: $source or $launcher is missing; run this script from a checkout of skillopt-sleep" >&2
    exit 1
fi
# the launcher as one shell word: single quotes, each ' in the path written '\''
quoted="'$(printf '%s' "$launcher" | sed "s/'/'\\\\''/g")'"
mkdir -p "$dest_dir"
tmp="$dest_dir/.skillopt-sleep.md.tmp.$$"
trap 'rm -f "$tmp"' EXIT
while IFS= read -r line || [ -n "$line" ]; do
    if [ "$line" = 'launcher: `skillopt-sleep`' ]; then
        printf 'launcher: `%s`\n' "$quoted"
    else
        printf '%s\n' "$line"
    fi
done <"$source" >"$tmp"
if [ -f "$dest" ] && cmp -s "$tmp" "$dest"; then
    echo "skillopt-sleep command already up to date: $dest"
    exit 0
fi
mv -f "$tmp" "$dest"
echo "installed the /skillopt-sleep command: $dest (it runs $launcher)"
