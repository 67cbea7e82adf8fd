#!/usr/bin/env python3
"""Where did the emulated disk's time go while a removal ran? (issue 25: find where the harm
to other I/O comes from before tuning.)

usage: python3 bench/lab/harm.py LAB        (a lab run with `bench/lab.sh --trace`, ext3/ext4)

Reads, per run, runs/<run>/disk.trace (bench/slowdisk's request trace: `# epoch UNIX` then
`t_arrive op offset len wait_ms service_ms`), the run's events.tsv (removal start and end) and
the file system's layout (LAB/layout-*.txt: dumpe2fs and the journal inode's extents), and
classes every request by the blocks it touches:

  journal      the jbd2 journal (commits: the descriptor, the metadata copies, the commit block)
  inode-table  inode tables (reading inodes to unlink them; writing them back at checkpoint)
  bitmap       block and inode bitmaps
  other        everything else: directory blocks, extent blocks, the victims' data

and the flushes (cache flushes: one per journal commit or fsync). For the removal window it
writes harm.md and harm.csv: per run, the disk's busy share, then per class and direction the
requests, the disk time (service) they took, and the mean time they waited in the queue. A
victim's synchronous write waits behind what is queued ahead of it, so the disk time per second
by class is what a neighbour's p99 is made of. Standard library only.
"""

import csv
import glob
import os
import re
import statistics
import sys
from bisect import bisect_right

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze import read_events, read_kv  # noqa: E402  (bench/lab/analyze.py)

CLASSES = ["journal", "inode-table", "bitmap", "other"]


def parse_layout(path):
    """Sorted, non-overlapping (first_byte, end_byte, class) ranges from dumpe2fs + debugfs."""
    text = open(path, encoding="utf-8", errors="replace").read()
    m = re.search(r"^Block size:\s+(\d+)", text, re.M)
    bs = int(m.group(1)) if m else 4096
    ranges = []

    def add(a, b, cls):
        ranges.append((int(a) * bs, (int(b) + 1) * bs, cls))

    for m in re.finditer(r"Inode table at (\d+)-(\d+)", text):
        add(m.group(1), m.group(2), "inode-table")
    for m in re.finditer(r"(?:Block|Inode) bitmap at (\d+)(?:-(\d+))?", text):
        add(m.group(1), m.group(2) or m.group(1), "bitmap")
    journal = text.split("== journal (inode 8)", 1)
    if len(journal) == 2:
        # debugfs: "(0-32767):1234-33001, (32768-...):..." after EXTENTS: (or BLOCKS:)
        for m in re.finditer(r"\(\d+(?:-\d+)?\):(\d+)(?:-(\d+))?", journal[1]):
            add(m.group(1), m.group(2) or m.group(1), "journal")
    ranges.sort()
    return ranges


class Classifier:
    def __init__(self, ranges):
        self.ranges = ranges
        self.starts = [r[0] for r in ranges]

    def __call__(self, off):
        i = bisect_right(self.starts, off) - 1
        if i >= 0 and off < self.ranges[i][1]:
            return self.ranges[i][2]
        return "other"


def analyze_run(run_dir, classify, phase="during"):
    """The disk's time by class `during` the removal, or `before` it (the victims alone, the
    same length of time before the removal started, at most from the victims' start)."""
    trace = os.path.join(run_dir, "disk.trace")
    ev = read_events(os.path.join(run_dir, "events.tsv"))
    meta = dict(read_kv(os.path.join(run_dir, "meta.tsv")))
    if not os.path.exists(trace) or "rm_start" not in ev or "rm_end" not in ev:
        return None
    epoch = None
    t0, t1 = ev["rm_start"], ev["rm_end"]
    if phase == "before":
        t0, t1 = max(t0 - (t1 - t0), ev.get("victims_start", t0 - (t1 - t0)) + 2.0), t0
        if t1 <= t0:
            return None
    stats = {}  # (class, op) -> [n, bytes, service_ms, wait_ms]
    busy = 0.0
    waits = []
    with open(trace, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                m = re.match(r"# epoch ([0-9.]+)", line)
                if m:
                    epoch = float(m.group(1))
                continue
            if epoch is None:
                return None  # a trace without its epoch cannot be aligned
            parts = line.split()
            if len(parts) != 6:
                continue
            t = epoch + float(parts[0])
            if t < t0 or t > t1:
                continue
            op, off, ln, wait, svc = parts[1], int(parts[2]), int(parts[3]), float(parts[4]), float(parts[5])
            cls = "flush" if op == "F" else classify(off)
            s = stats.setdefault((cls, op), [0, 0, 0.0, 0.0])
            s[0] += 1
            s[1] += ln
            s[2] += svc
            s[3] += wait
            busy += svc
            waits.append(wait)
    span = t1 - t0
    return {
        "phase": phase,
        "run": os.path.basename(run_dir),
        "method": meta.get("method", "?"),
        "rep": meta.get("rep", ""),
        "removal_s": span,
        "busy_share": busy / 1000.0 / span if span > 0 else None,
        "wait_p50_ms": statistics.median(waits) if waits else None,
        "wait_p99_ms": sorted(waits)[int(0.99 * (len(waits) - 1))] if waits else None,
        "stats": stats,
    }


def main(argv):
    if len(argv) != 2:
        print("usage: harm.py LAB", file=sys.stderr)
        return 2
    lab = argv[1]
    layouts = sorted(glob.glob(os.path.join(lab, "layout-*.txt")))
    if not layouts:
        print(f"harm: no layout-*.txt in {lab} (run bench/lab.sh with --trace, on ext3/ext4)",
              file=sys.stderr)
        return 1
    classify = Classifier(parse_layout(layouts[0]))
    results = []
    for d in sorted(glob.glob(os.path.join(lab, "runs", "*"))):
        for phase in ("before", "during"):
            r = analyze_run(d, classify, phase)
            if r:
                results.append(r)
    if not results:
        print(f"harm: no run in {lab} has a disk.trace with its epoch", file=sys.stderr)
        return 1
    keys = [(c, op) for c in CLASSES for op in ("R", "W")] + [("flush", "F")]
    rows = []
    for r in results:
        row = {"phase": r["phase"], "run": r["run"], "method": r["method"], "rep": r["rep"],
               "removal_s": round(r["removal_s"], 3), "busy_share": round(r["busy_share"], 3),
               "wait_p50_ms": r["wait_p50_ms"], "wait_p99_ms": r["wait_p99_ms"]}
        for c, op in keys:
            n, b, svc, wait = r["stats"].get((c, op), [0, 0, 0.0, 0.0])
            row[f"{c}_{op}_n"] = n
            row[f"{c}_{op}_MiB"] = round(b / 2**20, 2)
            # disk time per second of removal: the share of the head this class held
            row[f"{c}_{op}_busy"] = round(svc / 1000.0 / r["removal_s"], 3)
            row[f"{c}_{op}_wait_ms"] = round(wait / n, 1) if n else ""
        rows.append(row)
    with open(os.path.join(lab, "harm.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    # Markdown: per method, the median over repetitions of each class's share of the head;
    # "(idle)": the same runs before the removal, the victims alone.
    methods = []
    for r in rows:
        if r["method"] not in methods:
            methods.append(r["method"])
    phased = [(m, "during") for m in methods] + [(m, "before") for m in methods]
    cols = [f"{c}_{op}" for c, op in keys]
    lines = ["# Where the disk's time went during the removal", "",
             "Median over the runs of each method, during the removal and (idle) the same time before it, the victims alone. Share: disk time of that class per second of "
             "removal (1.00 = the head busy all the time); n/s: requests per second; wait: mean "
             "time a request of that class queued before the head took it.", "",
             "| method | runs | window s | busy | queue wait p50 / p99 ms | "
             + " | ".join(f"{c} share (n/s, wait ms)" for c in cols) + " |",
             "|---|---:|---:|---:|---:|" + "---:|" * len(cols)]

    def med(xs):
        xs = [x for x in xs if x not in ("", None)]
        return statistics.median(xs) if xs else None

    for m, phase in phased:
        rs = [r for r in rows if r["method"] == m and r["phase"] == phase]
        if not rs:
            continue
        cells = [m if phase == "during" else f"{m} (idle)", str(len(rs)), f"{med([r['removal_s'] for r in rs]):.1f}",
                 f"{med([r['busy_share'] for r in rs]):.2f}",
                 f"{med([r['wait_p50_ms'] for r in rs]):.0f} / {med([r['wait_p99_ms'] for r in rs]):.0f}"]
        for c in cols:
            share = med([r[f"{c}_busy"] for r in rs])
            rate = med([r[f"{c}_n"] / r["removal_s"] for r in rs])
            wait = med([r[f"{c}_wait_ms"] for r in rs])
            cells.append(f"{share:.2f} ({rate:.0f}, {wait:.0f})" if wait is not None
                         else f"{share:.2f} ({rate:.0f}, –)")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    with open(os.path.join(lab, "harm.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"harm: {len(results) // 2} runs; wrote harm.md, harm.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
