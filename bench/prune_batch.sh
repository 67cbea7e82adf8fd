#!/usr/bin/env bash
# Issue 26: what one trash entry per file costs against one entry per pruned directory.
# N old files in a directory (and a newest one), on a fresh journaled ext4 loop image:
#   per file: `reclaim rm --background f*` (one entry each: what `prune` did before),
#             then `reclaim status` (its lines) and `reclaim reap` (freeing the entries);
#   batch:    `reclaim prune --keep-last 1 DIR` (one entry), then the same status and reap.
# Run as root: bash bench/prune_batch.sh [N=10000] [ROUNDS=3] [BIN=target/release/reclaim]
#
# Safety: everything lives in a mktemp directory under /var/tmp holding the loop image and its
# mount point; every command runs on that mount only (RECLAIM_UNDER limits the trashes seen to
# it, RECLAIM_NO_SPAWN starts no detached reaper); the EXIT trap unmounts and removes it.

set -Eeuo pipefail
N=${1:-10000}
ROUNDS=${2:-3}
BIN=$(realpath "${3:-target/release/reclaim}")
[[ $EUID -eq 0 ]] || { echo "run as root (loop mount)" >&2; exit 1; }
W=$(mktemp -d /var/tmp/reclaim-prune-batch.XXXXXX)
truncate -s 1G "$W/img"
mkfs.ext4 -q "$W/img"
mkdir "$W/m"
mount -o loop "$W/img" "$W/m"
trap 'cd /; umount "$W/m"; rm -rf -- "$W"' EXIT
export RECLAIM_NO_SPAWN=1 RECLAIM_CONFIG= RECLAIM_UNDER="$W" XDG_STATE_HOME="$W/state"
T="$W/m/.reclaim-0"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
make() {
    mkdir -p "$1"
    (cd "$1" && seq -f "f%06g" 1 "$N" | xargs -n 1000 touch -d '2 days ago')
    touch "$1/newest"
}
echo "$N files, $(uname -r), $(date -u +%FT%TZ)"
for round in $(seq 1 "$ROUNDS"); do
    make "$W/m/a"
    make "$W/m/b"
    sync
    echo 3 >/proc/sys/vm/drop_caches
    t0=$(now); (cd "$W/m/a" && "$BIN" rm --background f* >/dev/null); t1=$(now)
    n1=$("$BIN" status --trash "$T" | wc -l)
    t2=$(now); "$BIN" reap --trash "$T" >/dev/null 2>&1; t3=$(now)
    t4=$(now); "$BIN" prune --match '*' --keep-last 1 "$W/m/b" >/dev/null; t5=$(now)
    n2=$("$BIN" status --trash "$T" | wc -l)
    t6=$(now); "$BIN" reap --trash "$T" >/dev/null 2>&1; t7=$(now)
    echo "round $round: per file: hide $(secs "$t0" "$t1") s, status $n1 lines, reap $(secs "$t2" "$t3") s" \
        "| batch: prune $(secs "$t4" "$t5") s, status $n2 lines, reap $(secs "$t6" "$t7") s"
    rm -rf -- "$W/m/a" "$W/m/b"
done
