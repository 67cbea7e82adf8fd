#!/usr/bin/env bash
# Cold-cache scan benchmark (issue 6): `reclaim scan` against `du -s` and the disk-usage
# analyzers `dua`, `gdu` and `ncdu`, on a tree of empty files on a journaled ext4 loop image.
# Run as root:
#
#   bash bench/scan.sh --quick        # 100,000 files, 3 runs (a few minutes)
#   bash bench/scan.sh                # 1,000,000 files, 3 runs
#
# Every run drops the page cache first. The image is mounted read-only (noatime), so no run
# changes what the next one reads. At the end, unless --no-estimate-check, the image is
# remounted read-write and `reclaim scan`'s removal estimate is compared with a real
# `reclaim rm -r` of the tree (warm cache, as the estimate says).
#
# Safety: everything this script creates or deletes lives in a scratch directory it makes
# with mktemp (default under /var/tmp) and marks with a marker file holding a random token;
# every deletion is checked to target a path strictly inside that marked directory, with
# nothing mounted below it. It runs in a private mount namespace; the loop device and mount are
# undone in an EXIT/INT/TERM trap, also on errors. In the repository only bench/out/ is written.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

private_mount_ns RECLAIM_BENCH_NS "$@"

usage() {
    cat <<'EOF'
usage: bench/scan.sh [options]

  --quick               100,000 files (unless --files is given)
  --files N             files in the tree (default 1000000)
  --runs N              runs per method (default 3)
  --fanout N            tree fan-out (default 32)
  --per-leaf N          files per leaf directory (default 100)
  --size BYTES          size of each file (default 0)
  --methods "..."       methods to run, by name (default: all that are installed)
  --method NAME=CMD     define an extra method (repeatable), e.g.
                        --method 'reclaim-t8={reclaim} scan --no-estimate --threads 8 {dir}'
  --scratch-base DIR    where the mktemp scratch dir goes (default /var/tmp)
  --out DIR             output directory (default bench/out/scan-<timestamp>)
  --no-build            do not run cargo build (use target/release)
  --no-install          do not apt-get/cargo install missing peers
  --no-estimate-check   skip the closing estimate-versus-real-removal check
  --keep                keep the scratch dir (golden image) at the end
  -h, --help            this help

Placeholders in method commands: {dir} the tree, {reclaim} {dua} binaries, {nproc} CPUs.
EOF
}

FILES="" RUNS=3 QUICK=0 FANOUT=32 PER_LEAF=100 SIZE=0 METHODS_SEL=""
SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp}
OUT="" NO_BUILD=0 NO_INSTALL=0 KEEP=0 CHECK_ESTIMATE=1
CLI_METHODS=()
ORIG_ARGS=("$@")

need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "scan.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) QUICK=1 ;;
        --files) need_arg "$@"; FILES=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --fanout) need_arg "$@"; FANOUT=$2; shift ;;
        --per-leaf) need_arg "$@"; PER_LEAF=$2; shift ;;
        --size) need_arg "$@"; SIZE=$2; shift ;;
        --methods) need_arg "$@"; METHODS_SEL=$2; shift ;;
        --method) need_arg "$@"; CLI_METHODS+=("$2"); shift ;;
        --scratch-base) need_arg "$@"; SCRATCH_BASE=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --no-build) NO_BUILD=1 ;;
        --no-install) NO_INSTALL=1 ;;
        --no-estimate-check) CHECK_ESTIMATE=0 ;;
        --keep) KEEP=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "scan.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ $QUICK == 1 ]] && FILES=${FILES:-100000}
FILES=${FILES:-1000000}
for v in FILES RUNS FANOUT PER_LEAF SIZE; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "scan.sh: --${v,,} must be a number" >&2; exit 2; }
done
[[ $FILES -ge 1 && $RUNS -ge 1 ]] || { echo "scan.sh: --files and --runs must be >= 1" >&2; exit 2; }

T0=$(date +%s)
PROGRESS_LOG=/dev/null

[[ $EUID -eq 0 ]] || { echo "scan.sh: must run as root (loop device, mount, drop_caches)" >&2; exit 1; }

bench_setup scan
PEER_ROOT=${RECLAIM_BENCH_PEER_ROOT:-/opt/peers}

# ---------------------------------------------------------------------------------------------
# Methods: name -> command template; each prints what it found on stdout (kept in logs/).
# ---------------------------------------------------------------------------------------------

declare -A METHOD_CMD=() METHOD_NEEDS=()
METHOD_ORDER=()
def_method() { # name cmd [binary it needs]
    local name=$1 cmd=$2
    [[ $name =~ ^[A-Za-z0-9_.+-]+$ ]] || die "bad method name '$name'"
    [[ $cmd == *'{dir}'* ]] || die "method '$name' does not mention {dir}: $cmd"
    [[ -n ${METHOD_CMD[$name]+x} ]] || METHOD_ORDER+=("$name")
    METHOD_CMD[$name]=$cmd
    METHOD_NEEDS[$name]=${3:-}
}
def_method du      'du -s -x --block-size=1 {dir}' du
def_method reclaim '{reclaim} scan --no-estimate --json {dir}'
def_method dua     '{dua} -x --format bytes aggregate {dir}' dua
def_method gdu     'gdu -n -p -s -x --no-prefix {dir}' gdu
def_method ncdu    'ncdu -x -0 -o /dev/null {dir}' ncdu
for l in "${CLI_METHODS[@]}"; do
    [[ $l == *=* ]] || die "--method wants NAME=CMD: $l"
    def_method "${l%%=*}" "${l#*=}"
done
select_methods

# ---------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------

DUA=""
ensure_tools() {
    local -A pkg_of=([mkfs.ext4]=e2fsprogs [losetup]=mount [du]=coreutils [python3]=python3)
    local m want=() c
    for m in "${METHODS[@]}"; do
        case ${METHOD_NEEDS[$m]} in gdu | ncdu) command -v "${METHOD_NEEDS[$m]}" >/dev/null || want+=("${METHOD_NEEDS[$m]}") ;; esac
    done
    for c in "${!pkg_of[@]}"; do command -v "$c" >/dev/null 2>&1 || want+=("${pkg_of[$c]}"); done
    if [[ ${#want[@]} -gt 0 && $NO_INSTALL == 0 ]] && command -v apt-get >/dev/null; then
        log "installing ${want[*]} (apt-get)"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$OUT/logs/install.log" 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${want[@]}" >>"$OUT/logs/install.log" 2>&1 ||
            warn "apt-get install ${want[*]} failed (see logs/install.log)"
    fi
    for c in mkfs.ext4 losetup du python3; do command -v "$c" >/dev/null || die "missing $c"; done
    for m in "${METHODS[@]}"; do
        [[ ${METHOD_CMD[$m]} != *'{dua}'* || -n $DUA ]] || find_dua
    done
    drop_methods_without_tools
}


# ---------------------------------------------------------------------------------------------
# Scratch directory and safety guards
# ---------------------------------------------------------------------------------------------

SCRATCH="" LOOP="" MNT=""


make_scratch() {
    new_scratch reclaim-scanbench
    mkdir "$SCRATCH/mnt"
    MNT=$SCRATCH/mnt
    log "scratch dir: $SCRATCH ($(findmnt -no SOURCE,FSTYPE -T "$SCRATCH" | tr -s ' '))"
}

exec {STDERR_FD}>&2
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    exec 2>&"$STDERR_FD"
    cd /
    if [[ -n $SCRATCH ]]; then
        release_scratch scan.sh
    fi
    [[ $rc == 0 ]] || echo "scan.sh: exiting with status $rc (results so far in ${OUT:-?})" >&2
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
# The image
# ---------------------------------------------------------------------------------------------

round4k() { echo $(((($1) + 4095) / 4096 * 4096)); }
IMG_BYTES=$((FILES * 16384 + FILES * 2 * $(round4k "$SIZE")))
((IMG_BYTES >= 4 << 30)) || IMG_BYTES=$((4 << 30))
IMG_BYTES=$(((IMG_BYTES + (1 << 20) - 1) >> 20 << 20))
EXT4_INODES=$((FILES * 5 / 2))
((EXT4_INODES >= 65536)) || EXT4_INODES=65536
MKFS_EXT4="mkfs.ext4 -q -F -N $EXT4_INODES -E lazy_itable_init=0,lazy_journal_init=0"
SPEC="--shape tree --files $FILES --fanout $FANOUT --per-leaf $PER_LEAF --size $SIZE"

secs_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }

CACHES=cold

build_image() {
    local img=$SCRATCH/scan.img t
    guard "$img"
    t=$EPOCHREALTIME
    truncate -s "$IMG_BYTES" "$img"
    $MKFS_EXT4 "$img" >>"$OUT/logs/mkfs.log" 2>&1 || die "mkfs.ext4 failed (logs/mkfs.log)"
    LOOP=$(losetup --direct-io=on -f --show -- "$img")
    mount -t ext4 -- "$LOOP" "$MNT"
    # shellcheck disable=SC2086
    "$MKWORKLOAD" $SPEC "$MNT/w" 2>>"$OUT/logs/mkworkload.log" || die "mkworkload failed"
    {
        echo "== ext4: $(findmnt -no SOURCE,FSTYPE,OPTIONS "$MNT")"
        echo "loop: $(losetup -n -l -O NAME,DIO,LOG-SEC,BACK-FILE "$LOOP")"
        df -h "$MNT" | tail -1
        df -i "$MNT" | tail -1
        dumpe2fs -h "$LOOP" 2>/dev/null | grep -E '^(Filesystem features|Inode count|Block size|Inode size|Journal size|Flex block group size):'
    } >>"$OUT/fs-details.txt" 2>&1
    umount_retry "$MNT"
    # Read-only and noatime: no run writes anything the next one would read.
    mount -t ext4 -o ro,noatime -- "$LOOP" "$MNT"
    log "image: $FILES files built in $(secs_since "$t")s; mounted $(findmnt -no OPTIONS "$MNT")"
}

# ---------------------------------------------------------------------------------------------
# One measured run
# ---------------------------------------------------------------------------------------------

q() { printf '%q' "$1"; }
expand() {
    local c=$1
    c=${c//\{dir\}/$(q "$2")}
    c=${c//\{reclaim\}/$(q "$RECLAIM")}
    c=${c//\{dua\}/$(q "${DUA:-dua}")}
    c=${c//\{nproc\}/$NPROC}
    printf '%s' "$c"
}

timed() { # cmd stdout-file -> T_WALL T_USER T_SYS T_RC
    local TIMEFORMAT='%3R %3U %3S' tf=$SCRATCH/time.out
    T_RC=0
    { time bash -c "$1" >"$2" 2>"$2.err"; } 2>"$tf" || T_RC=$?
    read -r T_WALL T_USER T_SYS <"$tf"
}

CSV=$OUT/raw.csv
STEP=0 TOTAL=0
measure() { # method run
    local m=$1 r=$2 cmd lf ok=1 note=""
    cmd=$(expand "${METHOD_CMD[$m]}" "$MNT/w")
    lf=$OUT/logs/$m-$r.out
    drop_caches
    timed "$cmd" "$lf"
    [[ $T_RC == 0 ]] || { ok=0; note="exit $T_RC"; }
    [[ -s $lf.err ]] || rm -f -- "$lf.err"
    echo "ext4,$FILES,$m,$r,$T_WALL,$T_USER,$T_SYS,$ok,$CACHES" >>"$CSV"
    STEP=$((STEP + 1))
    log "[$STEP/$TOTAL] run $r $m: wall ${T_WALL}s user ${T_USER}s sys ${T_SYS}s (load $(load1))$([[ $ok == 1 ]] && echo " ok" || echo " FAILED: $note")"
}

# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

log "reclaim scan benchmark: files=$FILES runs=$RUNS methods='${METHODS[*]}' out=$OUT"
warn_if_busy
ensure_tools
build_reclaim_and_mkworkload
make_scratch
build_image

{
    machine_meta
    printf 'command\t%s\n' "bash bench/scan.sh ${ORIG_ARGS[*]}"
    printf 'files\t%s\n' "$FILES"
    printf 'runs\t%s\n' "$RUNS"
    printf 'workload\tmkworkload %s\n' "$SPEC"
    printf 'image\t%s GiB sparse, %s; losetup --direct-io=on; mount -o ro,noatime\n' "$((IMG_BYTES >> 30))" "$MKFS_EXT4"
    printf 'versions\t%s; %s; %s; %s\n' "$(du --version | head -1)" "$({ "${DUA:-false}" --version 2>/dev/null || echo 'dua -'; } | head -1)" \
        "gdu $({ gdu --version 2>/dev/null || echo '-'; } | head -1 | awk '{ print $NF }')" "$({ ncdu -v 2>/dev/null || echo 'ncdu -'; } | head -1)"
} >"$OUT/meta.tsv"
for m in "${METHODS[@]}"; do printf '%s\t%s\n' "$m" "${METHOD_CMD[$m]}"; done >"$OUT/methods.tsv"
echo "fs,files,method,run,wall_s,user_s,sys_s,ok,caches" >"$CSV"

TOTAL=$((RUNS * ${#METHODS[@]}))
n=${#METHODS[@]}
for ((r = 1; r <= RUNS; r++)); do
    # Rotate the order every run so no method always goes first.
    for ((i = 0; i < n; i++)); do measure "${METHODS[$(((i + r - 1) % n))]}" "$r"; done
done

# What each tool found (from the last run's output), to check they measured the same tree.
{
    [[ -f $OUT/logs/du-$RUNS.out ]] && printf 'du\tallocated_bytes\t%s\n' "$(cut -f1 "$OUT/logs/du-$RUNS.out")"
    if [[ -f $OUT/logs/reclaim-$RUNS.out ]]; then
        python3 - "$OUT/logs/reclaim-$RUNS.out" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for k in ("files", "dirs", "allocated_bytes", "apparent_bytes"):
    print(f"reclaim\t{k}\t{v[k]}")
PY
    fi
} >"$OUT/found.tsv" || true

ESTIMATE_LINE=""
if [[ $CHECK_ESTIMATE == 1 ]]; then
    log "estimate check: remount read-write, reclaim scan (with estimate), then reclaim rm -r"
    mount -o remount,rw -- "$MNT"
    guard "$MNT/w"
    drop_caches
    "$RECLAIM" scan --estimate --json "$MNT/w" >"$OUT/logs/estimate-scan.json" 2>"$OUT/logs/estimate-scan.err" || true
    est=$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["estimate"]; print("%.2f" % e["seconds"] if e and e["seconds"] is not None else "")' "$OUT/logs/estimate-scan.json" || true)
    # Warm cache, as the estimate assumes: the scan just read every inode.
    t=$EPOCHREALTIME
    "$RECLAIM" rm -r "$MNT/w" 2>"$OUT/logs/estimate-rm.err" || warn "reclaim rm -r failed (logs/estimate-rm.err)"
    sync -f -- "$MNT"
    real=$(secs_since "$t")
    printf 'estimate_s\t%s\nrm_warm_s\t%s\n' "${est:-none}" "$real" >>"$OUT/meta.tsv"
    ESTIMATE_LINE="estimated ${est:-none} s, real reclaim rm -r (warm, + sync) ${real} s"
    log "estimate check: $ESTIMATE_LINE"
fi
printf 'load_end\t%s\n' "$(load1)" >>"$OUT/meta.tsv"

python3 - "$OUT" <<'PY'
import csv, statistics, sys
from collections import defaultdict
out = sys.argv[1]
meta = dict(l.rstrip("\n").split("\t", 1) for l in open(f"{out}/meta.tsv") if "\t" in l)
methods = [l.rstrip("\n").split("\t", 1) for l in open(f"{out}/methods.tsv")]
rows = list(csv.DictReader(open(f"{out}/raw.csv")))
wall = defaultdict(dict)
cpu = defaultdict(dict)
for r in rows:
    if r["ok"] == "1":
        wall[r["method"]][r["run"]] = float(r["wall_s"])
        cpu[r["method"]][r["run"]] = float(r["user_s"]) + float(r["sys_s"])
lines = [f"# reclaim scan benchmark, {meta.get('date', '?')}", ""]
lines.append(f"{int(meta['files']):,} empty files ({meta['workload']}), journaled ext4 loop image, "
             f"{meta.get('cpus', '?')} CPUs ({meta.get('cpu_model', '?')}), {meta.get('memory', '?')}, "
             f"kernel {meta.get('kernel', '?')}; caches {rows[0]['caches'] if rows else '?'} (drop_caches before every run); "
             f"medians of {meta['runs']} runs; ratio = median over runs of (method ÷ du in the same run).")
lines.append("")
lines.append("| method | wall s (median) | min | max | CPU s (median) | ÷ du |")
lines.append("|---|---:|---:|---:|---:|---:|")
for name, _cmd in methods:
    w = wall.get(name)
    if not w:
        lines.append(f"| {name} | failed | | | | |")
        continue
    ratios = [w[r] / wall["du"][r] for r in w if r in wall.get("du", {}) and wall["du"][r] > 0]
    ratio = f"{statistics.median(ratios):.2f}×" if ratios else "-"
    lines.append(f"| {name} | {statistics.median(w.values()):.2f} | {min(w.values()):.2f} | "
                 f"{max(w.values()):.2f} | {statistics.median(cpu[name].values()):.2f} | {ratio} |")
lines.append("")
try:
    found = [l.rstrip("\n").split("\t") for l in open(f"{out}/found.tsv")]
    if found:
        lines.append("What they found (last run): " + ", ".join(f"{a} {k} {int(v):,}" for a, k, v in found))
        lines.append("")
except (OSError, ValueError):
    pass
if "estimate_s" in meta:
    lines.append(f"Removal estimate check: `reclaim scan` estimated {meta['estimate_s']} s, "
                 f"`reclaim rm -r` right after it (warm cache, + sync) took {meta['rm_warm_s']} s.")
    lines.append("")
lines.append("Commands:")
lines.append("")
for name, cmd in methods:
    lines.append(f"- `{name}`: `{cmd}`")
lines.append("")
lines.append(f"Load average {meta.get('load_start', '?')} at start, {meta.get('load_end', '?')} at the end; "
             f"git {meta.get('git', '?')}; {meta.get('versions', '')}.")
text = "\n".join(lines) + "\n"
open(f"{out}/summary.md", "w").write(text)
print(text)
PY
log "results in $OUT (raw.csv, summary.md, meta.tsv, logs/)"
