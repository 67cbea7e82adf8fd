#!/usr/bin/env bash
# The impact lab (issue 3): what does removing a big file (or a big tree) do to the I/O of
# everybody else on the same disk? Run as root:
#
#   bash bench/lab.sh --quick      # ~10 min: ext3 on the emulated 7200 rpm disk, 2 GiB
#                                  # fragmented file, probe victim, rm / loop / reclaim
#   bash bench/lab.sh              # full suite (see bench/README.md, "Impact lab")
#
# For each (device, file system, workload) it builds a golden image once (on a fast loop
# device), then for every method: copies the golden image (so every method removes a
# bit-identical file system), puts it behind the device model (bench/slowdisk, a FUSE file
# with an HDD's seek/rotation/bandwidth costs, or nothing for "plain"), loop-mounts it, starts
# the victims (walprobe: 8 KiB append + fdatasync at a fixed interval; PostgreSQL + pgbench),
# waits, runs the removal, keeps the victims running --after seconds more, stops everything,
# and finally bench/lab/analyze.py turns the logs into results.md, results.csv and PNGs.
#
# Safety: everything lives in a mktemp scratch dir (marked with a random token) under
# --scratch-base; removal commands only ever get paths inside the mounted scratch images; the
# EXIT/INT/TERM trap stops the victims, unmounts, detaches loop devices whose backing file is
# in the scratch dir, stops slowdisk, and removes the scratch dir. Only bench/out/ is written
# in the repository.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # private_mount_ns; the lab keeps its own log and guard
private_mount_ns RECLAIM_LAB_NS "$@"

usage() {
    cat <<'EOF'
usage: bench/lab.sh [options]

  --quick              ext3, hdd-7200, frag 2G, probe only, methods "rm loop-10M reclaim
                       reclaim-fast"
  --devices "..."      among: hdd-7200 ssd-sata plain (default "hdd-7200 plain")
  --fs "..."           among: ext3 ext4 xfs (default "ext3 ext4 xfs")
  --workloads "..."    among: frag contig tree (default "frag contig")
  --size SIZE          big file size (default 4G on emulated devices, 16G on plain)
  --tree-files N       files of the tree workload (default 100000 emulated, 1000000 plain)
  --victims "..."      among: probe pg (default "probe pg")
  --probe-ms N         probe interval in ms (default 25 on emulated devices, 5 on plain)
  --methods "..."      methods to run, by name, in this order (default: all that apply)
  --method KIND:NAME=CMD   extra method; KIND is file, tree or any; in CMD, {} is the target
                       path and {reclaim} the reclaim binary (repeatable)
  --runs R             repeat every method R times, the order rotated each time (default 1);
                       analyze.py then adds repeat.md: medians and 95% intervals
  --trace              keep the emulated disk's request trace per run (disk.trace) and the
                       file system's layout, for bench/lab/harm.py (where the disk time went)
  --before S           victims run S seconds before the removal (default 20)
  --after S            and S seconds after it returns (default 40)
  --timeout S          kill a removal after S seconds (default 1200)
  --scratch-base DIR   where images live (default /var/tmp)
  --out DIR            output directory (default bench/out/lab-<timestamp>)
  --no-build, --no-install, --no-plots, --keep
EOF
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB=$ROOT/bench/lab
DEVICES="hdd-7200 plain"
FSES="ext3 ext4 xfs"
WORKLOADS="frag contig"
SIZE=""
TREE_FILES=""
VICTIMS="probe pg"
PROBE_MS=""
METHODS=""
BEFORE=20
AFTER=40
TIMEOUT=1200
SCRATCH_BASE=/var/tmp
OUT=""
BUILD=1
INSTALL=1
PLOTS=1
KEEP=0
EXTRA_METHODS=()
RUNS=1
TRACE=0

while [[ $# -gt 0 ]]; do
    case $1 in
        --quick)
            DEVICES=hdd-7200 FSES=ext3 WORKLOADS=frag SIZE=2G VICTIMS=probe
            METHODS="rm loop-10M reclaim reclaim-fast" BEFORE=15 ;;
        --devices) DEVICES=$2; shift ;;
        --fs) FSES=$2; shift ;;
        --workloads) WORKLOADS=$2; shift ;;
        --size) SIZE=$2; shift ;;
        --tree-files) TREE_FILES=$2; shift ;;
        --victims) VICTIMS=$2; shift ;;
        --probe-ms) PROBE_MS=$2; shift ;;
        --methods) METHODS=$2; shift ;;
        --method) EXTRA_METHODS+=("$2"); shift ;;
        --runs) RUNS=$2; shift ;;
        --trace) TRACE=1 ;;
        --before) BEFORE=$2; shift ;;
        --after) AFTER=$2; shift ;;
        --timeout) TIMEOUT=$2; shift ;;
        --scratch-base) SCRATCH_BASE=$2; shift ;;
        --out) OUT=$2; shift ;;
        --no-build) BUILD=0 ;;
        --no-install) INSTALL=0 ;;
        --no-plots) PLOTS=0 ;;
        --keep) KEEP=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "lab.sh: unknown option: $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
[[ $EUID -eq 0 ]] || { echo "lab.sh: must run as root (loop devices, FUSE, mount)" >&2; exit 1; }

log() { printf '%s lab: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
has() { [[ " $1 " == *" $2 "* ]]; }

# ---------------------------------------------------------------------------------------------
# Methods: KIND:NAME=CMD. {} is the target, {reclaim} the binary. Order = presentation order.
# ---------------------------------------------------------------------------------------------
METHOD_DEFS=(
    "any:rm=rm -rf -- {}"
    "any:ionice-rm=ionice -c3 rm -rf -- {}"
    "file:loop-10M=bash $LAB/shrink.sh 10M 0.02 nofsync {}"
    "file:slowrm-128M=bash $LAB/shrink.sh 128M 0.1 fsync {}"
    "tree:find-delete=find {} -delete"
    "any:reclaim=CMD_RECLAIM"
    "any:reclaim-fast=CMD_RECLAIM_FAST"
)
METHOD_DEFS+=("${EXTRA_METHODS[@]}")

# ---------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------
PG_BIN=""
install_tools() {
    local pkgs=()
    command -v mkfs.ext4 >/dev/null || pkgs+=(e2fsprogs)
    command -v mkfs.xfs >/dev/null || pkgs+=(xfsprogs)
    command -v filefrag >/dev/null || pkgs+=(e2fsprogs)
    command -v losetup >/dev/null || pkgs+=(mount)
    command -v ionice >/dev/null || pkgs+=(util-linux)
    command -v python3 >/dev/null || pkgs+=(python3)
    python3 -c 'import venv, ensurepip' 2>/dev/null || pkgs+=(python3-venv)
    if has "$VICTIMS" pg; then
        ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || pkgs+=(postgresql)
        command -v pgbench >/dev/null || pkgs+=(postgresql-contrib)
    fi
    if [[ ${#pkgs[@]} -gt 0 ]]; then
        [[ $INSTALL == 1 ]] || die "missing packages: ${pkgs[*]} (and --no-install)"
        log "apt-get install ${pkgs[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
    fi
    if has "$VICTIMS" pg; then
        PG_BIN=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/postgres | sort -V | tail -1)")
        # Debian's postgresql package starts a cluster of its own: leave it alone, we use our own.
    fi
    if [[ $PLOTS == 1 ]]; then
        VENV=$ROOT/bench/out/.venv
        if ! "$VENV/bin/python" -c 'import matplotlib' 2>/dev/null; then
            log "creating $VENV with matplotlib (for the PNG timelines)"
            python3 -m venv "$VENV" && "$VENV/bin/pip" install -q matplotlib ||
                { log "no matplotlib: tables only"; PLOTS=0; }
        fi
    fi
}

build_tools() {
    if [[ $BUILD == 1 ]]; then
        log "cargo build --release (reclaim, mkworkload, slowdisk, walprobe)"
        (cd "$ROOT" && cargo build --release --quiet --bin reclaim --example mkworkload)
        (cd "$ROOT/bench/slowdisk" && cargo build --release --quiet)
    fi
    RECLAIM=$ROOT/target/release/reclaim
    MKWORKLOAD=$ROOT/target/release/examples/mkworkload
    SLOWDISK=$ROOT/bench/slowdisk/target/release/slowdisk
    WALPROBE=$ROOT/bench/slowdisk/target/release/walprobe
    for b in "$RECLAIM" "$MKWORKLOAD" "$SLOWDISK" "$WALPROBE"; do
        [[ -x $b ]] || die "$b missing (drop --no-build)"
    done
}

# ---------------------------------------------------------------------------------------------
# Scratch dir, guard, cleanup
# ---------------------------------------------------------------------------------------------
SCRATCH=""
TOKEN=""
LOOPS=()
SLOWDISK_PID=""
TRACE_FILE=""
PROBE_PID=""
PGBENCH_PID=""
PG_DATA=""
PG_RUN=""
FUSE_MNT=""
FS_MNT=""

guard() { # every path we create or delete must be strictly inside the marked scratch dir
    [[ -n $SCRATCH && $1 == "$SCRATCH"/* && $1 != *..* ]] || die "refusing path outside scratch: $1"
}
marker_ok() { [[ -f $SCRATCH/.reclaim-lab && $(cat "$SCRATCH/.reclaim-lab") == "$TOKEN" ]]; }

stop_victims() {
    if [[ -n $PROBE_PID ]]; then kill "$PROBE_PID" 2>/dev/null || true; wait "$PROBE_PID" 2>/dev/null || true; PROBE_PID=""; fi
    if [[ -n $PG_DATA ]]; then
        runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 120 stop >/dev/null 2>&1 ||
            runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null 2>&1 || true
        PG_DATA=""
    fi
    if [[ -n $PGBENCH_PID ]]; then wait "$PGBENCH_PID" 2>/dev/null || true; PGBENCH_PID=""; fi
    # The postgres user cannot write into the repository: its files are moved here.
    [[ -f $SCRATCH/postgres.log ]] && cat -- "$SCRATCH/postgres.log" >>"$OUT/logs/postgres.log" && rm -f -- "$SCRATCH/postgres.log"
    if [[ -n $PG_RUN && -d $SCRATCH/pgrun ]]; then
        mv -- "$SCRATCH"/pgrun/* "$PG_RUN/" 2>/dev/null || true
        PG_RUN=""
    fi
}

teardown_device() {
    local dev
    if [[ -n $FS_MNT ]] && mountpoint -q -- "$FS_MNT"; then
        umount -- "$FS_MNT" 2>/dev/null || { sleep 1; umount -- "$FS_MNT" 2>/dev/null; } || umount -l -- "$FS_MNT"
    fi
    FS_MNT=""
    for dev in "${LOOPS[@]}"; do losetup -d "$dev" 2>/dev/null || true; done
    LOOPS=()
    if [[ -n $FUSE_MNT ]]; then # the loop device lets go of disk.img asynchronously
        local i
        for ((i = 0; i < 50; i++)); do
            [[ -z $(losetup -n -j "$FUSE_MNT/disk.img" 2>/dev/null) ]] && break
            sleep 0.1
        done
    fi
    if [[ -n $SLOWDISK_PID ]]; then
        kill -TERM "$SLOWDISK_PID" 2>/dev/null || true
        wait "$SLOWDISK_PID" 2>/dev/null || true
        SLOWDISK_PID=""
    fi
    if [[ -n $FUSE_MNT ]] && mountpoint -q -- "$FUSE_MNT"; then umount -l -- "$FUSE_MNT" || true; fi
    FUSE_MNT=""
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    cd /
    stop_victims
    teardown_device
    if [[ -n $SCRATCH ]]; then
        local dev back m
        while read -r dev back; do
            [[ $back == "$SCRATCH"/* ]] && losetup -d "$dev"
        done < <(losetup -n -l -O NAME,BACK-FILE 2>/dev/null)
        for m in $(findmnt -rn -o TARGET | grep -F "$SCRATCH/" | sort -r); do umount -l -- "$m"; done
        if findmnt -rn -o TARGET | grep -qF "$SCRATCH/"; then
            echo "lab.sh: something is still mounted under $SCRATCH; NOT removing it" >&2
        elif [[ $KEEP == 1 ]]; then
            echo "lab.sh: keeping $SCRATCH (--keep)" >&2
        elif marker_ok; then
            rm -rf --one-file-system -- "$SCRATCH"
        fi
    fi
    [[ $rc == 0 ]] || echo "lab.sh: exiting with status $rc (results so far in ${OUT:-?})" >&2
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
# File systems and devices
# ---------------------------------------------------------------------------------------------
mkfs_fs() { # fs dev
    case $1 in
        ext3) mkfs.ext3 -q -F "$2" ;;
        ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$2" ;;
        xfs) mkfs.xfs -q -f "$2" ;;
    esac
}
mount_fs() { # fs dev mnt
    guard "$3"
    mkdir -p -- "$3"
    case $1 in
        ext3) mount -t ext3 -- "$2" "$3" ;;
        ext4) mount -t ext4 -- "$2" "$3" ;;
        xfs) mount -t xfs -o nouuid -- "$2" "$3" ;;
    esac
    FS_MNT=$3
}
# Bring up the device for image $2 under model $1; sets DEV (a loop device).
up_device() { # model image
    local model=$1 img=$2 file
    guard "$img"
    if [[ $model == plain ]]; then
        file=$img
    else
        FUSE_MNT=$SCRATCH/fuse
        mkdir -p -- "$FUSE_MNT"
        rm -f -- "$SCRATCH/fuse.ready"
        local trace=()
        [[ -n $TRACE_FILE ]] && trace=(--trace "$TRACE_FILE")
        "$SLOWDISK" --backing "$img" --model "$model" --ready-file "$SCRATCH/fuse.ready" \
            "${trace[@]}" "$FUSE_MNT" 2>>"$OUT/logs/slowdisk.log" &
        SLOWDISK_PID=$!
        local i
        for ((i = 0; i < 100; i++)); do
            [[ -e $SCRATCH/fuse.ready ]] && break
            kill -0 "$SLOWDISK_PID" 2>/dev/null || die "slowdisk exited (see $OUT/logs/slowdisk.log)"
            sleep 0.1
        done
        [[ -e $SCRATCH/fuse.ready ]] || die "slowdisk not ready after 10 s"
        file=$FUSE_MNT/disk.img
    fi
    DEV=$(losetup --direct-io=on -f --show -- "$file")
    LOOPS+=("$DEV")
    # The emulated disk is an HDD: say so, as a real one's driver does (a loop device over a
    # FUSE file reports rotational=0), so what reads queue/rotational sees what it would.
    if [[ $1 == hdd-* ]]; then
        echo 1 >"/sys/block/${DEV#/dev/}/queue/rotational" 2>/dev/null ||
            echo "lab: cannot mark $DEV rotational" >&2
    fi
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# ---------------------------------------------------------------------------------------------
# PostgreSQL victim
# ---------------------------------------------------------------------------------------------
PG_PORT=55432
pg_start() { # datadir
    PG_DATA=$1
    : >"$SCRATCH/postgres.log" && chown postgres: "$SCRATCH/postgres.log"
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$SCRATCH/postgres.log" -w -t 300 \
        -o "-p $PG_PORT -k $SCRATCH/pgsock -c listen_addresses=''" start >/dev/null
}
pg_init() { # mnt
    local d=$1/pg
    guard "$d"
    mkdir -p -- "$d" "$SCRATCH/pgsock"
    chown postgres: "$d" "$SCRATCH/pgsock"
    chmod 700 "$d"
    runuser -u postgres -- "$PG_BIN/initdb" -D "$d" -A trust -U postgres >>"$OUT/logs/pg-init.log" 2>&1
    # Everything in memory, no checkpoint or autovacuum inside the measured window: what reaches
    # the disk is the WAL commit stream (fdatasync per commit), as on a busy OLTP primary.
    cat >>"$d/postgresql.conf" <<EOF
shared_buffers = 256MB
checkpoint_timeout = 1h
max_wal_size = 8GB
autovacuum = off
EOF
    pg_start "$d"
    runuser -u postgres -- "$PG_BIN/createdb" -h "$SCRATCH/pgsock" -p $PG_PORT bench
    runuser -u postgres -- psql -h "$SCRATCH/pgsock" -p $PG_PORT -q -c 'CREATE EXTENSION pg_prewarm' bench
    runuser -u postgres -- pgbench -h "$SCRATCH/pgsock" -p $PG_PORT -i -s 10 -q bench >>"$OUT/logs/pg-init.log" 2>&1
    runuser -u postgres -- psql -h "$SCRATCH/pgsock" -p $PG_PORT -q -c CHECKPOINT bench
    stop_victims
}

# ---------------------------------------------------------------------------------------------
# Golden images
# ---------------------------------------------------------------------------------------------
size_bytes() { numfmt --from=iec "$1"; }

golden() { # device-class fs workload -> sets GOLDEN
    local class=$1 fs=$2 wl=$3 size=$4 files=$5
    GOLDEN=$SCRATCH/golden-$class-$fs-$wl.img
    [[ -e $GOLDEN ]] && return 0
    guard "$GOLDEN"
    local bytes img_bytes t=$SECONDS mnt=$SCRATCH/mnt
    bytes=$(size_bytes "$size")
    case $wl in
        frag) img_bytes=$((2 * bytes + (2 << 30))) ;; # mkbigfile fills it, then frees every other MiB
        contig) img_bytes=$((bytes + bytes / 2 + (3 << 30))) ;;
        tree) img_bytes=$((files * 24 * 1024 + (4 << 30))) ;; # inodes: ext3/4 make one per 16 KiB
    esac
    truncate -s "$img_bytes" -- "$GOLDEN"
    up_device plain "$GOLDEN"
    mkfs_fs "$fs" "$DEV" >>"$OUT/logs/mkfs.log" 2>&1
    mount_fs "$fs" "$DEV" "$mnt"
    has "$VICTIMS" pg && pg_init "$mnt"
    mkdir -p -- "$mnt/victim" "$mnt/target"
    case $wl in
        frag | contig)
            python3 "$LAB/mkbigfile.py" --mode "$wl" --size "$bytes" "$mnt/target/backup.img" "$mnt/db" >/dev/null
            local extents
            extents=$(filefrag "$mnt/target/backup.img" | awk '{print $2}')
            printf '%s\t%s\n' "$class-$fs-$wl" "$extents" >>"$SCRATCH/extents.tsv"
            ;;
        tree)
            "$MKWORKLOAD" --shape tree --files "$files" "$mnt/target/tree" 2>>"$OUT/logs/mkworkload.log"
            ;;
    esac
    if [[ $TRACE == 1 && $fs == ext* ]]; then
        # Where the journal, the bitmaps and the inode tables are (harm.py classes the trace).
        umount -- "$mnt"
        { dumpe2fs "$DEV" 2>/dev/null; echo "== journal (inode 8)"; debugfs -R 'stat <8>' "$DEV" 2>/dev/null; } \
            >"$OUT/layout-$class-$fs-$wl.txt"
        mount_fs "$fs" "$DEV" "$mnt"
    fi
    {
        echo "== $class / $fs / $wl: $(findmnt -no SOURCE,FSTYPE,OPTIONS "$mnt")"
        df -h "$mnt" | tail -1
        [[ -f $mnt/target/backup.img ]] && filefrag "$mnt/target/backup.img"
        echo
    } >>"$OUT/fs-details.txt" 2>&1
    teardown_device
    # The big file is zeros: turn them into holes so every per-run copy is quick.
    fallocate --dig-holes -- "$GOLDEN"
    log "golden $class/$fs/$wl: $(du -h -- "$GOLDEN" | cut -f1) allocated, $((SECONDS - t)) s"
}

# ---------------------------------------------------------------------------------------------
# One measured run
# ---------------------------------------------------------------------------------------------
now() { date +%s.%N; }

method_cmd() { # name kind -> prints CMD template or nothing if it does not apply
    local d kind name cmd
    for d in "${METHOD_DEFS[@]}"; do
        kind=${d%%:*} name=${d#*:} name=${name%%=*} cmd=${d#*=}
        [[ $name == "$1" ]] || continue
        [[ $kind == any || $kind == "$2" ]] || return 0
        case $cmd in
            CMD_RECLAIM) cmd="{reclaim} rm -rf -- {}" ;;
            CMD_RECLAIM_FAST)
                "$RECLAIM" rm --help 2>/dev/null | grep -q -- '--fast' || return 0
                cmd="{reclaim} rm -rf --fast -- {}" ;;
        esac
        printf '%s\n' "$cmd"
        return 0
    done
}
all_methods() {
    local d n
    for d in "${METHOD_DEFS[@]}"; do n=${d#*:}; printf '%s ' "${n%%=*}"; done
}

run_one() { # device fs workload method order rep
    local device=$1 fs=$2 wl=$3 method=$4 order=$5 rep=$6 kind=file tmpl cmd target
    [[ $wl == tree ]] && kind=tree
    tmpl=$(method_cmd "$method" "$kind")
    [[ -n $tmpl ]] || return 0
    local size files probe_ms
    size=${SIZE:-$([[ $device == plain ]] && echo 16G || echo 4G)}
    files=${TREE_FILES:-$([[ $device == plain ]] && echo 1000000 || echo 100000)}
    probe_ms=${PROBE_MS:-$([[ $device == plain ]] && echo 5 || echo 25)}
    golden "$([[ $device == plain ]] && echo plain || echo emu)" "$fs" "$wl" "$size" "$files"

    local run=$OUT/runs/${device}__${fs}__${wl}__${method}
    [[ $RUNS == 1 ]] || run=${run}__r$rep
    mkdir -p -- "$run"
    TRACE_FILE=""
    [[ $TRACE == 1 && $device != plain ]] && TRACE_FILE=$run/disk.trace
    local img=$SCRATCH/run.img mnt=$SCRATCH/mnt
    guard "$img"
    rm -f -- "$img"
    cp --sparse=always -- "$GOLDEN" "$img"
    up_device "$device" "$img"
    mount_fs "$fs" "$DEV" "$mnt"
    target=$mnt/target/backup.img
    [[ $kind == tree ]] && target=$mnt/target/tree
    guard "$target"
    cmd=${tmpl//\{reclaim\}/$RECLAIM}
    cmd=${cmd//\{\}/$(printf '%q' "$target")}
    {
        printf 'device\t%s\nfs\t%s\nworkload\t%s\nmethod\t%s\norder\t%s\nrep\t%s\ncmd\t%s\n' \
            "$device" "$fs" "$wl" "$method" "$order" "$rep" "$tmpl"
        [[ $kind == file ]] && printf 'size_bytes\t%s\nextents\t%s\n' "$(stat -c %s -- "$target")" \
            "$(filefrag -- "$target" | awk '{print $2}')"
        [[ $kind == tree ]] && printf 'files\t%s\n' "$files"
        printf 'probe_ms\t%s\n' "$probe_ms"
    } >"$run/meta.tsv"
    # After filefrag: FIEMAP reads every indirect block of an ext3 file into the cache.
    drop_caches
    local ev=$run/events.tsv
    : >"$ev"
    if has "$VICTIMS" pg; then
        # The database's tables and indexes into shared_buffers first (pg_prewarm: a mostly
        # sequential read of ~200 MB), so that what it asks of the disk is its WAL commit
        # stream. Before 2026-11-26 pgbench warmed its buffers up with random
        # reads during the whole run: the emulated HDD was 95% busy before any removal.
        pg_start "$mnt/pg"
        runuser -u postgres -- psql -h "$SCRATCH/pgsock" -p $PG_PORT -q -At -c \
            "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i')" \
            bench >"$run/pg_prewarm.out" 2>&1 || log "warning: pg_prewarm failed (see $run/pg_prewarm.out)"
    fi
    printf 'victims_start\t%s\n' "$(now)" >>"$ev"
    if has "$VICTIMS" pg; then
        rm -rf -- "$SCRATCH/pgrun" && mkdir -- "$SCRATCH/pgrun" && chown postgres: "$SCRATCH/pgrun"
        PG_RUN=$run
        (cd "$SCRATCH/pgrun" && exec runuser -u postgres -- pgbench -h "$SCRATCH/pgsock" -p $PG_PORT \
            -c 4 -j 2 -T 3600 -P 1 --log --log-prefix=pgbench_log bench) >"$run/pgbench.out" 2>&1 &
        PGBENCH_PID=$!
    fi
    if has "$VICTIMS" probe; then
        "$WALPROBE" --interval-ms "$probe_ms" "$mnt/victim/wal.probe" >"$run/probe.log" 2>>"$run/probe.err" &
        PROBE_PID=$!
    fi
    sleep "$BEFORE"
    log "$device/$fs/$wl: $method: $cmd"
    local t0 t1 rc=0
    t0=$(now)
    printf 'rm_start\t%s\n' "$t0" >>"$ev"
    timeout --signal=KILL "$TIMEOUT" bash -c "$cmd" >"$run/method.out" 2>&1 || rc=$?
    t1=$(now)
    printf 'rm_end\t%s\n' "$t1" >>"$ev"
    printf 'exit\t%s\nwall_s\t%s\n' "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')" >>"$run/meta.tsv"
    [[ -e $target ]] && log "warning: $target still exists after $method (exit $rc)"
    sleep "$AFTER"
    printf 'victims_stop\t%s\n' "$(now)" >>"$ev"
    stop_victims
    local tu
    tu=$(now)
    teardown_device
    printf 'teardown_s\t%s\n' "$(awk -v a="$tu" -v b="$(now)" 'BEGIN{printf "%.3f", b-a}')" >>"$run/meta.tsv"
    rm -f -- "$img"
    log "$device/$fs/$wl: $method: removal $(grep wall_s "$run/meta.tsv" | cut -f2) s, exit $rc"
}

# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------
install_tools
build_tools
[[ -n $OUT ]] || OUT=$ROOT/bench/out/lab-$(date +%Y%m%d-%H%M%S)
OUT=$(realpath -m -- "$OUT")
mkdir -p -- "$OUT/logs" "$OUT/runs"
SCRATCH=$(mktemp -d "$SCRATCH_BASE/reclaim-lab.XXXXXX")
chmod 755 "$SCRATCH" # the postgres user must reach its data directory below
TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf '%s' "$TOKEN" >"$SCRATCH/.reclaim-lab"
# Run private copies: rebuilding the repository meanwhile must not change a running lab.
mkdir -p -- "$SCRATCH/bin"
for b in RECLAIM MKWORKLOAD SLOWDISK WALPROBE; do
    cp -- "${!b}" "$SCRATCH/bin/" && printf -v "$b" '%s' "$SCRATCH/bin/$(basename -- "${!b}")"
done
[[ -n $METHODS ]] || METHODS=$(all_methods)
{
    printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
    printf 'kernel\t%s\n' "$(uname -r)"
    printf 'cpus\t%s\n' "$(nproc)"
    printf 'commit\t%s\n' "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
    printf 'devices\t%s\nfs\t%s\nworkloads\t%s\nvictims\t%s\nmethods\t%s\n' \
        "$DEVICES" "$FSES" "$WORKLOADS" "$VICTIMS" "$METHODS"
    printf 'before_s\t%s\nafter_s\t%s\nruns\t%s\n' "$BEFORE" "$AFTER" "$RUNS"
    printf 'slowdisk\t%s\n' "$("$SLOWDISK" --describe hdd-7200 2>/dev/null || echo 'see bench/slowdisk/README.md')"
    has "$VICTIMS" pg && printf 'pgbench\tpgbench -c 4 -j 2 -P 1 --log, scale 10, shared_buffers 256MB, no checkpoint/autovacuum in the window (%s)\n' "$("$PG_BIN/postgres" --version)"
    printf 'probe\twalprobe: 8 KiB append + fdatasync every --probe-ms\n'
} >"$OUT/meta.tsv"
log "output: $OUT"
for device in $DEVICES; do
    for fs in $FSES; do
        for wl in $WORKLOADS; do
            for ((rep = 1; rep <= RUNS; rep++)); do
                # Rotate the order every repetition: drift and neighbours hit every method.
                local_methods=($METHODS)
                for ((k = 0; k < (rep - 1) % ${#local_methods[@]}; k++)); do
                    local_methods=("${local_methods[@]:1}" "${local_methods[0]}")
                done
                order=0
                for m in "${local_methods[@]}"; do
                    order=$((order + 1))
                    run_one "$device" "$fs" "$wl" "$m" "$order" "$rep"
                done
            done
        done
    done
done
[[ -f $SCRATCH/extents.tsv ]] && cp -- "$SCRATCH/extents.tsv" "$OUT/extents.tsv"
py=python3
[[ $PLOTS == 1 && -x $ROOT/bench/out/.venv/bin/python ]] && py=$ROOT/bench/out/.venv/bin/python
plots=()
[[ $PLOTS == 1 ]] || plots=(--no-plots)
"$py" "$LAB/analyze.py" "$OUT" "${plots[@]}"
log "done: $OUT/results.md"
