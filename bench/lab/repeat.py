"""Repeated lab runs (`bench/lab.sh --runs R`): per method, the median and a 95% interval of
each victim metric over the repetitions, and the same paired with `rm` (the baseline method)
of the same repetition, so that drift between repetitions (the idle p99 of the emulated disk
moved 121-224 ms between single runs) cancels. Written by analyze.py as repeat.md and
repeat.csv when the runs carry a `rep` key.

The interval is Student's t on the mean (n small, no normality to speak of: read it as the
spread, not as a test); the median is what the text quotes.
"""

import csv
import math
import os
import statistics

# Student's t, two-sided 95%, by degrees of freedom (1..30); beyond: 1.96.
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
       2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
       2.060, 2.056, 2.052, 2.048, 2.045, 2.042]

BASELINE = "rm"

# (key in Run.row or a function of it, label)
METRICS = [
    ("removal", "removal s"),
    ("probe_before_p99_ms", "probe p99 idle ms"),
    ("probe_during_p99_ms", "probe p99 during ms"),
    ("p99_ratio", "probe p99 during ÷ idle"),
    ("pg_before_p99_ms", "pg p99 idle ms"),
    ("pg_during_p99_ms", "pg p99 during ms"),
    ("pg_ratio", "pg p99 during ÷ idle"),
    ("tps_min_during", "pg worst 1 s tps"),
    ("probe_during_after_p99_ms", "probe p99 during+40 s ms"),
    ("pg_during_after_p99_ms", "pg p99 during+40 s ms"),
]
# Paired with the baseline of the same repetition: method ÷ rm.
PAIRED = [
    ("removal", "time ÷ rm"),
    ("probe_during_p99_ms", "probe p99 ÷ rm's"),
    ("pg_during_p99_ms", "pg p99 ÷ rm's"),
    ("probe_during_after_p99_ms", "probe p99 during+40 s ÷ rm's"),
    ("pg_during_after_p99_ms", "pg p99 during+40 s ÷ rm's"),
]


def value(run, key):
    row = run.row
    if key == "removal":
        return run.removal_s()
    if key == "pg_ratio":
        b, d = row.get("pg_before_p99_ms"), row.get("pg_during_p99_ms")
        return d / b if b and d is not None else None
    v = row.get(key)
    return float(v) if v is not None else None


def summary(xs):
    """(n, median, mean, half-width of the 95% t interval) of the non-None values."""
    xs = [x for x in xs if x is not None]
    n = len(xs)
    if n == 0:
        return (0, None, None, None)
    mean = statistics.fmean(xs)
    if n == 1:
        return (1, xs[0], mean, None)
    t = T95[n - 2] if n - 2 < len(T95) else 1.96
    return (n, statistics.median(xs), mean, t * statistics.stdev(xs) / math.sqrt(n))


def fmt(s, digits):
    n, med, mean, half = s
    if n == 0:
        return "–"
    if half is None:
        return f"{med:.{digits}f} (n=1)"
    return f"{med:.{digits}f} [{mean - half:.{digits}f}, {mean + half:.{digits}f}]"


def has_reps(runs):
    return any(r.meta.get("rep") not in (None, "", "1") for r in runs)


def write(lab, groups, sig3):
    """groups: {(device, fs, workload): [Run]}. Returns the paths written."""
    lines = ["# Impact lab: repeated runs", "",
             "Per method: median over the repetitions [95% interval of the mean, Student's t]. "
             "Paired: each repetition's value divided by `rm`'s in the same repetition "
             "(same golden image, same minutes), then summarized the same way. "
             "Idle = the before phase of the same run.", ""]
    rows = []
    for (device, fs, workload), rs in groups.items():
        methods = []
        for r in rs:
            if r.method not in methods:
                methods.append(r.method)
        by = {m: [r for r in rs if r.method == m] for m in methods}
        base = {r.meta.get("rep"): r for r in by.get(BASELINE, [])}
        lines += [f"## {fs} · {device or '?'} · {workload}", ""]
        head = ["method", "n"] + [label for _, label in METRICS]
        if base:
            head += [label for _, label in PAIRED]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        for m in methods:
            cells = [m, str(len(by[m]))]
            rec = {"device": device, "fs": fs, "workload": workload, "method": m,
                   "n": len(by[m])}
            for key, label in METRICS:
                s = summary(value(r, key) for r in by[m])
                digits = 2 if "÷" in label or key == "removal" else 0
                cells.append(fmt(s, digits))
                rec[key + "_median"], rec[key + "_ci_half"] = s[1], s[3]
            if base:
                for key, label in PAIRED:
                    ratios = []
                    for r in by[m]:
                        b = base.get(r.meta.get("rep"))
                        a, c = value(r, key), value(b, key) if b else None
                        ratios.append(a / c if a is not None and c else None)
                    s = summary(ratios)
                    cells.append(fmt(s, 2))
                    rec["paired_" + key + "_median"], rec["paired_" + key + "_ci_half"] = s[1], s[3]
            lines.append("| " + " | ".join(cells) + " |")
            rows.append(rec)
        lines += ["", "Runs (removal s; probe p99 during ms; pg p99 during ms), by repetition:", ""]
        for m in methods:
            per = sorted(by[m], key=lambda r: int(r.meta.get("rep") or 0))
            lines.append(f"- `{m}`: " + "; ".join(
                f"r{r.meta.get('rep')}: {sig3(r.removal_s())} s, {sig3(r.row.get('probe_during_p99_ms'))}, "
                f"{sig3(r.row.get('pg_during_p99_ms'))}" for r in per))
        lines.append("")
    md = os.path.join(lab, "repeat.md")
    with open(md, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    out = os.path.join(lab, "repeat.csv")
    keys = []
    for rec in rows:
        keys += [k for k in rec if k not in keys]
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for rec in rows:
            w.writerow({k: ("" if v is None else v) for k, v in rec.items()})
    return [md, out]
