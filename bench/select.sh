#!/usr/bin/env bash
# Selection on `reclaim rm -r` (issue 22) against the peers a user would otherwise run, in the
# same run, cold cache, on journaled ext4 and xfs loop images (and the emulated NFS):
#   flat:  one directory of N `test*.txt` + 1,000 other files:
#          reclaim rm -r --name 'test*.txt' | find -name 'test*.txt' -delete |
#          find -print0 | xargs -0 -P2 rm | ... -P4 | the unlink floor of the matching names
#          (and reclaim with --profile local-ssd: the loop image says rotational; with
#          --flat-methods "...", a subset, or reclaim-1: one unlinker, --batch-threads 1;
#          reclaim-11: one worker and one unlinker, nothing measured; with --base BIN, base and
#          base-11: reclaim and reclaim-11 of another binary, in the same run)
#   age:   a tree of M files (leaf directories of 100), a third 60 days old, the rest 1 day:
#          reclaim rm -r --older-than 30d | find -type f -mtime +30 -delete
#          (--age-split adds where the time goes: reclaim --dry-run, the walk and its stats
#          without the unlinks, and find -mtime +30 without -delete)
#   from:  the same tree, a list of L of its files (NUL-separated, absolute paths):
#          reclaim rm --from LIST -0 | xargs -0 -P2 rm < LIST | the unlink floor of the list
#          (examples/unlink_paths: each parent opened once, its names unlinked, nothing else)
#   net:   the age purge on the netfs emulator (bench/slowdisk, --rtt): reclaim vs find -delete
#          (and reclaim rm --from, the list of the old third)
#   mpi:   the age purge of a --mpi-files tree under `mpirun -np N` (--ranks), each rank its own
#          client of one emulated NFS server (as bench/mpi.sh), against one plain process
# flat, age and from are made once per file system as golden images (journaled ext4, xfs);
# every removal runs on a bit-identical copy, cold. Methods alternate within each run (the
# machine is shared: medians of --runs runs); each removal's user and system CPU seconds are
# kept beside its wall time. Run as root:
#
#   bash bench/select.sh --quick                  # 20,000 files, one run (~2 min)
#   bash bench/select.sh --flat 300000 --tree 300000 --from 200000 --runs 2
#   bash bench/select.sh --sections age --tree 1000000 --direct-io
#
# --direct-io: the loop devices read their image with direct I/O (`losetup --direct-io=on`),
# many requests at once as an SSD takes them; a buffered loop device reads its image one
# request at a time through the page cache, so cold metadata reads never overlap whatever the
# workers (bench/RESULTS.md, 2026-11-26, "The concurrency rule under a selection").
#
# Safety: everything lives in a marked mktemp scratch directory (lib.sh's guard); the loop
# images and mounts are the script's own and are undone in an EXIT/INT/TERM trap.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FLAT=1000000 TREE=1000000 FROM=200000 RUNS=3 FSS="ext4 xfs" NET=20000 RTT=0.5ms
MPI_FILES=200000 RANKS="1 2 4 8"
SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp} OUT="" NO_BUILD=0 DIRECT_IO=off SECTIONS="flat age from net mpi"
AGE_SPLIT=0 BASE="" FLAT_METHODS="reclaim reclaim-ssd find-delete xargs-P2 xargs-P4 floor"
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "select.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) FLAT=20000 TREE=20000 FROM=10000 NET=5000 MPI_FILES=5000 RANKS="1 2" RUNS=1 ;;
        --flat) need_arg "$@"; FLAT=$2; shift ;;
        --tree) need_arg "$@"; TREE=$2; shift ;;
        --from) need_arg "$@"; FROM=$2; shift ;;
        --net) need_arg "$@"; NET=$2; shift ;;
        --rtt) need_arg "$@"; RTT=$2; shift ;;
        --mpi-files) need_arg "$@"; MPI_FILES=$2; shift ;;
        --ranks) need_arg "$@"; RANKS=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --fs) need_arg "$@"; FSS=$2; shift ;;
        --sections) need_arg "$@"; SECTIONS=$2; shift ;;
        --scratch-base) need_arg "$@"; SCRATCH_BASE=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --no-build) NO_BUILD=1 ;;
        --direct-io) DIRECT_IO=on ;;
        --age-split) AGE_SPLIT=1 ;;
        --flat-methods) need_arg "$@"; FLAT_METHODS=$2; shift ;;
        --base) need_arg "$@"; BASE=$(realpath "$2"); shift ;;
        -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
        *) echo "select.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[[ $EUID -eq 0 ]] || { echo "select.sh: must run as root (loop mounts, drop_caches)" >&2; exit 1; }

bench_setup select
FLOORN=$TARGET_DIR/release/examples/unlink_names
FLOORP=$TARGET_DIR/release/examples/unlink_paths
if [[ $NO_BUILD == 0 ]]; then
    cargo_release --features mpi --bins --example unlink_names --example unlink_paths ||
        die "build failed (see $OUT/logs/build.log)"
    cargo_release -C "$REPO/bench/slowdisk" --bin netfs || die "netfs build failed (see $OUT/logs/build.log)"
fi

new_scratch reclaim-select
NETFS_PID=""
cleanup() { stop_netfs; release_scratch select.sh; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The workloads, made by one Python process (creation is not timed).
cat >"$SCRATCH/mk.py" <<'PY'
import os, sys, time
kind, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.mkdir(d)
now = time.time()
if kind == "flat":
    with open(sys.argv[4], "wb") as names:
        for i in range(n):
            name = f"test{i}.txt"
            os.close(os.open(os.path.join(d, name), os.O_CREAT | os.O_WRONLY, 0o644))
            names.write(name.encode() + b"\0")
        for i in range(1000):
            os.close(os.open(os.path.join(d, f"keep{i}.log"), os.O_CREAT | os.O_WRONLY, 0o644))
else:  # tree: leaf directories of 100 files under d/<a>/<b>; every third file is 60 days old
    listing = open(sys.argv[4], "wb") if len(sys.argv) > 4 else None
    want = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    step = max(1, n // want) if want else 0
    for i in range(n):
        leaf = os.path.join(d, f"a{i // 10000}", f"b{i // 100}")
        if i % 100 == 0:
            os.makedirs(leaf, exist_ok=True)
        p = os.path.join(leaf, f"f{i}")
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
        age = 60 if i % 3 == 0 else 1
        os.utime(p, (now - age * 86400, now - age * 86400))
        if listing and i % step == 0 and want > 0:
            listing.write(os.path.abspath(p).encode() + b"\0")
            want -= 1
PY

# Each local workload, once per file system: a golden image (made on a buffered loop, then
# unmounted), copied bit for bit for every removal, so every method and run meets the same
# layout and nothing is made between them. Golden and copies are mounted at the same path
# (RUN_MNT), so the absolute paths of `--from`'s list hold in every copy.
RUN_MNT=$SCRATCH/run-mnt
golden() { # fs kind (flat|age|from) -> $SCRATCH/golden-KIND-FS.img
    local fs=$1 kind=$2 img=$SCRATCH/golden-$2-$1.img dev n
    [[ -f $img ]] && return 0
    guard "$img"
    truncate -s 8G "$img"
    n=$([[ $kind == flat ]] && echo $((FLAT + 1000)) || echo "$TREE")
    case $fs in
        ext4) mkfs.ext4 -q -N $((3 * n / 2 + 100000)) "$img" ;;
        xfs) mkfs.xfs -q "$img" ;;
    esac
    dev=$(losetup -f --show "$img"); LOOPS+=("$dev")
    mkdir -p "$RUN_MNT"; mount "$dev" "$RUN_MNT"; MOUNTED+=("$RUN_MNT")
    log "$kind: making the golden $fs image"
    case $kind in
        flat) python3 "$SCRATCH/mk.py" flat "$RUN_MNT/flat" "$FLAT" "$SCRATCH/names" ;;
        age) python3 "$SCRATCH/mk.py" tree "$RUN_MNT/tree" "$TREE" ;;
        from) python3 "$SCRATCH/mk.py" tree "$RUN_MNT/tree" "$TREE" "$SCRATCH/list-$fs" "$FROM" ;;
    esac
    unmount "$RUN_MNT"; detach "$dev"
}
copy_of() { # fs kind -> a copy of its golden image mounted on RUN_MNT (loop in RUN_DEV)
    local img=$SCRATCH/run.img
    guard "$img"
    cp --sparse=always "$SCRATCH/golden-$2-$1.img" "$img"
    RUN_DEV=$(losetup -f --show --direct-io="$DIRECT_IO" "$img"); LOOPS+=("$RUN_DEV")
    mkdir -p "$RUN_MNT"; mount "$RUN_DEV" "$RUN_MNT"; MOUNTED+=("$RUN_MNT")
}
drop_copy() {
    unmount "$RUN_MNT"; detach "$RUN_DEV"
    rm -f -- "$SCRATCH/run.img"
}

RESULTS=$OUT/results.tsv
echo -e "section\tfs\trun\tmethod\tseconds\tleft\tuser\tsys" >"$RESULTS"
# timed SECTION FS RUN METHOD DIR EXPECT_LEFT CMD...: wall seconds (with the sync after), the
# command's user and system CPU seconds, and the files left (warned unless EXPECT_LEFT). What
# is left is then removed, unless KEEP_LEFT=1 (the local sections throw their copy away).
timed() {
    local sec=$1 fs=$2 run=$3 m=$4 dir=$5 expect=$6 t0 t1 left cpu=$SCRATCH/cpu.out user sys rc=0
    local TIMEFORMAT='%3U %3S'
    shift 6
    drop_caches
    t0=$(date +%s.%N)
    { time "$@" >>"$OUT/logs/$sec-$m.log" 2>&1; } 2>"$cpu" || rc=$?
    [[ $rc == 0 ]] || warn "$sec/$m exited $rc (see logs)"
    sync
    t1=$(date +%s.%N)
    read -r user sys <"$cpu"
    left=$(find "$dir" -mindepth 1 -not -type d | wc -l)
    [[ $left == "$expect" ]] || warn "$sec/$fs/$m left $left files, expected $expect"
    printf '%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\n' "$sec" "$fs" "$run" "$m" "$(echo "$t1 - $t0" | bc)" "$left" "$user" "$sys" >>"$RESULTS"
    log "$sec $fs run $run $m: $(echo "$t1 - $t0" | bc) s, cpu ${user} user ${sys} sys (left $left), load $(load1)"
    [[ ${KEEP_LEFT:-0} == 1 ]] && return 0
    # What is left goes from the server's side when there is one (quicker than through a client).
    case $dir in
        "$SCRATCH"/net/*|"$SCRATCH"/c0/*) dir=$SCRATCH/back/${dir##*/} ;;
    esac
    guard "$dir"
    rm -rf --one-file-system -- "$dir"
}

NPROC=$(nproc)
rotate() { # run -> the methods of "$@" rotated by run (alternating order between runs)
    local r=$1; shift
    local a=("$@") n=$# i
    for ((i = 0; i < n; i++)); do echo "${a[(i + r) % n]}"; done
}

for fs in $FSS; do
    log "$fs: direct I/O $DIRECT_IO"
    for run in $(seq 1 "$RUNS"); do
        if [[ " $SECTIONS " == *" flat "* ]]; then
            golden "$fs" flat
            # shellcheck disable=SC2086 # the methods are words
            for m in $(rotate "$run" $FLAT_METHODS); do
                copy_of "$fs" flat
                d=$RUN_MNT/flat; guard "$d"
                case $m in
                    reclaim) KEEP_LEFT=1 timed flat "$fs" "$run" "$m" "$d" 1000 "$RECLAIM" rm -r --json --name 'test*.txt' "$d" ;;
                    # The loop image says rotational; on a busy machine the idle probe can find it
                    # slow and govern the removal (one worker to start): the engine without it.
                    reclaim-ssd) KEEP_LEFT=1 timed flat "$fs" "$run" "$m" "$d" 1000 "$RECLAIM" rm -r --json --profile local-ssd --name 'test*.txt' "$d" ;;
                    reclaim-1) KEEP_LEFT=1 timed flat "$fs" "$run" "$m" "$d" 1000 "$RECLAIM" rm -r --json --batch-threads 1 --name 'test*.txt' "$d" ;;
                    reclaim-11) KEEP_LEFT=1 timed flat "$fs" "$run" "$m" "$d" 1000 "$RECLAIM" rm -r --json --threads 1 --batch-threads 1 --name 'test*.txt' "$d" ;;
                    base) KEEP_LEFT=1 timed flat "$fs" "$run" "$m" "$d" 1000 "$BASE" rm -r --json --name 'test*.txt' "$d" ;;
                    base-11) KEEP_LEFT=1 timed flat "$fs" "$run" "$m" "$d" 1000 "$BASE" rm -r --json --threads 1 --batch-threads 1 --name 'test*.txt' "$d" ;;
                    find-delete) KEEP_LEFT=1 timed flat "$fs" "$run" "$m" "$d" 1000 find "$d" -name 'test*.txt' -delete ;;
                    xargs-P2) KEEP_LEFT=1 timed flat "$fs" "$run" "$m" "$d" 1000 sh -c 'find "$1" -name "test*.txt" -print0 | xargs -0 -P2 -n 1000 rm -f' sh "$d" ;;
                    xargs-P4) KEEP_LEFT=1 timed flat "$fs" "$run" "$m" "$d" 1000 sh -c 'find "$1" -name "test*.txt" -print0 | xargs -0 -P4 -n 1000 rm -f' sh "$d" ;;
                    floor) KEEP_LEFT=1 timed flat "$fs" "$run" "$m" "$d" 1000 "$FLOORN" --threads "$NPROC" "$d" "$SCRATCH/names" ;;
                esac
                drop_copy
            done
        fi
        if [[ " $SECTIONS " == *" age "* ]]; then
            golden "$fs" age
            left=$((TREE - (TREE + 2) / 3))
            methods=(reclaim find-mtime)
            [[ $AGE_SPLIT == 1 ]] && methods+=(reclaim-dry find-stat)
            for m in $(rotate "$run" "${methods[@]}"); do
                copy_of "$fs" age
                d=$RUN_MNT/tree; guard "$d"
                case $m in
                    reclaim) KEEP_LEFT=1 timed age "$fs" "$run" "$m" "$d" "$left" "$RECLAIM" rm -r --json --older-than 30d "$d" ;;
                    find-mtime) KEEP_LEFT=1 timed age "$fs" "$run" "$m" "$d" "$left" find "$d" -type f -mtime +30 -delete ;;
                    reclaim-dry) KEEP_LEFT=1 timed age "$fs" "$run" "$m" "$d" "$TREE" "$RECLAIM" rm -r --dry-run --older-than 30d "$d" ;;
                    find-stat) KEEP_LEFT=1 timed age "$fs" "$run" "$m" "$d" "$TREE" sh -c 'find "$1" -type f -mtime +30 | wc -l' sh "$d" ;;
                esac
                drop_copy
            done
        fi
        if [[ " $SECTIONS " == *" from "* ]]; then
            golden "$fs" from
            list=$SCRATCH/list-$fs
            listed=$(tr -cd '\0' <"$list" | wc -c)
            for m in $(rotate "$run" reclaim-from xargs-P2 from-floor); do
                copy_of "$fs" from
                d=$RUN_MNT/tree; guard "$d"
                case $m in
                    reclaim-from) KEEP_LEFT=1 timed from "$fs" "$run" "$m" "$d" $((TREE - listed)) "$RECLAIM" rm --from "$list" -0 ;;
                    xargs-P2) KEEP_LEFT=1 timed from "$fs" "$run" "$m" "$d" $((TREE - listed)) sh -c 'xargs -0 -P2 -n 1000 rm -f <"$1"' sh "$list" ;;
                    from-floor) KEEP_LEFT=1 timed from "$fs" "$run" "$m" "$d" $((TREE - listed)) "$FLOORP" --threads "$NPROC" "$list" ;;
                esac
                drop_copy
            done
        fi
    done
done

if [[ " $SECTIONS " == *" net "* ]]; then
    mkdir "$SCRATCH/back" "$SCRATCH/net"
    mount -t tmpfs -o size=2g,nr_inodes=4m select-back "$SCRATCH/back"; MOUNTED+=("$SCRATCH/back")
    "$NETFS" --backing "$SCRATCH/back" --mount "$SCRATCH/net" --rtt "$RTT" --slots 64 \
        --server-ops 128 --readdirplus --subtype nfs --ready-file "$SCRATCH/ready" 2>>"$OUT/logs/netfs.log" &
    NETFS_PID=$!
    wait_for_file "$SCRATCH/ready" || die "netfs did not mount"
    left=$((NET - (NET + 2) / 3))
    for run in $(seq 1 "$RUNS"); do
        for m in $(rotate "$run" reclaim find-mtime reclaim-from); do
            guard "$SCRATCH/back/tree"
            python3 "$SCRATCH/mk.py" tree "$SCRATCH/back/tree" "$NET" "$SCRATCH/netlist" "$NET"
            # The list names the files as the client sees them; only the old third goes.
            python3 - "$SCRATCH/netlist" "$SCRATCH/back" "$SCRATCH/net" <<'PY'
import os, sys
lst, back, net = sys.argv[1:]
out = [p.replace(back, net, 1) for p in open(lst, "rb").read().decode().split("\0") if p and int(p.rsplit("f", 1)[1]) % 3 == 0]
open(lst, "wb").write("".join(p + "\0" for p in out).encode())
PY
            d=$SCRATCH/net/tree
            case $m in
                reclaim) timed net netfs "$run" "$m" "$d" "$left" "$RECLAIM" rm -r --older-than 30d "$d" ;;
                find-mtime) timed net netfs "$run" "$m" "$d" "$left" find "$d" -type f -mtime +30 -delete ;;
                reclaim-from) timed net netfs "$run" "$m" "$d" "$left" "$RECLAIM" rm --from "$SCRATCH/netlist" -0 ;;
            esac
        done
    done
fi

if [[ " $SECTIONS " == *" mpi "* ]]; then
    command -v mpirun >/dev/null || die "mpirun not found (Debian: openmpi-bin)"
    stop_netfs
    mountpoint -q "$SCRATCH/back" 2>/dev/null || {
        mkdir -p "$SCRATCH/back"
        mount -t tmpfs -o size=2g,nr_inodes=4m select-back "$SCRATCH/back"; MOUNTED+=("$SCRATCH/back")
    }
    MAXR=$(tr ' ' '\n' <<<"$RANKS" | sort -n | tail -1)
    mounts=()
    for i in $(seq 0 $((MAXR - 1))); do mkdir -p "$SCRATCH/c$i"; mounts+=(--mount "$SCRATCH/c$i"); done
    mkdir -p "$SCRATCH/common"
    rm -f "$SCRATCH/ready"
    "$NETFS" --backing "$SCRATCH/back" "${mounts[@]}" --rtt "$RTT" --slots 64 --server-ops 128 \
        --readdirplus --subtype nfs --ready-file "$SCRATCH/ready" 2>>"$OUT/logs/netfs.log" &
    NETFS_PID=$!
    wait_for_file "$SCRATCH/ready" || die "netfs did not mount"
    write_rank_script "$SCRATCH/rank.sh"
    left=$((MPI_FILES - (MPI_FILES + 2) / 3))
    for run in $(seq 1 "$RUNS"); do
        for m in $(rotate "$run" plain $(for n in $RANKS; do echo "np$n"; done)); do
            guard "$SCRATCH/back/tree"
            python3 "$SCRATCH/mk.py" tree "$SCRATCH/back/tree" "$MPI_FILES"
            case $m in
                plain) timed mpi netfs "$run" "$m" "$SCRATCH/c0/tree" "$left" "$RECLAIM" rm -r --older-than 30d "$SCRATCH/c0/tree" ;;
                np*) timed mpi netfs "$run" "$m" "$SCRATCH/c0/tree" "$left" mpirun --allow-run-as-root --oversubscribe \
                        -x "CLIENTS=$SCRATCH" -x "COMMON=$SCRATCH/common" -x RECLAIM_CONFIG= -np "${m#np}" \
                        "$SCRATCH/rank.sh" "$RECLAIM" rm -r --older-than 30d "$SCRATCH/common/tree" ;;
            esac
        done
    done
fi

log "medians (seconds) per section, file system and method:"
python3 - "$RESULTS" <<'PY' | tee "$OUT/summary.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
groups, cpu = {}, {}
for r in rows:
    key = (r["section"], r["fs"])
    groups.setdefault(key, {}).setdefault(r["method"], []).append(float(r["seconds"]))
    cpu.setdefault(key, {}).setdefault(r["method"], []).append(float(r["user"]) + float(r["sys"]))
for (sec, fs), ms in groups.items():
    base = statistics.median(ms.get("reclaim", ms.get("reclaim-from", ms.get("plain", [float("nan")]))))
    for m, v in ms.items():
        med = statistics.median(v)
        c = statistics.median(cpu[(sec, fs)][m])
        print(f"{sec}\t{fs}\t{m}\t{med:.2f} s\tcpu {c:.2f} s\t(n={len(v)}; reclaim/this = {base / med:.2f})")
PY
log "results in $OUT"
