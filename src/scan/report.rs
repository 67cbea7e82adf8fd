//! What `reclaim scan` shows: the live progress line (stderr, terminal only), the `--json`
//! object and the human report (stdout). Formats what the walk and the estimate found;
//! computes nothing about the file system and never touches it.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use super::estimate::Calibration;
use super::histogram::{self, Bucket};
use super::tally::Counts;
use super::walk::Live;
use crate::quote::PathField;
use crate::report::{bytes, group};

/// The whole result of one `reclaim scan`; `--json` prints exactly this.
#[derive(Debug, Serialize)]
pub struct ScanReport {
    /// The PATHs, as given (lossy UTF-8).
    pub paths: Vec<String>,
    /// Totals over all PATHs.
    #[serde(flatten)]
    pub totals: Counts,
    /// Files below this many bytes count as small (`--small`).
    pub small_threshold: u64,
    /// Regular files by apparent size, each inode once; only non-empty buckets.
    pub histogram: Vec<Bucket>,
    /// Directories with the most regular files directly inside.
    pub top_by_files: Vec<TopEntry>,
    /// Directories with the most small regular files directly inside.
    pub top_by_small_files: Vec<TopEntry>,
    /// Per PATH, in the order given.
    pub roots: Vec<RootEntry>,
    /// Mount points inside that were not entered (other file systems, bind mounts).
    pub skipped_mounts: Vec<String>,
    pub errors: Vec<ErrorEntry>,
    /// `null` with `--no-estimate`.
    pub estimate: Option<Estimate>,
    pub elapsed_s: f64,
    pub threads: usize,
    /// The file system profile of the first directory (it chose the workers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::Profile>,
}

#[derive(Debug, Serialize)]
pub struct TopEntry {
    #[serde(flatten)]
    pub path: PathField,
    pub files: u64,
    pub small_files: u64,
}

#[derive(Debug, Serialize)]
pub struct RootEntry {
    #[serde(flatten)]
    pub path: PathField,
    #[serde(flatten)]
    pub counts: Counts,
}

#[derive(Debug, Serialize)]
pub struct ErrorEntry {
    #[serde(flatten)]
    pub path: PathField,
    /// What failed: "cannot open directory", "cannot read directory", "cannot stat", ...
    pub op: String,
    pub error: String,
}

/// How long `reclaim rm -r` would take for all PATHs.
#[derive(Debug, Serialize)]
pub struct Estimate {
    /// Seconds, warm cache; `null` when some file system could not be calibrated.
    pub seconds: Option<f64>,
    /// Why there is no estimate (read-only file system, no writable directory, ...).
    pub unavailable: Option<String>,
    /// One per file system calibrated.
    pub calibrations: Vec<Calibration>,
}

/// The live progress line: entries, directories, bytes, rate. Only on a terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn start() -> Self {
        if !std::io::stderr().is_terminal() {
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
                "scanning: {} files, {} dirs, {}, {}/s, {:.1} s{}",
                group(names),
                group(dirs),
                bytes(live.allocated.load(Ordering::Relaxed)),
                group(((names + dirs) as f64 / secs.max(1e-3)) as u64),
                secs,
                if errors > 0 {
                    format!(", {} errors", group(errors))
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

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// One line of counts: `1,234 files, 56 directories, 7 symlinks, 0 other`.
fn counts_line(c: &Counts) -> String {
    let mut s = format!(
        "{} files, {} directories, {} symlinks, {} other",
        group(c.files),
        group(c.dirs),
        group(c.symlinks),
        group(c.other)
    );
    if c.hard_links > 0 {
        s.push_str(&format!(
            " ({} of the files are further hard links, their bytes counted once)",
            group(c.hard_links)
        ));
    }
    s
}

/// A duration for people: `0.42 s`, `8.4 s`, `3 min 12 s`, `2 h 05 min`.
pub fn duration(secs: f64) -> String {
    if !secs.is_finite() {
        return "?".into();
    }
    if secs < 10.0 {
        format!("{secs:.2} s")
    } else if secs < 60.0 {
        format!("{secs:.1} s")
    } else if secs < 3600.0 {
        let s = secs.round() as u64;
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        let m = (secs / 60.0).round() as u64;
        format!("{} h {:02} min", m / 60, m % 60)
    }
}

/// The human report.
pub fn human(r: &ScanReport) -> String {
    let mut out = String::new();
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
        histogram::size(r.small_threshold),
        group(t.small_files),
        percent(t.small_files, t.files)
    );
    let entries = t.names() + t.dirs;
    let _ = writeln!(
        out,
        "  scanned in {} with {} threads ({} entries/s){}",
        duration(r.elapsed_s),
        r.threads,
        group((entries as f64 / r.elapsed_s.max(1e-6)) as u64),
        r.profile
            .as_ref()
            .map(|p| format!("; profile {} ({})", p.class.name(), p.fs_type))
            .unwrap_or_default()
    );

    if !r.histogram.is_empty() {
        histogram_table(&mut out, &r.histogram);
    }
    top_table(
        &mut out,
        "directories with the most files (directly inside)",
        &r.top_by_files,
        false,
    );
    top_table(
        &mut out,
        &format!(
            "directories with the most small files (< {}, directly inside)",
            histogram::size(r.small_threshold)
        ),
        &r.top_by_small_files,
        true,
    );

    if !r.skipped_mounts.is_empty() {
        let _ = writeln!(
            out,
            "\nnot entered: {} mount points of other file systems (--cross-mounts enters them)",
            r.skipped_mounts.len()
        );
        for m in &r.skipped_mounts {
            let _ = writeln!(out, "  {}", shown(m));
        }
    }
    if !r.errors.is_empty() {
        let _ = writeln!(
            out,
            "\n{} paths could not be read (listed on stderr); the totals leave them out",
            group(r.errors.len() as u64)
        );
    }
    if let Some(e) = &r.estimate {
        out.push('\n');
        out.push_str(&estimate_line(e));
        out.push('\n');
    }
    out
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
            "\n  calibrated in '{}': {} empty files, {} unlinks/s with {} workers, {}/s in one \
             directory, {} directories/s ({})",
            shown(&c.path),
            group(c.files),
            group(c.unlinks_per_s as u64),
            c.threads,
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

fn top_table(out: &mut String, title: &str, list: &[TopEntry], small_first: bool) {
    if list.is_empty() {
        return;
    }
    let (a, b) = if small_first {
        ("small", "files")
    } else {
        ("files", "small")
    };
    let w = list
        .iter()
        .map(|e| group(e.files).len())
        .max()
        .unwrap_or(0)
        .max(5);
    let _ = writeln!(out, "\n{title}");
    let _ = writeln!(out, "  {a:>w$}  {b:>w$}  directory");
    for e in list {
        let (x, y) = if small_first {
            (e.small_files, e.files)
        } else {
            (e.files, e.small_files)
        };
        let _ = writeln!(out, "  {:>w$}  {:>w$}  {}", group(x), group(y), e.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            top_by_files: vec![TopEntry {
                path: PathField::new("t/a"),
                files: 1500,
                small_files: 1400,
            }],
            top_by_small_files: vec![],
            skipped_mounts: vec!["t/m".into()],
            errors: vec![],
            estimate: Some(Estimate {
                seconds: None,
                unavailable: Some("read-only file system".into()),
                calibrations: vec![],
            }),
            elapsed_s: 0.5,
            threads: 2,
            profile: None,
        }
    }

    #[test]
    fn human_report_reads_well() {
        let h = human(&sample());
        assert!(
            h.starts_with("'t': 1,500 files, 3 directories, 1 symlinks, 0 other"),
            "{h}"
        );
        assert!(
            h.contains("small files (< 64 KiB): 1,400 (93.3% of the files)"),
            "{h}"
        );
        assert!(h.contains("  1,500  1,400  't/a'\n"), "{h}");
        assert!(h.contains("not entered: 1 mount points"), "{h}");
        assert!(
            h.contains("removal estimate: none (read-only file system)"),
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
    }

    #[test]
    fn durations() {
        assert_eq!(duration(0.421), "0.42 s");
        assert_eq!(duration(12.34), "12.3 s");
        assert_eq!(duration(192.0), "3 min 12 s");
        assert_eq!(duration(7500.0), "2 h 05 min");
    }

    #[test]
    fn control_characters_in_paths_are_escaped() {
        assert_eq!(shown("a/b c"), "a/b c");
        assert_eq!(shown("a/new\nline\t"), "a/new\\nline\\t");
    }
}
