#!/usr/bin/env bash
# Packing a tree of small files (issue 23, DESIGN §12): `reclaim pack` (write, read back and
# compare every file, remove the originals) against the archivers alone — `tar -cf - | zstd
# -T0`, the same followed by `rm -rf`, squashfs's own `mksquashfs` (tuned: see below) and
# `tar | tar2sqfs` — on a journaled ext4 loop image (cold cache every run) and on the NFS
# emulator `netfs` (bench/slowdisk). Then the field report's measure: reading everything
# (`tar -cf - X | cat >/dev/null`, `rsync -a --dry-run`, `du -s`) of the tree, of its archive
# file and of the archive mounted, on netfs. Run as root:
#
#   bash bench/pack.sh --quick     # 20,000 files, 1 run (~5 min)
#   bash bench/pack.sh             # 200,000 files of 4 KiB, 3 runs on ext4, 1 on netfs
#
# The methods of one run are run one after the other and the runs alternate, so that load
# from others on the machine spreads over all methods; medians are reported.
#
# Safety: everything lives in a scratch directory made with mktemp and marked with a random
# token; loop devices, mounts and the netfs daemon made here are undone in an EXIT trap. In
# the repository only bench/out/ is written.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<'EOF'
usage: bench/pack.sh [options]

  --quick               20,000 files, 1 run everywhere
  --files N             files of 4 KiB in the tree (default 200000)
  --net-files N         files on netfs (default: --files)
  --runs N              runs per method on ext4 (default 3)
  --net-runs N          runs per method on netfs (default 1)
  --rtt T               netfs round trip (default 0.5ms)
  --fs "..."            ext4 and/or netfs (default "ext4 netfs")
  --methods "..."       pack methods, by name (default: all)
  --method NAME=CMD     define an extra method (repeatable; {dir} {out} {parent} {name}),
                        e.g. another build before/after a change:
                        --method 'reclaim-base=/tmp/base/reclaim pack --to {out}.sqfs {dir}'
  --no-read             skip the reading measure
  --scratch-base DIR    where the mktemp scratch dir goes (default /var/tmp)
  --out DIR             output directory (default bench/out/pack-<timestamp>)
  --no-build            do not run cargo build
  -h, --help            this help
EOF
}

FILES=200000 NET_FILES="" RUNS=3 NET_RUNS=1 RTT=0.5ms FSS="ext4 netfs" METHODS_SEL="" READ=1
SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp} OUT="" NO_BUILD=0 EXTRA=()
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "pack.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) FILES=20000 RUNS=1 NET_RUNS=1 ;;
        --files) need_arg "$@"; FILES=$2; shift ;;
        --net-files) need_arg "$@"; NET_FILES=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --net-runs) need_arg "$@"; NET_RUNS=$2; shift ;;
        --rtt) need_arg "$@"; RTT=$2; shift ;;
        --fs) need_arg "$@"; FSS=$2; shift ;;
        --methods) need_arg "$@"; METHODS_SEL=$2; shift ;;
        --method) need_arg "$@"; EXTRA+=("$2"); shift ;;
        --no-read) READ=0 ;;
        --scratch-base) need_arg "$@"; SCRATCH_BASE=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --no-build) NO_BUILD=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "pack.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
NET_FILES=${NET_FILES:-$FILES}
[[ $EUID -eq 0 ]] || { echo "pack.sh: must run as root (loop devices, mounts, drop_caches)" >&2; exit 1; }
for t in tar zstd mksquashfs tar2sqfs sqfs2tar rsync bc python3; do
    command -v "$t" >/dev/null || { echo "pack.sh: needs $t (apt-get install tar zstd squashfs-tools squashfs-tools-ng rsync bc python3)" >&2; exit 1; }
done

bench_setup pack
if [[ $NO_BUILD == 0 ]]; then
    cargo_release --bin reclaim || die "cargo build failed (see $OUT/logs/build.log)"
    cargo_release -C "$REPO/bench/slowdisk" --bin netfs || die "netfs build failed (see $OUT/logs/build.log)"
fi
[[ -x $RECLAIM ]] || die "missing $RECLAIM"

new_scratch reclaim-pack
NETFS_PID=""
cleanup() {
    local m
    # The archive mounts first (they hold the netfs mount busy), then the rest.
    for m in $(mounts_under "$SCRATCH"); do [[ $m == */amnt ]] && umount_retry "$m"; done
    stop_netfs
    release_scratch pack.sh
}
trap cleanup EXIT
trap 'exit 130' INT TERM

{
    echo "date: $(date -Is)"
    echo "kernel: $(uname -r)"
    echo "cpus: $(nproc); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "reclaim: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "tar: $(tar --version | head -1); zstd: $(zstd --version)"
    echo "mksquashfs: $(mksquashfs -version 2>&1 | head -1); tar2sqfs: $(tar2sqfs --version 2>&1 | head -1)"
} >"$OUT/machine.txt"

# N files of 4 KiB of random bytes, 100 per directory, under $1.
make_tree() {
    python3 - "$1" "$2" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(root)
for i in range(n):
    d = os.path.join(root, f"d{i // 100:05}")
    if i % 100 == 0:
        os.mkdir(d)
    with open(os.path.join(d, f"f{i % 100:03}"), "wb") as f:
        f.write(os.urandom(4096))
EOF
}

# Pack methods on {dir} (the tree), writing {out} (a path beside it, without extension).
declare -A METHOD_CMD=()
METHOD_ORDER=()
def_method() { METHOD_CMD[$1]=$2; METHOD_ORDER+=("$1"); }
def_method tar-zstd 'tar -C {parent} -cf - {name} | zstd -q -T0 -o {out}.tar.zst'
def_method tar-zstd+rm 'tar -C {parent} -cf - {name} | zstd -q -T0 -o {out}.tar.zst && rm -rf {dir}'
# squashfs-tools 4.5.1 compares every file with every earlier file of the same size (all of
# them here): -no-duplicates removes that quadratic cost; zstd's default level in mksquashfs
# is 15, -Xcompression-level 3 matches zstd -T0's.
def_method mksquashfs 'mksquashfs {dir} {out}.sqfs -quiet -no-progress -no-duplicates -comp zstd -Xcompression-level 3'
def_method tar2sqfs 'tar -C {dir} -cf - . | tar2sqfs -q -f -c zstd -X level=3 {out}.sqfs'
def_method reclaim '{reclaim} pack --to {out}.sqfs {dir}'
def_method reclaim-keep '{reclaim} pack --keep --to {out}.sqfs {dir}'
for e in "${EXTRA[@]}"; do
    [[ $e == *=* ]] || die "--method needs NAME=CMD, got '$e'"
    def_method "${e%%=*}" "${e#*=}"
done
select_methods

timed() { # cmd -> seconds (the command and a sync)
    local cmd=$1 t0 t1
    t0=$(date +%s.%N)
    bash -c "$cmd && sync" >>"$OUT/logs/methods.log" 2>&1 || warn "failed: $cmd"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}

run_cmd() { # method dir out
    local c=${METHOD_CMD[$1]}
    c=${c//\{dir\}/$2}
    c=${c//\{parent\}/$(dirname "$2")}
    c=${c//\{name\}/$(basename "$2")}
    c=${c//\{out\}/$3}
    c=${c//\{reclaim\}/RECLAIM_CONFIG= $RECLAIM}
    echo "$c"
}

echo "fs,files,method,run,seconds" >"$OUT/raw.csv"
echo "fs,files,target,reader,run,seconds" >"$OUT/read.csv"

for fs in $FSS; do
    case $fs in
    ext4)
        # The golden image: journaled ext4 with the tree; every run works on a copy of it.
        img_size=$(( (FILES * 16384 + (2 << 30)) ))
        truncate -s "$img_size" "$SCRATCH/golden.img"
        mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$SCRATCH/golden.img"
        mkdir -p "$SCRATCH/m"
        dev=$(losetup --direct-io=on -f --show "$SCRATCH/golden.img"); LOOPS+=("$dev")
        mount "$dev" "$SCRATCH/m"; MOUNTED+=("$SCRATCH/m")
        log "ext4: making $FILES files of 4 KiB"
        make_tree "$SCRATCH/m/tree" "$FILES"
        unmount "$SCRATCH/m"; detach "$dev"
        for run in $(seq 1 "$RUNS"); do
            for m in "${METHODS[@]}"; do
                cp --sparse=always "$SCRATCH/golden.img" "$SCRATCH/run.img"
                dev=$(losetup --direct-io=on -f --show "$SCRATCH/run.img"); LOOPS+=("$dev")
                mount "$dev" "$SCRATCH/m"; MOUNTED+=("$SCRATCH/m")
                guard "$SCRATCH/m/tree"
                drop_caches
                s=$(timed "$(run_cmd "$m" "$SCRATCH/m/tree" "$SCRATCH/m/out")")
                log "ext4 $FILES $m run $run: $s s"
                echo "ext4,$FILES,$m,$run,$s" >>"$OUT/raw.csv"
                unmount "$SCRATCH/m"; detach "$dev"
                rm -f "$SCRATCH/run.img"
            done
        done
        rm -f "$SCRATCH/golden.img"
        ;;
    netfs)
        [[ -x $NETFS ]] || die "missing $NETFS"
        mkdir -p "$SCRATCH/back" "$SCRATCH/nmnt" "$SCRATCH/amnt" "$SCRATCH/empty"
        # The server's disk is a tmpfs: what is measured is the protocol's round trips.
        mount -t tmpfs -o size=8g,nr_inodes=4m pack-back "$SCRATCH/back"; MOUNTED+=("$SCRATCH/back")
        log "netfs: making $NET_FILES files of 4 KiB"
        make_tree "$SCRATCH/back/golden" "$NET_FILES"
        rm -f "$SCRATCH/ready"
        "$NETFS" --backing "$SCRATCH/back" --mount "$SCRATCH/nmnt" --rtt "$RTT" --slots 64 \
            --readdirplus --subtype nfs --ready-file "$SCRATCH/ready" 2>>"$OUT/logs/netfs.log" &
        NETFS_PID=$!
        wait_for_file "$SCRATCH/ready" || die "netfs did not mount"
        for run in $(seq 1 "$NET_RUNS"); do
            for m in "${METHODS[@]}"; do
                guard "$SCRATCH/back/tree"
                rm -rf --one-file-system "$SCRATCH/back/tree" "$SCRATCH/back/out".*
                cp -a "$SCRATCH/back/golden" "$SCRATCH/back/tree"
                drop_caches
                s=$(timed "$(run_cmd "$m" "$SCRATCH/nmnt/tree" "$SCRATCH/nmnt/out")")
                log "netfs rtt $RTT $NET_FILES $m run $run: $s s"
                echo "netfs-$RTT,$NET_FILES,$m,$run,$s" >>"$OUT/raw.csv"
            done
        done
        if [[ $READ == 1 ]]; then
            # Before and after: the tree, its archive as one file, the archive mounted.
            rm -rf --one-file-system "$SCRATCH/back/tree" "$SCRATCH/back/out".*
            cp -a "$SCRATCH/back/golden" "$SCRATCH/back/tree"
            RECLAIM_CONFIG= "$RECLAIM" pack --keep --to "$SCRATCH/nmnt/tree.sqfs" "$SCRATCH/nmnt/tree" >>"$OUT/logs/methods.log" 2>&1
            for run in $(seq 1 "$NET_RUNS"); do
                for target in tree archive mount; do
                    for reader in tar rsync du; do
                        case $target in
                            tree) x=$SCRATCH/nmnt/tree ;;
                            archive) x=$SCRATCH/nmnt/tree.sqfs ;;
                            mount) x=$SCRATCH/amnt ;;
                        esac
                        drop_caches
                        if [[ $target == mount ]]; then
                            mount -t squashfs -o ro,loop "$SCRATCH/nmnt/tree.sqfs" "$SCRATCH/amnt"
                        fi
                        case $reader in
                            tar) cmd="tar -C $(dirname "$x") -cf - $(basename "$x") | cat >/dev/null" ;;
                            rsync) cmd="rsync -a --dry-run $x $SCRATCH/empty/" ;;
                            du) cmd="du -s $x" ;;
                        esac
                        s=$(timed "$cmd")
                        [[ $target == mount ]] && umount "$SCRATCH/amnt"
                        log "netfs rtt $RTT read $target by $reader run $run: $s s"
                        echo "netfs-$RTT,$NET_FILES,$target,$reader,$run,$s" >>"$OUT/read.csv"
                    done
                done
            done
        fi
        stop_netfs
        ;;
    *) die "unknown --fs $fs (ext4, netfs)" ;;
    esac
done

python3 - "$OUT/raw.csv" "$OUT/read.csv" >"$OUT/summary.md" <<'EOF'
import csv, statistics, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(list)
for r in rows:
    by[(r["fs"], r["files"], r["method"])].append(float(r["seconds"]))
for fs, n in sorted({(r["fs"], r["files"]) for r in rows}):
    meds = {m: statistics.median(v) for (a, b, m), v in by.items() if (a, b) == (fs, n)}
    alone = [v for m, v in meds.items() if m in ("tar-zstd", "mksquashfs", "tar2sqfs")]
    fastest = min(alone) if alone else None
    print(f"\n### {fs}, {int(n):,} files of 4 KiB\n")
    print("| method | median s | runs | ÷ fastest archiver alone |")
    print("|---|---:|---:|---:|")
    for m, v in sorted(meds.items(), key=lambda kv: kv[1]):
        ratio = f"{v / fastest:.2f}" if fastest else "-"
        print(f"| {m} | {v:.2f} | {len(by[(fs, n, m)])} | {ratio} |")
rows = list(csv.DictReader(open(sys.argv[2])))
if rows:
    by = collections.defaultdict(list)
    for r in rows:
        by[(r["fs"], r["files"], r["target"], r["reader"])].append(float(r["seconds"]))
    for fs, n in sorted({(r["fs"], r["files"]) for r in rows}):
        print(f"\n### Reading everything on {fs}, {int(n):,} files (median s)\n")
        print("| reader | tree | archive file | archive mounted |")
        print("|---|---:|---:|---:|")
        for reader in ("tar", "rsync", "du"):
            cells = [by.get((fs, n, t, reader)) for t in ("tree", "archive", "mount")]
            print(f"| {reader} | " + " | ".join(f"{statistics.median(c):.2f}" if c else "-" for c in cells) + " |")
EOF
cat "$OUT/summary.md"
log "done: $OUT"
