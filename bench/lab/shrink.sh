#!/usr/bin/env bash
# The peers' gentle deletes, as a user would write them (impact lab methods):
#   shrink.sh STEP SLEEP nofsync FILE   the classic loop: truncate -s -10M, sleep 0.02, ... rm
#   shrink.sh STEP SLEEP fsync FILE     a fixed-rate slow delete like slowrm: 128M per 0.1 s,
#                                       fsync (coreutils `sync FILE`) after each step
# Shrinks FILE from the end by STEP every SLEEP seconds, then removes it. FILE must be a
# regular file (never follows a symlink: refuses it).
set -euo pipefail
[[ $# == 4 ]] || { echo "usage: shrink.sh STEP SLEEP fsync|nofsync FILE" >&2; exit 2; }
step=$1 pause=$2 mode=$3 f=$4
[[ -f $f && ! -L $f ]] || { echo "shrink.sh: $f: not a regular file" >&2; exit 1; }
while [[ $(stat -c %s -- "$f") -gt 0 ]]; do
    truncate -s "-$step" -- "$f"
    [[ $mode == fsync ]] && sync -- "$f"
    sleep "$pause"
done
rm -f -- "$f"
