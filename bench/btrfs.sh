#!/usr/bin/env bash
# btrfs (issue 25): (1) a subvolume of N files: time to leave the namespace and time until the
# space is back, `reclaim rm -r` vs `btrfs subvolume delete` vs `rm -rf`; (2) a plain tree of N
# empty files on btrfs, `reclaim rm -r` vs `rm -rf`. Every run on a fresh copy of one golden
# image (loop-mounted, cold cache: drop_caches before each), methods alternating run by run.
# Root only; works only inside its own scratch directory, unmounts what it mounted.
#
#   sudo bash bench/btrfs.sh [--files N] [--runs R] [--size BYTES] [--parts "subvolume plain"]
#                            [--space-timeout S] [--no-build] [--out DIR]
#
# "Space back": from the start of the command until `statvfs` (what df shows) counts 98% of
# the files' data (FILES x SIZE) as free again, polled every 20 ms, nothing else done meanwhile
# (no sync: what a user would see). Not "the free space of the image before the files": the
# metadata chunks btrfs allocated for 1,000,000 files stay allocated once emptied, so that
# never came back (2026-11-26); `free_short_mib` says how far it stays. Output: CSV, summary.
set -euo pipefail
cd "$(dirname "$0")/.."

FILES=200000
RUNS=3
SIZE=4096
OUT=""
PARTS="subvolume plain"
SPACE_TIMEOUT=180
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --files) FILES=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --parts) PARTS=$2; shift 2 ;;
    --space-timeout) SPACE_TIMEOUT=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    *) echo "usage: $0 [--files N] [--runs R] [--size BYTES] [--parts \"subvolume plain\"] [--space-timeout S] [--no-build] [--out DIR]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "btrfs.sh: needs root (loop mounts, drop_caches)" >&2; exit 2; }
command -v mkfs.btrfs >/dev/null || apt-get install -y -qq btrfs-progs
[ "$BUILD" = 1 ] && cargo build --release --bin reclaim -q
has_part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
BIN=$PWD/target/release/reclaim
OUT=${OUT:-bench/out/btrfs-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
SCRATCH=$(mktemp -d /var/tmp/reclaim-bench-btrfs.XXXXXX)
MNT=$SCRATCH/mnt
mkdir "$MNT"
cleanup() {
  mountpoint -q "$MNT" && umount "$MNT" || true
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

# The golden image: one subvolume `sv` of FILES files of SIZE bytes (100 per directory) and a
# plain directory `plain` of FILES empty files (100 per directory); only the parts asked for.
GOLD=$SCRATCH/gold.img
truncate -s $(( (FILES * (SIZE + 4096)) * 2 + (2 << 30) )) "$GOLD"
mkfs.btrfs -q -f "$GOLD"
mount -o loop "$GOLD" "$MNT"
btrfs subvolume create "$MNT/sv" >/dev/null
sync; sleep 1
FREE_EMPTY=$(stat -f -c '%a*%S' "$MNT" | bc)
python3 - "$MNT" "$FILES" "$SIZE" "$PARTS" <<'EOF'
import os, sys
root, n, size, parts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
data = os.urandom(size)
tops = [(t, sz) for t, sz in (("sv", size), ("plain", 0)) if {"sv": "subvolume"}.get(t, t) in parts]
for top, sz in tops:
    for i in range(n):
        d = f"{root}/{top}/d{i // 100 // 100}/e{i // 100}"
        if i % 100 == 0:
            os.makedirs(d, exist_ok=True)
        fd = os.open(f"{d}/f{i}", os.O_WRONLY | os.O_CREAT, 0o644)
        if sz:
            os.write(fd, data)
        os.close(fd)
EOF
sync
FREE_FULL=$(stat -f -c '%a*%S' "$MNT" | bc)
umount "$MNT"
echo "golden ($PARTS): $FILES files; free empty $FREE_EMPTY, full $FREE_FULL" | tee "$OUT/summary.txt"

fresh() {
  cp --sparse=always "$GOLD" "$SCRATCH/run.img"
  mount -o loop "$SCRATCH/run.img" "$MNT"
  sync; echo 3 > /proc/sys/vm/drop_caches
}
done_run() { umount "$MNT"; rm -f "$SCRATCH/run.img"; }

now() { date +%s.%N; }
# Seconds from $1 until the free space is back (or "timeout" after SPACE_TIMEOUT s).
space_back() {
  local start=$1 want
  want=$(echo "$FREE_FULL + $FILES * $SIZE * 98 / 100" | bc)
  local deadline
  deadline=$(echo "$start + $SPACE_TIMEOUT" | bc)
  while :; do
    local free t
    free=$(stat -f -c '%a*%S' "$MNT" | bc)
    t=$(now)
    if [ "$(echo "$free >= $want" | bc)" = 1 ]; then echo "$t - $start" | bc; return; fi
    if [ "$(echo "$t > $deadline" | bc)" = 1 ]; then echo timeout; return; fi
    sleep 0.02
  done
}

echo "part,method,run,namespace_s,space_s,free_short_mib" > "$OUT/raw.csv"
for run in $(seq 1 "$RUNS"); do
  # Rotate the order each run (alternating, so drift and neighbours hit every method).
  methods=(reclaim subvolume-delete rm-rf)
  for k in $(seq 1 $(( (run - 1) % 3 ))); do methods=("${methods[@]:1}" "${methods[0]}"); done
  has_part subvolume || methods=()
  for m in "${methods[@]}"; do
    fresh
    start=$(now)
    case $m in
      reclaim) "$BIN" rm -r "$MNT/sv" ;;
      subvolume-delete) btrfs subvolume delete "$MNT/sv" >/dev/null ;;
      rm-rf) rm -rf "$MNT/sv" ;;
    esac
    ns=$(echo "$(now) - $start" | bc)
    sp=$(space_back "$start")
    # What statvfs still misses then (metadata chunks that stay allocated), MiB.
    short=$(( (FREE_EMPTY - $(stat -f -c '%a*%S' "$MNT" | bc)) >> 20 ))
    echo "subvolume,$m,$run,$ns,$sp,$short" | tee -a "$OUT/raw.csv"
    done_run
  done
  methods=(reclaim rm-rf)
  [ $((run % 2)) = 0 ] && methods=(rm-rf reclaim)
  has_part plain || methods=()
  for m in "${methods[@]}"; do
    fresh
    start=$(now)
    case $m in
      reclaim) "$BIN" rm -r "$MNT/plain" ;;
      rm-rf) rm -rf "$MNT/plain" ;;
    esac
    ns=$(echo "$(now) - $start" | bc)
    echo "plain,$m,$run,$ns,," | tee -a "$OUT/raw.csv"
    done_run
  done
done

python3 - "$OUT/raw.csv" <<'EOF' | tee -a "$OUT/summary.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(xs):
    xs = [float(x) for x in xs if x not in ("", "timeout")]
    return statistics.median(xs) if xs else float("nan")
for part in ("subvolume", "plain"):
    print(f"\n{part}: median of runs (all runs)")
    base = None
    for m in ("reclaim", "subvolume-delete", "rm-rf"):
        r = [x for x in rows if x["part"] == part and x["method"] == m]
        if not r:
            continue
        ns = med(x["namespace_s"] for x in r)
        sp = med(x["space_s"] for x in r)
        print(f"  {m:17} namespace {ns:8.3f} s ({', '.join(x['namespace_s'][:6] for x in r)})"
              + (f"   space back {sp:8.3f} s ({', '.join(x['space_s'][:6] for x in r)})" if part == "subvolume" else ""))
EOF
echo "kernel $(uname -r), $(date -u +%FT%TZ), files $FILES, size $SIZE, runs $RUNS" | tee -a "$OUT/summary.txt"
