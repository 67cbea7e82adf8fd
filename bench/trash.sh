#!/usr/bin/env bash
# Trash benchmark (issue 5): how fast a removal makes a path disappear, and what durable removal
# of many WAL-like files costs. Run as root, on a quiet machine:
#
#   bash bench/trash.sh disappear --quick   # smoke: 1 GiB file, 50,000-file tree, 1 run
#   bash bench/trash.sh durable --quick     # smoke: 100 x 16 MiB written files, 1 run
#   bash bench/trash.sh disappear           # full: 16 GiB file, 1,000,000-file tree, 3 runs
#   bash bench/trash.sh durable             # full: 1,000 x 16 MiB written files, 3 runs
#
# See bench/README.md ("Trash benchmark") for what each number means.
#
# Safety: like bench/run.sh. Everything is created and removed inside a scratch directory made
# with mktemp (default under /var/tmp) and marked with a marker file holding a random token;
# every removal target is checked to be strictly inside it (the Python helper checks again),
# and the measured removals (above all `reclaim rm --background`, which creates
# <mount>/.reclaim/) only ever run on loop file systems this script made and mounted below the
# scratch dir, in a private mount namespace. The reclaim binary is a copy in the scratch dir,
# so a detached reaper is recognisable by its executable path; the EXIT/INT/TERM trap ends
# those (by pid), unmounts, detaches the loop devices and removes the scratch dir. In the
# repository only bench/out/ is written.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

private_mount_ns RECLAIM_TRASH_BENCH_NS "$@"
unset RECLAIM_NO_SPAWN # the detached reaper must start
export RECLAIM_CONFIG= # reclaim's built-in defaults: no /etc/reclaim.toml, ~/.config/reclaim.toml

# ---------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------

usage() {
    cat <<'EOF'
usage: bench/trash.sh disappear|durable [options]

  disappear   time until a 16 GiB file / a 1,000,000-file tree no longer exists (and until its
              space is free) with rm, reclaim rm, reclaim rm --background
  durable     1,000 x 16 MiB written files in one directory removed durably: per-file
              unlink+fsync(dir), reclaim rm --durable, unlink all + one fsync(dir), rm

common options:
  --quick               smoke test: small sizes and 1 run (unless given explicitly)
  --runs N              runs per cell (default 3); tables show medians
  --fs "..."            disappear: among ext4 xfs ext3 (default "ext4 xfs ext3"; ext3 only for
                        the file); durable: among ext4 xfs ext3 (default "ext4")
  --methods "..."       methods to run, by name, in this order (default: all of the experiment)
  --method NAME=CMD     define an extra method (repeatable); CMD is split on spaces (no shell),
                        placeholders: {reclaim} {path} {rflag} (disappear: "-r" for the tree,
                        nothing for the file), {files} {peer} (durable)
  --scratch-base DIR    where the mktemp scratch dir goes (default /var/tmp)
  --out DIR             output directory (default bench/out/trash-<date>-<time>)
  --timeout SECS        kill a removal command after SECS (default 3600)
  --no-build            do not run cargo build (use target/release as it is)
  --no-install          do not apt-get install missing tools
  --strict              abort when a method fails its pre-flight check instead of skipping it
  --keep                keep the scratch dir (golden images) at the end
  --cold-binaries       do not warm the programs after dropping the caches (by default each
                        removal's program, and reclaim, run `--version` once right after
                        drop_caches, so the cold cache is only the measured file system's)
  -h, --help            this help

disappear:
  --workloads "..."     among: file tree (default "file tree")
  --file-size SIZE      big file (default 16G; --quick 1G); fallocated on ext4 and xfs, written
                        (zeros) on ext3, which cannot fallocate
  --ext3-file-size SIZE the ext3 file's size (default: --file-size)
  --files N             files in the tree (default 1000000; --quick 50000)
  --free-timeout SECS   give up waiting for the space to come back after SECS (default 3600)
  --poll-ms MS          statvfs poll period (default 10)
  --status-ms MS        `reclaim status --json` poll period (default 100)

durable:
  --wal-files N         files (default 1000; --quick 100)
  --wal-size SIZE       size of each (default 16M)
  --wal-fill write|fallocate   how the files get their blocks (default write, like WAL segments)
  --no-strace           skip the (untimed) strace run that counts reclaim's fsync calls

SIZE takes K, M, G, T suffixes (powers of 1024).
EOF
}

EXP=""
QUICK=0 RUNS="" FS_LIST="" METHODS_SEL="" CLI_METHODS=()
SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp}
OUT="" TIMEOUT=3600 NO_BUILD=0 NO_INSTALL=0 STRICT=0 KEEP=0 COLD_BIN=0
WORKLOADS="file tree" FILE_SIZE="" EXT3_FILE_SIZE="" TREE_FILES="" FREE_TIMEOUT=3600 POLL_MS=10 STATUS_MS=100
WAL_FILES="" WAL_SIZE=16M WAL_FILL=write NO_STRACE=0
ORIG_ARGS=("$@")

need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "trash.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        disappear | durable) [[ -z $EXP ]] || { echo "trash.sh: one experiment at a time" >&2; exit 2; }; EXP=$1 ;;
        --quick) QUICK=1 ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --fs) need_arg "$@"; FS_LIST=$2; shift ;;
        --methods) need_arg "$@"; METHODS_SEL=$2; shift ;;
        --method) need_arg "$@"; CLI_METHODS+=("$2"); shift ;;
        --scratch-base) need_arg "$@"; SCRATCH_BASE=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --timeout) need_arg "$@"; TIMEOUT=$2; shift ;;
        --no-build) NO_BUILD=1 ;;
        --no-install) NO_INSTALL=1 ;;
        --strict) STRICT=1 ;;
        --keep) KEEP=1 ;;
        --cold-binaries) COLD_BIN=1 ;;
        --workloads) need_arg "$@"; WORKLOADS=$2; shift ;;
        --file-size) need_arg "$@"; FILE_SIZE=$2; shift ;;
        --ext3-file-size) need_arg "$@"; EXT3_FILE_SIZE=$2; shift ;;
        --files) need_arg "$@"; TREE_FILES=$2; shift ;;
        --free-timeout) need_arg "$@"; FREE_TIMEOUT=$2; shift ;;
        --poll-ms) need_arg "$@"; POLL_MS=$2; shift ;;
        --status-ms) need_arg "$@"; STATUS_MS=$2; shift ;;
        --wal-files) need_arg "$@"; WAL_FILES=$2; shift ;;
        --wal-size) need_arg "$@"; WAL_SIZE=$2; shift ;;
        --wal-fill) need_arg "$@"; WAL_FILL=$2; shift ;;
        --no-strace) NO_STRACE=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "trash.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ -n $EXP ]] || { usage >&2; exit 2; }

to_bytes() { # 16G -> 17179869184
    local v=${1^^} m=1
    case $v in
        *K) m=$((1 << 10)); v=${v%K} ;;
        *M) m=$((1 << 20)); v=${v%M} ;;
        *G) m=$((1 << 30)); v=${v%G} ;;
        *T) m=$((1 << 40)); v=${v%T} ;;
    esac
    [[ $v =~ ^[0-9]+$ ]] || { echo "trash.sh: bad size '$1'" >&2; exit 2; }
    echo $((v * m))
}
human() { # bytes -> 16 GiB / 512 MiB
    awk -v b="$1" 'BEGIN { if (b >= 2^30 && b % 2^30 == 0) printf "%d GiB", b / 2^30;
        else if (b >= 2^30) printf "%.1f GiB", b / 2^30; else printf "%d MiB", b / 2^20 }'
}

if [[ $QUICK == 1 ]]; then
    RUNS=${RUNS:-1}
    FILE_SIZE=${FILE_SIZE:-1G}
    TREE_FILES=${TREE_FILES:-50000}
    WAL_FILES=${WAL_FILES:-100}
fi
RUNS=${RUNS:-3}
FILE_SIZE=$(to_bytes "${FILE_SIZE:-16G}")
EXT3_FILE_SIZE=$(to_bytes "${EXT3_FILE_SIZE:-$FILE_SIZE}")
TREE_FILES=${TREE_FILES:-1000000}
WAL_FILES=${WAL_FILES:-1000}
WAL_SIZE=$(to_bytes "$WAL_SIZE")
for v in RUNS TREE_FILES WAL_FILES TIMEOUT FREE_TIMEOUT POLL_MS STATUS_MS; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "trash.sh: ${v,,} must be a whole number" >&2; exit 2; }
done
[[ $RUNS -ge 1 && $TREE_FILES -ge 1 && $WAL_FILES -ge 1 && $POLL_MS -ge 1 && $STATUS_MS -ge 1 ]] ||
    { echo "trash.sh: --runs, --files, --wal-files, --poll-ms, --status-ms must be >= 1" >&2; exit 2; }
[[ $WAL_FILL == write || $WAL_FILL == fallocate ]] || { echo "trash.sh: --wal-fill write|fallocate" >&2; exit 2; }
if [[ $EXP == disappear ]]; then
    FS_LIST=${FS_LIST:-ext4 xfs ext3}
    for w in $WORKLOADS; do [[ $w == file || $w == tree ]] || { echo "trash.sh: unknown workload $w" >&2; exit 2; }; done
else
    FS_LIST=${FS_LIST:-ext4}
fi
for f in $FS_LIST; do [[ $f == ext4 || $f == xfs || $f == ext3 ]] || { echo "trash.sh: unknown fs $f" >&2; exit 2; }; done

# ---------------------------------------------------------------------------------------------
# Logging, paths
# ---------------------------------------------------------------------------------------------

T0=$(date +%s)
PROGRESS_LOG=/dev/null

[[ $EUID -eq 0 ]] || { echo "trash.sh: must run as root (loop devices, mount, drop_caches)" >&2; exit 1; }

bench_setup trash "progress-$EXP.log"
[[ -d $REPO/bench/trash ]] || die "cannot find bench/trash in $REPO"
MEASURE=$REPO/bench/trash/measure.py
CSV=$OUT/$EXP.csv

# ---------------------------------------------------------------------------------------------
# Methods: name -> command template (split on spaces, no shell)
# ---------------------------------------------------------------------------------------------

declare -A METHOD_CMD=()
METHOD_ORDER=()
def_method() {
    local name=$1 cmd=$2
    [[ $name =~ ^[A-Za-z0-9_.+-]+$ ]] || die "bad method name '$name'"
    [[ -n $cmd ]] || die "method '$name' has an empty command"
    if [[ $EXP == disappear ]]; then
        [[ $cmd == *'{path}'* ]] || die "method '$name' does not mention {path}: $cmd"
    else
        [[ $cmd == *'{files}'* ]] || die "method '$name' does not mention {files}: $cmd"
    fi
    [[ -n ${METHOD_CMD[$name]+x} ]] || METHOD_ORDER+=("$name")
    METHOD_CMD[$name]=$cmd
}
if [[ $EXP == disappear ]]; then
    def_method rm 'rm -rf {path}'
    def_method reclaim '{reclaim} rm {rflag} {path}'
    def_method reclaim-bg '{reclaim} rm --background {rflag} {path}'
else
    def_method per-file '{peer} per-file {files}'
    def_method reclaim '{reclaim} rm --durable {files}'
    def_method batch '{peer} batch {files}'
    def_method rm 'rm -f {files}'
    def_method reclaim-fast '{reclaim} rm --durable --fast {files}'
    def_method reclaim-plain '{reclaim} rm {files}'
fi
for l in "${CLI_METHODS[@]}"; do
    [[ $l == *=* ]] || die "--method wants NAME=CMD: $l"
    def_method "${l%%=*}" "${l#*=}"
done
select_methods
is_bg() { [[ ${METHOD_CMD[$1]} == *--background* ]]; }
drop_method() {
    local m=$1 why=$2 keep=() x
    [[ $STRICT == 0 ]] || die "method $m: $why"
    warn "skipping method $m: $why"
    printf '%s\t%s\n' "$m" "$why" >>"$OUT/skipped-$EXP.tsv"
    for x in "${METHODS[@]}"; do [[ $x == "$m" ]] || keep+=("$x"); done
    METHODS=("${keep[@]}")
}

# ---------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------

ensure_tools() {
    local -A pkg_of=(
        [mkfs.xfs]=xfsprogs [xfs_info]=xfsprogs [mkfs.ext4]=e2fsprogs [mkfs.ext3]=e2fsprogs
        [dumpe2fs]=e2fsprogs [losetup]=mount [fallocate]=util-linux [python3]=python3
        [filefrag]=e2fsprogs [findmnt]=util-linux
    )
    [[ $EXP == durable && $NO_STRACE == 0 ]] && pkg_of[strace]=strace
    install_missing pkg_of
    if [[ $EXP == durable ]] && ! command -v rustc >/dev/null; then
        die "rustc is needed to compile bench/trash/durable_peer.rs"
    fi
}

build() {
    if [[ $NO_BUILD == 1 ]]; then
        log "not building (--no-build)"
    else
        if ! cargo_release --bin reclaim --examples; then
            warn "cargo build failed (see $OUT/logs/build.log); using the binaries already in $TARGET_DIR/release"
        fi
    fi
    [[ -x $TARGET_DIR/release/reclaim ]] || die "missing $TARGET_DIR/release/reclaim"
    [[ $EXP == durable || -x $TARGET_DIR/release/examples/mkworkload ]] || die "missing $TARGET_DIR/release/examples/mkworkload"
}

# Copies the binaries into the scratch dir: a rebuild during the benchmark cannot change them, and
# a leftover reaper is recognisable by its executable's path.
snapshot_binaries() {
    BIN=$SCRATCH/bin
    mkdir -p "$BIN"
    cp -- "$TARGET_DIR/release/reclaim" "$BIN/reclaim"
    [[ $EXP == durable ]] || cp -- "$TARGET_DIR/release/examples/mkworkload" "$BIN/mkworkload"
    RECLAIM=$BIN/reclaim MKWORKLOAD=$BIN/mkworkload
    RECLAIM_SHA=$(sha256sum "$RECLAIM" | cut -c1-16)
    if [[ $EXP == durable ]]; then
        PEER=$BIN/durable_peer
        rustc -O --edition 2021 -o "$PEER" "$REPO/bench/trash/durable_peer.rs" >>"$OUT/logs/build.log" 2>&1 ||
            die "rustc bench/trash/durable_peer.rs failed (see $OUT/logs/build.log)"
    fi
}

# Drops methods the reclaim binary cannot run (the feature is not there yet).
check_features() {
    local help status_ok=1 m
    help=$("$RECLAIM" rm --help 2>&1 || true)
    "$RECLAIM" status --help >/dev/null 2>&1 || status_ok=0
    for m in "${METHODS[@]}"; do
        local c=${METHOD_CMD[$m]} f
        [[ $c == *'{reclaim}'* ]] || continue
        for f in $c; do
            [[ $f == --* ]] || continue
            if [[ $help != *"$f"* ]]; then
                drop_method "$m" "reclaim rm --help does not list $f"
                continue 2
            fi
        done
        if is_bg "$m" && [[ $status_ok == 0 ]]; then
            drop_method "$m" "reclaim has no status subcommand"
        fi
    done
    [[ ${#METHODS[@]} -gt 0 ]] || die "no method left to run"
}

# ---------------------------------------------------------------------------------------------
# Scratch directory, safety guards, cleanup
# ---------------------------------------------------------------------------------------------

SCRATCH="" BIN="" MEASURE_PID=""
declare -a LOOPS=()

guard_on_loop() { # path mnt: dies unless path is inside scratch and on our loop mount mnt
    guard "$1"
    local m
    m=$(findmnt -no TARGET -T "$1")
    [[ $m == "$2" && " ${MOUNTED[*]} " == *" $2 "* ]] ||
        die "refusing: $1 is on '$m', not on this script's loop mount $2"
}

make_scratch() {
    new_scratch reclaim-trash-bench
    mkdir "$SCRATCH/mnt"
    log "scratch dir: $SCRATCH ($(findmnt -no SOURCE,FSTYPE -T "$SCRATCH" | tr -s ' '); $(df -h --output=avail "$SCRATCH" | tail -1 | tr -d ' ') free)"
}

# Processes running our copy of reclaim (detached reapers): only this script starts them.
our_reclaim_pids() {
    [[ -n $BIN ]] || return 0
    local p exe
    for p in /proc/[0-9]*; do
        exe=$(readlink -- "$p/exe" 2>/dev/null) || continue
        [[ $exe == "$BIN/reclaim" || $exe == "$BIN/reclaim (deleted)" ]] && echo "${p#/proc/}"
    done
    return 0
}
# Waits up to $1 s for them to exit; then ends them by pid. Returns 1 if it had to.
wait_reapers() {
    local limit=$1 i pids
    for ((i = 0; i < limit * 10; i++)); do
        pids=$(our_reclaim_pids)
        [[ -n $pids ]] || return 0
        sleep 0.1
    done
    pids=$(our_reclaim_pids)
    [[ -n $pids ]] || return 0
    warn "reclaim process(es) still running after ${limit}s, ending them: $(echo $pids)"
    for i in $pids; do ps -o pid=,etime=,args= -p "$i" >&2 || true; done
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    sleep 2
    pids=$(our_reclaim_pids)
    # shellcheck disable=SC2086
    [[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
    return 1
}


exec {STDERR_FD}>&2
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    exec 2>&"$STDERR_FD"
    cd /
    if [[ -n ${MEASURE_PID:-} ]]; then
        kill -TERM "$MEASURE_PID" 2>/dev/null
        wait "$MEASURE_PID" 2>/dev/null
    fi
    if [[ -n $SCRATCH ]]; then
        local m dev back pids
        pids=$(our_reclaim_pids)
        if [[ -n $pids ]]; then
            echo "trash.sh: ending leftover reclaim processes: $(echo $pids)" >&2
            # shellcheck disable=SC2086
            kill -TERM $pids 2>/dev/null
            sleep 1
            pids=$(our_reclaim_pids)
            # shellcheck disable=SC2086
            [[ -z $pids ]] || kill -KILL $pids 2>/dev/null
            sleep 0.2
        fi
        release_scratch trash.sh
    fi
    [[ $rc == 0 ]] || echo "trash.sh: exiting with status $rc (results so far in ${OUT:-?})" >&2
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
# Loop file systems
# ---------------------------------------------------------------------------------------------

declare -a MOUNTED=()
declare -A MOUNT_OPTS=([ext3]="" [ext4]="" [xfs]="nouuid")
mkfs_cmd() { # fs -> mkfs command (without the image)
    case $1 in
        ext3) echo "mkfs.ext3 -q -F" ;;
        ext4) echo "mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0${2:+ -N $2}" ;;
        xfs) echo "mkfs.xfs -q -f" ;;
    esac
}
attach() { # image -> LOOP
    guard "$1"
    LOOP=$(losetup --direct-io=on -f --show -- "$1")
    LOOPS+=("$LOOP")
}
mount_loop() { # fs dev mnt
    guard "$3"
    mkdir -p -- "$3"
    # xfs: nouuid, every run mounts a copy of the same image.
    # shellcheck disable=SC2086
    mount -t "$1" ${MOUNT_OPTS[$1]:+-o ${MOUNT_OPTS[$1]}} -- "$2" "$3"
    MOUNTED+=("$3")
}
up() { # fs image mnt: attach + mount (sets LOOP)
    attach "$2"
    mount_loop "$1" "$LOOP" "$3"
}
down() { # mnt: unmount + detach its loop device
    local dev
    dev=$(findmnt -no SOURCE -- "$1")
    unmount "$1"
    detach "$dev"
}

secs_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
mib_ceil() { echo $(((($1) + (1 << 20) - 1) >> 20 << 20)); }
usage_of() { # mnt -> "used_bytes used_inodes"
    python3 "$MEASURE" usage "$1" | cut -d= -f2 | paste -sd' '
}

# Writes (zeros) from a golden image's file system in chunks of CHUNK bytes; after each chunk the
# file system is unmounted and the image's zero blocks are punched out (fallocate --dig-holes),
# so building a 16 GiB written file costs ~2 GiB of real disk at any time, and every per-run
# copy (cp --sparse=always) only copies metadata. The file system still has the blocks allocated.
CHUNK=$((2 << 30))
dig_and_remount() { # fs image mnt
    down "$3"
    fallocate --dig-holes -- "$2"
    up "$1" "$2" "$3"
}

# Records mkfs/mount/usage details of a golden image.
describe() { # fs mnt label
    {
        echo "== $3: $(findmnt -no SOURCE,FSTYPE,OPTIONS "$2")"
        echo "loop: $(losetup -n -l -O NAME,DIO,LOG-SEC,BACK-FILE "$(findmnt -no SOURCE "$2")")"
        df -h "$2" | tail -1
        df -i "$2" | tail -1
        case $1 in
            ext3 | ext4) dumpe2fs -h "$(findmnt -no SOURCE "$2")" 2>/dev/null | grep -E '^(Filesystem features|Inode count|Block count|Block size|Journal size|Default mount options):' ;;
            xfs) xfs_info "$2" ;;
        esac
        echo
    } >>"$OUT/fs-details-$EXP.txt" 2>&1
}

declare -A EMPTY_B=() EMPTY_I=() FULL_B=() FULL_I=() GOLDEN_INFO=()

# build_golden KEY FS IMG_BYTES INODES FILLER...: mkfs, mount, record empty usage, run the filler
# (a function getting fs image mnt), record full usage, unmount, dig holes.
build_golden() {
    local key=$1 fs=$2 bytes=$3 inodes=$4 img=$SCRATCH/golden-$1.img mnt=$SCRATCH/mnt/golden t u
    shift 4
    guard "$img"
    t=$EPOCHREALTIME
    truncate -s "$bytes" "$img"
    local mk
    mk=$(mkfs_cmd "$fs" "$inodes")
    $mk "$img" >>"$OUT/logs/mkfs.log" 2>&1 || die "$mk failed (see $OUT/logs/mkfs.log)"
    MKFS_USED[$key]="$mk IMG"
    up "$fs" "$img" "$mnt"
    read -r EMPTY_B[$key] EMPTY_I[$key] <<<"$(usage_of "$mnt")"
    "$@" "$fs" "$img" "$mnt"
    sync -f "$mnt"
    read -r FULL_B[$key] FULL_I[$key] <<<"$(usage_of "$mnt")"
    describe "$fs" "$mnt" "golden $key"
    MOUNTED_AS[$fs]="$(findmnt -no FSTYPE,OPTIONS "$mnt" | tr -s ' ')"
    down "$mnt"
    fallocate --dig-holes -- "$img"
    u=$(du -k "$img" | cut -f1)
    GOLDEN_INFO[$key]="$(human "$bytes") image, $((u >> 10)) MiB allocated, built in $(secs_since "$t")s"
    log "golden $key: ${GOLDEN_INFO[$key]}; used: empty $((EMPTY_B[$key] >> 20)) MiB / ${EMPTY_I[$key]} inodes, full $((FULL_B[$key] >> 20)) MiB / ${FULL_I[$key]} inodes"
}
declare -A MKFS_USED=() MOUNTED_AS=()

fill_bigfile() { # fs img mnt: the big file, fallocated or (ext3) written in chunks
    local fs=$1 img=$2 mnt=$3 f=$3/big size=$FILE_SIZE done=0 n
    if [[ $fs == ext3 ]]; then
        size=$EXT3_FILE_SIZE
        : >"$f"
        while ((done < size)); do
            n=$((size - done < CHUNK ? size - done : CHUNK))
            # 1 MiB blocks, appended; n is a multiple of 1 MiB unless the size is odd
            head -c "$n" /dev/zero >>"$f"
            done=$((done + n))
            dig_and_remount "$fs" "$img" "$mnt"
        done
        FILL_HOW[$fs]="written (zeros, $(human "$size")); ext3 cannot fallocate"
    else
        fallocate -l "$size" -- "$f"
        FILL_HOW[$fs]="fallocate -l $(human "$size")"
    fi
    [[ $(stat -c %s "$f") == "$size" ]] || die "big file on $fs has the wrong size"
    echo "$fs: $(filefrag "$f" | sed 's/.*: //'), $(stat -c '%b blocks of %B' "$f")" >>"$OUT/fs-details-$EXP.txt"
}
declare -A FILL_HOW=()

fill_tree() { # fs img mnt
    "$MKWORKLOAD" --shape tree --files "$TREE_FILES" "$3/w" 2>>"$OUT/logs/mkworkload.log"
}

fill_wal() { # fs img mnt: WAL_FILES files of WAL_SIZE in mnt/wal
    local fs=$1 img=$2 mnt=$3 i=1 per n
    mkdir "$mnt/wal"
    if [[ $WAL_FILL == fallocate ]]; then
        local names
        python3 "$MEASURE" fill "$mnt/wal" --count "$WAL_FILES" --size 0
        for names in "$mnt"/wal/*; do fallocate -l "$WAL_SIZE" -- "$names"; done
        return
    fi
    per=$((CHUNK / WAL_SIZE))
    ((per >= 1)) || per=1
    while ((i <= WAL_FILES)); do
        n=$((WAL_FILES - i + 1 < per ? WAL_FILES - i + 1 : per))
        python3 "$MEASURE" fill "$mnt/wal" --count "$n" --size "$WAL_SIZE" --start "$i"
        i=$((i + n))
        dig_and_remount "$fs" "$img" "$mnt"
    done
    [[ $(find "$mnt/wal" -type f | wc -l) == "$WAL_FILES" ]] || die "wrong number of WAL files"
    # How many files have how many extents (a file straddling a block group has two).
    echo "$fs wal files by extent count: $(find "$mnt/wal" -type f -exec filefrag {} + |
        sed 's/.*: \([0-9]*\) extents\{0,1\} found/\1/' | sort -n | uniq -c |
        awk '{ printf "%s%d with %d", (NR > 1 ? ", " : ""), $1, $2 }')" | tee -a "$OUT/fs-details-$EXP.txt" >&2
}

# ---------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------

# Expands a method template into the array ARGV.
expand_argv() { # template path rflag
    local w -
    set -f # split on spaces, no globbing
    ARGV=()
    for w in $1; do
        case $w in
            '{reclaim}') ARGV+=("$RECLAIM") ;;
            '{peer}') ARGV+=("$PEER") ;;
            '{path}') ARGV+=("$2") ;;
            '{rflag}') [[ -z $3 ]] || ARGV+=("$3") ;;
            *) w=${w//\{reclaim\}/$RECLAIM}; ARGV+=("${w//\{path\}/$2}") ;;
        esac
    done
}

declare -A R=()
run_measure() { # args for measure.py run -> fills R
    local out k v warm=()
    [[ $COLD_BIN == 1 ]] || warm=(--warm "${ARGV[0]}" --warm "$RECLAIM")
    # In the background + wait, so that a TERM/INT to this script is handled at once (the
    # trap ends measure.py, which takes the measured command down with it).
    python3 "$MEASURE" run "${warm[@]}" "$@" >"$SCRATCH/measure.out" 2>"$SCRATCH/measure.err" &
    MEASURE_PID=$!
    wait "$MEASURE_PID" || { MEASURE_PID=""; die "measure.py failed: $(cat "$SCRATCH/measure.err")"; }
    MEASURE_PID=""
    out=$(<"$SCRATCH/measure.out")
    R=()
    while IFS='=' read -r k v; do R[$k]=$v; done <<<"$out"
}

STEP=0 TOTAL=0 MEASURE_START=0
progress() { # message
    STEP=$((STEP + 1))
    local el=$(($(date +%s) - MEASURE_START)) eta
    eta=$((el * (TOTAL - STEP) / STEP))
    log "[$STEP/$TOTAL] $* (load $(load1)) eta $((eta / 60))m$((eta % 60))s"
}

# One removal for `disappear`: fresh copy of the golden image, cold cache, measure.py.
measure_disappear() { # fs workload method run
    local fs=$1 wl=$2 m=$3 r=$4 key=$1-$2 img=$SCRATCH/run.img mnt=$SCRATCH/mnt/run
    local path rflag="" lf ok=1 note="" t cp_s umount_s leftover=0 status_args=()
    [[ ! -e $img ]] || safe_rm "$img"
    t=$EPOCHREALTIME
    guard "$img"
    cp --sparse=always -- "$SCRATCH/golden-$key.img" "$img"
    cp_s=$(secs_since "$t")
    up "$fs" "$img" "$mnt"
    if [[ $wl == file ]]; then path=$mnt/big; else path=$mnt/w rflag=-r; fi
    guard_on_loop "$path" "$mnt"
    [[ -e $path ]] || die "workload $path missing"
    expand_argv "${METHOD_CMD[$m]}" "$path" "$rflag"
    is_bg "$m" && status_args=(--status "$RECLAIM" --status-ms "$STATUS_MS")
    lf=$OUT/logs/$EXP-$fs-$wl-$m-$r.log
    run_measure --scratch "$SCRATCH" --mount "$mnt" --target "$path" --log "$lf" --drop-caches \
        --poll-free --poll-ms "$POLL_MS" "${status_args[@]}" \
        --empty-used-bytes "${EMPTY_B[$key]}" --empty-used-inodes "${EMPTY_I[$key]}" \
        --full-used-bytes "${FULL_B[$key]}" --timeout "$TIMEOUT" --free-timeout "$FREE_TIMEOUT" \
        -- "${ARGV[@]}"
    note=${R[note]}
    wait_reapers 60 || { leftover=1; note="${note:+$note; }reclaim process ended by the script"; }
    local trash_left=""
    if [[ -d $mnt/.reclaim ]]; then
        trash_left=$(find "$mnt/.reclaim" -mindepth 3 -maxdepth 3 \( -name data -o -name reaping \) | wc -l)
        { echo "--- $mnt/.reclaim after the run:"; find "$mnt/.reclaim" -maxdepth 3 -printf '%M %s %p\n' | sed "s|$mnt|MNT|"; } >>"$lf"
        [[ $trash_left == 0 ]] || note="${note:+$note; }$trash_left trash entries left"
    fi
    if grep -qi "no usable trash" "$lf" 2>/dev/null; then note="${note:+$note; }fell back to foreground removal"; fi
    t=$EPOCHREALTIME
    down "$mnt"
    umount_s=$(secs_since "$t")
    safe_rm "$img"
    [[ ${R[rc]} == 0 ]] || { ok=0; note="${note:+$note; }exit ${R[rc]}"; }
    [[ ${R[gone]} == 1 ]] || { ok=0; note="${note:+$note; }path still there at return"; }
    [[ -n ${R[free_df_s]} ]] || ok=0
    if is_bg "$m"; then [[ -n ${R[free_status_s]} ]] || ok=0; fi
    [[ $leftover == 0 && ${trash_left:-0} == 0 ]] || ok=0
    [[ -s $lf || $ok == 0 ]] || rm -f -- "$lf"
    local size=$FILE_SIZE files=1
    [[ $fs != ext3 ]] || size=$EXT3_FILE_SIZE
    [[ $wl == file ]] || { size=""; files=$TREE_FILES; }
    echo "$fs,$wl,$size,$files,$m,$r,${R[wall_s]},${R[gone]},${R[eof_s]},${R[free_status_s]},${R[free_df_s]},${R[user_s]},${R[sys_s]},${R[rc]},$umount_s,${R[status_polls]},${R[status_call_ms]},$ok,${note//,/;}" >>"$CSV"
    progress "run $r $fs/$wl $m: disappear ${R[wall_s]}s (gone ${R[gone]})${R[free_status_s]:+, trash empty ${R[free_status_s]}s}, df free ${R[free_df_s]:-never}s, eof ${R[eof_s]:-open}, umount ${umount_s}s (cp ${cp_s}s)$([[ $ok == 1 ]] && echo ' ok' || echo " FAILED: $note")"
    if [[ $ok == 0 && -s $lf ]]; then tail -n 8 "$lf" | sed 's/^/    | /' >&2; fi
}

measure_durable() { # fs method run
    local fs=$1 m=$2 r=$3 key=$1-wal img=$SCRATCH/run.img mnt=$SCRATCH/mnt/run lf ok=1 note t cp_s umount_s
    [[ ! -e $img ]] || safe_rm "$img"
    t=$EPOCHREALTIME
    guard "$img"
    cp --sparse=always -- "$SCRATCH/golden-$key.img" "$img"
    cp_s=$(secs_since "$t")
    up "$fs" "$img" "$mnt"
    guard_on_loop "$mnt/wal" "$mnt"
    expand_argv "${METHOD_CMD[$m]}" "" ""
    lf=$OUT/logs/$EXP-$fs-$m-$r.log
    run_measure --scratch "$SCRATCH" --mount "$mnt" --files-dir "$mnt/wal" --log "$lf" --drop-caches \
        --sync --timeout "$TIMEOUT" -- "${ARGV[@]}"
    note=${R[note]}
    wait_reapers 10 || { ok=0; note="${note:+$note; }reclaim process ended by the script"; }
    [[ -d $mnt/wal && -z $(ls -A "$mnt/wal") ]] || { ok=0; note="${note:+$note; }wal/ not empty or gone"; }
    t=$EPOCHREALTIME
    down "$mnt"
    umount_s=$(secs_since "$t")
    safe_rm "$img"
    [[ ${R[rc]} == 0 ]] || { ok=0; note="${note:+$note; }exit ${R[rc]}"; }
    [[ ${R[gone]} == 1 ]] || { ok=0; note="${note:+$note; }${R[left]} files left"; }
    [[ -s $lf || $ok == 0 ]] || rm -f -- "$lf"
    echo "$fs,$WAL_FILES,$WAL_SIZE,$WAL_FILL,$m,$r,${R[wall_s]},${R[sync_s]},${R[user_s]},${R[sys_s]},${R[rc]},${R[left]},$umount_s,$ok,${note//,/;}" >>"$CSV"
    progress "run $r $fs $m: wall ${R[wall_s]}s sync ${R[sync_s]}s user ${R[user_s]}s sys ${R[sys_s]}s umount ${umount_s}s (cp ${cp_s}s)$([[ $ok == 1 ]] && echo ' ok' || echo " FAILED: $note")"
    if [[ $ok == 0 && -s $lf ]]; then tail -n 8 "$lf" | sed 's/^/    | /' >&2; fi
}

# Untimed: counts the syscalls of each method under strace -f -c on a fresh copy.
strace_durable() { # fs
    local fs=$1 key=$1-wal img=$SCRATCH/run.img mnt=$SCRATCH/mnt/run m sf files
    printf 'fs\tmethod\tfsync\tfdatasync\tsyncfs\tsync\tsync_file_range\tunlink*\trename*\topenat\tftruncate\tfcntl\ttotal\n' >"$OUT/$EXP-strace.tsv"
    for m in "${METHODS[@]}"; do
        [[ ! -e $img ]] || safe_rm "$img"
        cp --sparse=always -- "$SCRATCH/golden-$key.img" "$img"
        up "$fs" "$img" "$mnt"
        guard_on_loop "$mnt/wal" "$mnt"
        expand_argv "${METHOD_CMD[$m]}" "" ""
        files=("$mnt"/wal/*)
        local a=() w
        for w in "${ARGV[@]}"; do if [[ $w == '{files}' ]]; then a+=("${files[@]}"); else a+=("$w"); fi; done
        sf=$OUT/logs/strace-$fs-$m.txt
        strace -f -qq -c -o "$sf" -- "${a[@]}" >>"$OUT/logs/strace-$fs-$m.out" 2>&1 || warn "strace run of $m exited non-zero"
        wait_reapers 10 || true
        awk -v fs="$fs" -v m="$m" '
            $NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ { c[$NF] += $4 }
            $NF == "total" { total = $3 ~ /^[0-9]+$/ && $4 !~ /^[0-9]+$/ ? $3 : $4 }
            END {
                u = c["unlink"] + c["unlinkat"]; rn = c["rename"] + c["renameat"] + c["renameat2"]
                printf "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", fs, m, c["fsync"], c["fdatasync"],
                    c["syncfs"], c["sync"], c["sync_file_range"], u, rn, c["openat"], c["ftruncate"], c["fcntl"], total
            }' "$sf" >>"$OUT/$EXP-strace.tsv"
        down "$mnt"
        safe_rm "$img"
    done
    log "syscall counts (strace -f -c, untimed):"
    column -t -s $'\t' "$OUT/$EXP-strace.tsv" >&2 || cat "$OUT/$EXP-strace.tsv" >&2
}

# Pre-flight: every method once on a small ext4 loop file system (never on a real one).
preflight() {
    local img=$SCRATCH/preflight.img mnt=$SCRATCH/mnt/preflight m lf ok
    truncate -s 512M "$img"
    $(mkfs_cmd ext4) "$img" >>"$OUT/logs/mkfs.log" 2>&1
    up ext4 "$img" "$mnt"
    for m in "${METHODS[@]}"; do
        lf=$OUT/logs/preflight-$EXP-$m.log
        ok=1
        if [[ $EXP == disappear ]]; then
            local p eb ei fb st=()
            is_bg "$m" && st=(--status "$RECLAIM")
            for p in f d; do
                read -r eb ei <<<"$(usage_of "$mnt")"
                if [[ $p == f ]]; then head -c $((20 << 20)) /dev/zero >"$mnt/pf-$m-f"; else
                    mkdir -p "$mnt/pf-$m-d/a/b"; touch "$mnt/pf-$m-d/a/b/x" "$mnt/pf-$m-d/y"; fi
                sync -f "$mnt"
                read -r fb _ <<<"$(usage_of "$mnt")"
                guard_on_loop "$mnt/pf-$m-$p" "$mnt"
                expand_argv "${METHOD_CMD[$m]}" "$mnt/pf-$m-$p" "$([[ $p == d ]] && echo -r)"
                run_measure --scratch "$SCRATCH" --mount "$mnt" --target "$mnt/pf-$m-$p" --log "$lf.$p" \
                    --poll-free --poll-ms "$POLL_MS" --free-timeout 60 --timeout 120 \
                    --empty-used-bytes "$eb" --empty-used-inodes "$ei" --full-used-bytes "$fb" \
                    "${st[@]}" -- "${ARGV[@]}"
                if [[ ${R[rc]} != 0 || ${R[gone]} != 1 ]] || { is_bg "$m" && [[ -z ${R[free_status_s]} ]]; }; then
                    ok=0
                    echo "preflight $p: rc=${R[rc]} gone=${R[gone]} free_status=${R[free_status_s]} free_df=${R[free_df_s]} note=${R[note]}" >>"$lf"
                fi
                [[ -n ${R[free_df_s]} ]] || warn "pre-flight $m/$p: space not back within 60 s (${R[note]})"
                wait_reapers 30 || ok=0
            done
        else
            mkdir -p "$mnt/pf-$m"
            python3 "$MEASURE" fill "$mnt/pf-$m" --count 3 --size $((1 << 20))
            expand_argv "${METHOD_CMD[$m]}" "" ""
            run_measure --scratch "$SCRATCH" --mount "$mnt" --files-dir "$mnt/pf-$m" --log "$lf.f" \
                --timeout 120 -- "${ARGV[@]}"
            [[ ${R[rc]} == 0 && ${R[gone]} == 1 ]] || { ok=0; echo "preflight: rc=${R[rc]} left=${R[left]}" >>"$lf"; }
            wait_reapers 30 || ok=0
        fi
        if [[ $ok == 1 ]]; then
            rm -f -- "$lf" "$lf".?
        else
            drop_method "$m" "pre-flight on a small ext4 loop fs failed (see $lf*)"
        fi
    done
    down "$mnt"
    safe_rm "$img"
    [[ ${#METHODS[@]} -gt 0 ]] || die "no method left to run"
}

write_meta() {
    {
        printf 'experiment\t%s\n' "$EXP"
        machine_meta
        printf 'command\t%s\n' "bash bench/trash.sh ${ORIG_ARGS[*]}"
        printf 'runs\t%s\n' "$RUNS"
        printf 'reclaim\t%s (sha256 %s…, copied to the scratch dir at start)\n' "$TARGET_DIR/release/reclaim" "$RECLAIM_SHA"
        printf 'caches\tcold: sync; echo 3 > /proc/sys/vm/drop_caches before every removal%s\n' \
            "$([[ $COLD_BIN == 1 ]] && echo ' (programs cold too)' || echo '; then the program and reclaim run --version once (warm executables)')"
        printf 'config\tRECLAIM_CONFIG= (no config file: built-in defaults)\n'
        printf 'namespace\t%s\n' "$([[ -n ${RECLAIM_TRASH_BENCH_NS:-} ]] && echo 'private mount namespace' || echo 'host mount namespace')"
        printf 'scratch\t%s on %s\n' "$SCRATCH" "$(findmnt -no SOURCE,FSTYPE,OPTIONS -T "$SCRATCH" | tr -s ' ')"
        printf 'loop\tlosetup --direct-io=on; a fresh cp --sparse=always of a golden image per removal\n'
        local f k
        for f in "${!MOUNTED_AS[@]}"; do
            printf 'mount_%s\tmount -t %s%s; mounted as: %s\n' "$f" "$f" "${MOUNT_OPTS[$f]:+ -o ${MOUNT_OPTS[$f]}}" "${MOUNTED_AS[$f]}"
        done
        for k in "${!MKFS_USED[@]}"; do printf 'mkfs_%s\t%s\n' "$k" "${MKFS_USED[$k]}"; done
        for k in "${!GOLDEN_INFO[@]}"; do printf 'golden_%s\t%s\n' "$k" "${GOLDEN_INFO[$k]}"; done
        if [[ $EXP == disappear ]]; then
            printf 'file_size\t%s\n' "$FILE_SIZE"
            printf 'ext3_file_size\t%s\n' "$EXT3_FILE_SIZE"
            for f in "${!FILL_HOW[@]}"; do printf 'file_%s\t%s\n' "$f" "${FILL_HOW[$f]}"; done
            printf 'tree\tmkworkload --shape tree --files %s (fan-out 32, 100 per leaf)\n' "$TREE_FILES"
            printf 'poll\tstatvfs every %s ms; reclaim status --json every %s ms\n' "$POLL_MS" "$STATUS_MS"
        else
            printf 'wal\t%s files x %s in one directory, %s\n' "$WAL_FILES" "$(human "$WAL_SIZE")" \
                "$([[ $WAL_FILL == write ]] && echo 'written (zeros)' || echo 'fallocated')"
            printf 'peer\tbench/trash/durable_peer.rs, rustc -O (%s)\n' "$(rustc --version)"
        fi
    } >"$OUT/meta-$EXP.tsv"
    local m
    for m in "${METHODS[@]}"; do printf '%s\t%s\n' "$m" "${METHOD_CMD[$m]}"; done >"$OUT/methods-$EXP.tsv"
}

# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

log "trash benchmark: $EXP, runs=$RUNS, fs='$FS_LIST', methods='${METHODS[*]}', out=$OUT"
warn_if_busy
ensure_tools
build
make_scratch
cd "$SCRATCH"
snapshot_binaries
check_features
preflight

if [[ $EXP == disappear ]]; then
    CELLS=()
    for w in $WORKLOADS; do
        for f in $FS_LIST; do
            [[ $w == file || $f != ext3 ]] || continue # ext3: the file only
            CELLS+=("$f $w")
        done
    done
    [[ ${#CELLS[@]} -gt 0 ]] || die "nothing to measure"
    for c in "${CELLS[@]}"; do
        read -r f w <<<"$c"
        if [[ $w == file ]]; then
            s=$FILE_SIZE
            [[ $f != ext3 ]] || s=$EXT3_FILE_SIZE
            img_bytes=$(mib_ceil $((s + s / 4 + (2 << 30))))
            build_golden "$f-file" "$f" "$img_bytes" "" fill_bigfile
        else
            img_bytes=$((TREE_FILES * 16384))
            ((img_bytes >= 4 << 30)) || img_bytes=$((4 << 30))
            inodes=$((TREE_FILES * 5 / 2))
            ((inodes >= 65536)) || inodes=65536
            build_golden "$f-tree" "$f" "$(mib_ceil "$img_bytes")" "$([[ $f == ext4 ]] && echo "$inodes")" fill_tree
        fi
    done
    echo "fs,workload,size,files,method,run,disappear_s,gone,eof_s,free_status_s,free_df_s,user_s,sys_s,rc,umount_s,status_polls,status_call_ms,ok,note" >"$CSV"
    write_meta
    TOTAL=$((RUNS * ${#CELLS[@]} * ${#METHODS[@]}))
    log "measuring: $TOTAL removals"
    MEASURE_START=$(date +%s)
    n=${#METHODS[@]}
    for ((r = 1; r <= RUNS; r++)); do
        for c in "${CELLS[@]}"; do
            read -r f w <<<"$c"
            for ((i = 0; i < n; i++)); do
                measure_disappear "$f" "$w" "${METHODS[$(((i + r - 1) % n))]}" "$r"
            done
        done
    done
else
    for f in $FS_LIST; do
        img_bytes=$(mib_ceil $((WAL_FILES * WAL_SIZE * 5 / 4 + (2 << 30))))
        build_golden "$f-wal" "$f" "$img_bytes" "" fill_wal
    done
    echo "fs,files,file_size,fill,method,run,wall_s,sync_s,user_s,sys_s,rc,left,umount_s,ok,note" >"$CSV"
    write_meta
    set -- $FS_LIST
    TOTAL=$((RUNS * $# * ${#METHODS[@]}))
    log "measuring: $TOTAL removals"
    MEASURE_START=$(date +%s)
    n=${#METHODS[@]}
    for ((r = 1; r <= RUNS; r++)); do
        for f in $FS_LIST; do
            for ((i = 0; i < n; i++)); do
                measure_durable "$f" "${METHODS[$(((i + r - 1) % n))]}" "$r"
            done
        done
    done
    if [[ $NO_STRACE == 0 ]] && command -v strace >/dev/null; then
        for f in $FS_LIST; do strace_durable "$f"; done
    fi
fi

printf 'load_end\t%s\n' "$(load1)" >>"$OUT/meta-$EXP.tsv"
log "done measuring; summary:"
python3 "$REPO/bench/trash/summarize.py" "$OUT" "$EXP"
log "results in $OUT ($EXP.csv, $EXP.md, fs-details-$EXP.txt, logs/)"
