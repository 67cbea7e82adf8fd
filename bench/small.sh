#!/usr/bin/env bash
# Fixed costs (issue 43): small removals against GNU rm, one command each, warm cache, and a
# btrfs subvolume cold against `btrfs subvolume delete`. Run as root:
#
#   sudo bash bench/small.sh                # ext4 xfs btrfs tmpfs x 1, 20, 1000 files, 5 rounds,
#                                           # 300 CPU pairs at 1 and 20 files, then the
#                                           # subvolume (100,000 files, 5 runs): ~15 min
#   sudo bash bench/small.sh --quick        # 2 rounds, 100 pairs, subvolume of 20,000 files, 3 runs
#
# Part `small`: for each file system (a loop image on a sparse file, `losetup --direct-io=on`,
# made here; tmpfs mounted here) and each size (1: one file named as the operand; N > 1: a
# directory of N empty files removed with -r), hyperfine times every method, the directory
# made afresh (and `sync -f`ed) before every run, untimed: `gnu` (GNU rm), `reclaim` (`reclaim
# rm`), `as-rm` (reclaim through a link named rm: GNU mode), and with `--base BIN` the same two
# for another reclaim binary (`base`, `base-as-rm`: main's, to compare in the same run).
# Rounds interleave the methods (their order rotates each round), so drift over the run
# hits all alike; `summary.md` gives each method's median over all runs, its ratio to GNU rm's
# median, and the median of the per-round ratios.
#
# Part `pairs`: on the same file systems, at 1 and 20 files, each reclaim method against GNU rm
# in N pairs alternated by a small C driver (bench/startpairs.c, built here with cc): the CPU
# (user + sys) of each run from wait4's rusage, the target made afresh before each, untimed.
# `summary.md` gives the ratio of the mean CPU to GNU rm's in the same pairs, the median of the
# pairs' wall-time ratios and the page faults of a run. At 1-2 ms a start's wall time spreads
# more than the differences asked about; CPU summed over hundreds of pairs does not.
#
# Part `subvolume`: a subvolume of N empty files in 100 directories, made on a fresh btrfs
# image, synced, caches dropped; then timed: `btrfs subvolume delete` or `reclaim rm -r`
# (alternating, the first method rotating per run): the time it takes to leave the namespace
# (the command's wall time).
#
# Safety: everything lives in a scratch directory made with mktemp under --scratch-base and
# marked with a random token; every removal targets a path strictly inside it; mounts and loop
# devices are undone in an EXIT trap. In the repository only bench/out/ is written.
set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
private_mount_ns RECLAIM_SMALL_NS "$@"

usage() {
    cat <<'EOF'
usage: bench/small.sh [options]

  --quick               2 rounds; subvolume of 20,000 files, 3 runs
  --parts "..."         small pairs subvolume (default all three)
  --fs "..."            ext4 xfs btrfs tmpfs (default all four)
  --sizes "..."         files per removal; 1 is a single file (default "1 20 1000")
  --rounds N            rounds of interleaved methods (default 5)
  --runs N              hyperfine runs per method and round (default 10)
  --pairs N             pairs per method, file system and size in part pairs (default 300)
  --subvol-files N      files in the subvolume (default 100000)
  --subvol-runs N       runs per method (default 5)
  --base BIN            another reclaim binary, timed as `base` and `base-as-rm`
  --scratch-base DIR    where the mktemp scratch dir goes (default /var/tmp)
  --out DIR             output directory (default bench/out/small-<timestamp>)
  --no-build            use target/release/reclaim as it is
  --no-install          do not install missing tools (hyperfine, xfsprogs, btrfs-progs)
  -h, --help            this help
EOF
}

PARTS="small pairs subvolume" PAIRS=300 FS_LIST="ext4 xfs btrfs tmpfs" SIZES="1 20 1000" ROUNDS=5 RUNS=10
SV_FILES=100000 SV_RUNS=5 BASE="" SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp} OUT=""
NO_BUILD=0 NO_INSTALL=0
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "small.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) ROUNDS=2 PAIRS=100 SV_FILES=20000 SV_RUNS=3 ;;
        --parts) need_arg "$@"; PARTS=$2; shift ;;
        --fs) need_arg "$@"; FS_LIST=$2; shift ;;
        --sizes) need_arg "$@"; SIZES=$2; shift ;;
        --rounds) need_arg "$@"; ROUNDS=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --pairs) need_arg "$@"; PAIRS=$2; shift ;;
        --subvol-files) need_arg "$@"; SV_FILES=$2; shift ;;
        --subvol-runs) need_arg "$@"; SV_RUNS=$2; shift ;;
        --base) need_arg "$@"; BASE=$2; shift ;;
        --scratch-base) need_arg "$@"; SCRATCH_BASE=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --no-build) NO_BUILD=1 ;;
        --no-install) NO_INSTALL=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "small.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for v in ROUNDS RUNS PAIRS SV_FILES SV_RUNS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "small.sh: --${v,,} must be a positive number" >&2; exit 2; }
done
for s in $SIZES; do [[ $s =~ ^[1-9][0-9]*$ ]] || { echo "small.sh: bad size $s" >&2; exit 2; }; done
for f in $FS_LIST; do [[ $f =~ ^(ext4|xfs|btrfs|tmpfs)$ ]] || { echo "small.sh: unknown fs $f" >&2; exit 2; }; done
[[ $EUID -eq 0 ]] || { echo "small.sh: must run as root (loop devices, mount, drop_caches)" >&2; exit 1; }

bench_setup small
declare -A TOOLS=([hyperfine]=hyperfine [mkfs.xfs]=xfsprogs [mkfs.btrfs]=btrfs-progs
    [python3]=python3 [losetup]=mount [cc]=gcc)
install_missing TOOLS
if [[ $NO_BUILD == 0 ]]; then
    cargo_release --bin reclaim || die "cargo build failed (see $OUT/logs/build.log)"
fi
[[ -x $RECLAIM ]] || die "no reclaim binary at $RECLAIM"
[[ -z $BASE || -x $BASE ]] || die "--base $BASE is not an executable"
warn_if_busy

new_scratch reclaim-small
cleanup() { release_scratch small.sh; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The binaries as the commands name them: reclaim, and links named rm (GNU mode).
mkdir "$SCRATCH/bin" "$SCRATCH/bin-base"
cp "$RECLAIM" "$SCRATCH/bin/reclaim"
ln -s reclaim "$SCRATCH/bin/rm"
if [[ -n $BASE ]]; then
    cp "$BASE" "$SCRATCH/bin-base/reclaim"
    ln -s reclaim "$SCRATCH/bin-base/rm"
fi
GNU_RM=$(command -v rm)

# A fresh directory of N empty files (made in one process: untimed, by hyperfine's --prepare),
# synced so that no journal commit of its making lands in the timed run.
MK=$SCRATCH/mk.sh
cat >"$MK" <<'EOF'
#!/bin/bash
# mk.sh PATH N: N=1: PATH is one empty file; N>1: PATH is a directory of N empty files.
set -e
p=$1 n=$2
rm -rf -- "$p"
if [[ $n == 1 ]]; then
    : >"$p"
else
    mkdir -- "$p"
    cd -- "$p"
    i=0
    while ((i < n)); do
        : >"f$i"
        i=$((i + 1))
    done
fi
sync -f -- "$(dirname -- "$p")"
EOF
chmod +x "$MK"

# Method -> command for a target at $1 of size $2 (1: a file; else a directory, -r).
method_cmd() {
    local m=$1 p=$2 n=$3 r=""
    [[ $n == 1 ]] || r="-r "
    case $m in
        gnu) echo "$GNU_RM $r$p" ;;
        reclaim) echo "$SCRATCH/bin/reclaim rm $r$p" ;;
        as-rm) echo "$SCRATCH/bin/rm $r$p" ;;
        base) echo "$SCRATCH/bin-base/reclaim rm $r$p" ;;
        base-as-rm) echo "$SCRATCH/bin-base/rm $r$p" ;;
    esac
}
METHODS=(gnu reclaim as-rm)
[[ -n $BASE ]] && METHODS+=(base base-as-rm)

mount_fs() { # fs -> prints the mount point
    local fs=$1 mnt=$SCRATCH/mnt-$1 img dev
    mkdir -p "$mnt"
    if [[ $fs == tmpfs ]]; then
        mount -t tmpfs -o size=512m tmpfs "$mnt"
    else
        img=$SCRATCH/$fs.img
        truncate -s 2G "$img"
        dev=$(losetup --find --show --direct-io=on "$img")
        LOOPS+=("$dev")
        case $fs in
            ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev" ;;
            xfs) mkfs.xfs -q -f "$dev" ;;
            btrfs) mkfs.btrfs -q -f "$dev" ;;
        esac >>"$OUT/logs/mkfs.log" 2>&1
        mount "$dev" "$mnt"
    fi
    MOUNTED+=("$mnt")
    echo "$mnt"
}

{
    machine_meta
    printf 'reclaim\t%s\n' "$RECLAIM"
    [[ -n $BASE ]] && printf 'base\t%s\n' "$BASE"
    printf 'gnu_rm\t%s\n' "$("$GNU_RM" --version | head -1)"
    printf 'hyperfine\t%s\n' "$(hyperfine --version)"
} >"$OUT/meta.txt"

# ---------------------------------------------------------------------------------------------
# small: 1, 20, 1000 files, warm cache
# ---------------------------------------------------------------------------------------------
if [[ " $PARTS " == *" small "* ]]; then
    echo "fs,size,method,round,run,seconds,user_s,sys_s" >"$OUT/small.csv"
    for fs in $FS_LIST; do
        mnt=$(mount_fs "$fs")
        guard "$mnt/x"
        for n in $SIZES; do
            target=$mnt/t
            for ((round = 1; round <= ROUNDS; round++)); do
                k=$(((round - 1) % ${#METHODS[@]}))
                order=("${METHODS[@]:k}" "${METHODS[@]:0:k}")
                for m in "${order[@]}"; do
                    json=$OUT/logs/$fs-$n-$m-$round.json
                    log "$fs, $n files, $m, round $round/$ROUNDS (load $(load1))"
                    hyperfine -N --style none --warmup 1 --runs "$RUNS" \
                        --prepare "$MK $target $n" \
                        --export-json "$json" \
                        "$(method_cmd "$m" "$target" "$n")" >>"$OUT/logs/hyperfine.log" 2>&1 ||
                        die "$m failed on $fs with $n files (see $OUT/logs/hyperfine.log)"
                    python3 - "$json" "$fs" "$n" "$m" "$round" >>"$OUT/small.csv" <<'EOF'
import json, sys
path, fs, n, m, rnd = sys.argv[1:]
r = json.load(open(path))["results"][0]
# Per run: its wall time; user and system CPU are the round's means (what hyperfine keeps).
for i, t in enumerate(r["times"]):
    print(f"{fs},{n},{m},{rnd},{i + 1},{t:.6f},{r['user']:.6f},{r['system']:.6f}")
EOF
                done
            done
            rm -rf -- "$target"
        done
        unmount "$mnt"
        for d in "${LOOPS[@]}"; do detach "$d"; done
    done
fi

# ---------------------------------------------------------------------------------------------
# pairs: CPU at 1 and 20 files against GNU rm, pair by pair
# ---------------------------------------------------------------------------------------------
if [[ " $PARTS " == *" pairs "* ]]; then
    cc -O2 -o "$SCRATCH/startpairs" "$REPO/bench/startpairs.c" 2>>"$OUT/logs/build.log" ||
        die "cannot build bench/startpairs.c (see $OUT/logs/build.log)"
    echo "fs,size,method,pairs,cpu_ms,gnu_cpu_ms,cpu_ratio,wall_ratio,faults,gnu_faults" >"$OUT/pairs.csv"
    for fs in $FS_LIST; do
        mnt=$(mount_fs "$fs")
        guard "$mnt/t"
        for n in 1 20; do
            if [[ $n == 1 ]]; then setup=file:$mnt/t; else setup=dir:$mnt/t:$n; fi
            for m in "${METHODS[@]}"; do
                [[ $m == gnu ]] && continue
                log "$fs, $n files, $m against gnu, $PAIRS pairs (load $(load1))"
                read -ra a <<<"$(method_cmd "$m" "$mnt/t" "$n")"
                read -ra b <<<"$(method_cmd gnu "$mnt/t" "$n")"
                line=$("$SCRATCH/startpairs" "$PAIRS" "$setup" -- "${a[@]}" -- "${b[@]}") ||
                    die "$m or gnu failed on $fs with $n files"
                echo "$fs,$n,$m,$PAIRS,$(tr '\t' ',' <<<"$line")" >>"$OUT/pairs.csv"
            done
            rm -rf -- "$mnt/t"
        done
        unmount "$mnt"
        for d in "${LOOPS[@]}"; do detach "$d"; done
    done
fi

# ---------------------------------------------------------------------------------------------
# subvolume: time to leave the namespace, cold cache
# ---------------------------------------------------------------------------------------------
if [[ " $PARTS " == *" subvolume "* ]]; then
    echo "files,method,run,seconds" >"$OUT/subvolume.csv"
    mnt=$(mount_fs btrfs)
    guard "$mnt/sv"
    for ((run = 1; run <= SV_RUNS; run++)); do
        for m in $( ((run % 2)) && echo "btrfs reclaim" || echo "reclaim btrfs"); do
            btrfs -q subvolume create "$mnt/sv" >/dev/null
            dirs=$(((SV_FILES + 99) / 100))
            python3 - "$mnt/sv" "$SV_FILES" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, f"d{i // 100}")
    if i % 100 == 0:
        os.mkdir(d)
    os.close(os.open(os.path.join(d, f"f{i % 100}"), os.O_CREAT | os.O_WRONLY, 0o644))
EOF
            sync
            echo 3 >/proc/sys/vm/drop_caches
            log "subvolume of $SV_FILES files ($dirs directories), $m, run $run/$SV_RUNS (load $(load1))"
            case $m in
                btrfs) cmd=(btrfs -q subvolume delete "$mnt/sv") ;;
                reclaim) cmd=("$SCRATCH/bin/reclaim" rm -r "$mnt/sv") ;;
            esac
            t0=$EPOCHREALTIME
            "${cmd[@]}" >>"$OUT/logs/subvolume.log" 2>&1 || die "$m failed (see $OUT/logs/subvolume.log)"
            t1=$EPOCHREALTIME
            [[ ! -e $mnt/sv ]] || die "$m left $mnt/sv"
            echo "$SV_FILES,$m,$run,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')" >>"$OUT/subvolume.csv"
            # The cleaner frees the last one before the next is made (no overlap of runs).
            btrfs subvolume sync "$mnt" >/dev/null 2>&1 || true
        done
    done
    unmount "$mnt"
    for d in "${LOOPS[@]}"; do detach "$d"; done
fi
printf 'load_end\t%s\n' "$(load1)" >>"$OUT/meta.txt"

python3 "$REPO/bench/small_summary.py" "$OUT" | tee "$OUT/summary.md"
log "done: $OUT/summary.md"
