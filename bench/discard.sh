#!/usr/bin/env bash
# Discards (issue 25): does a large removal's online discard stall other I/O? For each file
# system (journaled ext4, xfs, btrfs) mounted with and without `discard`, a file of --size
# random bytes is removed by `rm -f` and by `reclaim rm` (its default pacing) while a WAL-like
# probe (8 KiB append + fdatasync every 10 ms, on the same file system) records its latency:
# idle for 3 s before, during the removal (until `sync` returns: ext4 issues its discards when
# the transaction that freed the blocks commits), and 3 s after. Loop devices pass discards on
# as hole punches in the image, which the host file system (here ext4 with `discard`) turns
# into discards of the virtual disk. Run as root:
#
#   bash bench/discard.sh [--size 4G] [--fs "ext4 xfs btrfs"] [--modes "nodiscard discard async"]
#                         [--runs 1] [--out DIR]
#
# Modes: `nodiscard`, `discard` (btrfs: `discard=sync`) and, on btrfs only, `async`
# (`discard=async`, btrfs's own default on a device that can discard: its worker sends them
# rate-limited). Runs rotate the order of the two methods. Output: results.tsv (one line per
# run) and the probe logs.
# Safety: everything lives in a marked mktemp scratch directory (lib.sh's guard); the loop
# images and mounts are the script's own and are undone in an EXIT/INT/TERM trap.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIZE=4G FSS="ext4 xfs btrfs" MODES="nodiscard discard async" RUNS=1 OUT="" SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp}
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "discard.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --size) need_arg "$@"; SIZE=$2; shift ;;
        --fs) need_arg "$@"; FSS=$2; shift ;;
        --modes) need_arg "$@"; MODES=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "discard.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[[ $EUID -eq 0 ]] || { echo "discard.sh: must run as root (loop mounts, drop_caches)" >&2; exit 1; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RECLAIM=${CARGO_TARGET_DIR:-$REPO/target}/release/reclaim
[[ -x $RECLAIM ]] || (cd "$REPO" && cargo build --release --bin reclaim -q)
OUT=${OUT:-$REPO/bench/out/discard-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/logs"
T0=$(date +%s) PROGRESS_LOG=$OUT/progress.log
MARKER=.reclaim-bench-scratch TOKEN=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
SCRATCH=$(mktemp -d "$SCRATCH_BASE/reclaim-discard.XXXXXX")
echo "$TOKEN" >"$SCRATCH/$MARKER"
LOOPS=() MOUNTED=() PROBE_PID=""
cleanup() {
    if [[ -n $PROBE_PID ]]; then kill "$PROBE_PID" 2>/dev/null || true; wait "$PROBE_PID" 2>/dev/null || true; fi
    release_scratch discard.sh
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$SCRATCH/probe.py" <<'PY'
import os, sys, time
path, log = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
buf = b"w" * 8192
with open(log, "w") as out:
    while True:
        t = time.time()
        os.write(fd, buf)
        os.fdatasync(fd)
        out.write(f"{t:.6f}\t{(time.time() - t) * 1e3:.3f}\n")
        out.flush()
        time.sleep(max(0.0, 0.010 - (time.time() - t)))
PY
cat >"$SCRATCH/stats.py" <<'PY'
import sys
log, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rows = [tuple(map(float, l.split())) for l in open(log) if l.strip()]
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100 * len(xs) + 0.5)) - 1))] if xs else float("nan")
idle = [l for t, l in rows if t < t0]
# A probe write counts for the removal if it overlapped it at all.
during = [l for t, l in rows if t <= t1 and t + l / 1e3 >= t0]
# Discards may also go out after the command returned (xfs and btrfs=async queue them).
after = [l for t, l in rows if t > t1]
print(f"{pct(idle, 50):.2f}\t{pct(idle, 99):.2f}\t{pct(during, 50):.2f}\t{pct(during, 99):.2f}\t{max(during, default=float('nan')):.2f}\t{len(during)}\t{pct(after, 99):.2f}\t{max(after, default=float('nan')):.2f}")
PY

log "random data: $SIZE"
head -c "$SIZE" /dev/urandom >"$SCRATCH/data"
RESULTS=$OUT/results.tsv
echo -e "run\tfs\tmount\tmethod\tseconds\tidle_p50_ms\tidle_p99_ms\tduring_p50_ms\tduring_p99_ms\tduring_max_ms\tprobe_writes\tafter_p99_ms\tafter_max_ms" >"$RESULTS"
for run in $(seq 1 "$RUNS"); do
    for fs in $FSS; do
        for opt in $MODES; do
            [[ $opt == async && $fs != btrfs ]] && continue
            methods="rm reclaim"
            (( run % 2 == 0 )) && methods="reclaim rm"
            for m in $methods; do
                img=$SCRATCH/$fs.img mnt=$SCRATCH/mnt
                guard "$img"
                truncate -s 12G "$img"
                case $fs in
                    ext4) mkfs.ext4 -q -F "$img" ;;
                    xfs) mkfs.xfs -q -f "$img" ;;
                    btrfs) mkfs.btrfs -q -f "$img" ;;
                esac
                o=$opt
                [[ $fs == btrfs && $opt == discard ]] && o=discard=sync
                [[ $opt == async ]] && o=discard=async
                dev=$(losetup -f --show "$img"); LOOPS+=("$dev")
                mkdir -p "$mnt"; mount -o "$o" "$dev" "$mnt"; MOUNTED+=("$mnt")
                cp "$SCRATCH/data" "$mnt/big"
                sync; drop_caches
                plog=$OUT/logs/probe-$run-$fs-$opt-$m.log
                python3 "$SCRATCH/probe.py" "$mnt/probe" "$plog" & PROBE_PID=$!
                sleep 3
                t0=$(date +%s.%N)
                case $m in
                    rm) rm -f -- "$mnt/big" ;;
                    reclaim) "$RECLAIM" rm -v -- "$mnt/big" >>"$OUT/logs/reclaim.log" 2>&1 ;;
                esac
                sync
                t1=$(date +%s.%N)
                sleep 3
                kill "$PROBE_PID"; wait "$PROBE_PID" 2>/dev/null || true; PROBE_PID=""
                secs=$(echo "$t1 - $t0" | bc)
                st=$(python3 "$SCRATCH/stats.py" "$plog" "$t0" "$t1")
                printf '%s\t%s\t%s\t%s\t%.2f\t%s\n' "$run" "$fs" "$opt" "$m" "$secs" "$st" >>"$RESULTS"
                log "run $run $fs $opt $m: $secs s; idle p50/p99, during p50/p99/max, n, after p99/max: $st"
                unmount "$mnt"
                detach "$dev"
                rm -f -- "$img"
            done
        done
    done
done
log "results: $RESULTS"
