#!/usr/bin/env bash
# Cold-cache removal benchmark for reclaim and its peers (issue 2). Run as root:
#
#   bash bench/run.sh --quick          # smoke test: 50,000 files, 1 run (a few minutes)
#   bash bench/run.sh                  # full: 1,000,000 files, 3 runs (about an hour)
#
# See bench/README.md for the options, the columns and how the golden-image trick works.
#
# Safety: everything this script creates or deletes lives in a scratch directory it makes
# with mktemp (default under /var/tmp) and marks with a marker file holding a random token;
# every deletion and every removal command is checked to target a path strictly inside that
# marked directory, with nothing mounted below it. Loop devices and mounts are undone in an
# EXIT/INT/TERM trap, also on errors. In the repository only bench/out/ is written.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

private_mount_ns RECLAIM_BENCH_NS "$@"

# ---------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------

usage() {
    cat <<'EOF'
usage: bench/run.sh [options]

  --quick               smoke test: 50,000 files and 1 run (unless --files/--runs are given)
  --files N             files per workload (default 1000000)
  --runs N              runs per (file system, workload, method) (default 3)
  --workloads "..."     among: flat tree (default "flat tree")
  --fs "..."            among: ext4 xfs btrfs tmpfs root (default "ext4 xfs root"); tmpfs
                        and root get the workload made in place before each run
  --methods "..."       methods to run, by name (default: all built-in and extra methods)
  --method NAME=CMD     define an extra method (repeatable), e.g.
                        --method 'reclaim-t1={reclaim} rm -r --threads 1 {dir}'
  --methods-file FILE   extra methods, one "NAME = CMD" a line (# comments);
                        also read from $RECLAIM_BENCH_METHODS_FILE, and lines of
                        $RECLAIM_BENCH_EXTRA (newline-separated "NAME=CMD")
  --fanout N            tree fan-out (default 32)
  --per-leaf N          files per leaf directory of the tree (default 100)
  --size BYTES          size of each file (default 0)
  --scratch-base DIR    where the mktemp scratch dir goes (default /var/tmp; must be on the
                        file system measured as "root", never inside the repository)
  --out DIR             output directory (default bench/out/<timestamp>)
  --timeout SECS        kill a removal after SECS (default 0 = never)
  --strict              abort if a method fails its pre-flight check instead of skipping it
  --no-build            do not run cargo build (use the binaries in target/release)
  --no-install          do not apt-get/cargo install missing tools
  --keep                keep the scratch dir (golden images) at the end, for inspection
  --prepare-only        build the tools and golden images, print their sizes, measure nothing
  -h, --help            this help

Placeholders in method commands: {dir} the directory to remove, {reclaim} {floor} {rmz}
binaries, {reclaim_rm} reclaim through a link named rm (GNU rm mode), {spec} the workload's floor arguments (--shape ... --files ...), {nproc} CPUs,
{empty} an empty directory (for rsync). Values are shell-quoted.
EOF
}

FILES="" RUNS="" QUICK=0
WORKLOADS="flat tree" FS_LIST="ext4 xfs root" METHODS_SEL=""
FANOUT=32 PER_LEAF=100 SIZE=0
SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp}
OUT="" TIMEOUT=0 STRICT=0 NO_BUILD=0 NO_INSTALL=0 KEEP=0 PREPARE_ONLY=0
METHODS_FILE=${RECLAIM_BENCH_METHODS_FILE:-}
CLI_METHODS=()
ORIG_ARGS=("$@")

need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "run.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) QUICK=1 ;;
        --files) need_arg "$@"; FILES=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --workloads) need_arg "$@"; WORKLOADS=$2; shift ;;
        --fs) need_arg "$@"; FS_LIST=$2; shift ;;
        --methods) need_arg "$@"; METHODS_SEL=$2; shift ;;
        --method) need_arg "$@"; CLI_METHODS+=("$2"); shift ;;
        --methods-file) need_arg "$@"; METHODS_FILE=$2; shift ;;
        --fanout) need_arg "$@"; FANOUT=$2; shift ;;
        --per-leaf) need_arg "$@"; PER_LEAF=$2; shift ;;
        --size) need_arg "$@"; SIZE=$2; shift ;;
        --scratch-base) need_arg "$@"; SCRATCH_BASE=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --timeout) need_arg "$@"; TIMEOUT=$2; shift ;;
        --strict) STRICT=1 ;;
        --no-build) NO_BUILD=1 ;;
        --no-install) NO_INSTALL=1 ;;
        --keep) KEEP=1 ;;
        --prepare-only) PREPARE_ONLY=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [[ $QUICK == 1 ]]; then
    FILES=${FILES:-50000}
    RUNS=${RUNS:-1}
fi
FILES=${FILES:-1000000}
RUNS=${RUNS:-3}
for v in FILES RUNS FANOUT PER_LEAF SIZE TIMEOUT; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "run.sh: --${v,,} must be a number" >&2; exit 2; }
done
[[ $FILES -ge 1 && $RUNS -ge 1 ]] || { echo "run.sh: --files and --runs must be >= 1" >&2; exit 2; }
for w in $WORKLOADS; do [[ $w == flat || $w == tree ]] || { echo "run.sh: unknown workload $w" >&2; exit 2; }; done
for f in $FS_LIST; do [[ $f =~ ^(ext4|xfs|btrfs|tmpfs|root)$ ]] || { echo "run.sh: unknown fs $f" >&2; exit 2; }; done

# ---------------------------------------------------------------------------------------------
# Logging
# ---------------------------------------------------------------------------------------------

T0=$(date +%s)
PROGRESS_LOG=/dev/null

[[ $EUID -eq 0 ]] || { echo "run.sh: must run as root (loop devices, mount, drop_caches)" >&2; exit 1; }

bench_setup ""

# ---------------------------------------------------------------------------------------------
# Methods: name -> command template. Adding a variant is one line here (or --method).
# ---------------------------------------------------------------------------------------------

PEERS="rm find xargs rsync rmz"
declare -A METHOD_CMD=()
METHOD_ORDER=()
def_method() {
    local name=$1 cmd=$2
    [[ $name =~ ^[A-Za-z0-9_.+-]+$ ]] || die "bad method name '$name'"
    [[ -n $cmd ]] || die "method '$name' has an empty command"
    [[ $cmd == *'{dir}'* ]] || die "method '$name' does not mention {dir}: $cmd"
    [[ -n ${METHOD_CMD[$name]+x} ]] || METHOD_ORDER+=("$name")
    METHOD_CMD[$name]=$cmd
}
def_method rm      'rm -rf {dir}'
def_method find    'find {dir} -delete'
def_method xargs   'find {dir} -type f -print0 | xargs -0 -P{nproc} rm -f && find {dir} -depth -type d -exec rmdir {} +'
def_method rsync   'rsync -a --delete {empty}/ {dir}/ && rmdir {dir}'
def_method rmz     '{rmz} {dir}'
def_method floor   '{floor} {spec} --threads {nproc} {dir}'
def_method reclaim '{reclaim} rm -r {dir}'
def_method reclaim-as-rm '{reclaim_rm} -rf {dir}'

def_method_line() { # "NAME = CMD" or "NAME=CMD"
    local line=$1 name cmd
    [[ $line =~ ^[[:space:]]*(#|$) ]] && return 0
    [[ $line == *=* ]] || die "extra method line without '=': $line"
    name=${line%%=*} cmd=${line#*=}
    name=${name//[[:space:]]/}
    cmd=${cmd#"${cmd%%[![:space:]]*}"}
    def_method "$name" "$cmd"
}
if [[ -n $METHODS_FILE ]]; then
    [[ -r $METHODS_FILE ]] || die "cannot read methods file $METHODS_FILE"
    while IFS= read -r l || [[ -n $l ]]; do def_method_line "$l"; done <"$METHODS_FILE"
fi
if [[ -n ${RECLAIM_BENCH_EXTRA:-} ]]; then
    while IFS= read -r l; do def_method_line "$l"; done <<<"$RECLAIM_BENCH_EXTRA"
fi
for l in "${CLI_METHODS[@]}"; do def_method_line "$l"; done

select_methods
uses() { [[ ${METHOD_CMD[$1]} == *"{$2}"* ]]; }
drop_method() {
    local m=$1 why=$2 keep=()
    if [[ $STRICT == 1 ]]; then die "method $m: $why"; fi
    warn "skipping method $m: $why"
    echo "$m"$'\t'"$why" >>"$OUT/skipped.tsv"
    for x in "${METHODS[@]}"; do [[ $x == "$m" ]] || keep+=("$x"); done
    METHODS=("${keep[@]}")
}

# ---------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------

ensure_tools() {
    local -A pkg_of=(
        [rsync]=rsync [mkfs.xfs]=xfsprogs [xfs_info]=xfsprogs [mkfs.ext4]=e2fsprogs
        [dumpe2fs]=e2fsprogs [losetup]=mount [python3]=python3 [find]=findutils
        [xargs]=findutils [timeout]=coreutils [/usr/bin/time]=time [mkfs.btrfs]=btrfs-progs
    )
    install_missing pkg_of
    local m want_rmz=0 root=${RECLAIM_BENCH_RMZ_ROOT:-/opt/peers}
    RMZ=$(command -v rmz 2>/dev/null || true)
    [[ -n $RMZ ]] || { [[ -x $root/bin/rmz ]] && RMZ=$root/bin/rmz; } || true
    for m in "${METHODS[@]}"; do if uses "$m" rmz; then want_rmz=1; fi; done
    if [[ $want_rmz == 1 ]]; then
        if [[ -z $RMZ && $NO_INSTALL == 0 ]] && command -v cargo >/dev/null; then
            log "installing rmz: cargo install rmz --root $root"
            if cargo install --locked rmz --root "$root" >>"$OUT/logs/install.log" 2>&1; then
                RMZ=$root/bin/rmz
            fi
        fi
        if [[ -z $RMZ ]]; then
            for m in "${METHODS[@]}"; do if uses "$m" rmz; then drop_method "$m" "rmz not found"; fi; done
        fi
    fi
}

build() {
    if [[ $NO_BUILD == 1 ]]; then
        log "not building (--no-build)"
    else
        if ! cargo_release --bin reclaim --examples; then
            warn "building reclaim failed; trying the examples alone"
            cargo_release --examples || die "cargo build failed, see $OUT/logs/build.log"
            RECLAIM_BROKEN="build failed"
        fi
    fi
    [[ -x $MKWORKLOAD && -x $FLOOR ]] || die "missing $MKWORKLOAD or $FLOOR"
    local m
    for m in "${METHODS[@]}"; do
        if uses "$m" reclaim; then
            if [[ -n ${RECLAIM_BROKEN:-} ]]; then
                drop_method "$m" "reclaim ${RECLAIM_BROKEN}"
            elif [[ ! -x $RECLAIM ]]; then
                drop_method "$m" "$RECLAIM missing"
            fi
        fi
    done
}

# ---------------------------------------------------------------------------------------------
# Scratch directory and safety guards
# ---------------------------------------------------------------------------------------------

SCRATCH=""
declare -a MOUNTED=() LOOPS=()

make_scratch() {
    new_scratch reclaim-bench
    mkdir "$SCRATCH/mnt" "$SCRATCH/root" "$SCRATCH/empty" "$SCRATCH/preflight" "$SCRATCH/bin"
    # reclaim as GNU rm: a link named rm (issue 13).
    ln -s "$RECLAIM" "$SCRATCH/bin/rm"
    log "scratch dir: $SCRATCH ($(findmnt -no SOURCE,FSTYPE -T "$SCRATCH" | tr -s ' '))"
}


exec {STDERR_FD}>&2 # the trap may fire inside a redirection (timed's 2>file): log to the real stderr
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    exec 2>&"$STDERR_FD"
    cd /
    if [[ -n $SCRATCH ]]; then
        release_scratch run.sh
    fi
    [[ $rc == 0 ]] || echo "run.sh: exiting with status $rc (results so far in ${OUT:-?})" >&2
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
# Loop file systems
# ---------------------------------------------------------------------------------------------

attach() { # sets LOOP
    guard "$1"
    LOOP=$(losetup --direct-io=on -f --show -- "$1")
    LOOPS+=("$LOOP")
}
mount_loop() { # fs dev mnt
    guard "$3"
    # xfs: nouuid, because every run mounts a copy of the same image (same UUID) and a
    # previous copy may not be fully gone yet; it changes nothing else.
    # shellcheck disable=SC2086
    mount -t "$1" ${MOUNT_OPTS[$1]:+-o ${MOUNT_OPTS[$1]}} -- "$2" "$3"
    MOUNTED+=("$3")
}

round4k() { echo $(((($1) + 4095) / 4096 * 4096)); }
# Sparse image size: at least 4 GiB, 16 KiB per file (keeps ext4 at its usual 32768 blocks per
# group with -N files*2.5), plus twice the data.
IMG_BYTES=$((FILES * 16384 + FILES * 2 * $(round4k "$SIZE")))
((IMG_BYTES >= 4 << 30)) || IMG_BYTES=$((4 << 30))
IMG_BYTES=$(((IMG_BYTES + (1 << 20) - 1) >> 20 << 20))
EXT4_INODES=$((FILES * 5 / 2))
((EXT4_INODES >= 65536)) || EXT4_INODES=65536
MKFS_EXT4="mkfs.ext4 -q -F -N $EXT4_INODES -E lazy_itable_init=0,lazy_journal_init=0"
MKFS_XFS="mkfs.xfs -q -f"
MKFS_BTRFS="mkfs.btrfs -q -f"
declare -A MOUNT_OPTS=([ext4]="" [xfs]="nouuid" [btrfs]="") MOUNTED_AS=()

spec_args() { # workload -> floor/mkworkload shape arguments
    case $1 in
        flat) echo "--shape flat --files $FILES" ;;
        tree) echo "--shape tree --files $FILES --fanout $FANOUT --per-leaf $PER_LEAF" ;;
    esac
}

secs_since() { # start (EPOCHREALTIME) -> seconds with 3 decimals
    local now=$EPOCHREALTIME
    awk -v a="$1" -v b="$now" 'BEGIN { printf "%.3f", b - a }'
}


build_golden() { # fs workload
    local fs=$1 wl=$2 img=$SCRATCH/golden-$1-$2.img mnt=$SCRATCH/mnt/$1 t
    guard "$img"
    mkdir -p "$mnt"
    t=$EPOCHREALTIME
    truncate -s "$IMG_BYTES" "$img"
    case $fs in
        ext4) $MKFS_EXT4 "$img" >>"$OUT/logs/mkfs.log" 2>&1 ;;
        xfs) $MKFS_XFS "$img" >>"$OUT/logs/mkfs.log" 2>&1 ;;
        btrfs) $MKFS_BTRFS "$img" >>"$OUT/logs/mkfs.log" 2>&1 ;;
    esac
    attach "$img"
    mount_loop "$fs" "$LOOP" "$mnt"
    # shellcheck disable=SC2046
    "$MKWORKLOAD" $(spec_args "$wl") --size "$SIZE" "$mnt/w" 2>>"$OUT/logs/mkworkload.log"
    MOUNTED_AS[$fs]="$(findmnt -no FSTYPE,OPTIONS "$mnt" | tr -s ' ')"
    {
        echo "== $fs / $wl: $(findmnt -no SOURCE,FSTYPE,OPTIONS "$mnt")"
        echo "loop: $(losetup -n -l -O NAME,DIO,LOG-SEC,BACK-FILE "$LOOP")"
        df -h "$mnt" | tail -1
        df -i "$mnt" | tail -1
        case $fs in
            ext4) dumpe2fs -h "$LOOP" 2>/dev/null | grep -E '^(Filesystem features|Inode count|Block count|Block size|Inode size|Blocks per group|Inodes per group|Journal size|Flex block group size|Default mount options):' ;;
            xfs) xfs_info "$mnt" ;;
        esac
        echo
    } >>"$OUT/fs-details.txt" 2>&1
    unmount "$mnt"
    detach "$LOOP"
    sync
    log "golden $fs/$wl: $(du -h "$img" | cut -f1) used of $((IMG_BYTES >> 30)) GiB sparse, built in $(secs_since "$t")s"
}

# ---------------------------------------------------------------------------------------------
# One measured run
# ---------------------------------------------------------------------------------------------

q() { printf '%q' "$1"; }
expand() { # template dir workload -> command line
    local c=$1
    c=${c//\{dir\}/$(q "$2")}
    c=${c//\{reclaim\}/$(q "$RECLAIM")}
    c=${c//\{floor\}/$(q "$FLOOR")}
    c=${c//\{rmz\}/$(q "${RMZ:-rmz}")}
    c=${c//\{spec\}/$3}
    c=${c//\{nproc\}/$NPROC}
    c=${c//\{empty\}/$(q "$SCRATCH/empty")}
    c=${c//\{reclaim_rm\}/$(q "$SCRATCH/bin/rm")}
    printf '%s' "$c"
}

# Times `bash -c CMD` (stdout+stderr to LOGFILE); sets T_WALL T_USER T_SYS (seconds, user and
# sys of the command and all its waited-for children) and T_RC.
timed() {
    local TIMEFORMAT='%3R %3U %3S' tf=$SCRATCH/time.out pre=()
    [[ $TIMEOUT == 0 ]] || pre=(timeout --foreground -k 10 "$TIMEOUT")
    T_RC=0
    { time "${pre[@]}" bash -c "$1" >"$2" 2>&1; } 2>"$tf" || T_RC=$?
    read -r T_WALL T_USER T_SYS <"$tf"
}

CSV=$OUT/raw.csv
STEP=0 TOTAL=0 MEASURE_START=0

measure() { # fs workload method run
    local fs=$1 wl=$2 m=$3 r=$4 dir mnt img cmd lf t cp_s sync_s umount_s="" ok=1 note=""
    local spec
    spec=$(spec_args "$wl")
    if [[ $fs == root || $fs == tmpfs ]]; then
        mnt=$SCRATCH/$fs
        dir=$mnt/w
        [[ ! -e $dir ]] || safe_rm "$dir"
        t=$EPOCHREALTIME
        # Drop caches first: ext4 without a journal will not reuse an inode freed in the last
        # 60 s (360 s if its inode table block is dirty) while that block is cached
        # (recently_deleted() in fs/ext4/ialloc.c), so creating right after the previous
        # run's removal crawls (50k files: 20 s instead of 2 s; far worse for 1M).
        drop_caches
        # shellcheck disable=SC2086
        "$MKWORKLOAD" $spec --size "$SIZE" "$dir" 2>>"$OUT/logs/mkworkload.log"
        cp_s="mkworkload $(secs_since "$t")s"
    else
        mnt=$SCRATCH/mnt/$fs
        img=$SCRATCH/run.img
        dir=$mnt/w
        [[ ! -e $img ]] || safe_rm "$img"
        t=$EPOCHREALTIME
        guard "$img"
        cp --sparse=always -- "$SCRATCH/golden-$fs-$wl.img" "$img"
        cp_s="cp $(secs_since "$t")s"
        attach "$img"
        mount_loop "$fs" "$LOOP" "$mnt"
    fi
    guard "$dir"
    [[ -d $dir ]] || die "workload $dir was not created"
    cmd=$(expand "${METHOD_CMD[$m]}" "$dir" "$spec")
    lf=$OUT/logs/$fs-$wl-$m-$r.log
    drop_caches
    timed "$cmd" "$lf"
    t=$EPOCHREALTIME
    sync -f -- "$mnt"
    sync_s=$(secs_since "$t")
    if [[ $T_RC != 0 ]]; then ok=0 note="exit $T_RC"; fi
    if [[ -e $dir || -L $dir ]]; then ok=0 note="${note:+$note, }$dir still exists"; fi
    if [[ $fs == root || $fs == tmpfs ]]; then
        [[ ! -e $dir ]] || safe_rm "$dir"
    else
        t=$EPOCHREALTIME
        unmount "$mnt"
        umount_s=$(secs_since "$t")
        detach "$LOOP"
        safe_rm "$img"
    fi
    [[ -s $lf || $ok == 0 ]] || rm -f -- "$lf"
    echo "$fs,$wl,$FILES,$m,$r,$T_WALL,$T_USER,$T_SYS,$sync_s,$ok,$umount_s" >>"$CSV"
    STEP=$((STEP + 1))
    local el=$(($(date +%s) - MEASURE_START)) eta
    eta=$((el * (TOTAL - STEP) / STEP))
    log "[$STEP/$TOTAL] run $r $fs/$wl $m: wall ${T_WALL}s user ${T_USER}s sys ${T_SYS}s sync ${sync_s}s${umount_s:+ umount ${umount_s}s} ($cp_s, load $(load1))$([[ $ok == 1 ]] && echo " ok" || echo " FAILED: $note") eta $((eta / 60))m$((eta % 60))s"
    if [[ $ok == 0 && -s $lf ]]; then tail -n 5 "$lf" | sed 's/^/    | /' >&2; fi
}

preflight() { # checks every method on a tiny tree in the scratch dir
    local m dir cmd spec="--shape tree --files 300 --fanout 4 --per-leaf 10" lf
    for m in "${METHODS[@]}"; do
        dir=$SCRATCH/preflight/w-$m
        # shellcheck disable=SC2086
        "$MKWORKLOAD" $spec "$dir" 2>/dev/null
        guard "$dir"
        cmd=$(expand "${METHOD_CMD[$m]}" "$dir" "$spec")
        lf=$OUT/logs/preflight-$m.log
        if bash -c "$cmd" >"$lf" 2>&1 && [[ ! -e $dir && ! -L $dir ]]; then
            rm -f -- "$lf"
        else
            [[ ! -e $dir ]] || safe_rm "$dir"
            drop_method "$m" "pre-flight removal of a 300-file tree failed (see $lf)"
        fi
    done
    [[ ${#METHODS[@]} -gt 0 ]] || die "no method left to run"
}

# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

log "reclaim removal benchmark: files=$FILES runs=$RUNS workloads='$WORKLOADS' fs='$FS_LIST' methods='${METHODS[*]}' out=$OUT"
warn_if_busy
ensure_tools
build
make_scratch
cd "$SCRATCH"
preflight
CACHES=cold
drop_caches

LOOP_FS=()
for f in $FS_LIST; do [[ $f == root || $f == tmpfs ]] || LOOP_FS+=("$f"); done
if [[ " $FS_LIST " == *" tmpfs "* ]]; then
    mkdir -p "$SCRATCH/tmpfs"
    guard "$SCRATCH/tmpfs"
    mount -t tmpfs -o "size=$(((FILES * 4096 + (1 << 30)) >> 20))m,nr_inodes=$((FILES * 2 + 100000))" \
        reclaim-bench-tmpfs "$SCRATCH/tmpfs"
    MOUNTED+=("$SCRATCH/tmpfs")
fi
for f in "${LOOP_FS[@]}"; do
    for w in $WORKLOADS; do build_golden "$f" "$w"; done
done
if [[ $PREPARE_ONLY == 1 ]]; then
    cat "$OUT/fs-details.txt" >&2
    t=$EPOCHREALTIME
    for f in "${LOOP_FS[@]}"; do
        for w in $WORKLOADS; do
            cp --sparse=always -- "$SCRATCH/golden-$f-$w.img" "$SCRATCH/run.img"
            log "cp --sparse=always golden-$f-$w.img: $(secs_since "$t")s; + sync: $(sync; secs_since "$t")s"
            safe_rm "$SCRATCH/run.img"
            t=$EPOCHREALTIME
        done
    done
    df -h "$SCRATCH" >&2
    log "--prepare-only: done (details in $OUT/fs-details.txt)"
    exit 0
fi

# Metadata for the summary.
{
    machine_meta
    printf 'command\t%s\n' "bash bench/run.sh ${ORIG_ARGS[*]}"
    printf 'files\t%s\n' "$FILES"
    printf 'runs\t%s\n' "$RUNS"
    printf 'fanout\t%s\n' "$FANOUT"
    printf 'per_leaf\t%s\n' "$PER_LEAF"
    printf 'size\t%s\n' "$SIZE"
    printf 'peers\t%s\n' "$PEERS"
    printf 'caches\t%s\n' "$CACHES"
    printf 'image\t%s GiB sparse image per run, cp --sparse=always from a golden image; losetup --direct-io=on\n' "$((IMG_BYTES >> 30))"
    for f in ext4 xfs btrfs; do
        mkfs=$MKFS_EXT4
        [[ $f == xfs ]] && mkfs=$MKFS_XFS
        [[ $f == btrfs ]] && mkfs=$MKFS_BTRFS
        printf 'fs_%s\t%s IMG; mount -t %s%s\n' "$f" "$mkfs" "$f" "${MOUNT_OPTS[$f]:+ -o ${MOUNT_OPTS[$f]}}"
    done
    for f in "${!MOUNTED_AS[@]}"; do printf 'mounted_%s\t%s\n' "$f" "${MOUNTED_AS[$f]}"; done
    printf 'namespace\t%s\n' "$([[ -n ${RECLAIM_BENCH_NS:-} ]] && echo 'private mount namespace' || echo 'host mount namespace')"
    printf 'fs_root\tscratch dir on %s\n' "$(findmnt -no SOURCE,FSTYPE,OPTIONS -T "$SCRATCH" | tr -s ' ')"
    printf 'scratch\t%s\n' "$SCRATCH"
    printf 'versions\t%s; %s; %s; %s\n' "$(rm --version | head -1)" "$(find --version | head -1)" \
        "$(rsync --version | head -1 | tr -s ' ')" "$({ "${RMZ:-false}" --version 2>/dev/null || echo 'rmz ?'; } | head -1)"
} >"$OUT/meta.tsv"
for m in "${METHODS[@]}"; do printf '%s\t%s\n' "$m" "${METHOD_CMD[$m]}"; done >"$OUT/methods.tsv"
echo "fs,workload,files,method,run,wall_s,user_s,sys_s,sync_s,ok,umount_s" >"$CSV"

set -- $WORKLOADS
TOTAL=$((RUNS * $# * $(wc -w <<<"$FS_LIST") * ${#METHODS[@]}))
log "measuring: $TOTAL removals (methods: ${METHODS[*]})"
MEASURE_START=$(date +%s)
n=${#METHODS[@]}
for ((r = 1; r <= RUNS; r++)); do
    for w in $WORKLOADS; do
        for f in $FS_LIST; do
            # Rotate the method order every run so no method always goes first.
            for ((i = 0; i < n; i++)); do
                measure "$f" "$w" "${METHODS[$(((i + r - 1) % n))]}" "$r"
            done
        done
    done
done

log "done measuring; summary:"
printf 'load_end\t%s\n' "$(load1)" >>"$OUT/meta.tsv"
python3 "$REPO/bench/summarize.py" "$OUT"
log "results in $OUT (raw.csv, summary.md, fs-details.txt, logs/)"
