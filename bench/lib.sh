# Shared by the benchmark scripts: logging, the safety helpers around the marked scratch
# directory, loop devices and mounts, and the set-up every script repeats (the private mount
# namespace, the repository's paths and output directory, release builds, missing packages,
# the netfs daemon's stop, an MPI rank's wrapper). Source it first; it defines functions only.
# They use these globals of the caller:
#   T0 (start, seconds), PROGRESS_LOG (a file), SCRATCH, MARKER, TOKEN (the marked scratch
#   dir, made by new_scratch), LOOPS and MOUNTED (arrays of what the script attached/mounted),
#   NETFS_PID (stop_netfs), NO_INSTALL (install_missing), and set DROP_WARNED / CACHES=warm
#   when the page cache cannot be dropped.
#   METHOD_CMD / METHOD_ORDER (the methods defined) and METHODS_SEL (--methods) for
#   select_methods, which sets METHODS.
# shellcheck shell=bash

load1() { cut -d' ' -f1 /proc/loadavg; }

select_methods() { # METHODS = --methods in its order, or every method defined
    local m
    if [[ -n $METHODS_SEL ]]; then
        METHODS=()
        for m in $METHODS_SEL; do
            [[ -n ${METHOD_CMD[$m]+x} ]] || die "unknown method '$m' (known: ${METHOD_ORDER[*]})"
            METHODS+=("$m")
        done
    else
        METHODS=("${METHOD_ORDER[@]}")
    fi
}

log() {
    local line
    line="[$(date +%H:%M:%S) +$(($(date +%s) - T0))s] $*"
    echo "$line" >&2
    echo "$line" >>"$PROGRESS_LOG"
}
warn() { log "WARNING: $*"; }
die() { log "ERROR: $*"; exit 1; }
mounts_under() { # mount points at or below $1, deepest first
    awk -v p="$1" '$2 == p || index($2, p "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}
marker_ok() {
    [[ -n $SCRATCH && -n $TOKEN && -f $SCRATCH/$MARKER && ! -L $SCRATCH/$MARKER ]] &&
        [[ $(<"$SCRATCH/$MARKER") == "$TOKEN" ]]
}
guard() { # dies unless $1 is strictly inside the marked scratch dir
    local p
    p=$(realpath -m -- "$1")
    [[ -n $SCRATCH && $p == "$SCRATCH"/?* ]] && marker_ok ||
        die "refusing to operate on '$1': not inside the marked scratch dir '$SCRATCH'"
}
umount_retry() {
    local m=$1 i
    for i in 1 2 3 4 5; do
        umount -- "$m" 2>/dev/null && return 0
        sleep 1
    done
    umount -- "$m" 2>&1 | sed 's/^/umount: /' >&2 || true
    mountpoint -q -- "$m" || return 0
    warn "lazy unmount of $m"
    umount -l -- "$m"
}
detach() {
    losetup -d "$1"
    local keep=() d
    for d in "${LOOPS[@]}"; do [[ $d == "$1" ]] || keep+=("$d"); done
    LOOPS=("${keep[@]}")
}
unmount() {
    umount_retry "$1"
    local keep=() d
    for d in "${MOUNTED[@]}"; do [[ $d == "$1" ]] || keep+=("$d"); done
    MOUNTED=("${keep[@]}")
}
drop_caches() {
    sync
    if ! echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
        [[ -n ${DROP_WARNED:-} ]] || warn "cannot drop caches: runs are NOT cold-cache"
        DROP_WARNED=1
        CACHES=warm
    fi
}
release_scratch() { # name: unmount all under the scratch dir, detach its loop devices, remove it
    local name=$1 m dev back
    [[ -n ${SCRATCH:-} ]] || return 0
    for m in $(mounts_under "$SCRATCH"); do umount_retry "$m"; done
    # Every loop device whose backing file is in the scratch dir, tracked or not.
    while read -r dev back; do
        [[ $back == "$SCRATCH"/* ]] && losetup -d "$dev"
    done < <(losetup -n -l -O NAME,BACK-FILE 2>/dev/null)
    if losetup -n -l -O BACK-FILE 2>/dev/null | grep -q "^$SCRATCH/"; then
        echo "$name: a loop device on $SCRATCH is still busy (held elsewhere); it detaches itself when released:" >&2
        losetup -l | grep -F "$SCRATCH/" >&2
    fi
    if [[ -n $(mounts_under "$SCRATCH") ]]; then
        echo "$name: something is still mounted under $SCRATCH; NOT removing it" >&2
    elif [[ ${KEEP:-0} == 1 ]]; then
        echo "$name: keeping $SCRATCH (--keep); remove it with: rm -rf --one-file-system $SCRATCH" >&2
    elif marker_ok; then
        rm -rf --one-file-system -- "$SCRATCH"
    else
        echo "$name: marker of $SCRATCH missing or wrong; NOT removing it" >&2
    fi
}

# ---------------------------------------------------------------------------------------------
# Set-up shared by every script: the private mount namespace, the repository's paths and the
# output directory, the marked scratch directory, release builds, the netfs daemon.
# ---------------------------------------------------------------------------------------------

private_mount_ns() { # VAR args...: as root, runs the calling script again in a private mount namespace
    # Loop and FUSE mounts made there are invisible outside (nothing is left mounted in the
    # host namespace, even after kill -9), and processes that unshare(2) meanwhile (test
    # suites) cannot take copies of them that would keep a file system alive after an umount.
    # VAR marks the inner run. Look inside with: nsenter -t <pid of the script> -m findmnt
    local var=$1
    shift
    if [[ $EUID -eq 0 && -z ${!var:-} ]] && unshare --mount --propagation private true 2>/dev/null; then
        export "$var=$$"
        exec unshare --mount --propagation private -- bash "${BASH_SOURCE[1]}" "$@"
    fi
}

bench_setup() { # NAME [PROGRESS-FILE]: T0, REPO, TARGET_DIR, the binaries, NPROC; OUT and PROGRESS_LOG
    # OUT defaults to bench/out/NAME-<time> (bench/out/<time> for an empty NAME), with logs/.
    local name=$1 progress=${2:-progress.log}
    T0=${T0:-$(date +%s)}
    PROGRESS_LOG=/dev/null
    REPO=$(cd "$(dirname "${BASH_SOURCE[1]}")/.." && pwd -P)
    [[ -f $REPO/Cargo.toml && -d $REPO/bench ]] || die "cannot find the repository root from ${BASH_SOURCE[1]}"
    TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
    [[ $TARGET_DIR == /* ]] || TARGET_DIR=$REPO/$TARGET_DIR
    RECLAIM=$TARGET_DIR/release/reclaim
    MKWORKLOAD=$TARGET_DIR/release/examples/mkworkload
    FLOOR=$TARGET_DIR/release/examples/floor
    NETFS=$REPO/bench/slowdisk/target/release/netfs
    NPROC=$(nproc)
    OUT=${OUT:-$REPO/bench/out/${name:+$name-}$(date +%Y%m%d-%H%M%S)}
    mkdir -p "$OUT/logs"
    OUT=$(cd "$OUT" && pwd -P)
    PROGRESS_LOG=$OUT/$progress
    : >"$PROGRESS_LOG"
}

cargo_release() { # [-C DIR] cargo-build-args...: a release build, logged to $OUT/logs/build.log
    local dir=$REPO
    if [[ $1 == -C ]]; then
        dir=$2
        shift 2
    fi
    log "building: cargo build --release $* (in ${dir#"$REPO"/}; log: $OUT/logs/build.log)"
    (cd "$dir" && cargo build --release "$@") >>"$OUT/logs/build.log" 2>&1
}

new_scratch() { # PREFIX: SCRATCH, a fresh directory under SCRATCH_BASE marked with MARKER/TOKEN
    # Never in the repository, its parent, / or HOME; LOOPS and MOUNTED start empty.
    local base
    base=$(realpath -e -- "${SCRATCH_BASE:-/var/tmp}") || die "scratch base ${SCRATCH_BASE:-/var/tmp} does not exist"
    case $base/ in
        "$REPO"/* | "$(dirname "$REPO")"/ | / | "${HOME:-/root}"/) die "refusing scratch base $base" ;;
    esac
    MARKER=.reclaim-bench-scratch
    SCRATCH=$(mktemp -d "$base/$1.XXXXXXXX")
    SCRATCH=$(realpath -e -- "$SCRATCH")
    TOKEN="$1 $$ $(date +%s%N) $(od -An -N8 -tx1 /dev/urandom | tr -d ' \n') $SCRATCH"
    printf '%s' "$TOKEN" >"$SCRATCH/$MARKER"
    LOOPS=() MOUNTED=()
}

safe_rm() { # removes $1: strictly inside the marked scratch dir, nothing mounted below it
    guard "$1"
    [[ -z $(mounts_under "$(realpath -m -- "$1")") ]] || die "refusing to remove $1: something is mounted below it"
    rm -rf --one-file-system -- "$1"
}

fuse_under() { # FUSE mount points under the scratch dir, deepest first
    awk -v p="$SCRATCH" '($3 == "fuse" || $3 ~ /^fuse\./) && index($2, p "/") == 1 { print $2 }' \
        /proc/self/mounts | sort -r
}

wait_for_file() { # FILE [TENTHS]: 0 once FILE exists, 1 after TENTHS tenths of a second (default 100)
    local i
    for ((i = 0; i < ${2:-100}; i++)); do
        [[ -e $1 ]] && return 0
        sleep 0.1
    done
    return 1
}

stop_netfs() { # stops the netfs daemon NETFS_PID, if any
    # netfs unmounts on SIGTERM, but keeps a busy mount (a stopped run's client still in it)
    # and serves on: after 10 s the FUSE mounts under the scratch dir are detached lazily (a
    # client still inside lets go when it ends) and the daemon is killed.
    [[ -n ${NETFS_PID:-} ]] || return 0
    local i m
    kill -CONT "$NETFS_PID" 2>/dev/null || true
    kill -TERM "$NETFS_PID" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$NETFS_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$NETFS_PID" 2>/dev/null; then
        for m in $(fuse_under); do umount -l -- "$m" 2>/dev/null || warn "cannot detach $m"; done
        kill -KILL "$NETFS_PID" 2>/dev/null || true
    fi
    wait "$NETFS_PID" 2>/dev/null || true
    NETFS_PID=""
}

install_missing() { # ARRAY: installs with apt-get the packages of the commands missing
    # ARRAY names an associative array command -> Debian package; NO_INSTALL=1 dies naming them.
    local -n of=$1
    local missing=() c
    for c in "${!of[@]}"; do
        command -v "$c" >/dev/null 2>&1 || missing+=("${of[$c]}")
    done
    [[ ${#missing[@]} -gt 0 ]] || return 0
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    [[ ${NO_INSTALL:-0} == 0 ]] || die "missing packages: ${missing[*]}"
    command -v apt-get >/dev/null || die "missing packages (no apt-get): ${missing[*]}"
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$OUT/logs/install.log" 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >>"$OUT/logs/install.log" 2>&1 ||
        die "apt-get install failed, see $OUT/logs/install.log"
}

drop_method() { # NAME WHY: NAME leaves METHODS, said and listed in $OUT/skipped.tsv
    local m=$1 why=$2 keep=() x
    warn "skipping method $m: $why"
    printf '%s\t%s\n' "$m" "$why" >>"$OUT/skipped.tsv"
    for x in "${METHODS[@]}"; do [[ $x == "$m" ]] || keep+=("$x"); done
    METHODS=("${keep[@]}")
}

drop_methods_without_tools() { # each method whose METHOD_NEEDS binary (dua: $DUA) is missing
    local m
    for m in "${METHODS[@]}"; do
        case ${METHOD_NEEDS[$m]} in
            dua) [[ -n $DUA ]] || drop_method "$m" "dua not found" ;;
            "") ;;
            *) command -v "${METHOD_NEEDS[$m]}" >/dev/null || drop_method "$m" "${METHOD_NEEDS[$m]} not found" ;;
        esac
    done
}

build_reclaim_and_mkworkload() { # the release reclaim and the mkworkload example (not with NO_BUILD=1)
    if [[ $NO_BUILD == 1 ]]; then
        log "not building (--no-build)"
    else
        cargo_release --bin reclaim --example mkworkload || die "cargo build failed, see $OUT/logs/build.log"
    fi
    [[ -x $RECLAIM && -x $MKWORKLOAD ]] || die "missing $RECLAIM or $MKWORKLOAD"
}

find_dua() { # DUA: dua on PATH, else PEER_ROOT/bin/dua, else installed there (cargo install)
    # unless NO_INSTALL=1; empty when there is none.
    DUA=$(command -v dua 2>/dev/null || true)
    [[ -n $DUA || ! -x $PEER_ROOT/bin/dua ]] || DUA=$PEER_ROOT/bin/dua
    if [[ -z $DUA && ${NO_INSTALL:-0} == 0 ]] && command -v cargo >/dev/null; then
        log "installing dua: cargo install --locked dua-cli --root $PEER_ROOT"
        if cargo install --locked dua-cli --root "$PEER_ROOT" >>"$OUT/logs/install.log" 2>&1; then
            DUA=$PEER_ROOT/bin/dua
        fi
    fi
}
warn_if_busy() { # LOAD_START: the load average now; a warning when it is over half the CPUs
    LOAD_START=$(load1)
    if awk -v l="$LOAD_START" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
        warn "the machine is busy (load average $LOAD_START on $(nproc) CPUs): timings will be noisy"
    fi
}

write_rank_script() { # FILE: an mpirun rank's wrapper: a private mount namespace with its own
    # netfs client ($CLIENTS/c<rank>) bound at the common path ($COMMON), then the command
    cat >"$1" <<'RANK'
#!/bin/sh
r=${OMPI_COMM_WORLD_RANK:?not started by mpirun}
exec unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
    sh "$CLIENTS/c$r" "$COMMON" "$@"
RANK
    chmod +x "$1"
}

machine_meta() { # the machine's lines of a run's meta.tsv: date, kernel, os, cpus, memory, git
    printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    printf 'kernel\t%s\n' "$(uname -r)"
    printf 'os\t%s\n' "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")"
    printf 'cpus\t%s\n' "$(nproc)"
    printf 'cpu_model\t%s\n' "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    printf 'memory\t%s\n' "$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    printf 'load_start\t%s\n' "${LOAD_START:-$(load1)}"
    printf 'git\t%s\n' "$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')$([[ -n $(git -C "$REPO" status --porcelain -- src Cargo.toml 2>/dev/null) ]] && echo ' (src dirty)')"
}
