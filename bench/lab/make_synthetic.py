#!/usr/bin/env python3
"""Generates a fake impact-lab directory to test bench/lab/analyze.py.

usage: python3 bench/lab/make_synthetic.py [DIR]     (default: a new mktemp dir under /tmp)

Prints the lab directory. Three runs on ext4 / hdd-7200 / frag, in the runner's exact formats
(meta.tsv, events.tsv, probe.log, two pgbench_log.* thread files), with planted behaviour:

  rm       removal 10 s; probe 8 ms during removal; the disk stalls for 3 s starting 4 s into
           the removal and for 1 s starting 5 s after rm_end (after rm returned)
  loop     removal 30 s (3x rm); probe 3 ms during removal; no stall
  reclaim  removal 12 s; probe 4 ms during removal (slight bump); no stall

Outside the removal the probe takes 2 ms (+-10 %) every 20 ms; pgbench (4 clients, closed loop)
takes 20 ms per transaction (200 tps), 40 / 26.7 / 25 ms during the removal (100 / 150 / 160 tps).
A stall holds every I/O issued while it lasts until its end. Standard library only; seeded, so
the output is the same every time.
"""

import math
import os
import random
import sys
import tempfile

T0 = 1_700_000_000.0  # victims_start of every run
PRE_S = 15.0  # victims_start -> rm_start
POST_S = 45.0  # rm_end -> victims_stop
PROBE_INTERVAL_S = 0.020
PROBE_BASE_S = 0.002
PG_CLIENTS = 4
PG_BASE_S = 0.020

# name -> (order, removal s, probe latency during s, pg latency during s, stalls rel. rm_start)
RUNS = {
    "rm": (1, 10.0, 0.008, 0.040, [(4.0, 3.0), (10.0 + 5.0, 1.0)]),
    "loop": (2, 30.0, 0.003, 0.020 * 200 / 150, []),
    "reclaim": (3, 12.0, 0.004, 0.025, []),
}
CMDS = {
    "rm": "rm -f {file}",
    "loop": "truncate-loop {file} 64M",
    "reclaim": "reclaim rm {file}",
}


def stalled(t, lat, stalls):
    """Latency of an I/O issued at t: held until the end of a stall that covers t."""
    for s, d in stalls:
        if s <= t < s + d:
            return (s + d - t) + lat
    return lat


def sim_probe(rng, t0, t1, lat_at, stalls):
    """WAL probe: one op per tick; an op that overruns skips the ticks it missed."""
    ops, t = [], t0
    while t < t1:
        lat = stalled(t, lat_at(t) * rng.uniform(0.9, 1.1), stalls)
        comp = t + lat
        ops.append((comp, round(lat * 1e6)))
        ticks = max(1, math.ceil((comp - t) / PROBE_INTERVAL_S - 1e-9))
        t += ticks * PROBE_INTERVAL_S
    return ops


def sim_pgbench(rng, t0, t1, lat_at, stalls):
    """Closed-loop clients: {client: [(completion, latency_us)]}."""
    out = {}
    for c in range(PG_CLIENTS):
        t, txs = t0 + 0.5 + c * 0.005, []
        while t < t1:
            lat = stalled(t, lat_at(t) * rng.uniform(0.9, 1.1), stalls)
            txs.append((t + lat, round(lat * 1e6)))
            t += lat
        out[c] = txs
    return out


def write_run(lab, method, fs="ext4", device="hdd-7200", workload="frag", rep=None, slow=1.0):
    """One run; with `rep` (a repetition number, as `lab.sh --runs`) the run directory and
    meta.tsv carry it, and `slow` multiplies the removal time and the latencies during it."""
    order, removal, probe_during, pg_during, rel_stalls = RUNS[method]
    removal, probe_during, pg_during = removal * slow, probe_during * slow, pg_during * slow
    rng = random.Random(f"{method}-seed-{rep}")
    vstart = T0
    rs = vstart + PRE_S
    re_ = rs + removal
    vstop = re_ + POST_S
    stalls = [(rs + s, d) for s, d in rel_stalls]

    def probe_lat(t):
        return probe_during if rs <= t <= re_ else PROBE_BASE_S

    def pg_lat(t):
        return pg_during if rs <= t <= re_ else PG_BASE_S

    d = os.path.join(lab, "runs", f"{fs}__{workload}__{method}" + (f"__r{rep}" if rep else ""))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "meta.tsv"), "w") as f:
        for k, v in [("fs", fs), ("device", device), ("workload", workload),
                     ("method", method), ("cmd", CMDS[method]), ("exit", "0"),
                     ("wall_s", f"{removal:.3f}"), ("extents", "12000"),
                     ("size_bytes", str(8 << 30)), ("order", str(order))] + (
                         [("rep", str(rep))] if rep else []):
            f.write(f"{k}\t{v}\n")
    with open(os.path.join(d, "events.tsv"), "w") as f:
        for k, v in [("victims_start", vstart), ("rm_start", rs), ("rm_end", re_),
                     ("victims_stop", vstop)]:
            f.write(f"{k}\t{v:.6f}\n")
    with open(os.path.join(d, "probe.log"), "w") as f:
        f.write(f"# walprobe interval_ms={round(PROBE_INTERVAL_S * 1000)} size=8192\n")
        for comp, lat_us in sim_probe(rng, vstart, vstop, probe_lat, stalls):
            if comp <= vstop:
                f.write(f"{comp:.6f} {lat_us}\n")
    clients = sim_pgbench(rng, vstart, vstop, pg_lat, stalls)
    pid = 4242
    for thread, name in enumerate([f"pgbench_log.{pid}", f"pgbench_log.{pid}.1"]):
        lines = []
        for c in (2 * thread, 2 * thread + 1):
            for no, (comp, lat_us) in enumerate(clients[c]):
                if comp > vstop:
                    break
                sec = int(comp)
                usec = int(round((comp - sec) * 1e6))
                if usec == 1_000_000:
                    sec, usec = sec + 1, 0
                extra = " 0" if thread == 1 else ""  # e.g. schedule lag with --rate
                lines.append((comp, f"{c} {no} {lat_us} 0 {sec} {usec}{extra}\n"))
        lines.sort()
        with open(os.path.join(d, name), "w") as f:
            f.writelines(line for _, line in lines)
    return d


def make_lab(lab=None):
    if lab is None:
        lab = tempfile.mkdtemp(prefix="impact-lab-synth-", dir="/tmp")
    os.makedirs(os.path.join(lab, "runs"), exist_ok=True)
    with open(os.path.join(lab, "meta.tsv"), "w") as f:
        f.write("date\t2025-01-01T00:00:00Z\nkernel\t6.1.0-synthetic\n"
                "model\tsynthetic (bench/lab/make_synthetic.py)\n"
                "device_model\thdd-7200: dm-delay emulation | made up\n")
    for method in RUNS:
        write_run(lab, method)
    return lab


if __name__ == "__main__":
    print(make_lab(sys.argv[1] if len(sys.argv) > 1 else None))
