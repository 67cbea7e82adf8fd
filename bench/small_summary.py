#!/usr/bin/env python3
"""Summary of bench/small.sh's output directory (standard library only):

    python3 bench/small_summary.py bench/out/small-<timestamp>

small.csv: per file system and size, each method's median wall time over all runs (and the
spread of the round medians), its ratio to GNU rm's median, and the median of the per-round
ratios (each round's median against GNU rm's in the same round: drift hits both alike).
pairs.csv: per file system, size and method, the mean CPU against GNU rm's in the same pairs.
subvolume.csv: per method the median time to leave the namespace, and reclaim's difference
to `btrfs subvolume delete`.
"""

import csv
import os
import statistics
import sys
from collections import defaultdict


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def ms(s):
    return f"{s * 1e3:.2f}"


def small(out):
    path = os.path.join(out, "small.csv")
    if not os.path.exists(path):
        return
    runs = defaultdict(list)  # (fs, size, method) -> seconds
    rounds = defaultdict(list)  # (fs, size, method, round) -> seconds
    order = []
    for r in csv.DictReader(open(path)):
        key = (r["fs"], int(r["size"]), r["method"])
        if key not in runs:
            order.append(key)
        runs[key].append(float(r["seconds"]))
        rounds[key + (int(r["round"]),)].append(float(r["seconds"]))
    cells = []
    for k in order:
        if (k[0], k[1]) not in cells:
            cells.append((k[0], k[1]))
    methods = []
    for k in order:
        if k[2] not in methods:
            methods.append(k[2])
    print("## Small removals, warm cache (one command each)\n")
    print("Median wall time in ms over every run (min-max of the round medians); `÷ gnu`: the")
    print("median's ratio to GNU rm's; `paired`: the median of the per-round ratios.\n")
    print("| fs | files | method | median ms | round medians ms | ÷ gnu | paired |")
    print("|---|---:|---|---:|---|---:|---:|")
    for fs, n in cells:
        gnu = median(runs.get((fs, n, "gnu"), []))
        for m in methods:
            xs = runs.get((fs, n, m))
            if not xs:
                continue
            per_round = sorted(
                (rd, median(v)) for (f, s, mm, rd), v in rounds.items() if (f, s, mm) == (fs, n, m)
            )
            ratios = []
            for rd, med in per_round:
                g = rounds.get((fs, n, "gnu", rd))
                if g:
                    ratios.append(med / median(g))
            meds = [v for _, v in per_round]
            spread = f"{ms(min(meds))}-{ms(max(meds))}" if meds else ""
            ratio = f"{median(xs) / gnu:.2f}" if gnu == gnu and gnu > 0 else ""
            paired = f"{median(ratios):.2f}" if ratios else ""
            print(f"| {fs} | {n} | {m} | {ms(median(xs))} | {spread} | {ratio} | {paired} |")
    print()


def pairs(out):
    path = os.path.join(out, "pairs.csv")
    if not os.path.exists(path):
        return
    rows = list(csv.DictReader(open(path)))
    print("## CPU at start-up sizes, pair by pair against GNU rm\n")
    print("Mean CPU (user + sys) per run in ms over the pairs, and its ratio to GNU rm's in the")
    print("same pairs; `wall`: the median of the pairs' wall-time ratios; page faults of a run.\n")
    print("| fs | files | method | pairs | CPU ms | GNU rm CPU ms | CPU ÷ gnu | wall ÷ gnu | faults (gnu) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(
            f"| {r['fs']} | {r['size']} | {r['method']} | {r['pairs']} | {r['cpu_ms']} | "
            f"{r['gnu_cpu_ms']} | {float(r['cpu_ratio']):.2f} | {float(r['wall_ratio']):.2f} | "
            f"{r['faults']} ({r['gnu_faults']}) |"
        )
    print()


def subvolume(out):
    path = os.path.join(out, "subvolume.csv")
    if not os.path.exists(path):
        return
    by = defaultdict(list)
    files = ""
    for r in csv.DictReader(open(path)):
        by[r["method"]].append(float(r["seconds"]))
        files = r["files"]
    print(f"## A btrfs subvolume of {files} files, cold cache: time to leave the namespace\n")
    print("| method | median ms | runs ms |")
    print("|---|---:|---|")
    for m, xs in by.items():
        print(f"| {m} | {ms(median(xs))} | {', '.join(ms(x) for x in xs)} |")
    if "btrfs" in by and "reclaim" in by:
        d = median(by["reclaim"]) - median(by["btrfs"])
        print(f"\nreclaim - btrfs subvolume delete: {d * 1e3:+.1f} ms (medians)")
    print()


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    meta = os.path.join(out, "meta.txt")
    if os.path.exists(meta):
        print("```")
        print(open(meta).read().rstrip())
        print("```\n")
    small(out)
    pairs(out)
    subvolume(out)


if __name__ == "__main__":
    main()
