#!/usr/bin/env bash
# Scale-out under MPI (issue 15): `mpirun -np N reclaim rm -r` with N = 1, 2, 4, 8 ranks, each
# rank a client with its own mount of one emulated NFS server (bench/slowdisk `netfs`: a
# round-trip time per RPC, --slots in flight per mount, --server-ops across all mounts),
# against plain `reclaim rm -r` (one process, no MPI), `xargs -P` over a file list split
# across the same N clients at the same concurrency per client, and mpifileutils' `drm` at the
# same N ranks (built from source into a scratch directory with
# bench/peers/build-drm.sh; `--drm PATH`, skipped if not given). Workloads: a tree
# (mkworkload --shape tree) and one flat directory. "server cap busy" is the share of the
# server's --server-ops units held over the whole command (mpirun's start included); for
# reclaim also over its own time (rank 0's --json elapsed_s: the server is idle before it).
# Run as root:
#
#   bash bench/mpi.sh --quick                        # small, one run (~3 min)
#   bash bench/mpi.sh --rtt 0.5ms --slots 16 --server-ops 128 --files 200000 --flat 100000
#
# Every rank sees its own client at one common path: each rank runs in a private mount
# namespace with its mount bound there (`unshare -m`, see rank.sh below), as clients of a
# parallel file system all mount it at the same path.
#
# Safety: everything lives in a marked mktemp scratch directory; every removal targets a path
# strictly inside it. On every exit (the end, an error, INT/TERM/HUP) a trap stops what the
# script started, detaches netfs's client mounts (lazily if busy), stops netfs (killed if it
# lingers) and undoes every mount; if the script itself is SIGKILLed, a sentinel process in its
# own session detaches the client mounts and the backing tmpfs and stops netfs (the emptied
# scratch directory is left).

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<'USAGE'
usage: bench/mpi.sh [options]

  --quick               10,000-file tree, 5,000-file directory, ranks "1 2 4", 1 run
  --rtt T               round-trip time per RPC (default 2ms)
  --slots N             RPCs in flight per client mount (default 4)
  --server-ops N        RPCs in flight at the server, all clients (default 28: binds at ~7)
  --ranks "..."         rank counts (default "1 2 4 8")
  --files N             files in the tree (default 50000)
  --flat N              files in the one-directory workload (default 20000; 0 skips it)
  --runs N              runs per method (default 2)
  --xargs-p N           xargs -P per client (default 16)
  --drm PATH            mpifileutils' drm binary (its lib/ beside its bin/); none: not run
  --methods "..."       which of reclaim (one client), reclaim-mpi, xargs, drm to run
                        (default all; drm only with --drm)
  --reclaim-args "..."  more arguments for every reclaim run (e.g. "--fast", "--threads 4")
  --scratch-base DIR    where the mktemp scratch dir goes (default /var/tmp)
  --out DIR             output directory (default bench/out/mpi-<timestamp>)
  --no-build            do not run cargo build
  -h, --help            this help
USAGE
}

RTT=2ms SLOTS=4 SERVER_OPS=28 RANKS="1 2 4 8" FILES=50000 FLAT=20000 RUNS=2 XP=16 DRM=
RARGS= METHODS="reclaim reclaim-mpi xargs drm"
SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp} OUT="" NO_BUILD=0
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "mpi.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) FILES=10000 FLAT=5000 RANKS="1 2 4" RUNS=1 ;;
        --rtt) need_arg "$@"; RTT=$2; shift ;;
        --slots) need_arg "$@"; SLOTS=$2; shift ;;
        --server-ops) need_arg "$@"; SERVER_OPS=$2; shift ;;
        --ranks) need_arg "$@"; RANKS=$2; shift ;;
        --files) need_arg "$@"; FILES=$2; shift ;;
        --flat) need_arg "$@"; FLAT=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --xargs-p) need_arg "$@"; XP=$2; shift ;;
        --drm) need_arg "$@"; DRM=$2; shift ;;
        --reclaim-args) need_arg "$@"; RARGS=$2; shift ;;
        --methods) need_arg "$@"; METHODS=$2; shift ;;
        --scratch-base) need_arg "$@"; SCRATCH_BASE=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --no-build) NO_BUILD=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "mpi.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for m in $METHODS; do
    case $m in
        reclaim | reclaim-mpi | xargs | drm) ;;
        *) echo "mpi.sh: --methods: unknown method $m" >&2; exit 2 ;;
    esac
done
[[ $EUID -eq 0 ]] || { echo "mpi.sh: must run as root (FUSE mounts, namespaces, drop_caches)" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "mpi.sh: mpirun missing (apt-get install openmpi-bin libopenmpi-dev libclang-dev)" >&2; exit 1; }

bench_setup mpi
if [[ $NO_BUILD == 0 ]]; then
    cargo_release --features mpi --bin reclaim --example mkworkload || die "cargo build failed (see $OUT/logs/build.log)"
    cargo_release -C "$REPO/bench/slowdisk" --bin netfs || die "netfs build failed (see $OUT/logs/build.log)"
fi
for b in "$RECLAIM" "$MKWORKLOAD" "$NETFS"; do [[ -x $b ]] || die "missing $b"; done
grep -q libmpi < <(ldd "$RECLAIM") || die "$RECLAIM was built without --features mpi"
DRM_LIB=""
if [[ -n $DRM ]]; then
    [[ -x $DRM ]] || die "--drm $DRM is not an executable"
    DRM_LIB=$(cd "$(dirname "$DRM")/../lib" && pwd -P) || die "no lib/ beside $DRM"
fi

new_scratch reclaim-mpi
NETFS_PID="" SENTINEL_PID=""
MAXR=$(tr ' ' '\n' <<<"$RANKS" | sort -n | tail -1)
cleanup() {
    local rc=$?
    trap - EXIT ERR INT TERM HUP
    # Our own children still running (xargs pipelines, an mpirun cut short), by process id.
    local pids
    pids=$(jobs -pr | grep -vx "${NETFS_PID:-none}" | grep -vx "${SENTINEL_PID:-none}" || true)
    [[ -n $pids ]] && kill -TERM $pids 2>/dev/null
    # netfs keeps a busy mount mounted and serving on SIGTERM (and an earlier run, stopped
    # there, left its client mounts behind): the client mounts are detached first (lazily: a
    # rank still inside lets go when it ends).
    local m
    for m in $(fuse_under); do umount -l -- "$m" 2>/dev/null || warn "cannot detach $m"; done
    stop_netfs
    release_scratch mpi.sh
    [[ -n $SENTINEL_PID ]] && kill "$SENTINEL_PID" 2>/dev/null
    exit "$rc"
}
trap cleanup EXIT
trap 'warn "failed (exit $?) at line $LINENO: $BASH_COMMAND"' ERR
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
mkdir "$SCRATCH/back" "$SCRATCH/common"
mount -t tmpfs -o size=2g,nr_inodes=4m mpi-back "$SCRATCH/back"
MOUNTED+=("$SCRATCH/back")
mounts=()
for i in $(seq 0 $((MAXR - 1))); do
    mkdir "$SCRATCH/c$i"
    mounts+=(--mount "$SCRATCH/c$i")
done
"$NETFS" --backing "$SCRATCH/back" "${mounts[@]}" --rtt "$RTT" --slots "$SLOTS" \
    --server-ops "$SERVER_OPS" --readdirplus --subtype nfs --ready-file "$SCRATCH/ready" \
    --stats "$SCRATCH/stats.json" \
    2>>"$OUT/logs/netfs.log" &
NETFS_PID=$!
# If this script is killed outright (SIGKILL: no trap runs), a sentinel in its own session
# detaches the client mounts and stops this netfs (checked by its command line: never another
# process that reused the id).
setsid bash -c '
    while kill -0 "$1" 2>/dev/null; do sleep 1; done
    awk -v p="$3" '"'"'($3 == "fuse" || $3 ~ /^fuse\./) && index($2, p "/") == 1 { print $2 }'"'"' \
        /proc/mounts | sort -r | while read -r m; do umount -l -- "$m"; done
    if tr "\0" " " <"/proc/$2/cmdline" 2>/dev/null | grep -qF -- "--backing $3/back"; then
        kill -TERM "$2"
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$2" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$2" 2>/dev/null
    fi
    umount -l -- "$3/back" 2>/dev/null' mpi-sentinel "$$" "$NETFS_PID" "$SCRATCH" </dev/null >/dev/null 2>&1 &
SENTINEL_PID=$!
wait_for_file "$SCRATCH/ready" || die "netfs did not mount"

write_rank_script "$SCRATCH/rank.sh"
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -x "CLIENTS=$SCRATCH" -x "COMMON=$SCRATCH/common" -x RECLAIM_CONFIG=)
DRM_RUN=(mpirun --allow-run-as-root --oversubscribe -x "CLIENTS=$SCRATCH" -x "COMMON=$SCRATCH/common" -x "LD_LIBRARY_PATH=$DRM_LIB")
W=$SCRATCH/common/w

make() { # shape files
    guard "$SCRATCH/back/w"
    rm -rf --one-file-system "$SCRATCH/back/w"
    "$MKWORKLOAD" --shape "$1" --files "$2" "$SCRATCH/back/w" >/dev/null 2>&1
    # The file list for xargs (made from the server side: not timed).
    (cd "$SCRATCH/back" && find w -type f) >"$SCRATCH/files"
    drop_caches
}

busy_now() { # the server's unit-seconds held so far (netfs --stats, written on SIGUSR1)
    local before i
    before=$(stat -c %.9Y "$SCRATCH/stats.json" 2>/dev/null || echo none)
    kill -USR1 "$NETFS_PID"
    for i in $(seq 1 100); do
        [[ $(stat -c %.9Y "$SCRATCH/stats.json" 2>/dev/null || echo none) != "$before" ]] && break
        sleep 0.02
    done
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["server_busy_s"])' "$SCRATCH/stats.json"
}

SECS="" UTIL=""
timed() { # cmd... : sets SECS and UTIL (the share of the server's cap kept busy); warns if the
    # tree is left
    local t0 t1 b0 b1
    b0=$(busy_now)
    t0=$(date +%s.%N)
    "$@" >>"$OUT/logs/methods.log" 2>&1 || warn "failed: $*"
    t1=$(date +%s.%N)
    b1=$(busy_now)
    [[ -e $SCRATCH/back/w ]] && warn "left $SCRATCH/back/w behind: $*"
    UTIL=$(echo "scale=3; ($b1 - $b0) / (($t1 - $t0) * $SERVER_OPS)" | bc)
    SECS=$(echo "$t1 - $t0" | bc)
}

xargs_split() { # n: the file list split across n clients, xargs -P per client; then the dirs
    local n=$1 i pids=()
    for i in $(seq 0 $((n - 1))); do
        awk -v n="$n" -v i="$i" 'NR % n == i' "$SCRATCH/files" | sed "s|^|$SCRATCH/c$i/|" |
            tr '\n' '\0' | xargs -0 -r -P "$XP" -n 64 rm -f &
        pids+=($!)
    done
    # Only these: a bare `wait` would wait for netfs too.
    wait "${pids[@]}"
    find "$SCRATCH/c0/w" -depth -type d -delete
}

echo "workload,files,method,ranks,run,seconds,server_util,server_util_own" >"$OUT/raw.csv"
OWN=""
record() { # workload files method ranks run seconds (UTIL: the server's cap kept busy; OWN:
    # the same over reclaim's own time)
    log "$1 $2 $3 ranks=$4 run $5: $6 s, server busy $UTIL of its cap${OWN:+ ($OWN over the time reclaim reports)}"
    echo "$1,$2,$3,$4,$5,$6,$UTIL,$OWN" >>"$OUT/raw.csv"
    OWN=""
}
own_util() { # log_offset: OWN, the server's cap kept busy over reclaim's own time (rank 0's
    # --json elapsed_s, from its start to its report: mpirun starting the ranks left out; the
    # server is idle then), from the JSON the run wrote to methods.log after log_offset
    local e
    e=$(tail -c +"$(($1 + 1))" "$OUT/logs/methods.log" | grep -o '"elapsed_s":[0-9.]*' | tail -1 | cut -d: -f2)
    [[ -n $e ]] && OWN=$(echo "scale=3; $UTIL * $SECS / $e" | bc)
}
wants() { [[ " $METHODS " == *" $1 "* ]]; }
for run in $(seq 1 "$RUNS"); do
    for shape in tree flat; do
        files=$FILES
        [[ $shape == flat ]] && files=$FLAT
        [[ $files -gt 0 ]] || continue
        if wants reclaim; then
            make "$shape" "$files"
            # shellcheck disable=SC2086
            timed "$RECLAIM" rm -r $RARGS "$SCRATCH/c0/w"
            record "$shape" "$files" reclaim 1 "$run" "$SECS"
        fi
        for n in $RANKS; do
            if wants reclaim-mpi; then
                make "$shape" "$files"
                # The job's governor (rank 0) writes one line per window.
                offset=$(stat -c %s "$OUT/logs/methods.log" 2>/dev/null || echo 0)
                # shellcheck disable=SC2086
                timed "${MPIRUN[@]}" -np "$n" "$SCRATCH/rank.sh" "$RECLAIM" rm -r --json \
                    --pace-trace "$OUT/logs/governor-$shape-$n-$run.jsonl" $RARGS "$W"
                own_util "$offset"
                record "$shape" "$files" reclaim-mpi "$n" "$run" "$SECS"
            fi
            if wants xargs; then
                make "$shape" "$files"
                timed xargs_split "$n"
                record "$shape" "$files" xargs "$n" "$run" "$SECS"
            fi
            if [[ -n $DRM ]] && wants drm; then
                make "$shape" "$files"
                timed "${DRM_RUN[@]}" -np "$n" "$SCRATCH/rank.sh" "$DRM" -q "$W"
                record "$shape" "$files" drm "$n" "$run" "$SECS"
            fi
        done
    done
done

python3 - "$OUT/raw.csv" >"$OUT/summary.md" <<'PY'
import csv, statistics, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(list)
util = collections.defaultdict(list)
own = collections.defaultdict(list)
for r in rows:
    by[(r["workload"], r["files"], r["method"], int(r["ranks"]))].append(float(r["seconds"]))
    if r.get("server_util"):
        util[(r["workload"], r["files"], r["method"], int(r["ranks"]))].append(float(r["server_util"]))
    if r.get("server_util_own"):
        own[(r["workload"], r["files"], r["method"], int(r["ranks"]))].append(float(r["server_util_own"]))
for w, n in sorted({(r["workload"], r["files"]) for r in rows}, key=lambda k: k[0] != "tree"):
    med = {k[2:]: statistics.median(v) for k, v in by.items() if k[:2] == (w, n)}
    one = med.get(("reclaim-mpi", 1))
    print(f"\n### {w}, {int(n):,} files\n")
    print("| method | ranks/clients | median s | runs | speedup vs 1 rank | ÷ linear | ÷ xargs same N | ÷ drm same N | server cap busy | over reclaim's own time |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (m, k), v in sorted(med.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        sp = one / v if one else float("nan")
        xa = med.get(("xargs", k))
        rx = f"{v / xa:.2f}" if xa and m != "xargs" else "-"
        dr = med.get(("drm", k))
        rd = f"{v / dr:.2f}" if dr and m != "drm" else "-"
        u = util.get((w, n, m, k))
        us = f"{statistics.median(u):.2f}" if u else "-"
        o = own.get((w, n, m, k))
        os_ = f"{statistics.median(o):.2f}" if o else "-"
        print(f"| {m} | {k} | {v:.2f} | {len(by[(w, n, m, k)])} | {sp:.2f} | {sp / k:.2f} | {rx} | {rd} | {us} | {os_} |")
PY
cat "$OUT/summary.md"
log "done: $OUT"
