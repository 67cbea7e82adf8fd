#!/usr/bin/env bash
# Hostile soak (issue 11): runs the ignored test `hostile_soak` (tests/tests/soak.rs) in release
# mode, longer than CI does, once per file system, and collects its `SOAK {json}` lines into a
# markdown table. Run as root:
#
#   sudo bash bench/soak.sh                        # 300 s, >= 5000 actions, tmpfs then ext4
#   sudo bash bench/soak.sh --secs 120 --fs tmpfs  # shorter, one file system
#
# See bench/README.md ("Hostile soak") for what the soak does and what each number means.
#
# Safety: the test does everything itself, inside its own scratch directory (a tempdir with a
# marker file) and volumes it mounts inside it (a tmpfs, an ext4 loop image), with guards that
# end every process it started (by pid) and unmount before the scratch directory is removed,
# also when it fails. Its reclaim runs are limited to those volumes (RECLAIM_UNDER) and use no
# config file. This script only builds, runs `cargo test` and writes bench/out/soak-<time>/
# (git-ignored).

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<'EOF'
usage: bench/soak.sh [options]

  --secs N          soak duration per run (default 300)
  --min-actions N   at least this many attacker actions per run (default 5000)
  --fs "..."        file systems, among tmpfs ext4 (default "tmpfs ext4"), one run each
  --seed N          seed for every run (default: a new random one per run, printed)
  --skip-kinds K    attacker actions to leave out (SOAK_SKIP_KINDS: kinds or prefixes, commas)
  --decoys N        the decoy flood: N empty trashes of the attacker's own (default 30000)
  --victim-decoys N and N names squatting the victim's trash (default 10000)
  --out DIR         output directory (default bench/out/soak-<date>-<time>)
  --no-build        do not build (use the release test binary as it is)
  -h, --help        this help
EOF
}

SECS=300
MIN_ACTIONS=5000
FSES="tmpfs ext4"
SEED=
SKIP_KINDS=
DECOYS=30000
VICTIM_DECOYS=10000
OUT=
BUILD=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --secs) SECS=$2; shift 2 ;;
        --min-actions) MIN_ACTIONS=$2; shift 2 ;;
        --fs) FSES=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        --skip-kinds) SKIP_KINDS=$2; shift 2 ;;
        --decoys) DECOYS=$2; shift 2 ;;
        --victim-decoys) VICTIM_DECOYS=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
STAMP=$(date +%Y%m%d-%H%M%S)
OUT=${OUT:-bench/out/soak-$STAMP}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
PROGRESS_LOG=$OUT/progress.log
: >"$PROGRESS_LOG"

[[ $EUID -eq 0 ]] || die "run as root (the soak mounts volumes and runs commands as other uids)"
for f in $FSES; do
    [[ $f == tmpfs || $f == ext4 ]] || die "unknown file system '$f' (tmpfs or ext4)"
done
for tool in setpriv python3 mount; do
    command -v "$tool" >/dev/null || die "missing $tool"
done
[[ $FSES != *ext4* ]] || command -v mkfs.ext4 >/dev/null || die "missing mkfs.ext4"

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "kernel: $(uname -r)"
    echo "cpus: $(nproc)"
    echo "load1 at start: $(load1)"
    echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
    echo "command: bash bench/soak.sh $*"
    echo "secs: $SECS, min actions: $MIN_ACTIONS, fs: $FSES, seed: ${SEED:-random}, skip kinds: ${SKIP_KINDS:-none}, decoys: $DECOYS + $VICTIM_DECOYS"
} >"$OUT/meta.txt"

if [[ $BUILD == 1 ]]; then
    log "building the release test binary (cargo test --release --test tests --no-run)"
    cargo test --release --test tests --no-run >"$OUT/logs/build.log" 2>&1 ||
        die "build failed: see $OUT/logs/build.log"
fi

: >"$OUT/soak-lines.txt"
for fs in $FSES; do
    log "soak on $fs: ${SECS} s, >= $MIN_ACTIONS actions (load $(load1))"
    mkdir -p "$OUT/$fs"
    set +e
    env SOAK_FS="$fs" SOAK_SECS="$SECS" SOAK_MIN_ACTIONS="$MIN_ACTIONS" \
        SOAK_DECOYS="$DECOYS" SOAK_VICTIM_DECOYS="$VICTIM_DECOYS" \
        ${SEED:+SOAK_SEED="$SEED"} ${SKIP_KINDS:+SOAK_SKIP_KINDS="$SKIP_KINDS"} \
        SOAK_KEEP_LOGS="$OUT/$fs" \
        cargo test --release --test tests soak::hostile_soak -- --include-ignored --exact \
        --nocapture --test-threads=1 >"$OUT/$fs/test.log" 2>&1
    rc=$?
    set -e
    line=$(grep -a '^SOAK ' "$OUT/$fs/test.log" | tail -1 || true)
    if [[ -z $line ]]; then
        warn "soak on $fs printed no SOAK line (exit $rc): see $OUT/$fs/test.log"
        continue
    fi
    echo "${line#SOAK }" >>"$OUT/soak-lines.txt"
    failures=$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])["failures"]))' "${line#SOAK }")
    log "soak on $fs done: exit $rc, $failures failure(s)"
done
echo "load1 at end: $(load1)" >>"$OUT/meta.txt"

python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
import json, re, sys
out = sys.argv[1]
runs = [json.loads(l) for l in open(out + "/soak-lines.txt") if l.strip()]
meta = open(out + "/meta.txt").read().strip().splitlines()
print("# Hostile soak\n")
for m in meta:
    print("- " + m)
print()
if not runs:
    print("No run printed a SOAK line.")
    sys.exit(0)

def f(x, unit=" s"):
    return "–" if x is None else ("%.3f%s" % (x, unit))

print("| fs | seed | soak s | actions (ok) | victim hides / restored / expired / freed / left | free latency p50 / max | passes | pass max / p99 | max gap | idle after | hung children | status calls, max | root reap calls, max | failures |")
print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in runs:
    v, w, s, rr = r["victim"], r["watch"], r["status"], r.get("root_reap", {})
    print("| %s | %d | %.0f | %d (%d) | %d / %d / %d / %d / %d | %s / %s | %d | %s / %s | %s | %s | %d | %d, %s | %d, %s | %d |" % (
        r["fs"], r["seed"], r["duration_s"], r["actions"]["total"], r["actions"]["ok"],
        v["hides"], v["restored"], v["expired"], v["freed"], v["entries_left"],
        f(v["p50_free_latency_s"]), f(v["max_free_latency_s"]), w["passes"],
        f(w["max_pass_s"]), f(w["p99_pass_s"]), f(w["max_gap_s"]), f(w["idle_after_s"]),
        w["hung_children"], s["calls"], f(s["max_latency_s"]), rr.get("calls", 0),
        f(rr.get("max_latency_s")), len(r["failures"])))
print()

# The decoy flood (issue 20): root's passes, status and one-shot reaps before and after it, and
# the watch's threads, fds and children at their peak; the careless root.
def ba(x):
    if not x or not x.get("n"):
        return "–"
    return "%.3f / %.3f (%d)" % (x["p50"], x["max"], x["n"])
print("| fs | decoys (made in) | watch look p50 / max (n): before | after | status: before | after | root reap --once: before | after | watch peak threads / fds / children | careless root calls, max |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in runs:
    d, c = r.get("decoys", {}), r.get("careless_root", {})
    if not d:
        continue
    pk = d["watch_peak"]
    print("| %s | %d (%s) | %s | %s | %s | %s | %s | %s | %d / %d / %d | %d, %s |" % (
        r["fs"], d["count"], f(d.get("made_in_s")),
        ba(d["watch_pass_s"]["before"]), ba(d["watch_pass_s"]["after"]),
        ba(d["status_s"]["before"]), ba(d["status_s"]["after"]),
        ba(d["root_reap_s"]["before"]), ba(d["root_reap_s"]["after"]),
        pk["threads"], pk["fds"], pk["children"], c.get("calls", 0), f(c.get("max_latency_s"))))
print()

# Actions by family (the part of the kind before the first ':'), then every kind.
fams = {}
for r in runs:
    for k, n in r["actions"]["by_kind"].items():
        fams.setdefault(k.split(":")[0], {}).setdefault(r["fs"], 0)
        fams[k.split(":")[0]][r["fs"]] += n
names = [r["fs"] for r in runs]
print("| action family | " + " | ".join(names) + " |")
print("|---|" + "---:|" * len(names))
for fam in sorted(fams):
    print("| %s | %s |" % (fam, " | ".join(str(fams[fam].get(n, 0)) for n in names)))
print()
kinds = sorted({k for r in runs for k in r["actions"]["by_kind"]})
print("<details><summary>every kind</summary>\n")
print("| kind | " + " | ".join(names) + " |")
print("|---|" + "---:|" * len(names))
for k in kinds:
    print("| `%s` | %s |" % (k, " | ".join(str(r["actions"]["by_kind"].get(k, 0)) for r in runs)))
print("\n</details>\n")
# Failures, alike ones (same text but for numbers, ids and scratch paths) once, counted.
def shape(x):
    x = re.sub(r"/tmp/reclaim-test-[^/ ]+", "…", x)
    return re.sub(r"[0-9a-f]{8,}|\d+", "N", x)[:120]
for r in runs:
    if r["failures"]:
        print("Failures on %s (seed %d):\n" % (r["fs"], r["seed"]))
        groups = {}
        for x in r["failures"]:
            groups.setdefault(shape(x), []).append(x)
        for xs in groups.values():
            n = len(xs)
            print("- %s%s" % (xs[0][:400].replace("\n", " "), " (×%d)" % n if n > 1 else ""))
        print()
PY
log "done: $OUT/summary.md"
