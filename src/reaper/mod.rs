//! The reaper: frees what is in a trash, oldest entry first, paced as the `reclaim rm` that
//! hid it asked, and removes each entry when its data is gone. One reaper per trash (an
//! exclusive `flock` on `<trash>/lock`); a killed reaper's work is finished by the next one
//! (a claimed entry is `reaping`, a half-shrunk file keeps its hidden name). It works only
//! inside the trash, through dirfds, and never follows a symlink.

pub mod spawn;
pub mod state;

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::RenameFlags;
use rustix::fs::{fsync, openat, renameat_with, unlinkat, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use serde::Serialize;

use crate::cli::{PaceArgs, ReapArgs};
use crate::dirfd;
use crate::error::{Failure, Reason};
use crate::locks;
use crate::pace::throttle::Throttle;
use crate::pace::Pacing;
use crate::remove::{self, Counters, DirTarget};
use crate::report::ErrorEntry;
use crate::shrink;
use crate::trash::meta::{now_unix, EntryPacing, Meta};
use crate::trash::{self, Trash, DATA, LOCK, REAPING};
use state::StateFile;

/// The latency budget when an entry does not say (as `reclaim rm`'s default).
pub const DEFAULT_MAX_LATENCY: Duration = Duration::from_millis(20);

/// When a reaper run stops (`--watch` repeats `Once` passes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// The trash is empty (waiting out grace windows).
    Empty,
    /// One pass over what is due now.
    Once,
}

#[derive(Clone, Debug)]
pub struct ReapOptions {
    pub until: Until,
    /// Pacing for every entry instead of each entry's own.
    pub pacing: Option<EntryPacing>,
    pub engine: remove::Options,
    /// Only these entries (ids), in this order (`reclaim rm --wait`).
    pub only: Option<Vec<String>>,
}

/// What a reaper run did (`reclaim reap --json`).
#[derive(Debug, Default, Serialize)]
pub struct ReapSummary {
    pub entries_freed: u64,
    pub files: u64,
    pub bytes_freed: u64,
    pub errors: Vec<ErrorEntry>,
    /// Entries left in the trashes it worked on (in grace, failed, or another's).
    pub remaining: u64,
    /// Trashes another reaper was working on.
    pub skipped_locked: Vec<String>,
    /// Large files shrunk in steps (resumed ones say so).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gentle: Vec<crate::report::Gentle>,
}

/// Progress callback for `--wait`: (original path, bytes freed so far, bytes to free).
pub type OnProgress<'a> = &'a (dyn Fn(&str, u64, u64) + Sync);

/// Holds a trash's lock while alive.
pub struct TrashLock(#[allow(dead_code)] OwnedFd);

impl TrashLock {
    /// Takes the trash's lock if no other reaper holds it.
    pub fn try_take(trash: &Trash) -> Result<Option<TrashLock>, Errno> {
        let fd = openat(
            &trash.dir,
            LOCK,
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        Ok(locks::try_exclusive(&fd)?.then_some(TrashLock(fd)))
    }
}

/// The pid of the reaper working on `trash`, if one is.
pub fn holder(trash: &Trash) -> Option<u32> {
    let f = dirfd::lstat_at(&trash.dir, LOCK).ok()?;
    locks::holder(locks::Kind::Flock, f.ident)
}

/// Reaps every trash in `trashes` as `opts` says.
pub fn run(trashes: &[Trash], opts: &ReapOptions, on_progress: OnProgress<'_>) -> ReapSummary {
    let mut sum = ReapSummary::default();
    for t in trashes {
        match TrashLock::try_take(t) {
            Ok(Some(lock)) => reap_trash(t, lock, opts, &mut sum, on_progress),
            Ok(None) => sum
                .skipped_locked
                .push(t.path.to_string_lossy().into_owned()),
            Err(e) => sum.errors.push(ErrorEntry {
                path: t.path.join("lock").to_string_lossy().into_owned(),
                error: crate::error::errno_text(e),
            }),
        }
    }
    sum.remaining = trashes
        .iter()
        .map(|t| t.entries().len() as u64)
        .sum::<u64>();
    sum
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Frees entries of one trash while holding its lock; with `Until::Empty`, waits out grace
/// windows in between.
fn reap_trash(
    trash: &Trash,
    lock: TrashLock,
    opts: &ReapOptions,
    sum: &mut ReapSummary,
    on_progress: OnProgress<'_>,
) {
    let state = StateFile::new(&trash.dir);
    let done = AtomicBool::new(false);
    let files = Counters::default();
    let mut failed: Vec<CString> = Vec::new();
    let mut lock = Some(lock);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                state.set(|st| st.files = files.files.load(Ordering::Relaxed));
                let st = state.snapshot();
                if let Some(e) = &st.entry {
                    // Total unknown (0): trees are not counted before they are freed.
                    on_progress(e, st.freed_bytes, 0);
                }
                // In slices, so a short run does not wait for a whole tick to end.
                for _ in 0..10 {
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        });
        loop {
            let names = match &opts.only {
                Some(ids) => ids
                    .iter()
                    .filter_map(|i| CString::new(i.as_bytes()).ok())
                    .filter(|n| dirfd::lstat_at(&trash.dir, n).is_ok())
                    .collect(),
                None => trash.entries(),
            };
            let mut progressed = false;
            let mut next_due: Option<f64> = None;
            let todo: Vec<CString> = names.into_iter().filter(|n| !failed.contains(n)).collect();
            for name in &todo {
                match reap_entry(trash, name, opts, &state, &files, sum, on_progress) {
                    Step::Freed => {
                        sum.entries_freed += 1;
                        progressed = true;
                    }
                    Step::Grace(until) => next_due = min_opt(next_due, Some(until)),
                    Step::Busy => {}
                    Step::Failed(f) => {
                        failed.push(name.clone());
                        sum.errors.push(ErrorEntry {
                            path: f.path.to_string_lossy().into_owned(),
                            error: f.reason.to_string(),
                        });
                    }
                }
            }
            if progressed {
                continue;
            }
            match (opts.until, next_due) {
                (Until::Empty, Some(t)) => {
                    state.set(|st| {
                        st.state = "waiting".into();
                        st.entry = None;
                        st.next_due_unix = Some(t);
                    });
                    std::thread::sleep(Duration::from_secs_f64((t - now_unix()).clamp(0.05, 1.0)));
                }
                _ => {
                    // Leave, then look once more: an entry hidden after our last listing,
                    // whose `rm` saw our lock and started no reaper, is ours to free.
                    drop(lock.take());
                    let more =
                        opts.only.is_none() && trash.entries().iter().any(|n| !failed.contains(n));
                    if opts.until == Until::Empty && more {
                        if let Ok(Some(l)) = TrashLock::try_take(trash) {
                            lock.replace(l);
                            continue;
                        }
                    }
                    break;
                }
            }
        }
        done.store(true, Ordering::Relaxed);
    });
    state.remove();
    drop(lock);
    sum.files += files.files.load(Ordering::Relaxed);
}

enum Step {
    Freed,
    Grace(f64),
    Busy,
    Failed(Failure),
}

/// Frees one entry: claims `data` as `reaping` (restore no longer possible), frees it (a tree
/// with the engine, a large file with the shrinker, anything else by unlink), finishes any
/// half-shrunk file a killed reaper left, then removes the record and the entry directory.
fn reap_entry(
    trash: &Trash,
    name: &CStr,
    opts: &ReapOptions,
    state: &StateFile<'_>,
    counters: &Counters,
    sum: &mut ReapSummary,
    on_progress: OnProgress<'_>,
) -> Step {
    let failed = |inner: Option<&CStr>, reason: Reason| {
        Step::Failed(Failure {
            path: trash.shown(name, inner),
            reason,
        })
    };
    let entry = match dirfd::open_dir_at(&trash.dir, name) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Step::Busy,
        Err(Errno::LOOP | Errno::NOTDIR) => {
            // Not made by us (a symlink or file with an entry's name): remove the name only.
            return match unlinkat(&trash.dir, name, AtFlags::empty()) {
                Ok(()) => Step::Freed,
                Err(e) => failed(None, Reason::Os(e)),
            };
        }
        Err(e) => return failed(None, Reason::Os(e)),
    };
    match locks::try_exclusive(&entry) {
        Ok(true) => {}
        Ok(false) => return Step::Busy,
        Err(e) => return failed(None, Reason::Os(e)),
    }
    let meta = Meta::read(&entry);
    let shown = meta.as_ref().map_or_else(
        || trash.shown(name, None).to_string_lossy().into_owned(),
        |m| m.original.clone(),
    );
    if dirfd::lstat_at(&entry, DATA).is_ok() {
        if let Some(until) = meta.as_ref().and_then(|m| m.grace_until_unix) {
            if until > now_unix() {
                return Step::Grace(until);
            }
        }
        match renameat_with(&entry, DATA, &entry, REAPING, RenameFlags::NOREPLACE) {
            Ok(()) => {}
            Err(Errno::NOENT) => return Step::Busy,
            Err(e) => return failed(Some(DATA), Reason::Os(e)),
        }
        // Durable before the first byte is freed: after a crash a partly freed target must
        // never look whole (restorable).
        if let Err(e) = fsync(&entry) {
            return failed(Some(REAPING), Reason::Os(e));
        }
    }
    state.set(|st| {
        st.state = "freeing".into();
        st.entry = Some(shown.clone());
        st.next_due_unix = None;
    });
    let pacing = opts
        .pacing
        .clone()
        .or_else(|| meta.as_ref().map(|m| m.pacing.clone()))
        .unwrap_or_default();
    let entry = Arc::new(entry);
    if let Ok(facts) = dirfd::lstat_at(&*entry, REAPING) {
        let r = match facts.file_type {
            FileType::Directory => {
                // The engine stats no file: what came back is the file system's free space
                // (never less than the directories' blocks, which it does count).
                let before = crate::space::FreeSpace::of(&*entry);
                let known = counters.bytes.load(Ordering::Relaxed);
                let r = free_tree(
                    &entry,
                    &facts,
                    &pacing,
                    &opts.engine,
                    counters,
                    &mut sum.gentle,
                    std::path::Path::new(&shown),
                );
                let dirs = counters.bytes.load(Ordering::Relaxed) - known;
                sum.bytes_freed +=
                    dirs.max(before.freed_since(&crate::space::FreeSpace::of(&*entry)));
                r
            }
            FileType::RegularFile => {
                let cb = |freed: u64, total: u64, _: Option<&crate::pace::Pacer>| {
                    on_progress(&shown, freed, total)
                };
                let t = std::time::Instant::now();
                shrink::remove_file(&entry, REAPING, &facts, &to_pacing(&pacing), &cb).map(|o| {
                    counters.files.fetch_add(1, Ordering::Relaxed);
                    sum.bytes_freed += o.allocated;
                    if o.steps > 0 {
                        sum.gentle.push(crate::report::Gentle {
                            path: shown.clone(),
                            elapsed_s: t.elapsed().as_secs_f64(),
                            outcome: o,
                        });
                    }
                })
            }
            _ => unlinkat(&*entry, REAPING, AtFlags::empty())
                .map(|()| {
                    counters.files.fetch_add(1, Ordering::Relaxed);
                })
                .map_err(Reason::Os),
        };
        match r {
            Ok(()) | Err(Reason::Os(Errno::NOENT)) => {}
            Err(reason) => return failed(Some(REAPING), reason),
        }
    }
    // A file a killed reaper was shrinking, under its hidden name: finish it, paced.
    for (hidden, r, took) in shrink::finish_leftovers(&entry, &to_pacing(&pacing), &|f, t, _| {
        on_progress(&shown, f, t)
    }) {
        match r {
            Ok(o) => {
                counters.files.fetch_add(1, Ordering::Relaxed);
                sum.bytes_freed += o.allocated;
                sum.gentle.push(crate::report::Gentle {
                    path: shown.clone(),
                    elapsed_s: took.as_secs_f64(),
                    outcome: shrink::Outcome { resumed: true, ..o },
                });
            }
            Err(Reason::Os(Errno::NOENT)) => {}
            Err(reason) => return failed(Some(&hidden), reason),
        }
    }
    // Anything else left inside (debris of an interrupted hide or restore) goes too; only
    // names we made are expected, the record last.
    let _ = unlinkat(&*entry, c"meta.json", AtFlags::empty());
    match unlinkat(&trash.dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Step::Freed,
        Err(e) => failed(None, Reason::Os(e)),
    }
}

/// The pacing an entry asked for, as the shrinker takes it.
pub fn to_pacing(p: &EntryPacing) -> Pacing {
    if p.fast {
        return Pacing::fast();
    }
    Pacing {
        max_latency: Some(
            p.max_latency_ms
                .map_or(DEFAULT_MAX_LATENCY, |ms| Duration::from_secs_f64(ms / 1e3)),
        ),
        rate: p.rate,
        trace: None,
    }
}

/// Removes the tree `reaping` of an entry with the engine (paced like `reclaim rm -r`).
fn free_tree(
    entry: &Arc<OwnedFd>,
    facts: &dirfd::Facts,
    pacing: &EntryPacing,
    engine: &remove::Options,
    counters: &Counters,
    gentle: &mut Vec<crate::report::Gentle>,
    shown: &std::path::Path,
) -> Result<(), Reason> {
    let mut engine = engine.clone();
    if engine.threads == 0 {
        // Not given: as `reclaim rm -r` does on this file system (xfs loses with more).
        engine.threads = remove::threads_for(&**entry);
        engine.batch_threads = engine.batch_threads.min(engine.threads);
    }
    let paced = pacing.pace_trees && !pacing.fast;
    let tree_files = (!pacing.fast).then(|| Arc::new(shrink::TreeFiles::new(to_pacing(pacing))));
    if let Some(tf) = &tree_files {
        engine.large_files = Some(tf.clone());
    }
    if paced || pacing.iops.is_some() {
        engine.throttle = Some(Arc::new(Throttle::new(pacing.iops)));
    }
    let target = DirTarget {
        base: entry.clone(),
        name: REAPING.to_owned(),
        // Messages name what the user removed (its original path), not the trash.
        display: shown.to_path_buf(),
        ident: facts.ident,
    };
    let done = AtomicBool::new(false);
    let sink = remove::Quiet;
    let outcome = std::thread::scope(|s| {
        if let (true, Some(throttle)) = (paced, &engine.throttle) {
            let p = to_pacing(pacing);
            let dir = entry.clone();
            let throttle = throttle.clone();
            let done = &done;
            s.spawn(move || crate::pace::tree::run(&*dir, &p, &throttle, counters, done));
        }
        let out = remove::remove_trees(vec![target], &engine, counters, &sink);
        done.store(true, Ordering::Relaxed);
        out
    });
    for (path, o, took) in tree_files.map(|tf| tf.take()).unwrap_or_default() {
        gentle.push(crate::report::Gentle {
            path: path.to_string_lossy().into_owned(),
            elapsed_s: took.as_secs_f64(),
            outcome: o,
        });
    }
    match outcome.failures.into_iter().next() {
        None if outcome.skipped_mounts.is_empty() => Ok(()),
        None => Err(Reason::MountPoint),
        Some(f) => Err(f.reason),
    }
}

/// The pacing flags of `reclaim rm`, as recorded in an entry.
pub fn entry_pacing(p: &PaceArgs) -> EntryPacing {
    EntryPacing {
        fast: p.fast,
        max_latency_ms: p.max_latency.map(|d| d.as_secs_f64() * 1e3),
        rate: p.rate,
        iops: p.iops,
        pace_trees: p.max_latency.is_some(),
    }
}

/// `reclaim reap`; returns the exit code.
pub fn command(a: &ReapArgs) -> u8 {
    if a.detached {
        spawn::lower_priority();
    }
    let trashes = || -> Result<Vec<Trash>, String> {
        match &a.trash {
            Some(p) => Trash::open_path(p)
                .map(|t| vec![t])
                .map_err(|e| format!("cannot use trash '{}': {e}", p.display())),
            None => Ok(trash::discover(trash::uid())),
        }
    };
    let mut engine = remove::Options {
        // 0: chosen per file system when a tree is freed (`free_tree`).
        threads: 0,
        ..remove::Options::default()
    };
    if let Some(t) = a.threads {
        engine.threads = t.into();
        engine.batch_threads = engine.batch_threads.min(engine.threads);
    }
    let opts = ReapOptions {
        until: if a.once || a.watch {
            Until::Once
        } else {
            Until::Empty
        },
        pacing: a.pace.given().then(|| entry_pacing(&a.pace)),
        engine,
        only: None,
    };
    let progress = crate::report::Progress::start(!a.json && !a.detached);
    let bar = progress.bar();
    let on_progress = |what: &str, freed: u64, total: u64| {
        if let Some(bar) = &bar {
            bar.set_message(crate::report::freeing(what, freed, total));
            bar.tick();
        }
    };
    let started = std::time::Instant::now();
    let sum = loop {
        let ts = match trashes() {
            Ok(ts) => ts,
            Err(e) => {
                eprintln!("reclaim reap: {e}");
                return 1;
            }
        };
        let sum = run(&ts, &opts, &on_progress);
        if !a.watch {
            break sum;
        }
        for e in &sum.errors {
            eprintln!("reclaim reap: cannot free '{}': {}", e.path, e.error);
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&sum).expect("summary serializes")
        );
    } else {
        for e in &sum.errors {
            eprintln!("reclaim reap: cannot free '{}': {}", e.path, e.error);
        }
        if !a.detached {
            eprintln!("{}", sum.human(started.elapsed()));
        }
    }
    u8::from(!sum.errors.is_empty())
}

impl ReapSummary {
    /// One paragraph for the terminal.
    pub fn human(&self, took: Duration) -> String {
        let mut s = format!(
            "freed {} entries ({} files, {}) in {:.2} s",
            crate::report::group(self.entries_freed),
            crate::report::group(self.files),
            crate::report::bytes(self.bytes_freed),
            took.as_secs_f64()
        );
        if self.remaining > 0 {
            s.push_str(&format!(
                "; {} entries remain (in their grace window, failed, or being hidden)",
                self.remaining
            ));
        }
        for t in &self.skipped_locked {
            s.push_str(&format!("\nskipped '{t}': another reaper is working on it"));
        }
        for g in &self.gentle {
            s.push_str(&format!("\n  {}", g.human()));
        }
        s
    }
}
