#!/usr/bin/env python3
"""The measurement part of bench/netfs-check.sh (run that, not this).

For each (slots, RTT) it starts netfs over SCRATCH/back at SCRATCH/mnt0, then for each
operation (stat, create, unlink), layout (one shared directory, one directory per
thread) and thread count T runs `netfs-load` through the mount for --duration seconds
over names the mount has never seen, and compares ops/s with the model:

    expected = min(T, slots[, server_ops]) / (RTTs per op x RTT)

RTTs per op: stat 1 (LOOKUP), create 2 (LOOKUP + CREATE), unlink 2 (LOOKUP + UNLINK).
In one shared directory create and unlink hold the directory's lock across both
round trips, so there they are serialised: expected = 1 / (2 x RTT) whatever T.
The RPCs actually counted by netfs (SIGUSR1 stats dump before and after) are shown too.
"""

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time

MARK = ".netfs-check-scratch"
NOMINAL_RPCS = {"stat": 1, "create": 2, "unlink": 2}
CPU_GUESS = 26000  # ops/s beyond which we do not prepare more names (the CPU binds first)
LIVE = []  # child processes to stop if we are stopped


def spawn(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    LIVE.append(p)
    return p


def reap(p):
    p.wait()
    if p in LIVE:
        LIVE.remove(p)
    return p.returncode


def on_signal(sig, _frame):
    """Stop the loaders and netfs (which unmounts on SIGTERM), then exit."""
    for p in LIVE:
        try:
            p.terminate()
        except ProcessLookupError:
            pass
    for p in LIVE:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
    sys.exit(128 + sig)


def die(msg):
    print(f"sweep.py: {msg}", file=sys.stderr)
    sys.exit(1)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def system_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


class Netfs:
    def __init__(self, args, n, mounts, rtt, slots, server_ops=None, extra=()):
        self.args, self.mounts = args, mounts
        s = args.scratch
        self.stats = f"{s}/stats-{n}.json"
        self.ready = f"{s}/ready-{n}"
        self.pidfile = f"{s}/netfs-{n}.pid"
        for m in mounts:
            os.makedirs(m, exist_ok=True)
        cmd = [f"{args.bin}/netfs", "--backing", f"{s}/back", "--rtt", f"{rtt}ms",
               "--slots", str(slots), "--stats", self.stats, "--ready-file", self.ready]
        for m in mounts:
            cmd += ["--mount", m]
        if server_ops:
            cmd += ["--server-ops", str(server_ops)]
        cmd += list(extra)
        self.log = open(f"{s}/netfs-{n}.log", "w")
        self.p = spawn(cmd, stderr=self.log)
        with open(self.pidfile, "w") as f:
            f.write(str(self.p.pid))
        for _ in range(100):
            if os.path.exists(self.ready):
                break
            if self.p.poll() is not None:
                die(f"netfs exited: see {s}/netfs-{n}.log")
            time.sleep(0.05)
        else:
            die("netfs did not get ready")
        self.dumps = 0

    def snapshot(self):
        """(rpcs so far, netfs CPU ticks, count per operation)."""
        self.dumps += 1
        os.kill(self.p.pid, signal.SIGUSR1)
        for _ in range(400):
            try:
                with open(self.stats) as f:
                    j = json.load(f)
                if j["dumps"] >= self.dumps:
                    counts = {k: v["count"] for k, v in j["ops"].items()}
                    return j["rpcs"], cpu_ticks(self.p.pid), counts
            except (FileNotFoundError, json.JSONDecodeError):
                pass
            time.sleep(0.005)
        die("no stats dump")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        if reap(self.p) != 0:
            die(f"netfs exited {self.p.returncode}")
        os.unlink(self.pidfile)


def load(args, cmd, op, d, threads, files, layout):
    argv = [f"{args.bin}/netfs-load", cmd, "--op", op, "--dir", d, "--threads", str(threads),
            "--files", str(files), "--layout", layout, "--duration", str(args.duration)]
    return spawn(argv, stdout=subprocess.PIPE, text=True)


def finish(p):
    out, _ = p.communicate()
    reap(p)
    if p.returncode != 0:
        die(f"netfs-load failed: {p.args}")
    return json.loads(out) if out.strip() else None


class Runs:
    def __init__(self, args):
        self.args, self.k = args, 0

    def fresh(self, op, threads, layout, expected):
        """A new run directory; for stat/unlink filled (on the backing side) with enough names."""
        self.k += 1
        name = f"run{self.k}"
        per = math.ceil(min(expected, CPU_GUESS) * self.args.duration * 1.3 / threads) + 20
        files = per if op != "create" else 0
        p = spawn([f"{self.args.bin}/netfs-load", "prepare", "--dir",
                   f"{self.args.scratch}/back/{name}", "--threads", str(threads),
                   "--files", str(files), "--layout", layout])
        if reap(p) != 0:
            die("netfs-load prepare failed")
        return name, per

    def drop(self, name):
        if reap(spawn(["rm", "-rf", "--one-file-system", f"{self.args.scratch}/back/{name}"])):
            die(f"removing {name} failed")


def measure(args, runs, fs, op, layout, threads, rtt, slots, server_ops=None, mounts=None):
    mounts = mounts or fs.mounts
    cap = min(threads, slots, server_ops or threads)
    if op != "stat" and layout == "shared":
        cap = 1
    total_cap = min(cap * len(mounts), server_ops or 10**9) if op == "stat" or layout != "shared" \
        else min(len(mounts), server_ops or 10**9)
    expected = total_cap / (NOMINAL_RPCS[op] * rtt / 1e3)
    names = [runs.fresh(op, threads, layout, expected / len(mounts)) for _ in mounts]
    rpc0, cpu0, mix0 = fs.snapshot()
    busy0 = system_busy()
    procs = [load(args, "run", op, f"{m}/{n}", threads, per, layout)
             for m, (n, per) in zip(mounts, names)]
    res = [finish(p) for p in procs]
    busy1 = system_busy()
    rpc1, cpu1, mix1 = fs.snapshot()
    for n, _ in names:
        runs.drop(n)
    ops = sum(r["ops"] for r in res)
    secs = max(r["secs"] for r in res)
    rate = sum(r["ops_per_s"] for r in res)
    errors = sum(r["errors"] for r in res)
    # The loaders open their directories before the clock starts: not per-op RPCs.
    setup = sum(mix1.get(k, 0) - mix0.get(k, 0) for k in ("opendir",))
    hz = os.sysconf("SC_CLK_TCK")
    ncpu = os.cpu_count()
    row = {
        "op": op, "layout": layout, "threads": threads, "mounts": len(mounts), "rtt_ms": rtt,
        "slots": slots, "server_ops": server_ops, "ops": ops, "secs": round(secs, 3),
        "ops_per_s": round(rate), "expected": round(expected),
        "ratio": round(rate / expected, 2), "rpcs_per_op": round((rpc1 - rpc0 - setup) / max(ops, 1), 2),
        "p50_us": res[0]["p50_us"], "p99_us": res[0]["p99_us"], "errors": errors,
        "netfs_cpu_pct": round(100 * (cpu1 - cpu0) / hz / secs / ncpu),
        "load_cpu_pct": round(100 * sum(r["cpu_s"] for r in res) / secs / ncpu),
        "system_busy_pct": round(100 * (busy1[0] - busy0[0]) / max(busy1[1] - busy0[1], 1)),
        "per_op": {k: round((v - mix0.get(k, 0)) / max(ops, 1), 3)
                   for k, v in mix1.items() if v != mix0.get(k, 0)},
    }
    if errors:
        print(f"  errors: {errors} (first errno {res[0]['first_errno']})", file=sys.stderr)
    return row


HEAD = ("| slots | RTT ms | op | layout | T | ops/s | expected | ratio | RTTs/op | p50 µs | "
        "p99 µs | netfs CPU | load CPU | machine busy |")
SEP = "|" + "---|" * 14


def fmt(r):
    srv = f" (server {r['server_ops']})" if r["server_ops"] else ""
    mnt = f" x{r['mounts']} mounts" if r["mounts"] > 1 else ""
    return (f"| {r['slots']}{srv} | {r['rtt_ms']} | {r['op']} | {r['layout']}{mnt} | "
            f"{r['threads']} | {r['ops_per_s']} | {r['expected']} | {r['ratio']} | "
            f"{r['rpcs_per_op']} | {r['p50_us']:.0f} | {r['p99_us']:.0f} | "
            f"{r['netfs_cpu_pct']}% | {r['load_cpu_pct']}% | {r['system_busy_pct']}% |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True, help="directory for results.md and rows.jsonl")
    ap.add_argument("--rtts", default="0.2,0.5,2")
    ap.add_argument("--threads", default="1,4,16,64")
    ap.add_argument("--slots", default="64,16")
    ap.add_argument("--ops", default="stat,create,unlink")
    ap.add_argument("--layouts", default="shared,private")
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--no-server-case", action="store_true")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    s = os.path.realpath(args.scratch)
    if not (os.path.basename(s).startswith("netfs-check.") and os.path.exists(f"{s}/{MARK}")):
        die(f"refusing scratch {s}: not a marked netfs-check directory")
    args.scratch = s
    os.makedirs(f"{s}/back", exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    jl = open(f"{args.out}/rows.jsonl", "w")

    def emit(r):
        rows.append(r)
        jl.write(json.dumps(r) + "\n")
        jl.flush()
        print(fmt(r), flush=True)

    runs = Runs(args)
    print(HEAD)
    print(SEP)
    n = 0
    slot_list = [int(x) for x in args.slots.split(",")]
    for slots in slot_list:
        for rtt in [float(x) for x in args.rtts.split(",")]:
            n += 1
            fs = Netfs(args, n, [f"{s}/mnt0"], rtt, slots)
            for op in args.ops.split(","):
                for layout in args.layouts.split(","):
                    for t in [int(x) for x in args.threads.split(",")]:
                        # With fewer slots than the first setting only T >= slots
                        # differs (below, min(T, slots) is T either way).
                        if slots != slot_list[0] and t < slots:
                            continue
                        emit(measure(args, runs, fs, op, layout, t, rtt, slots))
            fs.stop()
    if not args.no_server_case:
        # Two clients of one server, 16 slots each, 16 threads each, RTT 2 ms: without a
        # server cap 32 in flight; with --server-ops 8 at most 8 across both mounts.
        for server_ops in (None, 8):
            n += 1
            fs = Netfs(args, n, [f"{s}/mnt0", f"{s}/mnt1"], 2.0, 16, server_ops)
            emit(measure(args, runs, fs, "stat", "private", 16, 2.0, 16, server_ops))
            fs.stop()
        # One client, 64 threads, server cap 16 at RTT 0.5 ms.
        n += 1
        fs = Netfs(args, n, [f"{s}/mnt0"], 0.5, 64, 16)
        emit(measure(args, runs, fs, "stat", "private", 64, 0.5, 64, 16))
        fs.stop()
    with open(f"{args.out}/results.md", "w") as f:
        f.write(HEAD + "\n" + SEP + "\n")
        for r in rows:
            f.write(fmt(r) + "\n")


if __name__ == "__main__":
    main()
