//! What `reclaim scan` shows: the live progress line (stderr, terminal only) and the human
//! report (stdout). Formats what the walk and the estimate found (`engine::scan::report`);
//! computes nothing about the file system and never touches it.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::scan::histogram::{self, Bucket};
use crate::engine::scan::report::{Estimate, ScanReport, TopEntry};
use crate::engine::scan::tally::Counts;
use crate::engine::scan::walk::Live;
use crate::sys::format::{bytes, duration, group, percent, plural, size};

/// The live progress line: entries, directories, bytes, rate. Only on a terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn start() -> Self {
        // Under MPI only rank 0 shows progress.
        if !std::io::stderr().is_terminal() || !crate::engine::spread::leads() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}").expect("static progress template"),
        );
        Progress { bar: Some(bar) }
    }

    /// Prints a line above the progress line (or plainly without one).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// Shows `msg` (calibration).
    pub fn message(&self, msg: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(msg.to_string());
            bar.tick();
        }
    }

    /// Redraws from `live` until `done` is set; call from a scoped thread.
    pub fn tick_until(&self, live: &Live, started: Instant, done: &AtomicBool) {
        let Some(bar) = &self.bar else { return };
        while !done.load(Ordering::Relaxed) {
            let names = live.names.load(Ordering::Relaxed);
            let dirs = live.dirs.load(Ordering::Relaxed);
            let secs = started.elapsed().as_secs_f64();
            let errors = live.errors.load(Ordering::Relaxed);
            bar.set_message(format!(
                "scanning: {}, {}, {}, {} entries/s, {}{}",
                plural(names, "entry", "entries"),
                plural(dirs, "directory", "directories"),
                bytes(live.allocated.load(Ordering::Relaxed)),
                group(((names + dirs) as f64 / secs.max(1e-3)) as u64),
                duration(secs),
                if errors > 0 {
                    format!(", {}", plural(errors, "error", "errors"))
                } else {
                    String::new()
                }
            ));
            bar.tick();
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl crate::engine::scan::Events for Progress {
    fn error(&self, e: &crate::engine::scan::walk::ScanError) {
        self.println(&format!("reclaim: {e}"));
    }
    fn warning(&self, what: &dyn std::fmt::Display) {
        self.println(&format!("reclaim: {what}"));
    }
    fn walking(&self, live: &Live, started: Instant, done: &AtomicBool) {
        self.tick_until(live, started, done);
    }
    fn calibrating(&self, place: &std::path::Path) {
        self.message(&format!(
            "calibrating the removal estimate in {}",
            crate::sys::quote::quote(place)
        ));
    }
}

/// A path for the human report: control characters (a newline in a name) escaped, so every
/// entry stays on its line.
fn shown(path: &str) -> String {
    if !path.chars().any(char::is_control) {
        return path.to_string();
    }
    path.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// One line of counts: `1,234 files, 56 directories, 1 symlink, 0 other`.
fn counts_line(c: &Counts) -> String {
    let mut s = format!(
        "{}, {}, {}, {} other",
        plural(c.files, "file", "files"),
        plural(c.dirs, "directory", "directories"),
        plural(c.symlinks, "symlink", "symlinks"),
        group(c.other)
    );
    if c.hard_links == 1 {
        s.push_str(" (1 of the files is a further hard link, its bytes counted once)");
    } else if c.hard_links > 1 {
        s.push_str(&format!(
            " ({} of the files are further hard links, their bytes counted once)",
            group(c.hard_links)
        ));
    }
    s
}

/// The human report.
pub fn human(r: &ScanReport) -> String {
    let mut out = String::new();
    totals(&mut out, r);

    if !r.histogram.is_empty() {
        histogram_table(&mut out, &r.histogram);
    }
    largest_table(&mut out, r);
    let of = &r.listed_of;
    top_table(
        &mut out,
        "directories with the most allocated bytes (with everything below them, as du -x)",
        ["allocated", "files"],
        (&r.top_by_allocated_bytes, of.top_by_allocated_bytes),
        |e| [bytes(e.tree_allocated_bytes), group(e.tree_files)],
    );
    top_table(
        &mut out,
        "directories with the most files (directly inside)",
        ["files", "small"],
        (&r.top_by_files, of.top_by_files),
        |e| [group(e.files), group(e.small_files)],
    );
    top_table(
        &mut out,
        &format!(
            "directories with the most small files (< {}, directly inside)",
            size(r.small_threshold)
        ),
        ["small", "files"],
        (&r.top_by_small_files, of.top_by_small_files),
        |e| [group(e.small_files), group(e.files)],
    );

    pack_table(&mut out, r);

    if !r.skipped_mounts.is_empty() {
        let n = r.skipped_mounts.len() as u64;
        let _ = writeln!(
            out,
            "\nnot entered: {} (--cross-mounts enters them)",
            plural(
                n,
                "mount point of another file system",
                "mount points of other file systems"
            )
        );
        for m in &r.skipped_mounts {
            let _ = writeln!(out, "  {}", shown(m));
        }
    }
    if !r.errors.is_empty() {
        let n = r.errors.len() as u64;
        let _ = writeln!(
            out,
            "\n{} (listed on stderr); the totals leave {}",
            plural(n, "path could not be read", "paths could not be read"),
            if n == 1 { "it out" } else { "them out" }
        );
    }
    if let Some(e) = &r.estimate {
        out.push('\n');
        out.push_str(&estimate_line(e));
        out.push('\n');
    }
    out
}

/// The counts per PATH and in total, the small files, what was excluded, how long it took.
fn totals(out: &mut String, r: &ScanReport) {
    let t = &r.totals;
    for root in &r.roots {
        let _ = writeln!(out, "{}: {}", root.path, counts_line(&root.counts));
        if r.roots.len() > 1 {
            let _ = writeln!(
                out,
                "  allocated {}, apparent {}",
                bytes(root.counts.allocated_bytes),
                bytes(root.counts.apparent_bytes)
            );
        }
    }
    if r.roots.len() > 1 {
        let _ = writeln!(out, "total: {}", counts_line(t));
    }
    let _ = writeln!(
        out,
        "  allocated {} ({} bytes), apparent {}",
        bytes(t.allocated_bytes),
        group(t.allocated_bytes),
        bytes(t.apparent_bytes)
    );
    let _ = writeln!(
        out,
        "  small files (< {}): {} ({} of the files)",
        size(r.small_threshold),
        group(t.small_files),
        percent(t.small_files, t.files)
    );
    if !r.exclude.is_empty() {
        let globs: Vec<String> = r
            .exclude
            .iter()
            .map(|g| crate::sys::quote::quote(std::path::Path::new(g)))
            .collect();
        let _ = writeln!(
            out,
            "  excluded (--exclude {}): {}, neither counted nor descended into",
            globs.join(" "),
            plural(t.excluded, "entry", "entries")
        );
    }
    let entries = t.names() + t.dirs;
    let _ = writeln!(
        out,
        "  scanned in {} with {} ({} entries/s){}",
        duration(r.elapsed_s),
        plural(r.threads as u64, "thread", "threads"),
        group((entries as f64 / r.elapsed_s.max(1e-6)) as u64),
        r.profile
            .as_ref()
            .map(|p| format!("; profile {} ({})", p.class.name(), p.fs_type))
            .unwrap_or_default()
    );
}

fn estimate_line(e: &Estimate) -> String {
    let Some(secs) = e.seconds else {
        return format!(
            "removal estimate: none ({})",
            e.unavailable.as_deref().unwrap_or("not calibrated")
        );
    };
    let mut s = format!(
        "removal estimate: `reclaim rm -r` would take about {} here (warm cache; cold \
         caches take longer)",
        duration(secs)
    );
    for c in &e.calibrations {
        let _ = write!(
            s,
            "\n  calibrated in {}{}: {}, {} unlinks/s with {}, {} unlinks/s in one \
             directory, {} directories/s ({})",
            crate::sys::quote::quote(std::path::Path::new(&c.path)),
            c.place.map(|p| format!(" ({p})")).unwrap_or_default(),
            plural(c.files, "empty file", "empty files"),
            group(c.unlinks_per_s as u64),
            plural(c.threads as u64, "worker", "workers"),
            group(c.unlinks_per_s_one_dir as u64),
            group(c.dirs_per_s as u64),
            duration(c.took_s)
        );
    }
    s
}

fn histogram_table(out: &mut String, buckets: &[Bucket]) {
    const BAR: usize = 30;
    let labels: Vec<String> = buckets.iter().map(histogram::label).collect();
    let files: u64 = buckets.iter().map(|b| b.files).sum();
    let most = buckets.iter().map(|b| b.files).max().unwrap_or(0).max(1);
    let lw = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let cw = buckets
        .iter()
        .map(|b| group(b.files).len())
        .max()
        .unwrap_or(0)
        .max(5);
    let _ = writeln!(out, "\nfile sizes (each file once)");
    let _ = writeln!(
        out,
        "  {:<lw$}  {:>cw$}  {:>6}  {:>10}  {:>10}",
        "size", "files", "share", "apparent", "allocated"
    );
    for (b, label) in buckets.iter().zip(&labels) {
        let bar = ((b.files as f64 / most as f64) * BAR as f64).ceil() as usize;
        let _ = writeln!(
            out,
            "  {:<lw$}  {:>cw$}  {:>6}  {:>10}  {:>10}  {}",
            label,
            group(b.files),
            percent(b.files, files),
            bytes(b.apparent_bytes),
            bytes(b.allocated_bytes),
            "#".repeat(bar)
        );
    }
}

/// The line after a list cut at `--top`: how many more there are (nothing when none).
fn more(out: &mut String, shown: usize, total: u64, what: (&str, &str)) {
    let more = total.saturating_sub(shown as u64);
    if more > 0 {
        let _ = writeln!(
            out,
            "  ... and {} more {} (--top N lists more)",
            group(more),
            if more == 1 { what.0 } else { what.1 }
        );
    }
}

/// The largest files, each inode once: allocated, apparent, path; then how many more.
fn largest_table(out: &mut String, r: &ScanReport) {
    if r.largest_files.is_empty() {
        return;
    }
    let rows: Vec<[String; 2]> = r
        .largest_files
        .iter()
        .map(|f| [bytes(f.allocated_bytes), bytes(f.apparent_bytes)])
        .collect();
    let w0 = rows.iter().map(|x| x[0].len()).max().unwrap_or(0).max(9);
    let w1 = rows.iter().map(|x| x[1].len()).max().unwrap_or(0).max(8);
    let _ = writeln!(out, "\nlargest files (by allocated bytes, each file once)");
    let _ = writeln!(out, "  {:>w0$}  {:>w1$}  file", "allocated", "apparent");
    for (f, [a, b]) in r.largest_files.iter().zip(&rows) {
        let _ = writeln!(out, "  {a:>w0$}  {b:>w1$}  {}", f.path);
    }
    more(
        out,
        r.largest_files.len(),
        r.listed_of.largest_files,
        ("file", "files"),
    );
}

/// Pack candidates: files -> 1, what it saves, the command.
fn pack_table(out: &mut String, r: &ScanReport) {
    if r.pack_candidates.is_empty() {
        return;
    }
    let rule = &r.pack_rule;
    let _ = writeln!(
        out,
        "\npack candidates (at least {} files, nine in ten small, none {} in {} days): each becomes one file",
        group(rule.min_files),
        if rule.time == "atime" { "read" } else { "modified" },
        rule.age_days
    );
    for c in &r.pack_candidates {
        let _ = writeln!(
            out,
            "  {} files -> 1, saves at least {} of {}: {}",
            group(c.files),
            bytes(c.saves_bytes),
            bytes(c.tree_allocated_bytes),
            c.command
        );
    }
    more(
        out,
        r.pack_candidates.len(),
        r.listed_of.pack_candidates,
        ("candidate", "candidates"),
    );
}

/// A top list: two number columns (`head`), then the directory.
fn top_table(
    out: &mut String,
    title: &str,
    head: [&str; 2],
    (list, of): (&[TopEntry], u64),
    cells: impl Fn(&TopEntry) -> [String; 2],
) {
    if list.is_empty() {
        return;
    }
    let rows: Vec<[String; 2]> = list.iter().map(&cells).collect();
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].len())
            .chain([head[i].len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1) = (width(0).max(5), width(1).max(5));
    let _ = writeln!(out, "\n{title}");
    let _ = writeln!(out, "  {:>w0$}  {:>w1$}  directory", head[0], head[1]);
    for (e, [x, y]) in list.iter().zip(&rows) {
        let _ = writeln!(out, "  {x:>w0$}  {y:>w1$}  {}", e.path);
    }
    more(out, list.len(), of, ("directory", "directories"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scan::estimate::Calibration;
    use crate::engine::scan::report::{
        ErrorEntry, FileEntry, ListedOf, NotEstimated, PackEntry, PackRule, RootEntry,
    };
    use crate::sys::quote::PathField;

    fn sample() -> ScanReport {
        let totals = Counts {
            files: 1500,
            dirs: 3,
            symlinks: 1,
            small_files: 1400,
            allocated_bytes: 8192,
            apparent_bytes: 100,
            hard_links: 2,
            ..Counts::default()
        };
        ScanReport {
            paths: vec!["t".into()],
            roots: vec![RootEntry {
                path: PathField::new("t"),
                counts: totals.clone(),
            }],
            totals,
            small_threshold: 65536,
            histogram: vec![Bucket {
                min: 0,
                max: 0,
                files: 1498,
                apparent_bytes: 0,
                allocated_bytes: 0,
            }],
            exclude: vec!["*.o".into()],
            top_by_allocated_bytes: vec![TopEntry {
                path: PathField::new("t"),
                tree_allocated_bytes: 8192,
                tree_files: 1500,
                files: 0,
                small_files: 0,
            }],
            top_by_files: vec![TopEntry {
                path: PathField::new("t/a"),
                tree_allocated_bytes: 4096,
                tree_files: 1500,
                files: 1500,
                small_files: 1400,
            }],
            top_by_small_files: vec![],
            largest_files: vec![FileEntry {
                path: PathField::new("t/a/big.tar"),
                allocated_bytes: 3 << 30,
                apparent_bytes: 3 << 30,
            }],
            listed_of: ListedOf {
                top_by_allocated_bytes: 3,
                top_by_files: 1,
                top_by_small_files: 0,
                largest_files: 1500,
                pack_candidates: 4,
            },
            pack_candidates: vec![PackEntry {
                path: PathField::new("t/a"),
                files: 1500,
                small_files: 1400,
                tree_allocated_bytes: 6_144_000,
                apparent_bytes: 150_000,
                saves_bytes: 5_994_000,
                newest: 1_700_000_000,
                command: "reclaim pack 't/a'".into(),
            }],
            pack_rule: PackRule {
                age_days: 30,
                time: "mtime",
                min_files: 1000,
            },
            skipped_mounts: vec!["t/m".into()],
            errors: vec![],
            estimate: Some(Estimate {
                seconds: None,
                unavailable: Some("read-only file system".into()),
                not_estimated: vec![NotEstimated {
                    path: PathField::new("t"),
                    reason: "read-only",
                    detail: "read-only file system".into(),
                }],
                calibrations: vec![],
                warnings: vec![],
            }),
            elapsed_s: 0.5,
            threads: 2,
            profile: None,
            ranks: Vec::new(),
        }
    }

    #[test]
    fn pack_candidates_read_with_their_command() {
        let h = human(&sample());
        assert!(
            h.contains("\npack candidates (at least 1,000 files, nine in ten small, none modified in 30 days): each becomes one file\n  1,500 files -> 1, saves at least 5.7 MiB of 5.9 MiB: reclaim pack 't/a'\n  ... and 3 more candidates (--top N lists more)\n"),
            "{h}"
        );
    }

    /// The largest files are listed, and every list cut at `--top` says how many more.
    #[test]
    fn the_largest_files_and_how_many_more_each_list_holds() {
        let h = human(&sample());
        assert!(
            h.contains("\nlargest files (by allocated bytes, each file once)\n  allocated  apparent  file\n    3.0 GiB   3.0 GiB  't/a/big.tar'\n  ... and 1,499 more files (--top N lists more)\n"),
            "{h}"
        );
        assert!(
            h.contains("  ... and 2 more directories (--top N lists more)\n"),
            "{h}"
        );
        // A list that holds all it was chosen from says nothing more.
        assert_eq!(h.matches("more directories").count(), 1, "{h}");
    }

    #[test]
    fn human_report_reads_well() {
        let h = human(&sample());
        assert!(
            h.starts_with(
                "'t': 1,500 files, 3 directories, 1 symlink, 0 other (2 of the files are further \
                 hard links"
            ),
            "{h}"
        );
        assert!(
            h.contains("excluded (--exclude '*.o'): 0 entries, neither"),
            "{h}"
        );
        assert!(h.contains("with 2 threads"), "{h}");
        assert!(
            h.contains("allocated  files  directory\n    8.0 KiB  1,500  't'\n"),
            "{h}"
        );
        assert!(
            h.contains("small files (< 64 KiB): 1,400 (93.3% of the files)"),
            "{h}"
        );
        assert!(h.contains("  1,500  1,400  't/a'\n"), "{h}");
        assert!(
            h.contains("not entered: 1 mount point of another file system"),
            "{h}"
        );
        assert!(
            h.contains("removal estimate: none (read-only file system)"),
            "{h}"
        );
    }

    #[test]
    fn one_of_a_kind_is_singular() {
        let mut r = sample();
        r.totals.hard_links = 1;
        r.roots[0].counts = Counts {
            files: 1,
            dirs: 1,
            hard_links: 1,
            ..Counts::default()
        };
        r.threads = 1;
        r.errors = vec![ErrorEntry {
            path: PathField::new("t/x"),
            op: "cannot stat".into(),
            error: "Permission denied".into(),
        }];
        r.estimate = Some(Estimate {
            seconds: Some(0.5),
            unavailable: None,
            not_estimated: vec![],
            calibrations: vec![Calibration {
                path: "/".into(),
                place: Some(crate::engine::scan::estimate::PlaceKind::MountTop),
                threads: 1,
                files: 1,
                unlinks_per_s: 10.0,
                unlinks_per_s_one_dir: 10.0,
                dirs_per_s: 1.0,
                took_s: 0.1,
            }],
            warnings: vec![],
        });
        let h = human(&r);
        assert!(h.starts_with("'t': 1 file, 1 directory, 0 symlinks"), "{h}");
        assert!(h.contains("is a further hard link, its bytes"), "{h}");
        assert!(h.contains("with 1 thread ("), "{h}");
        assert!(
            h.contains("1 path could not be read (listed on stderr); the totals leave it out"),
            "{h}"
        );
        assert!(
            h.contains(
                "calibrated in '/' (the mount top): 1 empty file, 10 unlinks/s with 1 worker,"
            ),
            "{h}"
        );
    }

    #[test]
    fn json_has_flat_totals() {
        let v = serde_json::to_value(sample()).unwrap();
        assert_eq!(v["files"], 1500);
        assert_eq!(v["roots"][0]["files"], 1500);
        assert!(v.get("big_dir_names").is_none());
        assert_eq!(v["estimate"]["seconds"], serde_json::Value::Null);
        assert_eq!(v["estimate"]["not_estimated"][0]["reason"], "read-only");
        assert_eq!(v["estimate"]["not_estimated"][0]["path"], "t");
        assert_eq!(v["excluded"], 0);
        assert_eq!(v["exclude"][0], "*.o");
        assert_eq!(v["top_by_allocated_bytes"][0]["tree_allocated_bytes"], 8192);
        assert_eq!(v["top_by_files"][0]["tree_files"], 1500);
    }

    #[test]
    fn control_characters_in_paths_are_escaped() {
        assert_eq!(shown("a/b c"), "a/b c");
        assert_eq!(shown("a/new\nline\t"), "a/new\\nline\\t");
    }
}
