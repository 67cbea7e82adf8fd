#!/usr/bin/env python3
"""Summarizes a bench/run.sh output directory (raw.csv, meta.tsv, methods.tsv) as markdown.

usage: python3 bench/summarize.py OUT_DIR [--no-write]

Writes OUT_DIR/summary.md (unless --no-write) and prints it. Python 3 standard library only.
"""

import csv
import os
import statistics
import sys

DEFAULT_PEERS = ["rm", "find", "xargs", "rsync", "rmz"]


def read_tsv(path):
    """Ordered (key, value) pairs of a two-column TSV file; [] if it does not exist."""
    if not os.path.exists(path):
        return []
    pairs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                key, _, value = line.partition("\t")
                pairs.append((key, value))
    return pairs


def fnum(x):
    if x is None:
        return "–"
    return f"{x:.2f}" if x >= 100 else f"{x:.3f}"


def fratio(x):
    return "–" if x is None else f"{x:.2f}×"


def median(values):
    return statistics.median(values) if values else None


def to_float(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def summarize(out_dir):
    meta = dict(read_tsv(os.path.join(out_dir, "meta.tsv")))
    methods = read_tsv(os.path.join(out_dir, "methods.tsv"))
    skipped = read_tsv(os.path.join(out_dir, "skipped.tsv"))
    peers = meta.get("peers", " ".join(DEFAULT_PEERS)).split()

    with open(os.path.join(out_dir, "raw.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))

    workloads, fss, method_order = [], [], [m for m, _ in methods]
    groups = {}
    for row in rows:
        wl, fs, m = row["workload"], row["fs"], row["method"]
        for lst, v in ((workloads, wl), (fss, fs), (method_order, m)):
            if v not in lst:
                lst.append(v)
        groups.setdefault((wl, fs, m), []).append(row)

    stats = {}
    for key, runs in groups.items():
        good = [r for r in runs if r["ok"] == "1"]
        walls = [to_float(r["wall_s"]) for r in good]
        cpus = [to_float(r["user_s"]) + to_float(r["sys_s"]) for r in good]
        syncs = [to_float(r["sync_s"]) for r in good]
        umounts = [to_float(r.get("umount_s")) for r in good if to_float(r.get("umount_s")) is not None]
        stats[key] = {
            "n": len(runs),
            "ok": len(good),
            "wall": median(walls),
            "wall_min": min(walls) if walls else None,
            "wall_max": max(walls) if walls else None,
            "cpu": median(cpus),
            "sync": median(syncs),
            "umount": median(umounts),
        }

    lines = []
    add = lines.append
    add("# reclaim removal benchmark")
    add("")
    add(f"- date: {meta.get('date', '?')}; kernel {meta.get('kernel', '?')}; {meta.get('os', '?')}")
    add(f"- CPUs: {meta.get('cpus', '?')} × {meta.get('cpu_model', '?')}; memory {meta.get('memory', '?')}")
    add(f"- repository: {meta.get('git', '?')}; command: `{meta.get('command', '?')}`")
    add(
        f"- {meta.get('files', '?')} files per workload (size {meta.get('size', '0')} B), "
        f"{meta.get('runs', '?')} run(s) per cell, caches {meta.get('caches', '?')} "
        "(sync + drop_caches before every run)"
    )
    if "load_start" in meta:
        add(f"- load average (1 min) at start {meta['load_start']}, at end {meta.get('load_end', '?')}")
    add("")

    for wl in workloads:
        files = next((r["files"] for r in rows if r["workload"] == wl), "?")
        if wl == "tree":
            title = f"tree: {int(files):,} files, fan-out {meta.get('fanout', '?')}, {meta.get('per_leaf', '?')} per leaf"
        elif wl == "flat":
            title = f"flat: {int(files):,} files in one directory"
        else:
            title = wl
        add(f"## {title}")
        add("")
        add(
            "| fs | method | ok | wall (s) median | wall min–max | CPU user+sys (s) | sync (s) "
            "| umount (s) | wall ×rm | wall ×best peer |"
        )
        add("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
        notes = []
        for fs in fss:
            present = [m for m in method_order if (wl, fs, m) in stats]
            if not present:
                continue
            rm = stats.get((wl, fs, "rm"), {}).get("wall")
            peer_walls = [
                (stats[(wl, fs, p)]["wall"], p)
                for p in peers
                if (wl, fs, p) in stats and stats[(wl, fs, p)]["wall"] is not None
            ]
            best = min(peer_walls) if peer_walls else None
            if best:
                notes.append(f"{fs}: best peer is **{best[1]}** ({fnum(best[0])} s)")
            for m in present:
                s = stats[(wl, fs, m)]
                w = s["wall"]
                vs_rm = w / rm if w is not None and rm else None
                vs_best = w / best[0] if w is not None and best and best[0] else None
                rng = (
                    f"{fnum(s['wall_min'])}–{fnum(s['wall_max'])}" if s["wall_min"] is not None else "–"
                )
                ok = f"{s['ok']}/{s['n']}"
                if s["ok"] < s["n"]:
                    ok = f"**{ok}**"
                add(
                    f"| {fs} | {m} | {ok} | {fnum(w)} | {rng} | {fnum(s['cpu'])} | {fnum(s['sync'])} "
                    f"| {fnum(s['umount'])} | {fratio(vs_rm)} | {fratio(vs_best)} |"
                )
        add("")
        if notes:
            add("Best peer (lowest median wall among " + ", ".join(peers) + "): " + "; ".join(notes) + ".")
            add("")

    add("Medians are over the successful runs only (`ok` = successful/total; a run fails if the")
    add("command exits non-zero or the directory still exists). `wall` times only the removal command;")
    add("`sync` is `sync -f` on the file system right after it (work the file system deferred),")
    add("`umount` the unmount after that (loop file systems only). Ratios divide the median wall by")
    add("the median wall of `rm` / of the best peer on the same file system: below 1× is faster.")
    add("")

    add("## Setup")
    add("")
    for key, label in (("fs_ext4", "ext4"), ("fs_xfs", "xfs"), ("fs_btrfs", "btrfs"), ("fs_root", "root")):
        if key in meta and label in fss:
            mounted = meta.get(f"mounted_{label}")
            add(f"- **{label}**: `{meta[key]}`" + (f" (mounted: `{mounted}`)" if mounted else ""))
    if "image" in meta:
        add(f"- loop images: {meta['image']}")
    if "versions" in meta:
        add(f"- versions: {meta['versions']}")
    add("")
    add("## Methods")
    add("")
    add("| method | command |")
    add("|---|---|")
    for m, cmd in methods:
        add(f"| {m} | `{cmd.replace('|', chr(92) + '|')}` |")
    add("")
    add(
        "`{dir}` is the workload directory, `{nproc}` the CPU count, `{spec}` the workload's "
        "`--shape/--files/--fanout/--per-leaf`, `{empty}` an empty directory."
    )
    if skipped:
        add("")
        add("Skipped methods: " + "; ".join(f"{m} ({why})" for m, why in skipped) + ".")
    add("")
    return "\n".join(lines)


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    text = summarize(args[0])
    if "--no-write" not in argv:
        with open(os.path.join(args[0], "summary.md"), "w", encoding="utf-8") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
