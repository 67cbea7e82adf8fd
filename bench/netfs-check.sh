#!/usr/bin/env bash
# Measure netfs (bench/slowdisk's network file system emulator) fio-style: ops/s of
# stat, create and unlink through the mount against RTT, thread count and slots, plus
# a server-cap case; compared with the model min(T, slots) / (RTTs per op x RTT).
# Usage (root): bench/netfs-check.sh [--quick] [sweep.py options, e.g. --rtts 0.5]
# Output: the table on stdout and in bench/out/netfs-check-<date>-<time>/results.md.
# Everything happens in a fresh marked scratch directory /var/tmp/netfs-check.XXXXXX,
# unmounted and removed on every exit path.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SD=$HERE/slowdisk
[ "$(id -u)" = 0 ] || { echo "netfs-check.sh: run as root (FUSE mounts)" >&2; exit 1; }
ARGS=()
for a in "$@"; do
    case $a in
    --quick) ARGS+=(--rtts 0.5 --threads 1,16,64 --slots 64 --duration 1) ;;
    *) ARGS+=("$a") ;;
    esac
done
(cd "$SD" && cargo build --release -q --bin netfs --bin netfs-load)

MARK=.netfs-check-scratch
W=$(mktemp -d /var/tmp/netfs-check.XXXXXX)
touch "$W/$MARK"
# The backing directory is a private tmpfs: the host file system's own costs (ext4
# without a journal scans for inodes not recently deleted, which dominates creates
# after the previous cells' mass deletions) stay out of the measurement.
mkdir "$W/back"
OUT=$HERE/out/netfs-check-$(date -u +%Y%m%d-%H%M%S)

SWEEP=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    # The sweep stops its loaders and netfs on SIGTERM; wait for it first.
    if [ -n "$SWEEP" ] && kill -0 "$SWEEP" 2>/dev/null; then
        kill -TERM "$SWEEP" 2>/dev/null || true
        wait "$SWEEP" 2>/dev/null || true
    fi
    # netfs unmounts on SIGTERM; wait for it, then make sure nothing is left mounted.
    local f pid
    for f in "$W"/netfs-*.pid; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
    local m
    for m in "$W"/mnt* "$W/back"; do
        [ -d "$m" ] || continue
        if mountpoint -q "$m"; then umount "$m" 2>/dev/null || umount -l "$m"; fi
    done
    case $W in
    /var/tmp/netfs-check.??????) ;;
    *) echo "netfs-check.sh: refusing to remove $W" >&2; exit 1 ;;
    esac
    if [ -e "$W/$MARK" ] && ! grep -q " $W/" /proc/self/mounts; then
        rm -rf --one-file-system "$W"
    else
        echo "netfs-check.sh: left $W in place (unmarked or still mounted)" >&2
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "netfs-check $(date -u '+%F %H:%M UTC') kernel $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
mount -t tmpfs -o size=4g,mode=0755 netfs-check-back "$W/back"
# In the background and waited for, so that a signal reaches the trap at once.
python3 "$HERE/netfs/sweep.py" --scratch "$W" --bin "$SD/target/release" --out "$OUT" ${ARGS[@]+"${ARGS[@]}"} &
SWEEP=$!
wait "$SWEEP"
SWEEP=""
echo "results: $OUT/results.md"
