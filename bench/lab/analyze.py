#!/usr/bin/env python3
"""Analysis and plotting step of the impact lab.

usage: python3 bench/lab/analyze.py LAB [--no-plots]

Reads LAB/meta.tsv and LAB/runs/<run>/{meta.tsv,events.tsv,probe.log,pgbench_log.*} and writes
into LAB/:
  results.csv                              one row per run, every metric below
  results.md                               lab meta header, legend, one table per (device, fs, workload)
  timeline-<device>-<fs>-<workload>.png    probe latency / pgbench tps around the removal (matplotlib)
  index.md                                 list of the PNGs

The numbers need only the Python 3 standard library; matplotlib is imported lazily for the
PNGs (a one-line note is printed if it is missing).

Definitions (all times are completion times of victim operations, unix seconds):
  rm_start, rm_end      from events.tsv; removal = rm_end - rm_start
  phases                before = [max(rm_start - 30, victims_start + 2), rm_start)
                        during = [rm_start, rm_end]
                        after  = (rm_end, rm_end + 40]
                        an op belongs to the phase containing its completion time (a probe op that
                        stalled for 3 s and completed after rm_end counts in "after").
  window                [rm_start, W] with W = rm_end + 40, or victims_stop if that is earlier
                        (so a victim stopped early does not look like a stall)
  percentiles           nearest-rank: the value of rank ceil(p/100 * n) in the sorted sample
                        (1-based), i.e. the smallest sample value with at least p % of the sample
                        <= it; always an observed value, never interpolated.
  gap_s                 longest interval without a completed probe op inside the window, counting
                        [rm_start, first completion] and [last completion, W] (window length if no
                        completion at all)
  gap_base_s            the same inside the before phase (what a normal gap looks like)
  p99_ratio             probe p99 during / probe p99 before
  tps bins              1 s bins aligned on rm_start: bin k = [rm_start + k, rm_start + k + 1),
                        tps = number of pgbench transactions completed in the bin
  tps_base              median of the bins fully inside the before phase
  tps_min_during        min over the bins fully inside [rm_start, rm_end]; if the removal took
                        < 1 s, the bin k = 0 (which contains it)
  tps_min_after         min over the bins fully inside [rm_start, W] (during + after)
  pg_gap_s              like gap_s, with pgbench transaction completions
"""

import bisect
import csv
import glob
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import repeat  # noqa: E402  (bench/lab/repeat.py, beside this file)

BEFORE_S = 30.0  # before phase length (clipped to victims_start + WARMUP_S)
WARMUP_S = 2.0
AFTER_S = 40.0
PLOT_PRE_S = 10.0  # plots start at rm_start - 10 s
PLOT_BIN_S = 0.5  # top panel: max probe latency per 0.5 s


# ---------------------------------------------------------------- reading


def read_kv(path):
    """Ordered (key, value) pairs of a `key<TAB>value` file; [] if missing."""
    if not os.path.exists(path):
        return []
    pairs = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line.strip() or line.startswith("#"):
                continue
            key, _, value = line.partition("\t")
            pairs.append((key.strip(), value))
    return pairs


def read_events(path):
    events = {}
    for key, value in read_kv(path):
        try:
            events[key] = float(value.split()[0])
        except (ValueError, IndexError):
            pass
    return events


def read_probe(path):
    """([(completion_s, latency_ms)] sorted by time, {header key: value}) or (None, {})."""
    if not os.path.exists(path):
        return None, {}
    ops, header = [], {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("#"):
                for word in line[1:].split():
                    if "=" in word:
                        k, _, v = word.partition("=")
                        header[k] = v
                continue
            parts = line.split()
            if len(parts) < 2:
                continue
            try:
                ops.append((float(parts[0]), int(parts[1]) / 1000.0))
            except ValueError:
                continue
    ops.sort()
    return ops, header


def read_pgbench(run_dir):
    """[(completion_s, latency_ms)] from all pgbench_log.* files, or None if there are none.

    Line: client_id transaction_no time script_no time_epoch time_us [...]; `time` is the
    latency in us, time_epoch + time_us/1e6 the completion time. Lines whose latency is not a
    number (e.g. `skipped`, `failed`) are ignored.
    """
    files = sorted(glob.glob(os.path.join(run_dir, "pgbench_log.*")))
    if not files:
        return None
    txs = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6:
                    continue
                try:
                    lat_ms = int(parts[2]) / 1000.0
                    t = int(parts[4]) + int(parts[5]) / 1e6
                except ValueError:
                    continue
                txs.append((t, lat_ms))
    txs.sort()
    return txs


def to_float(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def to_int(s):
    try:
        return int(s)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------- metrics


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list: value of rank ceil(p/100 * n), 1-based."""
    n = len(sorted_values)
    if n == 0:
        return None
    rank = max(1, math.ceil(p / 100.0 * n - 1e-9))
    return sorted_values[min(rank, n) - 1]


def longest_gap(times, w0, w1):
    """Longest interval in [w0, w1] without an element of the ascending list `times`.

    The edges count: [w0, first time] and [last time, w1]. None if the window is empty.
    """
    if w1 is None or w0 is None or w1 <= w0:
        return None
    i = bisect.bisect_left(times, w0)
    j = bisect.bisect_right(times, w1)
    prev, best = w0, 0.0
    for t in times[i:j]:
        best = max(best, t - prev)
        prev = t
    return max(best, w1 - prev)


def gaps_over(times, w0, w1, min_len):
    """[(start, end)] of the intervals in [w0, w1] longer than min_len without a time."""
    i = bisect.bisect_left(times, w0)
    j = bisect.bisect_right(times, w1)
    out, prev = [], w0
    for t in times[i:j] + [w1]:
        if t - prev > min_len:
            out.append((prev, t))
        prev = t
    return out


def select(ops, lo, hi, lo_open=False, hi_open=False):
    """Ops with lo <= t <= hi (open ends as asked); ops is sorted by time."""
    times = [t for t, _ in ops]
    i = bisect.bisect_right(times, lo) if lo_open else bisect.bisect_left(times, lo)
    j = bisect.bisect_left(times, hi) if hi_open else bisect.bisect_right(times, hi)
    return ops[i:j]


def bin_counts(times, origin, k0, k1):
    """{k: number of times in [origin + k, origin + k + 1)} for k0 <= k <= k1."""
    counts = {k: 0 for k in range(k0, k1 + 1)}
    for t in times:
        k = math.floor(t - origin)
        if k0 <= k <= k1:
            counts[k] += 1
    return counts


def phase_bounds(events):
    """(before_lo, rm_start, rm_end, window_end) or None if rm_start/rm_end are missing."""
    rs, re_ = events.get("rm_start"), events.get("rm_end")
    if rs is None or re_ is None:
        return None
    before_lo = rs - BEFORE_S
    if "victims_start" in events:
        before_lo = max(before_lo, events["victims_start"] + WARMUP_S)
    w_end = re_ + AFTER_S
    if "victims_stop" in events:
        w_end = min(w_end, events["victims_stop"])
    return before_lo, rs, re_, w_end


def latency_stats(prefix, ops, out):
    lats = sorted(l for _, l in ops)
    out[f"{prefix}_n"] = len(lats)
    out[f"{prefix}_p50_ms"] = percentile(lats, 50)
    out[f"{prefix}_p99_ms"] = percentile(lats, 99)
    out[f"{prefix}_max_ms"] = lats[-1] if lats else None


def phase_stats(prefix, ops, bounds, m):
    """Latency stats of `ops` before / during / after the removal into `m` (keys
    `<prefix>_<phase>_...`); returns the three phases' ops."""
    before_lo, rs, re_, _ = bounds
    before = select(ops, before_lo, rs, hi_open=True) if before_lo < rs else []
    during = select(ops, rs, re_)
    after = select(ops, re_, re_ + AFTER_S, lo_open=True)
    for name, part in (("before", before), ("during", during), ("after", after)):
        latency_stats(f"{prefix}_{name}", part, m)
    return before, during, after


def probe_metrics(ops, bounds):
    m = {}
    before_lo, rs, re_, w_end = bounds
    _, during, after = phase_stats("probe", ops, bounds, m)
    both = [l for _, l in during + after]
    m["probe_max_during_after_ms"] = max(both) if both else None
    # The removal and the 40 s after it: a longer, slower removal has the writeback of what it
    # dirtied inside its own "during"; a quick one has it after.
    m["probe_during_after_p99_ms"] = percentile(sorted(both), 99)
    times = [t for t, _ in ops]
    m["gap_s"] = longest_gap(times, rs, w_end)
    m["gap_base_s"] = longest_gap(times, before_lo, rs) if before_lo < rs else None
    b, d = m["probe_before_p99_ms"], m["probe_during_p99_ms"]
    m["p99_ratio"] = d / b if b and d is not None else None
    return m


def tps_ranges(bounds):
    """(before bins, during bins, during+after bins) as (k0, k1) ranges of bin indices."""
    before_lo, rs, re_, w_end = bounds
    eps = 1e-9
    kb0 = math.ceil(before_lo - rs - eps)
    before = (kb0, -1) if kb0 <= -1 else None
    nd = math.floor(re_ - rs + eps)  # bins fully inside [rm_start, rm_end]
    during = (0, max(nd, 1) - 1)
    na = math.floor(w_end - rs + eps)
    after = (0, max(na, 1) - 1)
    return before, during, after


def pg_metrics(txs, bounds):
    m = {}
    before_lo, rs, re_, w_end = bounds
    times = [t for t, _ in txs]
    rb, rd, ra = tps_ranges(bounds)
    lo = rb[0] if rb else 0
    counts = bin_counts(times, rs, min(lo, 0), max(rd[1], ra[1]))
    if rb:
        m["tps_base"] = statistics.median(counts[k] for k in range(rb[0], rb[1] + 1))
    else:
        m["tps_base"] = None
    m["tps_min_during"] = min(counts[k] for k in range(rd[0], rd[1] + 1))
    m["tps_min_after"] = min(counts[k] for k in range(ra[0], ra[1] + 1))
    _, during, after = phase_stats("pg", txs, bounds, m)
    m["pg_during_after_p99_ms"] = percentile(sorted(l for _, l in during + after), 99)
    m["pg_gap_s"] = longest_gap(times, rs, w_end)
    return m


# ---------------------------------------------------------------- runs

CSV_COLUMNS = [
    "run", "device", "fs", "workload", "method", "order", "cmd", "exit", "wall_s", "removal_s",
    "extents", "size_bytes", "probe_interval_ms",
    "probe_before_n", "probe_during_n", "probe_after_n",
    "probe_before_p50_ms", "probe_during_p50_ms", "probe_after_p50_ms",
    "probe_before_p99_ms", "probe_during_p99_ms", "probe_after_p99_ms",
    "probe_before_max_ms", "probe_during_max_ms", "probe_after_max_ms",
    "probe_max_during_after_ms", "probe_during_after_p99_ms", "gap_s", "gap_base_s", "p99_ratio",
    "tps_base", "tps_min_during", "tps_min_after",
    "pg_before_n", "pg_during_n", "pg_after_n",
    "pg_before_p50_ms", "pg_during_p50_ms", "pg_after_p50_ms",
    "pg_before_p99_ms", "pg_during_p99_ms", "pg_after_p99_ms",
    "pg_before_max_ms", "pg_during_max_ms", "pg_after_max_ms",
    "pg_during_after_p99_ms", "pg_gap_s",
]


class Run:
    def __init__(self, run_dir):
        self.dir = run_dir
        self.name = os.path.basename(run_dir.rstrip("/"))
        self.meta = dict(read_kv(os.path.join(run_dir, "meta.tsv")))
        parts = self.name.split("__")
        guess = {"fs": parts[0] if len(parts) >= 3 else "",
                 "workload": parts[1] if len(parts) >= 3 else "",
                 "method": parts[-1]}
        for key in ("fs", "workload", "method"):
            if not self.meta.get(key):
                self.meta[key] = guess[key]
        self.meta.setdefault("device", "")
        self.events = read_events(os.path.join(run_dir, "events.tsv"))
        self.bounds = phase_bounds(self.events)
        self.probe, self.probe_header = read_probe(os.path.join(run_dir, "probe.log"))
        self.pg = read_pgbench(run_dir)
        self.row = self._metrics()

    @property
    def method(self):
        return self.meta["method"]

    @property
    def group(self):
        return (self.meta["device"], self.meta["fs"], self.meta["workload"])

    def sort_key(self):
        order = to_int(self.meta.get("order"))
        return (order if order is not None else 1 << 30, self.method, self.name)

    def _metrics(self):
        row = {c: None for c in CSV_COLUMNS}
        row["run"] = self.name
        for key in ("device", "fs", "workload", "method", "order", "cmd", "exit", "extents",
                    "size_bytes"):
            row[key] = self.meta.get(key)
        row["wall_s"] = to_float(self.meta.get("wall_s"))
        row["probe_interval_ms"] = to_float(self.probe_header.get("interval_ms"))
        if self.bounds is None:
            print(f"analyze: {self.name}: events.tsv lacks rm_start/rm_end, no victim metrics",
                  file=sys.stderr)
            return row
        row["removal_s"] = self.bounds[2] - self.bounds[1]
        if self.probe is not None:
            row.update(probe_metrics(self.probe, self.bounds))
        if self.pg is not None:
            row.update(pg_metrics(self.pg, self.bounds))
        return row

    def removal_s(self):
        """Removal time for display: wall_s from meta.tsv, else rm_end - rm_start."""
        return self.row["wall_s"] if self.row["wall_s"] is not None else self.row["removal_s"]


def load_runs(lab):
    dirs = sorted(d for d in glob.glob(os.path.join(lab, "runs", "*")) if os.path.isdir(d))
    return [Run(d) for d in dirs]


def groups_of(runs):
    groups = {}
    for r in runs:
        groups.setdefault(r.group, []).append(r)
    return {g: sorted(rs, key=Run.sort_key) for g, rs in sorted(groups.items())}


# ---------------------------------------------------------------- output


def sig3(x):
    """3 significant digits, integers >= 100 kept whole; '' for None."""
    if x is None or x == "":
        return ""
    x = float(x)
    if x == 0:
        return "0"
    if math.isinf(x) or math.isnan(x):
        return str(x)
    mag = math.floor(math.log10(abs(x)))
    decimals = 2 - mag
    if decimals <= 0:
        return f"{round(x):d}"
    s = f"{x:.{decimals}f}"
    # rounding may carry (9.996 -> "10.00"): redo with one decimal less
    if len(s.replace("-", "").replace(".", "").lstrip("0")) > 3 and decimals > 0:
        s = f"{x:.{decimals - 1}f}"
    return s


def csv_value(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}" if abs(v) < 1e6 else f"{v:.6f}"
    return str(v)


def write_csv(lab, runs):
    path = os.path.join(lab, "results.csv")
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in runs:
            w.writerow([csv_value(r.row[c]) for c in CSV_COLUMNS])
    return path


def triple(row, fmt, *keys):
    vals = [row.get(k) for k in keys]
    if all(v is None for v in vals):
        return ""
    return " / ".join(fmt(v) if v is not None else "–" for v in vals)


MD_HEADER = ["method", "removal s", "probe p50 before / during / after ms",
             "probe p99 before / during / after ms", "probe max during+after ms",
             "longest gap s", "pg tps base / min during / min during+after",
             "pg p99 before / during ms"]

LEGEND = [
    "- **method**: removal method (⚠ = non-zero exit code); ordered as in the lab.",
    "- **removal s**: wall time of the removal command (`wall_s`).",
    "- **phases**: *before* = the 30 s before the removal started (not earlier than 2 s after "
    "the victims started), *during* = while it ran, *after* = the 40 s after it returned; an "
    "operation counts in the phase in which it *completed*.",
    "- **probe p50 / p99**: WAL probe (8 KiB append + fdatasync at a fixed interval) latency "
    "percentiles per phase, nearest-rank (an observed value, not interpolated).",
    "- **probe max during+after ms**: slowest probe operation completed from the removal start "
    "to 40 s after its end — includes stalls that happen after the command returned.",
    "- **longest gap s**: longest time with no probe operation completing, from removal start "
    "to 40 s after its end (normally ≈ the probe interval; in parentheses the same for the "
    "before phase when it is notably larger than the interval).",
    "- **pg tps base / min during / min during+after**: pgbench transactions completed per 1 s "
    "bin (bins aligned on the removal start): median of the before bins / minimum over the bins "
    "fully inside the removal (the first bin if it took < 1 s) / minimum over all bins from the "
    "removal start to 40 s after its end. 0 = pgbench was frozen for a whole second.",
    "- **pg p99 before / during ms**: pgbench transaction latency p99 (nearest-rank).",
    "- empty cell: that victim was not run (no log); `–`: no operation completed in that phase.",
]


def md_row(r):
    row = r.row
    method = r.method
    if row.get("exit") not in (None, "", "0"):
        method += f" ⚠ exit {row['exit']}"
    gap = sig3(row["gap_s"])
    if gap and row.get("gap_base_s") is not None and row.get("probe_interval_ms"):
        if row["gap_base_s"] > 3 * row["probe_interval_ms"] / 1000.0:
            gap += f" (base {sig3(row['gap_base_s'])})"
    tps = triple(row, sig3, "tps_base", "tps_min_during", "tps_min_after")
    return [
        method,
        sig3(r.removal_s()),
        triple(row, sig3, "probe_before_p50_ms", "probe_during_p50_ms", "probe_after_p50_ms"),
        triple(row, sig3, "probe_before_p99_ms", "probe_during_p99_ms", "probe_after_p99_ms"),
        sig3(row["probe_max_during_after_ms"]),
        gap,
        tps,
        triple(row, sig3, "pg_before_p99_ms", "pg_during_p99_ms"),
    ]


def write_md(lab, runs, lab_meta):
    lines = ["# Impact lab results", ""]
    if lab_meta:
        lines += ["| key | value |", "|---|---|"]
        lines += ["| %s | %s |" % (k, v.replace("|", "\\|")) for k, v in lab_meta]
        lines.append("")
    lines += ["## Legend", ""] + LEGEND + [""]
    for (device, fs, workload), rs in groups_of(runs).items():
        lines += [f"## {fs} · {device or '?'} · {workload}", ""]
        first = rs[0].meta
        info = [f"{k} {first[k]}" for k in ("extents", "size_bytes") if first.get(k)]
        if info:
            lines += ["Target: " + ", ".join(info) + ".", ""]
        lines.append("| " + " | ".join(MD_HEADER) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(MD_HEADER) - 1)) + "|")
        for r in rs:
            lines.append("| " + " | ".join(md_row(r)) + " |")
        lines += ["", "Commands:", ""]
        for r in rs:
            lines.append(f"- `{r.method}`: `{r.meta.get('cmd', '')}`")
        png = png_name(device, fs, workload)
        if os.path.exists(os.path.join(lab, png)):
            lines += ["", f"![timeline]({png})"]
        lines.append("")
    path = os.path.join(lab, "results.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return path


def write_index(lab, pngs):
    lines = ["# Impact lab", "", "- [results.md](results.md) · [results.csv](results.csv)", ""]
    if pngs:
        lines += ["## Timelines", ""]
        for title, png in pngs:
            lines += [f"### {title}", "", f"![{title}]({png})", ""]
    else:
        lines += ["(no timeline plots: run with matplotlib installed and without --no-plots)", ""]
    path = os.path.join(lab, "index.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return path


def safe(s):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in (s or "none"))


def png_name(device, fs, workload):
    return f"timeline-{safe(device)}-{safe(fs)}-{safe(workload)}.png"


# ---------------------------------------------------------------- plots


def plot_group(plt, lab, group, runs):
    device, fs, workload = group
    runs = [r for r in runs if r.bounds is not None]
    if not runs:
        return None
    has_pg = any(r.pg for r in runs)
    n = len(runs)
    x_hi = max(r.bounds[2] - r.bounds[1] for r in runs) + AFTER_S
    x_lo = -PLOT_PRE_S
    colors = plt.get_cmap("tab10").colors

    ratios = [3.2, 0.35 + 0.28 * n] + [1.6] * n + ([2.0] if has_pg else [])
    height = 3 + 2 * n + (2 if has_pg else 0)
    fig = plt.figure(figsize=(12, height), dpi=110)
    gs = fig.add_gridspec(len(ratios), 1, height_ratios=ratios, hspace=0.28)
    ax_top = fig.add_subplot(gs[0])
    ax_bar = fig.add_subplot(gs[1], sharex=ax_top)
    ax_m = []
    for i in range(n):
        ax_m.append(fig.add_subplot(gs[2 + i], sharex=ax_top,
                                    sharey=ax_m[0] if ax_m else None))
    ax_pg = fig.add_subplot(gs[2 + n], sharex=ax_top) if has_pg else None

    all_lat = [l for r in runs if r.probe for _, l in r.probe
               if x_lo <= _rel(r, _) <= x_hi]
    ylo = max(min(all_lat) * 0.7, 1e-3) if all_lat else 0.1
    yhi = max(all_lat) * 6.0 if all_lat else 10  # headroom for the labels

    # top: max latency per 0.5 s bin, one line per method
    nb = int(math.ceil((x_hi - x_lo) / PLOT_BIN_S))
    for i, r in enumerate(runs):
        c = colors[i % len(colors)]
        label = f"{r.method} — removal {sig3(r.removal_s())} s"
        if r.row.get("gap_s") is not None:
            label += f", longest gap {sig3(r.row['gap_s'])} s"
        if r.probe:
            bins = [None] * nb
            for t, l in r.probe:
                k = int(math.floor((_rel(r, t) - x_lo) / PLOT_BIN_S))
                if 0 <= k < nb and (bins[k] is None or l > bins[k]):
                    bins[k] = l
            xs = [x_lo + (k + 0.5) * PLOT_BIN_S for k in range(nb) if bins[k] is not None]
            ys = [b for b in bins if b is not None]
            ax_top.plot(xs, ys, color=c, lw=1.5, label=label, alpha=0.9)
        else:
            ax_top.plot([], [], color=c, label=label + " (no probe log)")
        ax_top.axvline(r.bounds[2] - r.bounds[1], color=c, ls=":", lw=1.2)
    ax_top.set_yscale("log")
    ax_top.set_ylim(ylo, yhi / 2)
    ax_top.set_ylabel("probe latency, ms\n(max per 0.5 s)")
    ax_top.legend(loc="upper right", fontsize=9, framealpha=0.9)
    ax_top.set_title(f"{fs} on {device or '?'} · workload {workload}: WAL probe "
                     f"(8 KiB append + fdatasync) latency around the removal", fontsize=12,
                     loc="left")

    # removal intervals, one lane per method
    for i, r in enumerate(runs):
        c = colors[i % len(colors)]
        d = r.bounds[2] - r.bounds[1]
        y = n - 1 - i
        ax_bar.barh(y, d, left=0, height=0.7, color=c, alpha=0.85)
        ax_bar.text(d + 0.3, y, f"{r.method} {sig3(r.removal_s())} s", va="center",
                    fontsize=8.5, color=c, fontweight="bold")
    ax_bar.set_ylim(-0.6, n - 0.4)
    ax_bar.set_yticks([])
    ax_bar.set_ylabel("removal", rotation=0, ha="right", va="center", fontsize=9)

    # small multiples: raw points
    for i, (r, ax) in enumerate(zip(runs, ax_m)):
        c = colors[i % len(colors)]
        d = r.bounds[2] - r.bounds[1]
        ax.axvspan(0, d, color=c, alpha=0.13, lw=0)
        if r.probe:
            pts = [(_rel(r, t), l) for t, l in r.probe if x_lo <= _rel(r, t) <= x_hi]
            b99 = r.row.get("probe_before_p99_ms")
            big = 10 * b99 if b99 else float("inf")  # outliers drawn larger
            small_pts = [p for p in pts if p[1] <= big]
            big_pts = [p for p in pts if p[1] > big]
            ax.scatter([p[0] for p in small_pts], [p[1] for p in small_pts], s=3, color=c,
                       alpha=0.7, lw=0, rasterized=True)
            ax.scatter([p[0] for p in big_pts], [p[1] for p in big_pts], s=22, color=c,
                       edgecolors="k", linewidths=0.5, zorder=3)
            if b99:
                ax.axhline(b99, color="0.4", ls="--", lw=0.8)
            # stalls: no probe op completed for > max(0.2 s, 10 intervals)
            interval = (r.row.get("probe_interval_ms") or 20) / 1000.0
            times = [t for t, _ in r.probe]
            lo_t = max(r.bounds[1] + x_lo, times[0]) if times else r.bounds[1]
            hi_t = min(r.bounds[1] + x_hi, times[-1]) if times else r.bounds[1]
            for g0, g1 in gaps_over(times, lo_t, hi_t, max(0.2, 10 * interval)):
                ax.axvspan(g0 - r.bounds[1], g1 - r.bounds[1], color="crimson", alpha=0.16,
                           lw=0)
                ax.text((g0 + g1) / 2 - r.bounds[1], 0.04, f"gap {sig3(g1 - g0)} s",
                        transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                        fontsize=8, color="crimson", fontweight="bold")
            for x, l in sorted(big_pts, key=lambda p: -p[1])[:6]:
                ax.annotate(f"{sig3(l)} ms", (x, l), xytext=(5, 3), textcoords="offset points",
                            fontsize=7.5, color="0.15")
        ax.set_yscale("log")
        ax.set_ylim(ylo, yhi)
        ax.set_ylabel(f"{r.method}\nms", fontsize=9)
        note = [f"removal {sig3(r.removal_s())} s"]
        if r.probe:
            note.append(f"p99 during {sig3(r.row.get('probe_during_p99_ms')) or '–'} ms")
            note.append(f"max during+after {sig3(r.row.get('probe_max_during_after_ms')) or '–'} ms")
            note.append(f"longest gap {sig3(r.row.get('gap_s'))} s")
        else:
            note.append("no probe log")
        if r.row.get("exit") not in (None, "", "0"):
            note.append(f"exit {r.row['exit']}")
        ax.set_title(f"{r.method}: " + " · ".join(note), loc="left", fontsize=9.5, pad=3,
                     color=c, fontweight="bold")

    # pgbench tps per second
    if ax_pg is not None:
        for i, r in enumerate(runs):
            c = colors[i % len(colors)]
            if not r.pg:
                continue
            k0, k1 = int(math.floor(x_lo)), int(math.ceil(x_hi)) - 1
            # only bins before pgbench was stopped (not a fake drop at the end)
            stop = r.events.get("victims_stop", r.pg[-1][0])
            k1 = min(k1, int(math.floor(min(stop, r.pg[-1][0]) - r.bounds[1])) - 1)
            counts = bin_counts([t for t, _ in r.pg], r.bounds[1], k0, k1)
            ks = sorted(counts)
            ax_pg.step([k for k in ks], [counts[k] for k in ks], where="post", color=c,
                       lw=1.5, label=f"{r.method} (base {sig3(r.row.get('tps_base'))}, "
                                     f"min {sig3(r.row.get('tps_min_after'))})")
            ax_pg.axvline(r.bounds[2] - r.bounds[1], color=c, ls=":", lw=1.2)
        ax_pg.set_ylim(bottom=0)
        ax_pg.set_title("pgbench: transactions completed per second", loc="left", fontsize=9.5,
                        pad=3)
        ax_pg.set_ylabel("pgbench tps\n(per 1 s)")
        ax_pg.legend(loc="lower right", fontsize=8.5, framealpha=0.9)

    axes = [ax_top, ax_bar] + ax_m + ([ax_pg] if ax_pg is not None else [])
    for ax in axes:
        ax.axvline(0, color="k", lw=0.9, ls="--", alpha=0.6)
        ax.grid(True, which="major", alpha=0.35)
        if ax is not ax_bar:
            ax.grid(True, which="minor", axis="y", alpha=0.12)
        if ax is not axes[-1]:
            ax.tick_params(labelbottom=False)
    ax_bar.grid(False)
    ax_bar.grid(True, axis="x", alpha=0.35)
    ax_top.set_xlim(x_lo, x_hi)
    axes[-1].set_xlabel("seconds since the removal started (dashed line); dotted: removal end; "
                        "grey dashed: probe p99 before; red: no probe op completed")
    fig.subplots_adjust(left=0.08, right=0.98, top=1 - 0.4 / height, bottom=0.5 / height)
    name = png_name(device, fs, workload)
    fig.savefig(os.path.join(lab, name))
    plt.close(fig)
    return name


def _rel(run, t):
    return t - run.bounds[1]


def make_plots(lab, runs):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("analyze: matplotlib not importable, no PNGs "
              "(python3 -m venv V && V/bin/pip install matplotlib)")
        return []
    pngs = []
    for group, rs in groups_of(runs).items():
        name = plot_group(plt, lab, group, rs)
        if name:
            device, fs, workload = group
            pngs.append((f"{fs} · {device or '?'} · {workload}", name))
    return pngs


# ---------------------------------------------------------------- main


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = [a for a in argv[1:] if a.startswith("--")]
    unknown = [f for f in flags if f != "--no-plots"]
    if len(args) != 1 or unknown:
        print("usage: analyze.py LAB [--no-plots]", file=sys.stderr)
        return 2
    lab = args[0]
    runs = load_runs(lab)
    if not runs:
        print(f"analyze: no runs in {os.path.join(lab, 'runs')}", file=sys.stderr)
        return 1
    lab_meta = read_kv(os.path.join(lab, "meta.tsv"))
    runs.sort(key=lambda r: (r.group, r.sort_key()))
    pngs = [] if "--no-plots" in flags else make_plots(lab, runs)
    written = [write_csv(lab, runs), write_md(lab, runs, lab_meta), write_index(lab, pngs)]
    if repeat.has_reps(runs):
        written += repeat.write(lab, groups_of(runs), sig3)
    written += [os.path.join(lab, p) for _, p in pngs]
    print(f"analyze: {len(runs)} runs in {len(groups_of(runs))} groups; wrote "
          + ", ".join(os.path.basename(w) for w in written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
