#!/usr/bin/env bash
# Removal on a network file system (issues 12 and 24): `reclaim rm -r` (its default, which
# measures how many requests to keep in flight, and a `--threads` sweep) against `rm -rf`,
# `find -delete` and `find | xargs -P16 rm`, on the NFS emulator `netfs` (bench/slowdisk: a
# FUSE file system that waits a round trip per RPC, keeps at most --slots operations in flight
# per mount like a Linux client's slot table, and rejects rename flags). Every cell of
#
#   mount type   fuse.nfs (recognised by name), plain fuse, fuse.acmefs (a name nobody lists)
#   RTT          0.2, 0.5, 2 ms
#   slots        16, 4 per client
#   workload     a tree of 20,000 files, one directory of 5,000
#
# is measured in the same run. The peers do not look at the mount's type, so they run once
# per (RTT, slots, workload), on the first type; reclaim's default and sweep run on every type.
# Run as root:
#
#   bash bench/net.sh --quick     # RTT 0.5 ms, 16 slots, fuse.nfs and fuse, 1 run
#   bash bench/net.sh             # the whole matrix, 3 runs (about 1.5 h on 2 vCPUs)
#
# Each workload is made in the backing directory (no round trips), then the page, dentry and
# attribute caches are dropped, so every run starts cold on the client side. Methods rotate
# order from run to run.
#
# Safety: everything lives in a scratch directory made with mktemp and marked with a random
# token; every removal targets a path strictly inside it; the daemon is stopped and the mount
# undone in an EXIT/INT/TERM trap. In the repository only bench/out/ is written.

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<'EOF'
usage: bench/net.sh [options]

  --quick               RTT 0.5 ms, 16 slots, types "nfs plain", 1 run
  --rtts "..."          round-trip times (default "0.2ms 0.5ms 2ms")
  --slots "..."         netfs slots per mount (default "16 4")
  --types "..."         mount types among: nfs (fuse.nfs) plain (fuse) unknown (fuse.acmefs)
                        (default "nfs plain unknown")
  --files N             files in the tree (default 20000)
  --flat N              files in the one-directory workload (default 5000; 0 skips it)
  --runs N              runs per method (default 3)
  --sweep "..."         --threads values to try (default "4 8 16 32 64")
  --methods "..."       methods to run, by name (default: all)
  --listing MODE        netfs --listing (stable, index, reorder; default stable)
  --attr-ttl T          netfs --attr-ttl: how long the client keeps names and attributes
                        (default 1s; 0: it keeps none, as NFS lookupcache=none)
  --scan                also `reclaim scan` against `du -s` on the tree
  --scratch-base DIR    where the mktemp scratch dir goes (default /var/tmp)
  --out DIR             output directory (default bench/out/net-<timestamp>)
  --no-build            do not run cargo build
  -h, --help            this help
EOF
}

RTTS="0.2ms 0.5ms 2ms" SLOTS_LIST="16 4" TYPES="nfs plain unknown" FILES=20000 FLAT=5000 RUNS=3
SWEEP="4 8 16 32 64" METHODS_SEL="" LISTING=stable SCAN=0 ATTR_TTL=1s
SCRATCH_BASE=${RECLAIM_BENCH_SCRATCH:-/var/tmp} OUT="" NO_BUILD=0 QUICK=0
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "net.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) QUICK=1 ;;
        --rtts) need_arg "$@"; RTTS=$2; shift ;;
        --slots) need_arg "$@"; SLOTS_LIST=$2; shift ;;
        --types) need_arg "$@"; TYPES=$2; shift ;;
        --files) need_arg "$@"; FILES=$2; shift ;;
        --flat) need_arg "$@"; FLAT=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --sweep) need_arg "$@"; SWEEP=$2; shift ;;
        --methods) need_arg "$@"; METHODS_SEL=$2; shift ;;
        --listing) need_arg "$@"; LISTING=$2; shift ;;
        --attr-ttl) need_arg "$@"; ATTR_TTL=$2; shift ;;
        --scan) SCAN=1 ;;
        --scratch-base) need_arg "$@"; SCRATCH_BASE=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --no-build) NO_BUILD=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "net.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [[ $QUICK == 1 ]]; then
    RTTS="0.5ms" SLOTS_LIST=16 TYPES="nfs plain" RUNS=1
fi
for t in $TYPES; do
    [[ $t =~ ^(nfs|plain|unknown)$ ]] || { echo "net.sh: unknown type $t" >&2; exit 2; }
done
[[ $EUID -eq 0 ]] || { echo "net.sh: must run as root (FUSE mount, drop_caches)" >&2; exit 1; }

bench_setup net
if [[ $NO_BUILD == 0 ]]; then
    cargo_release --bin reclaim --example mkworkload || die "cargo build failed (see $OUT/logs/build.log)"
    cargo_release -C "$REPO/bench/slowdisk" --bin netfs || die "netfs build failed (see $OUT/logs/build.log)"
fi
for b in "$RECLAIM" "$MKWORKLOAD" "$NETFS"; do [[ -x $b ]] || die "missing $b"; done

new_scratch reclaim-net
NETFS_PID=""
cleanup() { stop_netfs; release_scratch net.sh; }
trap cleanup EXIT
trap 'exit 130' INT TERM
# A tmpfs for the backing directory: the server's disk is not what is measured.
mkdir "$SCRATCH/back" "$SCRATCH/mnt"
mount -t tmpfs -o size=2g,nr_inodes=4m net-back "$SCRATCH/back"
MOUNTED+=("$SCRATCH/back")

subtype_of() { # type -> netfs --subtype value
    case $1 in
        nfs) echo nfs ;;
        plain) echo "" ;;
        unknown) echo acmefs ;;
    esac
}

start_netfs() { # rtt slots type
    rm -f "$SCRATCH/ready"
    "$NETFS" --backing "$SCRATCH/back" --mount "$SCRATCH/mnt" --rtt "$1" --slots "$2" \
        --readdirplus --attr-ttl "$ATTR_TTL" --subtype "$(subtype_of "$3")" --listing "$LISTING" \
        --stats "$SCRATCH/stats.json" --ready-file "$SCRATCH/ready" 2>>"$OUT/logs/netfs.log" &
    NETFS_PID=$!
    wait_for_file "$SCRATCH/ready" || die "netfs did not mount"
}

netfs_cpu() { # the daemon's CPU time so far (user + system, all threads), in clock ticks
    awk '{print $14 + $15}' "/proc/$NETFS_PID/stat"
}
TICKS=$(getconf CLK_TCK)

rpcs_now() { # the daemon's RPC count so far
    local before
    before=$(stat -c %.9Y "$SCRATCH/stats.json" 2>/dev/null || echo none)
    kill -USR1 "$NETFS_PID"
    local i
    for i in $(seq 1 100); do
        [[ $(stat -c %.9Y "$SCRATCH/stats.json" 2>/dev/null || echo none) != "$before" ]] && break
        sleep 0.02
    done
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rpcs"])' "$SCRATCH/stats.json"
}

# Methods: name -> command on {dir}. Peers first (they run on the first type only).
declare -A METHOD_CMD=()
METHOD_ORDER=()
def_method() { METHOD_CMD[$1]=$2; METHOD_ORDER+=("$1"); }
def_method rm-rf 'rm -rf {dir}'
def_method find-delete 'find {dir} -delete'
def_method xargs-P16 'find {dir} -type f -print0 | xargs -0 -r -P16 -n64 rm -f && find {dir} -depth -type d -delete'
def_method reclaim '{reclaim} rm -r --json {dir}'
for t in $SWEEP; do def_method "reclaim-t$t" "{reclaim} rm -r --threads $t {dir}"; done
select_methods
is_peer() { [[ $1 != reclaim* ]]; }

timed() { # cmd log -> seconds
    local cmd=$1 t0 t1
    t0=$(date +%s.%N)
    bash -c "$cmd" >"$2" 2>&1 || warn "failed: $cmd (see $2)"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}

# Per run and operation: what the daemon served between two stats dumps (a slow run's extra
# requests, by kind: lookups again, a relisting, ...).
op_counts() { # before.json after.json prefix
    python3 - "$@" <<'PY'
import json, sys
a, b = (json.load(open(p)).get("ops", {}) for p in sys.argv[1:3])
for op, v in sorted(b.items()):
    u = a.get(op, {})
    d = {k: v.get(k, 0) - u.get(k, 0) for k in ("count", "errors", "items", "queue_ms", "service_ms")}
    if d["count"]:
        print(f"{sys.argv[3]},{op},{d['count']},{d['errors']},{d['items']},{d['queue_ms']:.1f},{d['service_ms']:.1f},{int(bool(v.get('rpc')))}")
PY
}

FIRST_TYPE=${TYPES%% *}
echo "rtt,slots,type,workload,files,method,run,seconds,rpcs,netfs_cpu_s" >"$OUT/raw.csv"
echo "rtt,slots,type,workload,files,method,run,op,count,errors,items,queue_ms,service_ms,rpc" >"$OUT/ops.csv"
for run in $(seq 1 "$RUNS"); do
    for rtt in $RTTS; do
        for slots in $SLOTS_LIST; do
            for type in $TYPES; do
                start_netfs "$rtt" "$slots" "$type"
                for workload in tree flat; do
                    files=$FILES shape=tree
                    [[ $workload == flat ]] && files=$FLAT shape=flat
                    [[ $files -gt 0 ]] || continue
                    n=${#METHODS[@]}
                    for ((i = 0; i < n; i++)); do
                        # Rotate the order every run so no method always goes first.
                        m=${METHODS[$(((i + run - 1) % n))]}
                        if is_peer "$m" && [[ $type != "$FIRST_TYPE" ]]; then continue; fi
                        guard "$SCRATCH/back/w"
                        rm -rf --one-file-system "$SCRATCH/back/w"
                        "$MKWORKLOAD" --shape "$shape" --files "$files" "$SCRATCH/back/w" >/dev/null
                        drop_caches
                        cmd=${METHOD_CMD[$m]//\{dir\}/$SCRATCH/mnt/w}
                        cmd=${cmd//\{reclaim\}/RECLAIM_CONFIG= $RECLAIM}
                        lf=$OUT/logs/$rtt-$slots-$type-$workload-$m-$run.log
                        r0=$(rpcs_now)
                        cp "$SCRATCH/stats.json" "$SCRATCH/ops0.json"
                        c0=$(netfs_cpu)
                        s=$(timed "$cmd" "$lf")
                        c1=$(netfs_cpu)
                        r1=$(rpcs_now)
                        op_counts "$SCRATCH/ops0.json" "$SCRATCH/stats.json" \
                            "$rtt,$slots,$type,$workload,$files,$m,$run" >>"$OUT/ops.csv"
                        [[ -e $SCRATCH/back/w ]] && warn "$m left $SCRATCH/back/w behind"
                        [[ -s $lf ]] || rm -f "$lf"
                        log "run $run rtt $rtt slots $slots $type $workload $files $m: $s s, $((r1 - r0)) RPCs"
                        echo "$rtt,$slots,$type,$workload,$files,$m,$run,$s,$((r1 - r0)),$(echo "scale=2; ($c1 - $c0) / $TICKS" | bc)" >>"$OUT/raw.csv"
                    done
                done
                if [[ $SCAN == 1 && $type == "$FIRST_TYPE" ]]; then
                    # scan against du -s, on the tree (made once, read by both).
                    rm -rf --one-file-system "$SCRATCH/back/w"
                    "$MKWORKLOAD" --shape tree --files "$FILES" "$SCRATCH/back/w" >/dev/null
                    for m in du reclaim-scan; do
                        drop_caches
                        case $m in
                            du) cmd="du -s $SCRATCH/mnt/w" ;;
                            reclaim-scan) cmd="RECLAIM_CONFIG= $RECLAIM scan --no-estimate $SCRATCH/mnt/w" ;;
                        esac
                        s=$(timed "$cmd" /dev/null)
                        log "run $run rtt $rtt slots $slots scan $m: $s s"
                        echo "$rtt,$slots,$type,scan,$FILES,$m,$run,$s,," >>"$OUT/raw.csv"
                    done
                fi
                stop_netfs
            done
        done
    done
done

python3 - "$OUT/raw.csv" "$OUT/logs" "$OUT/ops.csv" "$ATTR_TTL" >"$OUT/summary.md" <<'EOF'
import csv, collections, glob, json, os, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"netfs --attr-ttl {sys.argv[4]} (how long the client keeps names and attributes)\n")
by = collections.defaultdict(list)
for r in rows:
    by[(r["rtt"], r["slots"], r["workload"], r["type"], r["method"])].append(float(r["seconds"]))
med = {k: statistics.median(v) for k, v in by.items()}
cells = sorted({(r["rtt"], r["slots"], r["workload"]) for r in rows if r["workload"] != "scan"},
               key=lambda c: (float(c[0][:-2]), -int(c[1]), c[2]))
types = []
for r in rows:
    if r["type"] not in types:
        types.append(r["type"])
label = {"nfs": "fuse.nfs", "plain": "fuse", "unknown": "fuse.acmefs"}
print("| RTT | slots | workload | type | default s | best --threads s (N) | default ÷ best | rm -rf s | find -delete s | xargs -P16 s | default ÷ rm -rf | ÷ find -delete | ÷ xargs |")
print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
worst = 0.0
for rtt, slots, w in cells:
    peers = {}
    for p in ("rm-rf", "find-delete", "xargs-P16"):
        vals = [v for (a, b, c, t, m), v in med.items() if (a, b, c, m) == (rtt, slots, w, p)]
        peers[p] = vals[0] if vals else None
    for t in types:
        d = med.get((rtt, slots, w, t, "reclaim"))
        sweep = {m: v for (a, b, c, tt, m), v in med.items()
                 if (a, b, c, tt) == (rtt, slots, w, t) and m.startswith("reclaim-t")}
        if d is None:
            continue
        best = min(sweep.items(), key=lambda kv: kv[1]) if sweep else None
        ratio = d / best[1] if best else float("nan")
        if best:
            worst = max(worst, ratio)
        f = lambda v: f"{v:.2f}" if v else "-"
        r = lambda p: f"{d / peers[p]:.2f}" if peers[p] else "-"
        print(f"| {rtt} | {slots} | {w} | {label.get(t, t)} | {d:.2f} | "
              + (f"{best[1]:.2f} ({best[0][len('reclaim-t'):]})" if best else "-")
              + f" | {ratio:.2f} | {f(peers['rm-rf'])} | {f(peers['find-delete'])} | {f(peers['xargs-P16'])} | "
              + f"{r('rm-rf')} | {r('find-delete')} | {r('xargs-P16')} |")
print(f"\nworst default ÷ best --threads: {worst:.2f}")
# Slow runs: the same work (the same requests) costing the emulator more CPU says the host was
# slower then (another guest on the same cores), not the method.
cpu = collections.defaultdict(list)
for r in rows:
    if r.get("netfs_cpu_s") and r["rpcs"]:
        cpu[(r["rtt"], r["slots"], r["workload"])].append(float(r["netfs_cpu_s"]) / int(r["rpcs"]))
slow = [r for r in rows if r["workload"] != "scan"
        and float(r["seconds"]) > 1.4 * med[(r["rtt"], r["slots"], r["workload"], r["type"], r["method"])]]
if slow:
    print("\nRuns over 1.4x their cell's median (emulator CPU per request against the cell's median):")
    for r in slow:
        c = cpu.get((r["rtt"], r["slots"], r["workload"]))
        per = float(r["netfs_cpu_s"]) / int(r["rpcs"]) if r.get("netfs_cpu_s") and r["rpcs"] else None
        ratio = f"{per / statistics.median(c):.2f}x" if per and c else "-"
        print(f"- {r['rtt']} {r['slots']} {r['workload']} {r['type']} {r['method']} run {r['run']}: "
              f"{float(r['seconds']):.2f} s, {r['rpcs']} requests, CPU per request {ratio}")
# Requests per file (median of the runs), and of each kind (the median run's counts).
ops = collections.defaultdict(lambda: collections.defaultdict(int))
for o in csv.DictReader(open(sys.argv[3])):
    if o.get("rpc") == "1":
        ops[(o["rtt"], o["slots"], o["workload"], o["type"], o["method"], o["run"])][o["op"]] += int(o["count"])
print("\n| RTT | slots | workload | type | method | requests per file | of which (per file) |")
print("|---|---:|---|---|---|---:|---|")
per = collections.defaultdict(list)
for r in rows:
    if r["workload"] != "scan" and r["rpcs"]:
        per[(r["rtt"], r["slots"], r["workload"], r["type"], r["method"])].append(r)
for k, rs in sorted(per.items()):
    rs.sort(key=lambda r: int(r["rpcs"]))
    mid = rs[len(rs) // 2]
    files = int(mid["files"])
    kinds = ops.get(k + (mid["run"],), {})
    top = sorted(((n, op) for op, n in kinds.items() if n * 50 >= files), reverse=True)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {label.get(k[3], k[3])} | {k[4]} | "
          f"{statistics.median(int(r['rpcs']) for r in rs) / files:.2f} | "
          + ", ".join(f"{op} {n / files:.2f}" for n, op in top) + " |")
# What the default chose (from its --json), per cell.
print("\n| RTT | slots | workload | type | workers chosen (per run) | profile class | round trip ms |")
print("|---|---:|---|---|---|---|---:|")
for rtt, slots, w in cells:
    for t in types:
        chosen, cls, rt = [], set(), []
        for path in sorted(glob.glob(os.path.join(sys.argv[2], f"{rtt}-{slots}-{t}-{w}-reclaim-[0-9]*.log"))):
            try:
                v = json.loads(open(path).read().strip().splitlines()[-1])
            except Exception:
                continue
            chosen.append(str(v.get("concurrency", {}).get("chosen")))
            cls.add(v.get("profile", {}).get("class"))
            if v.get("profile", {}).get("round_trip_ms") is not None:
                rt.append(v["profile"]["round_trip_ms"])
        if chosen:
            print(f"| {rtt} | {slots} | {w} | {label.get(t, t)} | {', '.join(chosen)} | "
                  f"{', '.join(sorted(c for c in cls if c))} | {statistics.median(rt):.2f} |" if rt else "| - |")
EOF
cat "$OUT/summary.md"
log "done: $OUT"
