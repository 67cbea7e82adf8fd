#!/usr/bin/env bash
# Space pressure benchmark (issue 42, DESIGN §14): does a removal, its undo window or its gentle
# pace cost an application its disk? A database grows (fsynced chunks) on a file system where
# something big is being removed; counted: chunks that failed (ENOSPC) and the lowest free
# space seen (f_bavail, sampled every 20 ms), for each removal method, with the reclaim of
# BEFORE (default: main) and of this tree (AFTER) in the same run. Run as root:
#
#   bash bench/pressure.sh                 # full: 3 runs per cell (about 15 minutes)
#   bash bench/pressure.sh --runs 1        # smoke
#
# Scenarios:
#   ext4   the issue's measurement: a journaled ext4 loop image of 4 GiB holding a 2.5 GiB
#          backup (fallocated), removed, then 2 GiB written in fsynced 64 MiB chunks (32).
#          Methods: rm (coreutils), reclaim rm (the default: in the foreground, paced),
#          reclaim rm --background --grace 600s (10 minutes, in words every reclaim reads).
#   slow   the emulated spinning disk (bench/slowdisk, hdd-7200, on a loop device marked
#          rotational): ext4 of 1.5 GiB holding a 1 GiB file, freed while 1.25 GiB are
#          written in fsynced 32 MiB chunks (40). Methods: rm, reclaim rm (gentle, the default
#          pacing), reclaim rm --rate 20M (a pace set slower than the database writes).
#
# Safety: everything is made inside a scratch directory (mktemp under /var/tmp, marked with a
# random token, every path checked by lib.sh's guard), in a private mount namespace; the
# removals only run on loop file systems this script made below it; the EXIT trap ends the
# processes it started (by pid), unmounts, detaches and removes the scratch directory. In the
# repository only bench/out/ is written.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

private_mount_ns RECLAIM_PRESSURE_BENCH_NS "$@"
unset RECLAIM_NO_SPAWN # detached reapers are what is measured
export RECLAIM_CONFIG= # built-in defaults (the default floor: the smaller of 5% and 10 GiB)

usage() {
    cat <<'EOF'
usage: bench/pressure.sh [options]

  --runs N            runs per cell (default 3); tables show medians (and each run)
  --scenarios "..."   among ext4 slow (default "ext4 slow")
  --before REV        the reclaim to compare with: a git revision built here (default main)
  --before-bin PATH   ... or a reclaim binary already built
  --scratch-base DIR  where the scratch directory goes (default /var/tmp)
  --out DIR           output directory (default bench/out/pressure-<date>-<time>)
  --no-build          use target/release/reclaim and bench/slowdisk's build as they are
EOF
}

RUNS=3
SCENARIOS="ext4 slow"
BEFORE_REV=main
BEFORE_BIN=
SCRATCH_BASE=/var/tmp
OUT=
BUILD=1
while [[ $# -gt 0 ]]; do
    case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --scenarios) SCENARIOS=$2; shift 2 ;;
    --before) BEFORE_REV=$2; shift 2 ;;
    --before-bin) BEFORE_BIN=$2; shift 2 ;;
    --scratch-base) SCRATCH_BASE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
[[ $EUID -eq 0 ]] || { echo "bench/pressure.sh: needs root (loop devices, mounts)" >&2; exit 2; }

bench_setup pressure
warn_if_busy
new_scratch reclaim-pressure
# reclaim looks for trashes only below the scratch directory (never another on this machine).
export RECLAIM_UNDER=$SCRATCH
export XDG_STATE_HOME=$SCRATCH/state
PIDS=()
SLOWDISK_PID=

end_reapers() { # the reapers started from the scratch's copies of reclaim (by their executable)
    local p exe
    for p in $(pgrep -x reclaim 2>/dev/null); do
        exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
        [[ $exe == "$SCRATCH/bin/"* ]] && kill "$p" 2>/dev/null || true
    done
}
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    end_reapers
    sleep 0.5
    for m in $(mounts_under "$SCRATCH"); do umount_retry "$m"; done
    [[ -n $SLOWDISK_PID ]] && { kill "$SLOWDISK_PID" 2>/dev/null || true; wait "$SLOWDISK_PID" 2>/dev/null || true; }
    release_scratch pressure.sh
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the two reclaims ------------------------------------------------------------------------
mkdir -p "$SCRATCH/bin"
if [[ $BUILD == 1 ]]; then
    cargo_release --bin reclaim
    cargo_release -C "$REPO/bench/slowdisk" --bin slowdisk
fi
cp "$RECLAIM" "$SCRATCH/bin/after"
if [[ -z $BEFORE_BIN ]]; then
    mkdir -p "$SCRATCH/before-src"
    git -C "$REPO" archive "$BEFORE_REV" | tar -x -C "$SCRATCH/before-src"
    (export CARGO_TARGET_DIR=$SCRATCH/before-target && cargo_release -C "$SCRATCH/before-src" --bin reclaim)
    BEFORE_BIN=$SCRATCH/before-target/release/reclaim
fi
cp "$BEFORE_BIN" "$SCRATCH/bin/before"
SLOWDISK=$REPO/bench/slowdisk/target/release/slowdisk

# --- the database: fsynced chunks, and the lowest free space seen -----------------------------
cat >"$SCRATCH/grow.py" <<'PY'
import json, os, sys, threading, time
d, chunks, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
lowest = [None]
done = threading.Event()
def sample():
    while not done.is_set():
        st = os.statvfs(d)
        a = st.f_bavail * st.f_frsize
        lowest[0] = a if lowest[0] is None else min(lowest[0], a)
        time.sleep(0.02)
t = threading.Thread(target=sample); t.start()
buf = b"\x5a" * (1 << 20)
failed = 0
t0 = time.monotonic()
for i in range(chunks):
    p = os.path.join(d, "chunk.%d" % i)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for _ in range(size // len(buf)):
                os.write(fd, buf)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        failed += 1
        try: os.unlink(p)
        except OSError: pass
secs = time.monotonic() - t0
done.set(); t.join()
print(json.dumps({"failed": failed, "chunks": chunks, "lowest": lowest[0], "seconds": secs}))
PY

RESULTS=$OUT/results.tsv
printf 'scenario\tbinary\tmethod\trun\tfailed\tchunks\tlowest_mib\twrite_s\tremoval_s\tload1\n' >"$RESULTS"

# One cell: mount a fresh file system (ext4 loop, or ext4 on the slow disk), make the big file,
# start the removal, grow the database, record.
vol_ext4() { # image size -> mounts $SCRATCH/vol
    local img=$SCRATCH/img.ext4
    guard "$img"
    truncate -s "$1" "$img"
    mkfs.ext4 -q -F "$img"
    mkdir -p "$SCRATCH/vol"
    mount -o loop "$img" "$SCRATCH/vol"
    MOUNTED+=("$SCRATCH/vol")
}
unvol() {
    local m
    for m in $(mounts_under "$SCRATCH/vol"); do unmount "$m"; done
    rm -f "$SCRATCH/img.ext4"
}
slow_start() { # image size -> $SCRATCH/vol on the emulated HDD
    mkdir -p "$SCRATCH/fuse" "$SCRATCH/vol"
    "$SLOWDISK" --backing "$SCRATCH/slow.img" --size "$1" --model hdd-7200 \
        --ready-file "$SCRATCH/fuse.ready" "$SCRATCH/fuse" 2>>"$OUT/logs/slowdisk.log" &
    SLOWDISK_PID=$!
    local i
    wait_for_file "$SCRATCH/fuse.ready" || die "slowdisk not ready"
    # Made on the plain file (quick), then served slowly.
    mkfs.ext4 -q -F "$SCRATCH/fuse/disk.img"
    LOOP=$(losetup --direct-io=on -f --show "$SCRATCH/fuse/disk.img")
    LOOPS+=("$LOOP")
    echo 1 >"/sys/block/${LOOP#/dev/}/queue/rotational"
    mount "$LOOP" "$SCRATCH/vol"
    MOUNTED+=("$SCRATCH/vol")
}
slow_stop() {
    unmount "$SCRATCH/vol"
    detach "$LOOP"
    sleep 0.5
    kill "$SLOWDISK_PID"; wait "$SLOWDISK_PID" 2>/dev/null || true
    SLOWDISK_PID=
    rm -f "$SCRATCH/slow.img" "$SCRATCH/fuse.ready"
}

# cell SCENARIO BINARY METHOD RUN BIGSIZE CHUNKS CHUNKSIZE
cell() {
    local scen=$1 bin=$2 method=$3 run=$4 big=$5 chunks=$6 csize=$7
    local vol=$SCRATCH/vol reclaim=$SCRATCH/bin/$bin
    guard "$vol/big"
    fallocate -l "$big" "$vol/big"
    sync
    local cmd
    case $method in
    rm) cmd=(rm "$vol/big") ;;
    reclaim) cmd=("$reclaim" rm "$vol/big") ;;
    grace) cmd=("$reclaim" rm --background --grace 600s "$vol/big") ;;
    capped) cmd=("$reclaim" rm --rate 20M "$vol/big") ;;
    esac
    local t0 t1 rpid
    rm -f "$SCRATCH/removal.end"
    t0=$(date +%s.%N)
    { "${cmd[@]}" >/dev/null 2>>"$OUT/logs/removal.log"; date +%s.%N >"$SCRATCH/removal.end"; } &
    rpid=$!
    PIDS+=("$rpid")
    # The database grows as soon as the removal has begun (the path is gone, or 0.2 s).
    local i
    for i in $(seq 20); do [[ -e $vol/big ]] || break; sleep 0.01; done
    local w
    w=$(python3 "$SCRATCH/grow.py" "$vol/db" "$chunks" "$csize")
    # A foreground removal still pacing once the database is written is stopped (what it left
    # goes to the trash); the rest is cleaned up at full speed.
    for i in $(seq 300); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
    pkill -INT -P "$rpid" 2>/dev/null || true
    wait "$rpid" 2>/dev/null || true
    t1=$(cat "$SCRATCH/removal.end" 2>/dev/null || date +%s.%N)
    PIDS=()
    "$reclaim" reap --trash "$vol/.reclaim-0" --now --all --fast >/dev/null 2>&1 || true
    end_reapers
    rm -rf --one-file-system "$vol/db" "$vol/big"
    local failed lowest secs
    failed=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["failed"])' "$w")
    lowest=$(python3 -c 'import json,sys; print("%.1f" % (json.loads(sys.argv[1])["lowest"]/2**20))' "$w")
    secs=$(python3 -c 'import json,sys; print("%.1f" % json.loads(sys.argv[1])["seconds"])' "$w")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\n' "$scen" "$bin" "$method" "$run" \
        "$failed" "$chunks" "$lowest" "$secs" "$(awk "BEGIN {print $t1 - $t0}")" "$(load1)" >>"$RESULTS"
    log "$scen $bin $method run $run: failed $failed/$chunks, lowest ${lowest} MiB"
}

{
    machine_meta
    printf 'before\t%s (%s)\n' "$BEFORE_BIN" "$BEFORE_REV"
    printf 'uptime_start\t%s\n' "$(uptime)"
} >"$OUT/meta.tsv"

for run in $(seq "$RUNS"); do
    for scen in $SCENARIOS; do
        case $scen in
        ext4)
            for bm in "-:rm" "before:reclaim" "after:reclaim" "before:grace" "after:grace"; do
                bin=${bm%%:*} method=${bm##*:}
                [[ $bin == - ]] && bin=after
                vol_ext4 4G
                cell ext4 "$bin" "$method" "$run" 2560M 32 $((64 << 20))
                unvol
            done
            ;;
        slow)
            for bm in "-:rm" "before:reclaim" "after:reclaim" "before:capped" "after:capped"; do
                bin=${bm%%:*} method=${bm##*:}
                [[ $bin == - ]] && bin=after
                slow_start 1536M
                cell slow "$bin" "$method" "$run" 1G 40 $((32 << 20))
                slow_stop
            done
            ;;
        *) die "unknown scenario '$scen'" ;;
        esac
    done
done
printf 'uptime_end\t%s\n' "$(uptime)" >>"$OUT/meta.tsv"

# Medians per cell (failed chunks, lowest free space).
python3 - "$RESULTS" >"$OUT/summary.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
cells = {}
for r in rows:
    key = (r["scenario"], r["method"], "" if r["method"] == "rm" else r["binary"])
    cells.setdefault(key, []).append(r)
print("| scenario | method | reclaim | failed chunks (median; each run) | lowest free MiB (median; each run) | removal s (median) | load |")
print("|---|---|---|---|---|---|---|")
for (scen, method, binary), rs in cells.items():
    f = [int(r["failed"]) for r in rs]
    l = [float(r["lowest_mib"]) for r in rs]
    t = [float(r["removal_s"]) for r in rs]
    print("| %s | %s | %s | %s of %s (%s) | %.0f (%s) | %.1f | %s |" % (
        scen, {"rm": "rm", "reclaim": "reclaim rm", "grace": "reclaim rm --background --grace 600s",
               "capped": "reclaim rm --rate 20M"}[method],
        binary or "-", statistics.median(f), rs[0]["chunks"], ", ".join(map(str, f)),
        statistics.median(l), ", ".join("%.0f" % x for x in l), statistics.median(t),
        "-".join(sorted({r["load1"] for r in rs}))))
PY
cat "$OUT/summary.md"
log "done: $OUT"
