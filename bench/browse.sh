#!/usr/bin/env bash
# `reclaim browse` against the interactive disk-usage browsers ncdu, gdu and dua (`dua i`),
# in the same run, on a tree of empty files on a journaled ext4 loop image, cold cache every
# run (issue 45). Each browser runs in a pseudo-terminal (bench/browse_tty.py, pyte) and is
# timed to its first frame and to its scan being done (its screen says so), and its peak
# resident memory is read then (VmHWM); `reclaim scan` alone is timed beside them. At the end
# the image is remounted read-write and `reclaim browse` deletes the tree's top directory (d,
# y): how long until control is back. Run as root:
#
#   bash bench/browse.sh --quick        # 100,000 files, 3 runs (a few minutes)
#   bash bench/browse.sh                # 1,000,000 files, 3 runs
#
# It installs what is missing (apt-get: ncdu gdu python3-pyte e2fsprogs; cargo install
# dua-cli into /opt/peers) unless --no-install, builds reclaim (release) unless --no-build,
# and writes into bench/out/browse-<timestamp>/: raw.csv, summary.md, meta.tsv, logs/.
#
# Safety: as bench/scan.sh (bench/lib.sh): a marked mktemp scratch directory, a private mount
# namespace, the loop device and mount undone on every exit; only bench/out/ is written in
# the repository.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

private_mount_ns RECLAIM_BENCH_NS "$@"

usage() {
    cat <<'EOF'
usage: bench/browse.sh [options]

  --quick               100,000 files (unless --files is given)
  --files N             files in the tree (default 1000000)
  --runs N              runs per method (default 3)
  --fanout N            tree fan-out (default 32)
  --per-leaf N          files per leaf directory (default 100)
  --methods "..."       methods to run, by name (default: all that are installed):
                        reclaim-scan reclaim-browse ncdu gdu dua
  --scratch-base DIR    where the mktemp scratch dir goes (default /var/tmp)
  --out DIR             output directory (default bench/out/browse-<timestamp>)
  --no-build            do not run cargo build (use target/release)
  --no-install          do not install missing peers
  --no-delete           skip the closing deletion from reclaim browse
  --keep                keep the scratch dir (golden image) at the end
  -h, --help            this help
EOF
}

FILES="" RUNS=3 QUICK=0 FANOUT=32 PER_LEAF=100 METHODS_SEL=""
SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp}
OUT="" NO_BUILD=0 NO_INSTALL=0 KEEP=0 DELETE=1
ORIG_ARGS=("$@")
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "browse.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) QUICK=1 ;;
        --files) need_arg "$@"; FILES=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --fanout) need_arg "$@"; FANOUT=$2; shift ;;
        --per-leaf) need_arg "$@"; PER_LEAF=$2; shift ;;
        --methods) need_arg "$@"; METHODS_SEL=$2; shift ;;
        --scratch-base) need_arg "$@"; SCRATCH_BASE=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --no-build) NO_BUILD=1 ;;
        --no-install) NO_INSTALL=1 ;;
        --no-delete) DELETE=0 ;;
        --keep) KEEP=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "browse.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ $QUICK == 1 ]] && FILES=${FILES:-100000}
FILES=${FILES:-1000000}
for v in FILES RUNS FANOUT PER_LEAF; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "browse.sh: --${v,,} must be a number" >&2; exit 2; }
done
[[ $FILES -ge 1 && $RUNS -ge 1 ]] || { echo "browse.sh: --files and --runs must be >= 1" >&2; exit 2; }

[[ $EUID -eq 0 ]] || { echo "browse.sh: must run as root (loop device, mount, drop_caches)" >&2; exit 1; }
bench_setup browse
PEER_ROOT=${RECLAIM_BENCH_PEER_ROOT:-/opt/peers}
# Debian's interpreter (python3-pyte is installed for it), not one a version manager put first.
PY=/usr/bin/python3
[[ -x $PY ]] || PY=$(command -v python3)
DRIVER=$REPO/bench/browse_tty.py

# ---------------------------------------------------------------------------------------------
# Methods: name -> how it runs. `tty|TEXT|CMD` runs CMD in a terminal until TEXT shows (the
# scan is done there; METHOD_EXTRA: more conditions for the driver, {entries} the tree's entry
# count); anything else is a plain command, timed whole.
# ---------------------------------------------------------------------------------------------

declare -A METHOD_CMD=() METHOD_NEEDS=() METHOD_EXTRA=()
METHOD_ORDER=()
def_method() { # name how [binary it needs]
    [[ -n ${METHOD_CMD[$1]+x} ]] || METHOD_ORDER+=("$1")
    METHOD_CMD[$1]=$2
    METHOD_NEEDS[$1]=${3:-}
}
def_method reclaim-scan   '{reclaim} scan --no-estimate --json {dir}'
def_method reclaim-browse 'tty|scanned |{reclaim} browse {dir}'
def_method ncdu           'tty|Total disk usage:|ncdu -x {dir}' ncdu
def_method gdu            'tty|Total disk usage:|gdu -x {dir}' gdu
def_method dua            'tty|entries in |{dua} interactive -x {dir}' dua
# dua shows `Processed N entries in Ts` while it scans too (with `-> scanning <-`), and at the
# start with N = 0: done is the line without the marker and with every entry counted.
METHOD_EXTRA[dua]='--not|-> scanning <-|--count|Processed ([0-9,]+) entries in|--at-least|{entries}'
select_methods

DUA=""
ensure_tools() {
    # shellcheck disable=SC2034 # read by install_missing
    local -A pkg_of=([mkfs.ext4]=e2fsprogs [losetup]=mount)
    # A peer that cannot be had is skipped (listed in skipped.tsv), not a reason to stop.
    [[ $NO_INSTALL == 1 ]] || pkg_of+=([ncdu]=ncdu [gdu]=gdu)
    install_missing pkg_of
    if ! "$PY" -c 'import pyte' 2>/dev/null && [[ $NO_INSTALL == 0 ]]; then
        log "installing python3-pyte"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pyte >>"$OUT/logs/install.log" 2>&1 || true
    fi
    "$PY" -c 'import pyte' 2>/dev/null || die "$PY cannot import pyte (Debian: python3-pyte)"
    find_dua
    drop_methods_without_tools
}


SCRATCH="" LOOP="" MNT=""
make_scratch() {
    new_scratch reclaim-browsebench
    mkdir "$SCRATCH/mnt"
    MNT=$SCRATCH/mnt
}

exec {STDERR_FD}>&2
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    exec 2>&"$STDERR_FD"
    cd /
    [[ -z $SCRATCH ]] || release_scratch browse.sh
    [[ $rc == 0 ]] || echo "browse.sh: exiting with status $rc (results so far in ${OUT:-?})" >&2
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

IMG_BYTES=$((FILES * 16384))
((IMG_BYTES >= 4 << 30)) || IMG_BYTES=$((4 << 30))
IMG_BYTES=$(((IMG_BYTES + (1 << 20) - 1) >> 20 << 20))
EXT4_INODES=$((FILES * 5 / 2))
((EXT4_INODES >= 65536)) || EXT4_INODES=65536
MKFS_EXT4="mkfs.ext4 -q -F -N $EXT4_INODES -E lazy_itable_init=0,lazy_journal_init=0"
SPEC="--shape tree --files $FILES --fanout $FANOUT --per-leaf $PER_LEAF --size 0"
CACHES=cold
secs_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }

build_image() {
    local img=$SCRATCH/browse.img t
    guard "$img"
    t=$EPOCHREALTIME
    truncate -s "$IMG_BYTES" "$img"
    $MKFS_EXT4 "$img" >>"$OUT/logs/mkfs.log" 2>&1 || die "mkfs.ext4 failed (logs/mkfs.log)"
    LOOP=$(losetup --direct-io=on -f --show -- "$img")
    mount -t ext4 -- "$LOOP" "$MNT"
    # shellcheck disable=SC2086
    "$MKWORKLOAD" $SPEC "$MNT/w" 2>>"$OUT/logs/mkworkload.log" || die "mkworkload failed"
    umount_retry "$MNT"
    mount -t ext4 -o ro,noatime -- "$LOOP" "$MNT"
    ENTRIES=$(find "$MNT/w" -mindepth 1 | wc -l)
    log "image: $FILES files ($ENTRIES entries below the top) in $(secs_since "$t")s"
}

q() { printf '%q' "$1"; }
CSV=$OUT/raw.csv
STEP=0 TOTAL=0
measure() { # method run
    local m=$1 r=$2 how=${METHOD_CMD[$1]} lf=$OUT/logs/$1-$2 done cmd t first=- done_s=- hwm=- ok=1
    how=${how//\{reclaim\}/$(q "$RECLAIM")}
    how=${how//\{dua\}/$(q "${DUA:-dua}")}
    how=${how//\{dir\}/$(q "$MNT/w")}
    drop_caches
    if [[ $how == 'tty|'* ]]; then
        how=${how#tty|}
        done=${how%%|*}
        cmd=${how#*|}
        local unless=() extra=${METHOD_EXTRA[$m]:-}
        if [[ -n $extra ]]; then
            extra=${extra//\{entries\}/$ENTRIES}
            IFS='|' read -r -a unless <<<"$extra"
        fi
        # shellcheck disable=SC2086
        env RECLAIM_CONFIG= "$PY" "$DRIVER" --done "$done" "${unless[@]}" --screen "$lf.screen" -- $cmd >"$lf.json" 2>"$lf.err" || ok=0
        read -r first done_s hwm ok2 < <("$PY" -c 'import json,sys; v=json.load(open(sys.argv[1])); print(v["first_s"] or "-", v["done_s"] or "-", v["hwm_kib"] or "-", int(bool(v["ok"])))' "$lf.json" 2>/dev/null || echo "- - - 0")
        [[ $ok2 == 1 ]] || ok=0
    else
        t=$EPOCHREALTIME
        bash -c "$how" >"$lf.out" 2>"$lf.err" || ok=0
        done_s=$(secs_since "$t")
        hwm=-
    fi
    [[ -s $lf.err ]] || rm -f -- "$lf.err"
    echo "$FILES,$ENTRIES,$m,$r,$first,$done_s,$hwm,$ok,$CACHES,$(load1)" >>"$CSV"
    STEP=$((STEP + 1))
    log "[$STEP/$TOTAL] run $r $m: first frame ${first}s, scan done ${done_s}s, peak RSS ${hwm} KiB (load $(load1))$([[ $ok == 1 ]] && echo " ok" || echo " FAILED")"
}

log "reclaim browse benchmark: files=$FILES runs=$RUNS out=$OUT"
warn_if_busy
ensure_tools
build_reclaim_and_mkworkload
make_scratch
build_image
{
    machine_meta
    printf 'command\t%s\n' "bash bench/browse.sh ${ORIG_ARGS[*]}"
    printf 'files\t%s\nentries\t%s\nruns\t%s\n' "$FILES" "$ENTRIES" "$RUNS"
    printf 'workload\tmkworkload %s\n' "$SPEC"
    printf 'image\t%s GiB sparse, %s; losetup --direct-io=on; mount -o ro,noatime\n' "$((IMG_BYTES >> 30))" "$MKFS_EXT4"
    printf 'versions\t%s; %s; gdu %s; %s\n' "$("$RECLAIM" --version)" "$({ ncdu -v 2>/dev/null || echo 'ncdu -'; } | head -1)" \
        "$({ gdu --version 2>/dev/null || echo '-'; } | head -1 | awk '{ print $NF }')" "$({ "${DUA:-false}" --version 2>/dev/null || echo 'dua -'; } | head -1)"
} >"$OUT/meta.tsv"
for m in "${METHODS[@]}"; do printf '%s\t%s\n' "$m" "${METHOD_CMD[$m]}"; done >"$OUT/methods.tsv"
echo "files,entries,method,run,first_s,done_s,hwm_kib,ok,caches,load1" >"$CSV"

TOTAL=$((RUNS * ${#METHODS[@]}))
n=${#METHODS[@]}
for ((r = 1; r <= RUNS; r++)); do
    for ((i = 0; i < n; i++)); do measure "${METHODS[$(((i + r - 1) % n))]}" "$r"; done
done

if [[ $DELETE == 1 ]]; then
    # The tree's top directory (FILES files) deleted from the view: d, y, until the view says
    # it is in the trash. No reaper is started (RECLAIM_NO_SPAWN): the image goes at the end.
    mount -o remount,rw -- "$MNT"
    guard "$MNT/w"
    mkdir -p "$MNT/top"
    mv -- "$MNT/w" "$MNT/top/w"
    drop_caches
    env RECLAIM_CONFIG= RECLAIM_NO_SPAWN=1 "$PY" "$DRIVER" --done 'scanned ' --delete --gone "$MNT/top/w" \
        -- "$RECLAIM" browse "$MNT/top" >"$OUT/logs/delete.json" 2>"$OUT/logs/delete.err" || true
    read -r del gone < <("$PY" -c 'import json,sys; v=json.load(open(sys.argv[1])); print(v.get("delete_s") or "-", v.get("gone_s") or "-")' "$OUT/logs/delete.json" 2>/dev/null || echo '- -')
    printf 'delete_s\t%s\ngone_s\t%s\n' "$del" "$gone" >>"$OUT/meta.tsv"
    log "reclaim browse: d + y on a directory of $FILES files: gone from its path in ${gone}s, the screen says so in ${del}s"
fi
printf 'load_end\t%s\n' "$(load1)" >>"$OUT/meta.tsv"

"$PY" - "$OUT" <<'PY'
import csv, statistics, sys
from collections import defaultdict
out = sys.argv[1]
meta = dict(l.rstrip("\n").split("\t", 1) for l in open(f"{out}/meta.tsv") if "\t" in l)
rows = [r for r in csv.DictReader(open(f"{out}/raw.csv")) if r["ok"] == "1"]
by = defaultdict(lambda: defaultdict(list))
for r in rows:
    for k in ("first_s", "done_s", "hwm_kib"):
        if r[k] not in ("-", ""):
            by[r["method"]][k].append(float(r[k]))
med = lambda v: statistics.median(v) if v else None
entries = int(meta["entries"])
lines = [
    f"# reclaim browse benchmark ({meta['date']})",
    "",
    f"{meta['files']} files, {entries} entries ({meta['workload']}); {meta['image']}.",
    f"Kernel {meta['kernel']}, {meta['cpus']} CPUs ({meta['cpu_model']}), {meta['memory']}; "
    f"load average {meta['load_start']} at the start, {meta['load_end']} at the end.",
    f"Versions: {meta['versions']}. Cold cache every run (drop_caches). Medians of {meta['runs']} runs.",
    "",
    "| method | first frame s | scan done s | ÷ reclaim scan (same run) | peak RSS MiB | bytes per entry |",
    "|---|---|---|---|---|---|",
]
for m in [l.split("\t")[0] for l in open(f"{out}/methods.tsv")]:
    v = by.get(m)
    if not v:
        continue
    f, d, h = med(v["first_s"]), med(v["done_s"]), med(v["hwm_kib"])
    # The same run's ratio to reclaim scan, median over the runs.
    scan_of = {r["run"]: float(r["done_s"]) for r in rows if r["method"] == "reclaim-scan"}
    ratios = [float(r["done_s"]) / scan_of[r["run"]] for r in rows
              if r["method"] == m and r["run"] in scan_of and r["done_s"] not in ("-", "")]
    ratio = f"{med(ratios):.2f}x" if ratios else "-"
    lines.append(
        f"| {m} | {f'{f:.3f}' if f else '-'} | {f'{d:.2f}' if d else '-'} | {ratio} | "
        f"{f'{h / 1024:.1f}' if h else '-'} | {f'{h * 1024 / entries:.0f}' if h else '-'} |"
    )
if "delete_s" in meta:
    lines += ["", f"reclaim browse, d + y on the top directory ({meta['files']} files): gone from its path "
              f"{meta.get('gone_s', '-')} s after y, the screen says so after {meta['delete_s']} s."]
text = "\n".join(lines) + "\n"
open(f"{out}/summary.md", "w").write(text)
print(text)
PY
