# Shared by the benchmark scripts (run.sh, trash.sh, scan.sh): logging and the safety
# helpers around the marked scratch directory, loop devices and mounts. Source it after the
# script's own settings; it defines functions only. They use these globals of the caller:
#   T0 (start, seconds), PROGRESS_LOG (a file), SCRATCH, MARKER, TOKEN (the marked scratch
#   dir), LOOPS and MOUNTED (arrays of what the script attached/mounted), and set
#   DROP_WARNED / CACHES=warm when the page cache cannot be dropped.
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
