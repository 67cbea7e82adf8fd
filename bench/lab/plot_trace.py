#!/usr/bin/env python3
"""Plot the pacer's trace (`reclaim rm --pace-trace FILE`, one JSON line per step).

  plot_trace.py TRACE.jsonl OUT.png [--title TEXT]

Three panels over time since the first step: the step size (cost units) and the pause after
it; the probe's latency in the window (p90 and max) with the verdicts (misses in red); and the
bytes freed per second. Needs matplotlib (bench/out/.venv has it after a lab run).
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    rows = [json.loads(line) for line in open(a.trace) if line.strip()]
    if not rows:
        sys.exit(f"plot_trace: {a.trace}: no windows")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["t"] for r in rows]
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(12, 8), sharex=True, dpi=110)
    ax1.step(t, [r["step"] for r in rows], where="post", label="step (cost units)")
    ax1.set_yscale("log")
    ax1.set_ylabel("step, units")
    ax1b = ax1.twinx()
    ax1b.step(t, [r["pause_ms"] for r in rows], where="post", color="tab:orange", label="pause")
    ax1b.set_ylabel("pause, ms", color="tab:orange")
    ax1.legend(loc="upper left")
    ax1.grid(alpha=0.3)
    for key, style in (("p90_ms", "o"), ("max_ms", ".")):
        pts = [(r["t"], r[key]) for r in rows if r.get(key) is not None]
        if pts:
            ax2.plot(*zip(*pts), style, ms=3, label=f"probe {key[:-3]} in window")
    miss = [(r["t"], r["max_ms"] or r.get("in_flight_ms") or 0) for r in rows if r["verdict"] == "Miss"]
    if miss:
        ax2.plot(*zip(*miss), "x", color="red", ms=6, label="miss (back-off)")
    ax2.set_yscale("log")
    ax2.set_ylabel("probe latency, ms")
    ax2.legend(loc="upper left")
    ax2.grid(alpha=0.3)
    rate = []
    for prev, cur in zip(rows, rows[1:]):
        dt = cur["t"] - prev["t"]
        if dt > 0:
            rate.append((cur["t"], cur["bytes"] / dt / 2**20))
    if rate:
        ax3.plot(*zip(*rate), lw=0.8)
    ax3.set_ylabel("freed, MiB/s")
    ax3.set_xlabel("seconds since the first step")
    ax3.grid(alpha=0.3)
    misses = sum(r["verdict"] == "Miss" for r in rows)
    fig.suptitle(a.title or f"pacer trace: {len(rows)} steps, {misses} back-offs")
    fig.tight_layout()
    fig.savefig(a.out)
    print(a.out)


if __name__ == "__main__":
    main()
