//! What the user sees of a removal: the live progress line (TTY only, stderr), per-entry `-v`
//! lines, error lines as they happen (`Printer`, `RmView`), the closing summary, the line after
//! a stop signal and the progress lines of a reaper at work. Computes nothing about removal
//! itself; the commands decide where it goes.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::pace::concurrency::Report as ConcurrencyReport;
use crate::engine::pace::PaceReport;
use crate::engine::profile::Profile;
use crate::engine::remove::{Counters, Sink};
use crate::engine::shrink::Gentle;
use crate::engine::spread::Rank;
use crate::reaper::rm::{Events, Left, Removal, Shrinking, Summary};
use crate::sys::error::Failure;
use crate::sys::format::{bytes, eta, group, local_time, plural, rate, seconds};
use crate::sys::quote::quote;
use crate::trash::Passed;

/// What `--background` did: one line, then each hidden path with its entry ID, and the
/// exact `reclaim restore` command for an entry a grace window keeps restorable (without
/// one a reaper may free it at once: no undo is promised).
pub fn hidden(sum: &Summary) -> String {
    let mut trashes: Vec<String> = Vec::new();
    for h in &sum.hidden {
        let t = quote(Path::new(&h.trash));
        if !trashes.contains(&t) {
            trashes.push(t);
        }
    }
    let mut s = format!(
        "hid {} in {:.1} ms into {}; the space is freed in the background \
         (`reclaim status` shows it)",
        plural(sum.hidden.len() as u64, "path", "paths"),
        sum.elapsed_s * 1e3,
        trashes.join(", ")
    );
    for h in &sum.hidden {
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

/// The summary of a removal, in the user's words: what was removed, how much was freed, how
/// fast, and what is left; large files freed gently, each in a line. With `verbose`, also how:
/// the file system's profile, the workers, the ranks of an MPI job and what pacing cost
/// (`--json` always has them).
pub fn summary(sum: &Summary, verbose: bool) -> String {
    let verb = if sum.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let freed = if sum.dry_run { "to free" } else { "freed" };
    let mut s = format!(
        "{verb} {} and {}, {} {freed}, in {}",
        plural(sum.files, "file", "files"),
        plural(sum.dirs, "directory", "directories"),
        bytes(sum.bytes_freed),
        seconds(sum.elapsed_s),
    );
    // A rate says something about many files, not about one.
    if sum.files >= 100 {
        s.push_str(&format!(" ({} files/s)", group(sum.files_per_s as u64)));
    }
    if !sum.errors.is_empty() {
        let n = sum.errors.len() as u64;
        s.push_str(&format!("; {} not removed", plural(n, "path", "paths")));
    }
    if !sum.fallback.is_empty() {
        s.push_str(&format!(
            "; {} removed here, as no trash could take them",
            plural(sum.fallback.len() as u64, "path", "paths")
        ));
    }
    if verbose {
        if let Some(p) = &sum.profile {
            s.push_str("\n  file system: ");
            s.push_str(&profile(p));
        }
        if let Some(c) = &sum.concurrency {
            s.push_str("\n  ");
            s.push_str(&concurrency(c));
        }
        if !sum.ranks.is_empty() {
            s.push_str("\n  ");
            s.push_str(&ranks(&sum.ranks));
        }
        if let Some(p) = sum.pace.as_ref().filter(|p| p.windows > 0) {
            s.push_str("\n  paced: ");
            s.push_str(&pace(p));
        }
    }
    for g in &sum.gentle {
        s.push_str("\n  gently: ");
        s.push_str(&gentle(g));
    }
    s
}

/// One large file freed gently: how it went and what it cost the others, in one line.
pub fn gentle(g: &Gentle) -> String {
    let o = &g.outcome;
    let mut s = format!(
        "{}: {} in {}",
        g.path,
        bytes(o.allocated),
        seconds(g.elapsed_s)
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
    if o.online_discard {
        s.push_str(" (online discard: priced by bytes)");
    }
    if let Some(p) = &o.pace {
        s.push_str("; ");
        s.push_str(&pace(p));
    }
    if let Some(why) = &o.stopped {
        s.push_str(&format!("; {why}"));
    }
    if let Some(p) = &o.yielded {
        s.push_str(&format!(
            "; short of space ({}): the rest unlinked at once",
            p.text()
        ));
    }
    s
}

/// What pacing cost other I/O, in words: "other I/O p50/p99 1.2/3.4 ms before, 2.0/9.9 ms
/// during (budget 20 ms), 5 back-offs"; a part not measured is left out.
pub fn pace(p: &PaceReport) -> String {
    let pair = |a: Option<f64>, b: Option<f64>, when: &str| match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a:.1}/{b:.1} ms {when}")),
        _ => None,
    };
    let seen: Vec<String> = [
        pair(p.probe_before.p50_ms, p.probe_before.p99_ms, "before"),
        pair(p.probe_during.p50_ms, p.probe_during.p99_ms, "during"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut s = String::new();
    if !seen.is_empty() {
        s.push_str(&format!("other I/O p50/p99 {}", seen.join(", ")));
    }
    if let Some(t) = p.max_latency_ms {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&format!(
            "(budget {t:.0} ms), {}",
            plural(p.backoffs, "back-off", "back-offs")
        ));
    }
    if let Some(n) = p.ranks {
        s.push_str(&format!(" for all {n} ranks"));
    }
    if let (Some(max), Some(min)) = (p.workers_max, p.workers_min) {
        s.push_str(&format!("; workers {max} -> lowest {min}"));
    }
    if let Some(e) = &p.probe_error {
        s.push_str(&format!("; no latency probe: {e}"));
    }
    if let Some(y) = &p.yielded {
        s.push_str(&format!(
            "; short of space ({}): pacing yielded, full speed",
            y.text()
        ));
    }
    s
}

/// A file system profile in one line (`-v`, the summary, scan): "ext4 on a local SSD: 4
/// workers to start, 2 in one directory".
pub fn profile(p: &Profile) -> String {
    let kind = match p.class.name() {
        "local-ssd" => "on a local SSD",
        "rotational" => "on a rotational disk",
        "memory" => "in memory",
        "network" => "over the network",
        "fuse" => "through FUSE",
        other => other,
    };
    let mut s = format!(
        "{} {kind}{}: {} to start, {} in one directory",
        if p.fs_type.is_empty() {
            "?"
        } else {
            &p.fs_type
        },
        if p.source == "detected" {
            ""
        } else {
            " (--profile)"
        },
        plural(p.start as u64, "worker", "workers"),
        p.batch_threads,
    );
    if let Some(ms) = p.round_trip_ms.filter(|ms| *ms >= 0.05) {
        s.push_str(&format!(", {ms:.2} ms a lookup"));
    }
    if p.governed {
        s.push_str(", paced by the latency other I/O sees");
    }
    if !p.stat_small_dirs {
        s.push_str(", small directories not stated");
    }
    if let Some(n) = &p.note {
        s.push_str(&format!("; {n}"));
    }
    s
}

/// The workers a removal ran with, and why, in one line (`-v`).
pub fn concurrency(c: &ConcurrencyReport) -> String {
    let mut s = plural(c.chosen as u64, "worker", "workers");
    if c.rule == "pinned" {
        s.push_str(" (--threads)");
    } else if c.rule == "inline" {
        s.push_str(&format!(" ({})", c.why));
    } else if c.changes.is_empty() {
        s.push_str(&format!(
            ", as {} starts them (no other count did better)",
            c.start_from
        ));
    } else {
        s.push_str(&format!(
            ", measured ({} at the start, {}: {})",
            c.start,
            plural(c.changes.len() as u64, "change", "changes"),
            c.why
        ));
    }
    if let Some(ms) = c.op_ms {
        s.push_str(&format!("; an unlink took {ms:.2} ms at best"));
    }
    if let Some(cap) = c.governor_cap {
        s.push_str(&format!("; held to {cap} at most by the latency governor"));
    }
    s
}

/// One line about the ranks of a job: how many, on how many hosts, and how evenly the work
/// went (files and directories per rank).
pub fn ranks(ranks: &[Rank]) -> String {
    let mut hosts: Vec<&str> = ranks.iter().map(|r| r.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let mut per: Vec<u64> = ranks.iter().map(|r| r.files + r.dirs).collect();
    per.sort_unstable();
    let workers: Vec<u64> = ranks.iter().filter_map(|r| r.workers).collect();
    format!(
        "ranks: {} on {}, entries per rank {}–{} (median {}){}",
        ranks.len(),
        plural(hosts.len() as u64, "host", "hosts"),
        group(per[0]),
        group(per[per.len() - 1]),
        group(per[per.len() / 2]),
        match (workers.iter().min(), workers.iter().max()) {
            (Some(a), Some(b)) if a == b => format!(", {a} workers each (measured)"),
            (Some(a), Some(b)) => format!(", {a}–{b} workers per rank (measured)"),
            _ => String::new(),
        }
    )
}

/// Several paths in a line: how many, and the first three (`3 paths ('a', 'b', 'c')`,
/// `20,000 paths ('a', 'b', 'c' and 19,997 more)`).
pub fn some_paths(paths: &[std::path::PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().take(3).map(quote).collect();
    let more = paths.len().saturating_sub(shown.len());
    let tail = if more > 0 {
        format!(" and {} more", group(more as u64))
    } else {
        String::new()
    };
    format!(
        "{} ({}{tail})",
        plural(paths.len() as u64, "path", "paths"),
        shown.join(", ")
    )
}

/// The failures again at the end, on a terminal where they may have scrolled away (never in
/// scripts' output: each was said already): each, but those of a whole file system's condition
/// as one line with their count.
pub fn recap(live: bool, failures: &[Failure]) {
    if failures.len() <= 1 || !live {
        return;
    }
    eprintln!(
        "reclaim: {} could not be removed:",
        plural(failures.len() as u64, "path", "paths")
    );
    let mut conditions: Vec<(rustix::io::Errno, Vec<std::path::PathBuf>)> = Vec::new();
    for f in failures {
        match f.reason {
            crate::sys::error::Reason::Os(e) if whole_file_system(e) => {
                match conditions.iter_mut().find(|(c, _)| *c == e) {
                    Some((_, paths)) => paths.push(f.path.clone()),
                    None => conditions.push((e, vec![f.path.clone()])),
                }
            }
            _ => eprintln!("  {f}"),
        }
    }
    for (e, paths) in conditions {
        eprintln!(
            "  {}: {}",
            some_paths(&paths),
            crate::sys::error::errno_text(e)
        );
    }
}

/// What `reclaim rm` shows while a removal runs: `-v` lines, errors above the progress line,
/// the progress of trees, large files and reapers (on a terminal).
pub struct RmView {
    printer: Printer,
    progress: Progress,
    /// `--wait`'s bar, of its own: the tree phase's ended (finished and cleared) before it.
    wait: Mutex<Option<Progress>>,
    verbose: bool,
    /// A progress line at all (on a terminal, without `--json`).
    live: bool,
    /// When the removal started (its progress line's rate).
    started: Instant,
}

impl RmView {
    /// `-v` lines and notes (with `verbose`) go to stdout, or to stderr with `json`; a
    /// progress line with `live` (on a terminal).
    pub fn new(verbose: bool, dry_run: bool, json: bool, live: bool) -> Self {
        let progress = Progress::start(live);
        RmView {
            printer: Printer::new(verbose, dry_run, json, progress.bar()),
            progress,
            wait: Mutex::new(None),
            verbose,
            live,
            started: Instant::now(),
        }
    }

    pub fn printer(&self) -> &Printer {
        &self.printer
    }

    fn show(&self, line: &str) {
        match &*self.wait.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(w) => w.show(line),
            None => self.progress.show(line),
        }
    }
}

impl Sink for RmView {
    fn wants_removed(&self) -> bool {
        self.printer.wants_removed()
    }
    fn removed(&self, path: &Path, dir: bool) {
        self.printer.removed(path, dir)
    }
    fn failed(&self, failure: &Failure) {
        self.printer.failed(failure)
    }
    fn warning(&self, what: &dyn std::fmt::Display) {
        self.printer.warning(what)
    }
    fn watch(&self, counters: &Counters, done: &AtomicBool) {
        self.progress.tick_until(counters, self.started, done);
    }
    fn subvolume_walked(&self, path: &Path, why: &str) {
        self.printer.subvolume_walked(path, why)
    }
}

impl Events for RmView {
    fn hidden(&self, display: &Path, id: &str, passed_over: &Passed) {
        if !self.verbose {
            return;
        }
        // The first few names passed over, then a count (anyone can make thousands).
        for u in &passed_over.first {
            self.printer
                .note(&format!("not using {}: it {}", quote(&u.path), u.reason));
        }
        if passed_over.more > 0 {
            self.printer.note(&format!(
                "... and {} more names that look like its trash but are not usable \
                 (squatted by others)",
                crate::sys::format::group(passed_over.more)
            ));
        }
        self.printer
            .note(&format!("hidden {} (entry {id})", quote(display)));
    }

    fn fallback(&self, paths: &[std::path::PathBuf], why: &str) {
        let line = match paths {
            [one] => format!("{}: {why}; removing it now instead", quote(one)),
            _ => format!("{}: {why}; removing them now instead", some_paths(paths)),
        };
        self.printer.error_line(&line);
    }

    fn refused(&self, paths: &[std::path::PathBuf], why: &str) {
        let line = match paths {
            [one] => format!(
                "cannot remove {}: cannot keep it restorable: {why}; left in place",
                quote(one)
            ),
            _ => format!(
                "cannot remove {}: cannot keep them restorable: {why}; left in place",
                some_paths(paths)
            ),
        };
        self.printer.error_line(&line);
    }

    fn resuming(&self, path: &Path, id: &str, trash: &Path) {
        eprintln!(
            "reclaim: {}: finishing its interrupted removal (entry {id} in {})",
            quote(path),
            quote(trash)
        );
    }

    fn shrinking(&self, p: Option<Shrinking<'_>>) {
        let Some(bar) = &self.progress.bar else {
            return;
        };
        let Some(p) = p else {
            bar.set_message(String::new());
            return;
        };
        let secs = p.started.elapsed().as_secs_f64().max(1e-3);
        let per_s = p.freed as f64 / secs;
        let eta = eta((per_s > 0.0).then(|| (p.total - p.freed) as f64 / per_s));
        let lat = p
            .latency
            .map(|d| format!(", other I/O {:.1} ms", d.as_secs_f64() * 1e3))
            .unwrap_or_default();
        bar.set_message(format!(
            "freeing {}: {} of {}, {}{lat}, {eta}",
            quote(p.path),
            bytes(p.freed),
            bytes(p.total),
            rate(per_s),
        ));
        bar.tick();
    }

    fn reaping(&self, p: &crate::reaper::Progress<'_>) {
        self.show(&reaping(p));
    }

    fn waiting(&self, on: bool) {
        let mut w = self.wait.lock().unwrap_or_else(|e| e.into_inner());
        if on {
            *w = Some(Progress::start(self.live));
        } else if let Some(p) = w.take() {
            p.finish();
        }
    }
}

/// The line after a stop signal: what was removed, and what is left (`Removal::left`).
pub fn interrupted(sig: i32, r: &Removal) -> String {
    let mut left: Vec<String> = r.left.iter().map(left_line).collect();
    if r.not_started > 0 {
        left.push(format!(
            "{} not started",
            plural(r.not_started as u64, "argument", "arguments")
        ));
    }
    if left.is_empty() {
        left.push("everything asked for was done".into());
    }
    format!(
        "interrupted by {}: removed {} and {}; {}",
        crate::sys::interrupt::name(sig),
        plural(r.summary.files, "file", "files"),
        plural(r.summary.dirs, "directory", "directories"),
        left.join("; ")
    )
}

/// One thing a stop signal left, in words.
fn left_line(l: &Left) -> String {
    match l {
        Left::Trees(shown) => {
            format!("{shown} partly removed (run the same command again to finish)")
        }
        Left::File {
            path,
            bytes: b,
            entry: Some(id),
            ..
        } => format!(
            "{path} is in the trash with {} left (entry {id}); {}",
            bytes(*b),
            reaper_note()
        ),
        Left::File {
            path,
            bytes: b,
            hidden,
            ..
        } => format!(
            "{path} is left partly freed as {} ({}): `reclaim rm` of that name finishes it",
            hidden
                .as_ref()
                .map_or_else(|| "a hidden name".into(), |h| h.to_string()),
            bytes(*b)
        ),
        Left::Hid {
            hidden,
            of,
            untouched,
        } => format!("hid {hidden} of {of} paths; the other {untouched} are untouched"),
        Left::InTrash(n) => format!(
            "{} left in the trash; {}",
            plural(*n, "entry", "entries"),
            reaper_note()
        ),
    }
}

/// How what is left in a trash gets freed, for the line after a stop signal.
fn reaper_note() -> &'static str {
    if crate::reaper::spawn::enabled() {
        "a reaper frees it in the background (`reclaim status`)"
    } else {
        "`reclaim reap` frees it (`reclaim status` lists it)"
    }
}

/// The progress line of a reaper at work.
pub fn reaping(p: &crate::reaper::Progress<'_>) -> String {
    use crate::reaper::Progress as P;
    match *p {
        P::Freeing {
            what,
            freed,
            total,
            files,
            total_files,
            secs,
        } => freeing_tree(what, freed, total, files, total_files, secs),
        P::WaitingFor {
            trash,
            pid,
            freeing,
        } => {
            let mut s = format!("waiting for reaper {pid} to finish with {}", quote(trash));
            if let Some((e, freed, per_s)) = freeing {
                s.push_str(&format!(
                    ": freeing {}, {} freed so far ({})",
                    quote(e),
                    bytes(freed),
                    rate(per_s)
                ));
            }
            s
        }
        P::OthersFree => "waiting for the running reaper, which frees these entries too".into(),
    }
}

/// Prints `-v` lines on stdout and error lines on stderr as they happen. A failure for a
/// condition of the whole file system (read-only, full, over quota, an I/O error of the
/// device, a FUSE daemon gone) is said for the first path it stops; the others it stops are
/// counted and said once at the end (`conditions`), not one line each.
pub struct Printer {
    verbose: bool,
    dry_run: bool,
    out: Mutex<std::io::BufWriter<Box<dyn Write + Send>>>,
    progress: Option<ProgressBar>,
    /// Each condition met, with how many failures after its first were not said.
    conditions: Mutex<Vec<(rustix::io::Errno, u64)>>,
}

/// Whether a failure with `e` is a condition of the whole file system: every other path on it
/// fails the same way.
pub fn whole_file_system(e: rustix::io::Errno) -> bool {
    use rustix::io::Errno;
    matches!(
        e,
        Errno::ROFS | Errno::NOSPC | Errno::DQUOT | Errno::IO | Errno::NOTCONN | Errno::SHUTDOWN
    )
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
            conditions: Mutex::new(Vec::new()),
        }
    }

    /// One line for each whole file system's condition that stopped more paths than the one
    /// said: how many more.
    pub fn conditions(&self) -> Vec<String> {
        let c = self.conditions.lock().unwrap_or_else(|e| e.into_inner());
        c.iter()
            .filter(|(_, more)| *more > 0)
            .map(|(e, more)| {
                format!(
                    "and {} more {} not removed: {}",
                    group(*more),
                    if *more == 1 { "path" } else { "paths" },
                    crate::sys::error::errno_text(*e)
                )
            })
            .collect()
    }

    /// Whether `failure` is one more of a condition already said (counted, not said).
    fn counted(&self, failure: &Failure) -> bool {
        let crate::sys::error::Reason::Os(e) = failure.reason else {
            return false;
        };
        if !whole_file_system(e) {
            return false;
        }
        let mut c = self.conditions.lock().unwrap_or_else(|e| e.into_inner());
        match c.iter_mut().find(|(seen, _)| *seen == e) {
            Some((_, more)) => {
                *more += 1;
                true
            }
            None => {
                c.push((e, 0));
                false
            }
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
        if !self.counted(failure) {
            self.error_line(&failure.to_string());
        }
    }

    fn warning(&self, what: &dyn std::fmt::Display) {
        self.error_line(&what.to_string());
    }

    fn subvolume_walked(&self, path: &Path, why: &str) {
        self.error_line(&format!(
            "{}: a btrfs subvolume, removed file by file: {why}",
            quote(path)
        ));
    }
}

/// The progress line of a tree (or any entry) being freed: against its recorded size and
/// file count when known (`status --count` and `prune` record them), with an ETA from the
/// better known of the two fractions; otherwise what was freed so far.
fn freeing_tree(
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

impl Drop for Progress {
    /// A line never drawn stays undrawn (indicatif draws an unfinished bar when it is dropped).
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            if !bar.is_finished() {
                bar.finish_and_clear();
            }
        }
    }
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

    /// Shows `line` as the progress message (on a terminal).
    pub fn show(&self, line: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(line.to_string());
            bar.tick();
        }
    }

    /// Runs `f` (which prints) with the progress line out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// Ends the progress line and clears it.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
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
    fn a_job_wide_governor_says_it_governed_every_rank() {
        let p = crate::engine::pace::PaceReport {
            max_latency_ms: Some(20.0),
            windows: 15,
            backoffs: 2,
            workers_max: Some(16),
            workers_min: Some(8),
            ranks: Some(8),
            ..Default::default()
        };
        assert_eq!(
            super::pace(&p),
            "(budget 20 ms), 2 back-offs for all 8 ranks; workers 16 -> lowest 8"
        );
    }

    /// A half not measured is left out, never shown as "-/- ms".
    #[test]
    fn pacing_says_only_what_was_measured() {
        let mut p = crate::engine::pace::PaceReport {
            max_latency_ms: Some(20.0),
            windows: 3,
            backoffs: 1,
            ..Default::default()
        };
        p.probe_before.p50_ms = Some(1.24);
        p.probe_before.p99_ms = Some(3.0);
        assert_eq!(
            super::pace(&p),
            "other I/O p50/p99 1.2/3.0 ms before (budget 20 ms), 1 back-off"
        );
    }

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
