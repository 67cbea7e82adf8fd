#!/usr/bin/env bash
# Removal on a network file system (issue 12): `reclaim rm -r` against `rm -rf`, `find -delete`
# and `find | xargs -P32 rm`, and a `--threads` sweep, on the NFS emulator `netfs`
# (bench/slowdisk: a FUSE file system that waits a round trip per RPC, keeps at most --slots
# operations in flight per mount like a Linux client's slot table, and rejects rename flags).
# Also one directory of many files, and `reclaim scan` against `du -s`. Run as root:
#
#   bash bench/net.sh --quick     # RTT 0.5 ms only, 10,000 files, 1 run (~5 min)
#   bash bench/net.sh             # RTT 0.2, 0.5 and 2 ms; 50,000 files (10,000 at 2 ms); 3 runs
#
# Each workload is made in the backing directory (no round trips), then the page, dentry and
# attribute caches are dropped, so every run starts cold on the client side.
#
# Safety: everything lives in a scratch directory made with mktemp and marked with a random
# token; every removal targets a path strictly inside it; the daemon is stopped and the mount
# undone in an EXIT/INT/TERM trap. In the repository only bench/out/ is written.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<'EOF'
usage: bench/net.sh [options]

  --quick               RTT 0.5 ms, 10,000 files, 1 run
  --rtts "..."          round-trip times (default "0.2ms 0.5ms 2ms")
  --files N             files in the tree (default 50000; 10000 at RTTs of 1 ms or more)
  --flat N              files in the one-directory workload (default 5000; 0 skips it)
  --runs N              runs per method (default 3)
  --slots N             netfs slots per mount (default 64, a Linux NFS client's)
  --sweep "..."         --threads values to try (default "4 8 16 32 64")
  --methods "..."       methods to run, by name (default: all)
  --scratch-base DIR    where the mktemp scratch dir goes (default /var/tmp)
  --out DIR             output directory (default bench/out/net-<timestamp>)
  --no-build            do not run cargo build
  -h, --help            this help
EOF
}

RTTS="0.2ms 0.5ms 2ms" FILES="" FLAT=5000 RUNS=3 SLOTS=64 SWEEP="4 8 16 32 64" METHODS_SEL=""
SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp} OUT="" NO_BUILD=0 QUICK=0
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "net.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) QUICK=1 ;;
        --rtts) need_arg "$@"; RTTS=$2; shift ;;
        --files) need_arg "$@"; FILES=$2; shift ;;
        --flat) need_arg "$@"; FLAT=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --slots) need_arg "$@"; SLOTS=$2; shift ;;
        --sweep) need_arg "$@"; SWEEP=$2; shift ;;
        --methods) need_arg "$@"; METHODS_SEL=$2; shift ;;
        --scratch-base) need_arg "$@"; SCRATCH_BASE=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --no-build) NO_BUILD=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "net.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [[ $QUICK == 1 ]]; then
    RTTS="0.5ms" RUNS=1 FILES=${FILES:-10000} FLAT=1000
fi
[[ $EUID -eq 0 ]] || { echo "net.sh: must run as root (FUSE mount, drop_caches)" >&2; exit 1; }

T0=$(date +%s)
PROGRESS_LOG=/dev/null
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
RECLAIM=$TARGET_DIR/release/reclaim
MKWORKLOAD=$TARGET_DIR/release/examples/mkworkload
NETFS=$REPO/bench/slowdisk/target/release/netfs
OUT=${OUT:-$REPO/bench/out/net-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd -P)
PROGRESS_LOG=$OUT/progress.log
: >"$PROGRESS_LOG"

if [[ $NO_BUILD == 0 ]]; then
    log "building reclaim (release) and netfs"
    (cd "$REPO" && cargo build --release --bin reclaim --example mkworkload) >"$OUT/logs/build.log" 2>&1 ||
        die "cargo build failed (see $OUT/logs/build.log)"
    (cd "$REPO/bench/slowdisk" && cargo build --release --bin netfs) >>"$OUT/logs/build.log" 2>&1 ||
        die "netfs build failed (see $OUT/logs/build.log)"
fi
for b in "$RECLAIM" "$MKWORKLOAD" "$NETFS"; do [[ -x $b ]] || die "missing $b"; done

MARKER=.reclaim-bench-scratch
SCRATCH=$(mktemp -d "$SCRATCH_BASE/reclaim-net.XXXXXX")
TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN" >"$SCRATCH/$MARKER"
LOOPS=() MOUNTED=() NETFS_PID=""
stop_netfs() {
    if [[ -n $NETFS_PID ]]; then
        kill -CONT "$NETFS_PID" 2>/dev/null || true
        kill -TERM "$NETFS_PID" 2>/dev/null || true
        wait "$NETFS_PID" 2>/dev/null || true
        NETFS_PID=""
    fi
}
cleanup() { stop_netfs; release_scratch net.sh; }
trap cleanup EXIT
trap 'exit 130' INT TERM
# A tmpfs for the backing directory: the server's disk is not what is measured.
mkdir "$SCRATCH/back" "$SCRATCH/mnt"
mount -t tmpfs -o size=2g,nr_inodes=4m net-back "$SCRATCH/back"
MOUNTED+=("$SCRATCH/back")

start_netfs() { # rtt
    rm -f "$SCRATCH/ready"
    "$NETFS" --backing "$SCRATCH/back" --mount "$SCRATCH/mnt" --rtt "$1" --slots "$SLOTS" \
        --readdirplus --subtype nfs --ready-file "$SCRATCH/ready" 2>>"$OUT/logs/netfs.log" &
    NETFS_PID=$!
    local i
    for i in $(seq 1 200); do
        [[ -f $SCRATCH/ready ]] && return 0
        sleep 0.05
    done
    die "netfs did not mount"
}

# Methods: name -> command on {dir} (the tree through the mount).
declare -A METHOD_CMD=()
METHOD_ORDER=()
def_method() { METHOD_CMD[$1]=$2; METHOD_ORDER+=("$1"); }
def_method rm-rf 'rm -rf {dir}'
def_method find-delete 'find {dir} -delete'
def_method xargs-P32 'find {dir} -type f -print0 | xargs -0 -r -P32 -n64 rm -f && find {dir} -depth -type d -delete'
def_method reclaim '{reclaim} rm -r {dir}'
for t in $SWEEP; do def_method "reclaim-t$t" "{reclaim} rm -r --threads $t {dir}"; done
select_methods

timed() { # cmd -> seconds (fails the run if the tree is still there)
    local cmd=$1 t0 t1
    t0=$(date +%s.%N)
    bash -c "$cmd" >>"$OUT/logs/methods.log" 2>&1 || warn "failed: $cmd"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}

echo "rtt,workload,files,method,run,seconds" >"$OUT/raw.csv"
for rtt in $RTTS; do
    ms=${rtt%ms}
    files=$FILES
    if [[ -z $files ]]; then
        files=50000
        [[ $(echo "$ms >= 1" | bc) == 1 ]] && files=10000
    fi
    start_netfs "$rtt"
    for run in $(seq 1 "$RUNS"); do
        for m in "${METHODS[@]}"; do
            guard "$SCRATCH/back/w"
            rm -rf --one-file-system "$SCRATCH/back/w"
            "$MKWORKLOAD" --shape tree --files "$files" "$SCRATCH/back/w" >/dev/null
            drop_caches
            cmd=${METHOD_CMD[$m]//\{dir\}/$SCRATCH/mnt/w}
            cmd=${cmd//\{reclaim\}/RECLAIM_CONFIG= $RECLAIM}
            s=$(timed "$cmd")
            [[ -e $SCRATCH/back/w ]] && warn "$m left $SCRATCH/back/w behind"
            log "rtt $rtt tree $files $m run $run: $s s"
            echo "$rtt,tree,$files,$m,$run,$s" >>"$OUT/raw.csv"
        done
        if [[ $FLAT -gt 0 ]]; then
            for m in rm-rf reclaim; do
                rm -rf --one-file-system "$SCRATCH/back/w"
                "$MKWORKLOAD" --shape flat --files "$FLAT" "$SCRATCH/back/w" >/dev/null
                drop_caches
                cmd=${METHOD_CMD[$m]//\{dir\}/$SCRATCH/mnt/w}
                cmd=${cmd//\{reclaim\}/RECLAIM_CONFIG= $RECLAIM}
                s=$(timed "$cmd")
                log "rtt $rtt flat $FLAT $m run $run: $s s"
                echo "$rtt,flat,$FLAT,$m,$run,$s" >>"$OUT/raw.csv"
            done
        fi
        # scan against du -s, on the tree (made once, read by both).
        rm -rf --one-file-system "$SCRATCH/back/w"
        "$MKWORKLOAD" --shape tree --files "$files" "$SCRATCH/back/w" >/dev/null
        for m in du reclaim-scan; do
            drop_caches
            case $m in
                du) cmd="du -s $SCRATCH/mnt/w" ;;
                reclaim-scan) cmd="RECLAIM_CONFIG= $RECLAIM scan --no-estimate $SCRATCH/mnt/w" ;;
            esac
            s=$(timed "$cmd")
            log "rtt $rtt scan $files $m run $run: $s s"
            echo "$rtt,scan,$files,$m,$run,$s" >>"$OUT/raw.csv"
        done
    done
    stop_netfs
done

python3 - "$OUT/raw.csv" >"$OUT/summary.md" <<'EOF'
import csv, statistics, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(list)
for r in rows:
    by[(r["rtt"], r["workload"], r["files"], r["method"])].append(float(r["seconds"]))
keys = sorted({(r["rtt"], r["workload"], r["files"]) for r in rows}, key=lambda k: (float(k[0][:-2]), k[1]))
for rtt, w, n in keys:
    meds = {m: statistics.median(v) for (a, b, c, m), v in by.items() if (a, b, c) == (rtt, w, n)}
    base = meds.get("rm-rf") or meds.get("du")
    print(f"\n### RTT {rtt}, {w}, {int(n):,} files\n")
    print("| method | median s | runs | ÷ rm -rf (scan: ÷ du) |")
    print("|---|---:|---:|---:|")
    for m, v in sorted(meds.items(), key=lambda kv: kv[1]):
        runs = len(by[(rtt, w, n, m)])
        ratio = f"{v / base:.2f}" if base else "-"
        print(f"| {m} | {v:.2f} | {runs} | {ratio} |")
EOF
cat "$OUT/summary.md"
log "done: $OUT"
