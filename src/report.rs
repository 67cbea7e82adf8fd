//! What the user sees: the live progress line (TTY only, stderr), per-entry `-v` lines, error
//! lines as they happen, the closing summary and the `--json` object. Computes nothing about
//! removal itself.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::error::Failure;
pub use crate::format::plural;
use crate::format::{bytes, eta, group, local_time, seconds};
use crate::quote::{quote, PathField};
use crate::remove::{Counters, Sink};

/// The final account of one `reclaim rm` run; `--json` prints exactly this.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub files: u64,
    pub dirs: u64,
    pub bytes_freed: u64,
    pub elapsed_s: f64,
    pub files_per_s: f64,
    pub errors: Vec<ErrorEntry>,
    pub skipped_mounts: Vec<String>,
    pub dry_run: bool,
    /// Large files freed gently (shrunk in paced steps), with what it cost other I/O.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gentle: Vec<Gentle>,
    /// How tree removal was paced (probe latency before vs during, back-offs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace: Option<crate::pace::PaceReport>,
    /// Targets hidden into a trash (`--background`, `--wait`; empty otherwise).
    pub hidden: Vec<crate::trash::hide::Hidden>,
    /// Targets that could not go to a trash and were removed in the foreground.
    pub fallback: Vec<String>,
    /// The signal that stopped the run before the end, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<i32>,
    /// The file system profile the trees were removed with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::Profile>,
    /// The workers the trees were removed with, and why (measured or `--threads`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<crate::pace::concurrency::Report>,
    /// Under MPI: what each rank did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<crate::spread::Rank>,
}

/// One large file freed by the shrinker.
#[derive(Debug, Serialize, serde::Deserialize)]
pub struct Gentle {
    #[serde(flatten)]
    pub path: PathField,
    pub elapsed_s: f64,
    #[serde(flatten)]
    pub outcome: crate::shrink::Outcome,
}

impl Gentle {
    /// One line: how it went and what it cost the others.
    pub fn human(&self) -> String {
        let o = &self.outcome;
        let mut s = format!(
            "{}: {} in {}",
            self.path,
            bytes(o.allocated),
            seconds(self.elapsed_s)
        );
        if o.resumed {
            s.push_str(" (finished an interrupted removal)");
        }
        if let Some(why) = &o.unlinked_whole {
            s.push_str(&format!(", unlinked whole: {why}"));
            return s;
        }
        if o.steps == 0 {
            s.push_str(", unlinked at once (cheap to free)");
            return s;
        }
        s.push_str(&format!(", {} steps", o.steps));
        if let Some(p) = &o.pace {
            s.push_str("; ");
            s.push_str(&p.human());
        }
        if let Some(why) = &o.stopped {
            s.push_str(&format!("; {why}"));
        }
        s
    }
}

/// A path that failed, and why (`"path"`, `"path_hex"` when not UTF-8, `"error"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ErrorEntry {
    #[serde(flatten)]
    pub path: PathField,
    pub error: String,
}

impl ErrorEntry {
    pub fn new(path: impl AsRef<std::ffi::OsStr>, error: impl Into<String>) -> Self {
        ErrorEntry {
            path: PathField::new(path),
            error: error.into(),
        }
    }
}

impl std::fmt::Display for ErrorEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.error)
    }
}

impl Summary {
    pub fn new(
        counters: &Counters,
        bytes_freed: u64,
        elapsed: Duration,
        failures: &[Failure],
        skipped_mounts: &[std::path::PathBuf],
        dry_run: bool,
        gentle: Vec<Gentle>,
    ) -> Self {
        let files = counters.files.load(Ordering::Relaxed);
        let secs = elapsed.as_secs_f64();
        Summary {
            files,
            dirs: counters.dirs.load(Ordering::Relaxed),
            bytes_freed,
            elapsed_s: secs,
            files_per_s: if secs > 0.0 { files as f64 / secs } else { 0.0 },
            errors: failures
                .iter()
                .map(|f| ErrorEntry::new(&f.path, f.reason.to_string()))
                .collect(),
            skipped_mounts: skipped_mounts
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
            dry_run,
            gentle,
            pace: None,
            hidden: Vec::new(),
            fallback: Vec::new(),
            interrupted: None,
            profile: None,
            concurrency: None,
            ranks: Vec::new(),
        }
    }

    /// What `--background` did: one line, then each hidden path with its entry ID, and the
    /// exact `reclaim restore` command for an entry a grace window keeps restorable (without
    /// one a reaper may free it at once: no undo is promised).
    pub fn human_hidden(&self) -> String {
        let mut trashes: Vec<String> = Vec::new();
        for h in &self.hidden {
            let t = quote(Path::new(&h.trash));
            if !trashes.contains(&t) {
                trashes.push(t);
            }
        }
        let mut s = format!(
            "hid {} in {:.1} ms into {}; the space is freed in the background \
             (`reclaim status` shows it)",
            plural(self.hidden.len() as u64, "path", "paths"),
            self.elapsed_s * 1e3,
            trashes.join(", ")
        );
        for h in &self.hidden {
            s.push_str(&format!("\n  {}: entry {}", h.path, h.id));
            if let Some(until) = h.restorable_until_unix {
                s.push_str(&format!(
                    "; `reclaim restore {}` undoes it until {}",
                    h.id,
                    local_time(until)
                ));
            }
        }
        s
    }

    /// One human paragraph.
    pub fn human(&self) -> String {
        let verb = if self.dry_run {
            "would remove"
        } else {
            "removed"
        };
        let freed = if self.dry_run { "to free" } else { "freed" };
        let mut s = format!(
            "{verb} {} and {}, {} {freed}, in {}",
            plural(self.files, "file", "files"),
            plural(self.dirs, "directory", "directories"),
            bytes(self.bytes_freed),
            seconds(self.elapsed_s),
        );
        // A rate says something about many files, not about one.
        if self.files >= 100 {
            s.push_str(&format!(" ({} files/s)", group(self.files_per_s as u64)));
        }
        if !self.errors.is_empty() {
            let n = self.errors.len() as u64;
            s.push_str(&format!("; {} not removed", plural(n, "path", "paths")));
        }
        if let Some(p) = &self.profile {
            s.push_str("\n  profile: ");
            s.push_str(&p.human());
        }
        if let Some(c) = &self.concurrency {
            s.push_str("\n  concurrency: ");
            s.push_str(&c.human());
        }
        if !self.ranks.is_empty() {
            s.push_str("\n  ");
            s.push_str(&crate::spread::ranks_line(&self.ranks));
        }
        if let Some(p) = self.pace.as_ref().filter(|p| p.windows > 0) {
            s.push_str("\n  governed: ");
            s.push_str(&p.human());
        }
        for g in &self.gentle {
            s.push_str("\n  gently: ");
            s.push_str(&g.human());
        }
        s
    }
}

/// Prints `-v` lines on stdout and error lines on stderr as they happen.
pub struct Printer {
    verbose: bool,
    dry_run: bool,
    out: Mutex<std::io::BufWriter<Box<dyn Write + Send>>>,
    progress: Option<ProgressBar>,
}

impl Printer {
    /// `-v` lines go to stdout, or to stderr when stdout carries the JSON object.
    pub fn new(verbose: bool, dry_run: bool, json: bool, progress: Option<ProgressBar>) -> Self {
        let out: Box<dyn Write + Send> = if json {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::stdout())
        };
        Printer {
            verbose,
            dry_run,
            out: Mutex::new(std::io::BufWriter::new(out)),
            progress,
        }
    }

    /// A line on the `-v` stream.
    pub fn note(&self, line: &str) {
        let mut out = self.out.lock().expect("stdout lock");
        let _ = writeln!(out, "{line}");
    }

    pub fn flush(&self) {
        let _ = self.out.lock().expect("stdout lock").flush();
    }

    /// An error line, printed above the progress line if there is one.
    pub fn error_line(&self, line: &str) {
        let line = format!("reclaim: {line}");
        match &self.progress {
            Some(pb) => pb.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }
}

impl Sink for Printer {
    fn wants_removed(&self) -> bool {
        self.verbose
    }

    fn removed(&self, path: &Path, dir: bool) {
        let what = match (self.dry_run, dir) {
            (false, false) => "removed",
            (false, true) => "removed directory",
            (true, false) => "would remove",
            (true, true) => "would remove directory",
        };
        let mut out = self.out.lock().expect("stdout lock");
        let _ = writeln!(out, "{what} {}", quote(path));
    }

    fn failed(&self, failure: &Failure) {
        self.error_line(&failure.to_string());
    }
}

/// The progress message of a reaper at work (`total` 0: not known, as for trees).
pub fn freeing(what: &str, freed: u64, total: u64) -> String {
    if total == 0 {
        format!("freeing {}: {} freed so far", quote(what), bytes(freed))
    } else {
        format!(
            "freeing {}: {} of {}",
            quote(what),
            bytes(freed),
            bytes(total)
        )
    }
}

/// The progress line of a tree (or any entry) being freed: against its recorded size and
/// file count when known (`status --count` and `prune` record them), with an ETA from the
/// better known of the two fractions; otherwise what was freed so far.
pub fn freeing_tree(
    what: &str,
    freed: u64,
    total: u64,
    files: u64,
    total_files: u64,
    secs: f64,
) -> String {
    let mut parts = Vec::new();
    if total_files > 0 {
        parts.push(format!(
            "{} of {} files",
            group(files.min(total_files)),
            group(total_files)
        ));
    } else if files > 0 {
        parts.push(plural(files, "file", "files"));
    }
    if total > 0 {
        parts.push(format!("{} of {}", bytes(freed.min(total)), bytes(total)));
    } else {
        parts.push(format!("{} freed so far", bytes(freed)));
    }
    // The fraction done: files are the better measure for trees (directories' space comes
    // back late), bytes for a file.
    let done = if total_files > 0 {
        Some(files as f64 / total_files as f64)
    } else if total > 0 {
        Some(freed as f64 / total as f64)
    } else {
        None
    };
    if let Some(f) = done.filter(|f| *f > 0.01 && *f < 1.0 && secs > 1.0) {
        parts.push(eta(Some(secs * (1.0 - f) / f)));
    }
    format!("freeing {}: {}", quote(what), parts.join(", "))
}

/// The live progress line: a spinner with files removed, rate and elapsed time, redrawn from
/// the counters by a ticker. Only on a terminal; hidden otherwise.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn start(enabled: bool) -> Self {
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}").expect("static progress template"),
        );
        Progress { bar: Some(bar) }
    }

    pub fn bar(&self) -> Option<ProgressBar> {
        self.bar.clone()
    }

    /// Redraws from the counters until `done` is set; call from a scoped thread.
    pub fn tick_until(
        &self,
        counters: &Counters,
        started: Instant,
        done: &std::sync::atomic::AtomicBool,
    ) {
        let Some(bar) = &self.bar else { return };
        while !done.load(Ordering::Relaxed) {
            let files = counters.files.load(Ordering::Relaxed);
            let secs = started.elapsed().as_secs_f64();
            bar.set_message(format!(
                "{}, {} removed, {} files/s, {:.1} s",
                plural(files, "file", "files"),
                plural(
                    counters.dirs.load(Ordering::Relaxed),
                    "directory",
                    "directories"
                ),
                group((files as f64 / secs.max(1e-3)) as u64),
                secs
            ));
            bar.tick();
            std::thread::sleep(Duration::from_millis(100));
        }
        bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn freeing_lines_have_totals_and_an_eta_when_known() {
        use super::freeing_tree;
        assert_eq!(
            freeing_tree("t", 1 << 30, 4 << 30, 25_000, 100_000, 10.0),
            "freeing 't': 25,000 of 100,000 files, 1.0 GiB of 4.0 GiB, ETA 30 s"
        );
        assert_eq!(
            freeing_tree("t", 1 << 20, 0, 1, 0, 10.0),
            "freeing 't': 1 file, 1.0 MiB freed so far"
        );
        assert_eq!(
            freeing_tree("f", 3 << 30, 4 << 30, 0, 0, 3.0),
            "freeing 'f': 3.0 GiB of 4.0 GiB, ETA 1 s"
        );
    }
}
