//! The reaper: frees what is in a trash, oldest entry first, paced as the `reclaim rm` that
//! hid it asked, and removes each entry when its data is gone. One reaper per trash (an
//! exclusive `flock` on `<trash>/lock`: `reclaim reap` waits for the one at work, the others
//! leave the trash to it); a killed reaper's work is finished by the next one (a claimed entry
//! is `reaping`). It works only inside the trash, through dirfds, never
//! follows a symlink, and runs with the trash owner's authority: root's reaper frees another
//! user's trash in a child that is that user (`asuser`), so it removes exactly what the user
//! could. Every file of a trash is hostile input: a damaged entry is reported and skipped,
//! never waited on; an entry that cannot be fully freed is recorded (`failed.json`) and retried
//! with back-off. While it only waits for grace windows it holds nothing open. Each freed
//! entry and each failure is logged where `--log` says (`crate::sys::logging`); what it does
//! meanwhile goes to its caller as `Progress`, and it never prints (`cmd::reap` reports).

pub mod background;
pub mod browse;
pub mod failure;
pub mod metrics;
pub mod pressure;
pub mod queue;
pub mod relief;
pub mod rm;
pub mod service;
pub mod space;
pub mod spawn;
pub mod state;
pub mod status;
pub mod watch;

use std::ffi::{CStr, CString, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::{fsync, FileType};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use crate::engine::remove::{self, Counters, DirTarget};
use crate::engine::shrink;
use crate::sys::dirfd;
use crate::sys::error::ErrorEntry;
use crate::sys::error::{Failure, Reason};
use crate::sys::format::now_unix;
use crate::sys::format::{self, plural};
use crate::sys::freed::Measure;
use crate::sys::interrupt;
use crate::sys::locks;
use crate::sys::logging::{Dest, Priority, Record, Sink};
use crate::sys::quote::quote;
use crate::trash::meta::EntryPacing;
use crate::trash::meta::Meta;
use crate::trash::{self, safefile, Found, Trash, DATA, LOCK, LOG, REAPING};
use failure::FailedRecord;
use state::StateFile;

/// When a reaper run stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// The trash is empty but for entries that failed or are damaged: grace windows are waited
    /// out (holding nothing open meanwhile). Only a detached reaper waits so.
    Empty,
    /// One pass over what is due now: entries in a grace window, or whose last failure's
    /// back-off has not passed, stay.
    Once,
}

/// What a run does with a trash whose lock another reaper holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locked {
    /// Skips it and says so (`skipped_locked`): that reaper frees what is due, and lists the
    /// trash again before it leaves (a detached reaper, the service's `--once` passes).
    Skip,
    /// Waits for that reaper to finish, then makes its own pass (`reclaim reap`: everything
    /// that can be freed now is freed before it exits).
    Wait,
}

#[derive(Clone, Debug)]
pub struct ReapOptions {
    pub until: Until,
    pub locked: Locked,
    /// Pacing for every entry instead of each entry's own.
    pub pacing: Option<EntryPacing>,
    pub engine: remove::Options,
    /// Only these entries (ids), in this order (`reclaim rm --wait`).
    pub only: Option<Vec<String>>,
    /// Where lines about freed and failed entries go.
    pub log: Sink,
    /// Try entries that failed before now, not after their back-off (`reclaim reap` was
    /// asked to free what it can now).
    pub retry_failed: bool,
    /// Free the entries now, also in their grace window (`reclaim reap --now`).
    pub now: bool,
    /// The free space to leave the others on each file system (`--min-free`): under it, or
    /// falling toward it, pacing yields and entries in their grace window are freed early.
    pub floor: crate::sys::space::Floor,
    /// Frees the held trash's entries in their grace window early when its file system is
    /// pressed (`pressure::relieve`). Not in the passes a parent runs (`--once`: the service's,
    /// root's `reap` for other users): the parent orders every user's entries, oldest first.
    pub relieve: bool,
    /// The file system was found short of space so (by the `reap --watch` supervisor, for a
    /// pass it asked for with `--now ID`): an entry whose grace window this cuts short is said
    /// and recorded as freed early (`pressure`).
    pub early: Option<crate::sys::space::Pressure>,
}

/// What a reaper run did (`reclaim reap --json`).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ReapSummary {
    pub entries_freed: u64,
    pub files: u64,
    /// Directories removed (inside the trees freed).
    #[serde(default)]
    pub dirs: u64,
    pub bytes_freed: u64,
    /// Paths that could not be freed (inner paths under the entry's original path), and
    /// damaged entries (`"damaged: ..."`).
    pub errors: Vec<ErrorEntry>,
    /// Entries left in the trashes it worked on (in grace, failed, damaged, or another's).
    pub remaining: u64,
    /// Of those, entries in their grace window (still restorable; not freed before it ends).
    #[serde(default)]
    pub waiting: u64,
    /// Of those, entries that could not be freed (failed or damaged; see `errors`).
    #[serde(default)]
    pub entries_failed: u64,
    /// Trashes another reaper was working on.
    pub skipped_locked: Vec<String>,
    /// Large files shrunk in steps (resumed ones say so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gentle: Vec<crate::engine::shrink::Gentle>,
    /// When the earliest grace window of what is left ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_grace_unix: Option<f64>,
    /// When the latest grace window of what is left ends (the last entry stops being
    /// restorable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_grace_unix: Option<f64>,
    /// When the earliest failed entry is due for another attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_unix: Option<f64>,
    /// Stopped by a signal before the end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// A failure of the run as a whole (the trash could not be opened, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How `bytes_freed` was counted (`freed::Measure::text`): per file, the blocks no other
    /// name, process or file holds; for trees, the file system's free-space delta.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bytes_freed_measure: String,
    /// btrfs subvolumes the file system deleted whole (their blocks are freed by its cleaner
    /// afterwards; not in `bytes_freed`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub subvolumes_deleted: u64,
    /// `reap --wait`: seconds waited for the file systems' cleaners (btrfs) after the entries
    /// were freed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleaner_waited_s: Option<f64>,
    /// Entries freed before their grace window ended: their file system ran short of space
    /// (`pressure`), and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub freed_early: Vec<crate::trash::early::Early>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a reaper run tells its caller while it works (the command words and shows it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Progress<'a> {
    /// Freeing an entry (`what`, its original path): `freed` bytes and `files` so far, against
    /// its recorded size and file count when known (0: not known; a tree is measured only by
    /// `status --count` or `prune`), `secs` since it started.
    Freeing {
        what: &'a str,
        freed: u64,
        total: u64,
        files: u64,
        total_files: u64,
        secs: f64,
    },
    /// Waiting for reaper `pid` to finish with `trash`; in one's own trash (read from its
    /// `reaper.json`) what that reaper frees: the entry, bytes freed so far, bytes per second.
    WaitingFor {
        trash: &'a Path,
        pid: u32,
        freeing: Option<(&'a str, u64, f64)>,
    },
    /// Another reaper holds the trash; it frees the entries waited for too (`rm --wait`).
    OthersFree,
}

/// Where a reaper run's `Progress` goes.
pub type OnProgress<'a> = &'a (dyn Fn(&Progress<'_>) + Sync);

/// Holds a trash's lock while alive.
pub struct TrashLock(OwnedFd);

impl TrashLock {
    /// The open lock file (to hand the lock over to a reaper being started).
    pub fn fd(&self) -> &OwnedFd {
        &self.0
    }
}

/// Why a trash's lock cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// The `lock` is not a plain file of the trash's owner (it was not opened).
    #[error("damaged: lock {0}")]
    Damaged(safefile::Bad),
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(Errno),
}

/// Why the trashes to reap cannot be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The trash named with `--trash` cannot be used.
    #[error("cannot use trash {}: {error}", quote(.path))]
    Named {
        path: PathBuf,
        error: trash::TrashError,
    },
}

/// A trash lock this process was started holding (`rm --background` takes it before it starts
/// the reaper, so that no `status` in between finds the trash without one): used by the first
/// `TrashLock::try_take` of that trash.
static HANDED_OVER: std::sync::Mutex<Option<OwnedFd>> = std::sync::Mutex::new(None);

/// Adopts the trash lock held through `fd` (inherited from the process that started this one).
pub fn adopt_lock(fd: OwnedFd) {
    *HANDED_OVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(fd);
}

/// The handed-over lock if it is `lock` (the same file), made this process's own in
/// `/proc/locks` (a holder's pid is the process that took the lock: turned shared and back,
/// which nothing but this open file holds meanwhile). `None` if none is, or it was lost.
fn handed_over(lock: &OwnedFd) -> Option<OwnedFd> {
    let mut g = HANDED_OVER.lock().unwrap_or_else(|e| e.into_inner());
    let same = g.as_ref().is_some_and(
        |h| matches!((dirfd::fstat(h), dirfd::fstat(lock)), (Ok(a), Ok(b)) if a.ident == b.ident),
    );
    if !same {
        return None;
    }
    let fd = g.take()?;
    use rustix::fs::{flock, FlockOperation as Op};
    (flock(&fd, Op::NonBlockingLockShared).is_ok()
        && flock(&fd, Op::NonBlockingLockExclusive).is_ok())
    .then_some(fd)
}

impl TrashLock {
    /// Takes the trash's lock if no other reaper holds it. A `lock` that is not a plain file
    /// of the trash's owner is refused (never opened).
    pub fn try_take(trash: &Trash) -> Result<Option<TrashLock>, LockError> {
        let fd = safefile::open_lock(&trash.dir, LOCK, trash.uid).map_err(LockError::Damaged)?;
        if let Some(held) = handed_over(&fd) {
            return Ok(Some(TrashLock(held)));
        }
        match locks::try_exclusive(&fd) {
            Ok(true) => Ok(Some(TrashLock(fd))),
            Ok(false) => Ok(None),
            Err(e) => Err(LockError::Os(e)),
        }
    }
}

/// The pid of the reaper working on `trash`, if one is.
pub fn holder(trash: &Trash) -> Option<u32> {
    let f = dirfd::lstat_at(&trash.dir, LOCK).ok()?;
    locks::holder(locks::Kind::Flock, f.ident)
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

impl ReapSummary {
    /// Adds what another run did.
    pub fn merge(&mut self, s: ReapSummary) {
        self.entries_freed = self.entries_freed.saturating_add(s.entries_freed);
        self.files = self.files.saturating_add(s.files);
        self.dirs = self.dirs.saturating_add(s.dirs);
        self.bytes_freed = self.bytes_freed.saturating_add(s.bytes_freed);
        self.errors.extend(s.errors);
        self.remaining = self.remaining.saturating_add(s.remaining);
        self.waiting = self.waiting.saturating_add(s.waiting);
        self.entries_failed = self.entries_failed.saturating_add(s.entries_failed);
        self.skipped_locked.extend(s.skipped_locked);
        self.gentle.extend(s.gentle);
        self.freed_early.extend(s.freed_early);
        self.subvolumes_deleted = self.subvolumes_deleted.saturating_add(s.subvolumes_deleted);
        self.next_grace_unix = min_opt(self.next_grace_unix, s.next_grace_unix);
        self.last_grace_unix = max_opt(self.last_grace_unix, s.last_grace_unix);
        self.next_retry_unix = min_opt(self.next_retry_unix, s.next_retry_unix);
        self.interrupted |= s.interrupted;
        if self.error.is_none() {
            self.error = s.error;
        }
        self.counted(Measure::from_text(&s.bytes_freed_measure));
    }

    /// Notes that some of `bytes_freed` was counted so.
    fn counted(&mut self, m: Measure) {
        self.bytes_freed_measure = Measure::from_text(&self.bytes_freed_measure)
            .and(m)
            .text()
            .to_string();
    }
}

/// One pass over each trash of `trashes` (see `Until::Once`). Trashes of other users are not
/// for this function: see `reap_all`.
pub fn run(trashes: &[Trash], opts: &ReapOptions, on_progress: OnProgress<'_>) -> ReapSummary {
    let mut sum = ReapSummary::default();
    for t in trashes {
        if interrupt::stopping() {
            sum.interrupted = true;
            break;
        }
        match TrashLock::try_take(t) {
            Ok(Some(lock)) => reap_trash(t, lock, opts, &mut sum, on_progress),
            Ok(None) => sum
                .skipped_locked
                .push(t.path.to_string_lossy().into_owned()),
            Err(e) => {
                let path = t.path.join("lock");
                log(
                    t,
                    &opts.log,
                    Record::new(Priority::Err, format!("{}: {e}", quote(&path)))
                        .field("RECLAIM_EVENT", "damaged")
                        .path("RECLAIM_PATH", &path)
                        .field("RECLAIM_ERROR", e.to_string()),
                );
                sum.errors.push(ErrorEntry::new(path, e.to_string()));
            }
        }
    }
    sum.remaining = trashes
        .iter()
        .map(|t| t.entries().len() as u64)
        .fold(0, u64::saturating_add);
    sum
}

/// Sets its flag when dropped, also if the work panics: the ticker thread must end, or the
/// scope never does.
struct Done<'a>(&'a AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Frees what is due in one trash while holding its lock; before leaving, lets go of the lock
/// and lists once more, so an entry hidden meanwhile (whose `rm` saw the lock and started no
/// reaper) is never orphaned.
fn reap_trash(
    trash: &Trash,
    lock: TrashLock,
    opts: &ReapOptions,
    sum: &mut ReapSummary,
    on_progress: OnProgress<'_>,
) {
    let state = StateFile::new(&trash.dir, trash.uid);
    let done = AtomicBool::new(false);
    let files = Counters::default();
    // Names looked at and left this run (grace, back-off, failed, damaged, busy).
    let mut left: Vec<CString> = Vec::new();
    let mut damaged = 0u64;
    let mut lock = Some(lock);
    // The file system's free space: short of it, entries in their grace window go early.
    let mut watch = crate::sys::space::Watch::new(opts.floor);
    // A reaper that stays (`Until::Empty`: a detached one) stops if its trash goes away while
    // it works (the ticker looks every few seconds): what is left there is nobody's to free.
    let watched = (opts.until == Until::Empty)
        .then(|| Found::of(trash).ok())
        .flatten();
    std::thread::scope(|s| {
        // The ticker (progress, `reaper.json`, whether the trash is still there); without a
        // thread for it (EAGAIN) the work goes on without.
        let ticker = std::thread::Builder::new().name("reclaim-ticker".into());
        let _ = ticker.spawn_scoped(s, || {
            tell_progress(
                &state,
                &files,
                &done,
                watched.as_ref(),
                &opts.log,
                on_progress,
            )
        });
        let _done = Done(&done);
        loop {
            let todo = to_look_at(trash, opts, &left);
            let mut progressed = false;
            for name in &todo {
                if interrupt::stopping() {
                    sum.interrupted = true;
                    break;
                }
                let books = (&state, &files);
                match take(trash, name, opts, books, sum, &mut damaged, on_progress) {
                    Some(true) => progressed = true,
                    Some(false) => left.push(name.clone()),
                    None => {
                        sum.interrupted = true;
                        break;
                    }
                }
            }
            if sum.interrupted || progressed {
                if sum.interrupted {
                    break;
                }
                continue;
            }
            let relieved = opts.relieve
                && pressure::relieve(
                    trash,
                    opts,
                    &mut watch,
                    (&state, &files),
                    sum,
                    &mut damaged,
                    on_progress,
                );
            if relieved {
                continue;
            }
            // A reaper that will wait for a grace window says so before it lets go of the
            // lock: no `status` in between finds the trash without a reaper.
            if let (Until::Empty, Some(next)) = (opts.until, sum.next_grace_unix) {
                state::wait_unless_covered(&trash.dir, trash.uid, next);
            }
            // Leave, then look once more (see above).
            drop(lock.take());
            let more = opts.only.is_none() && trash.entries().iter().any(|n| !left.contains(n));
            if more {
                if let Ok(Some(l)) = TrashLock::try_take(trash) {
                    lock.replace(l);
                    continue;
                }
            }
            break;
        }
        done.store(true, Ordering::Relaxed);
    });
    damaged_beyond_logged(trash, &opts.log, damaged);
    state.remove();
    drop(lock);
    sum.files = sum
        .files
        .saturating_add(files.files.load(Ordering::Relaxed));
    sum.dirs = sum.dirs.saturating_add(files.dirs.load(Ordering::Relaxed));
}

/// Frees entry `name` of `trash` as `opts` say, if it is due, and adds what became of it to
/// the summary and the log (`account`): `Some(true)` freed, `Some(false)` left, `None` a stop
/// signal came.
fn take(
    trash: &Trash,
    name: &CStr,
    opts: &ReapOptions,
    (state, files): (&StateFile<'_>, &Counters),
    sum: &mut ReapSummary,
    damaged: &mut u64,
    on_progress: OnProgress<'_>,
) -> Option<bool> {
    // Files as the summary counts them (directories are not).
    let (bytes_before, files_before, started) = (
        sum.bytes_freed,
        files.files.load(Ordering::Relaxed),
        std::time::Instant::now(),
    );
    let step = reap_entry(trash, name, opts, state, files, sum, on_progress);
    let freed = Freed {
        files: files
            .files
            .load(Ordering::Relaxed)
            .saturating_sub(files_before),
        bytes: sum.bytes_freed.saturating_sub(bytes_before),
        took: started.elapsed(),
    };
    account(trash, opts, name, step, &freed, sum, damaged)
}

/// Logs one line for the damaged entries of a run beyond the first `MAX_DAMAGED_LOGGED` (which
/// were logged one by one): anyone can make thousands in their own trash.
fn damaged_beyond_logged(trash: &Trash, to: &Sink, damaged: u64) {
    if damaged <= MAX_DAMAGED_LOGGED {
        return;
    }
    let more = damaged - MAX_DAMAGED_LOGGED;
    let line = format!(
        "{}: {} more damaged entries left alone",
        quote(&trash.path),
        format::group(more)
    );
    let rec = Record::new(Priority::Err, line)
        .field("RECLAIM_EVENT", "damaged")
        .field("RECLAIM_COUNT", more.to_string());
    log(trash, to, rec);
}

/// The entries of `trash` to look at now (those `opts.only` names, or all), but those already
/// `left` this run.
fn to_look_at(trash: &Trash, opts: &ReapOptions, left: &[CString]) -> Vec<CString> {
    let names: Vec<CString> = match &opts.only {
        Some(ids) => ids
            .iter()
            .filter_map(|i| CString::new(i.as_bytes()).ok())
            .filter(|n| dirfd::lstat_at(&trash.dir, n).is_ok())
            .collect(),
        None => trash.entries(),
    };
    names.into_iter().filter(|n| !left.contains(n)).collect()
}

/// Tells `on_progress` what the reaper frees (its state, with the files counted so far) until
/// `done` is set: a tree against its recorded size when known (0: unknown; a tree is measured
/// only by `status --count` or `prune`). With `watched` (a reaper that stays), looks every
/// `GONE_CHECK` whether that trash is still there; if not, says so where `log` says and stops
/// the run at its next consistent point (`interrupt::abandon`).
fn tell_progress(
    state: &StateFile,
    files: &Counters,
    done: &AtomicBool,
    watched: Option<&Found>,
    log: &Sink,
    on_progress: OnProgress<'_>,
) {
    let mut last_look = std::time::Instant::now();
    while !done.load(Ordering::Relaxed) {
        if let Some(f) = watched.filter(|_| last_look.elapsed() >= GONE_CHECK) {
            last_look = std::time::Instant::now();
            if let Err(why) = f.still_there() {
                say_gone(f, &why, log);
                interrupt::abandon();
                return;
            }
        }
        state.set(|st| st.files = files.files.load(Ordering::Relaxed));
        let st = state.snapshot();
        if let Some(e) = st.entry.as_ref().filter(|_| st.entry_tree) {
            on_progress(&Progress::Freeing {
                what: e,
                freed: st.freed_bytes.saturating_sub(st.entry_freed_base),
                total: st.entry_bytes.unwrap_or(0),
                files: st.files.saturating_sub(st.entry_files_base),
                total_files: st.entry_files.unwrap_or(0),
                secs: now_unix() - st.entry_started_unix,
            });
        }
        // In slices, so a short run does not wait for a whole tick to end.
        for _ in 0..10 {
            if done.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// What freeing one entry took (for its log line).
struct Freed {
    files: u64,
    bytes: u64,
    took: Duration,
}

/// Adds what became of entry `name` (`step`) to the summary and the log. `Some(true)`: it was
/// freed; `Some(false)`: it is left (grace, back-off, busy, failed, damaged); `None`: a stop
/// signal came. `damaged` counts the damaged entries of this run: the first
/// `MAX_DAMAGED_LOGGED` are logged one by one, the rest in one line at the end.
fn account(
    trash: &Trash,
    opts: &ReapOptions,
    name: &CStr,
    step: Step,
    freed: &Freed,
    sum: &mut ReapSummary,
    damaged: &mut u64,
) -> Option<bool> {
    match step {
        Step::Freed(path, measure, held, cut) => {
            sum.entries_freed += 1;
            sum.counted(measure);
            let bytes = (freed.bytes, measure);
            let rec = freed_record(name, (&path, held), freed.files, bytes, freed.took);
            log(trash, &opts.log, rec);
            if let (Some(until), Some(p)) = (cut, &opts.early) {
                pressure::freed_early(trash, opts, name, (&path, until), p, sum);
            }
            return Some(true);
        }
        Step::Grace(until) => {
            sum.next_grace_unix = min_opt(sum.next_grace_unix, Some(until));
            sum.last_grace_unix = max_opt(sum.last_grace_unix, Some(until));
            sum.waiting += 1;
        }
        Step::Backoff { path, record } => {
            let until = record.next_attempt_unix;
            sum.next_retry_unix = min_opt(sum.next_retry_unix, Some(until));
            log(trash, &opts.log, backoff_record(name, &path, &record));
        }
        Step::Busy => {}
        Step::Interrupted => return None,
        Step::Failed { path, record } => {
            sum.entries_failed += 1;
            sum.next_retry_unix = min_opt(sum.next_retry_unix, Some(record.next_attempt_unix));
            for rec in failed_records(name, &path, &record) {
                log(trash, &opts.log, rec);
            }
            sum.errors.extend(record.errors);
        }
        Step::Damaged(why) => {
            sum.entries_failed += 1;
            let path = trash.shown(name, None);
            *damaged += 1;
            if *damaged <= MAX_DAMAGED_LOGGED {
                log(
                    trash,
                    &opts.log,
                    Record::new(Priority::Err, format!("{}: damaged: {why}", quote(&path)))
                        .field("RECLAIM_EVENT", "damaged")
                        .field("RECLAIM_ENTRY", name.to_bytes())
                        .path("RECLAIM_PATH", &path)
                        .field("RECLAIM_ERROR", why.to_string()),
                );
            }
            sum.errors
                .push(ErrorEntry::new(path, format!("damaged: {why}")));
        }
    }
    Some(false)
}

/// Logs a record about `trash` where this reaper logs: a dated line in the trash's
/// `reaper.log` (written as the trash's owner, as hostile ground), or the sink's place, with
/// the trash as the stderr line's start and as the journal's `RECLAIM_TRASH`.
fn log(trash: &Trash, to: &Sink, rec: Record) {
    match to.dest() {
        Dest::None => {}
        Dest::File => {
            let stamp = format::utc_stamp(now_unix() as u64);
            let line = format!("{stamp}Z {}", rec.message);
            let _ = safefile::append_log(&trash.dir, LOG, trash.uid, &line);
        }
        _ => to.write(
            &rec.path("RECLAIM_TRASH", &trash.path),
            Some(&quote(&trash.path)),
        ),
    }
}

/// The record of a freed entry: what (its original path; for a batch, its directory and how
/// many paths it held), how much (and how that was counted), how long, how fast.
fn freed_record(
    entry: &CStr,
    (path, held): (&Path, Option<u64>),
    files: u64,
    (bytes, measure): (u64, Measure),
    took: Duration,
) -> Record {
    let secs = took.as_secs_f64();
    let rate = (secs > 0.0).then(|| (bytes as f64 / secs) as u64);
    let how = match measure {
        Measure::Nothing => String::new(),
        m => format!(" ({})", m.text()),
    };
    let what = match held {
        Some(n) => format!("{} in {}", plural(n, "path", "paths"), quote(path)),
        None => quote(path),
    };
    let line = format!(
        "freed {what}: {}, {}{how} in {secs:.2} s{}",
        plural(files, "file", "files"),
        format::bytes(bytes),
        rate.map_or_else(String::new, |r| format!(", {}/s", format::bytes(r)))
    );
    let rec = Record::new(Priority::Info, line)
        .field("RECLAIM_EVENT", "freed")
        .field("RECLAIM_ENTRY", entry.to_bytes())
        .path("RECLAIM_PATH", path)
        .field("RECLAIM_FILES", files.to_string())
        .field("RECLAIM_BYTES", bytes.to_string())
        .field("RECLAIM_BYTES_MEASURE", measure.text())
        .field("RECLAIM_SECONDS", format!("{secs:.3}"));
    let rec = match held {
        Some(n) => rec.field("RECLAIM_PATHS", n.to_string()),
        None => rec,
    };
    match rate {
        Some(r) => rec.field("RECLAIM_RATE", r.to_string()),
        None => rec,
    }
}

/// The records of a failed attempt at an entry (its original path `path`): one per path that
/// could not be freed (with why), then one saying how many failed and when the next attempt
/// is.
fn failed_records(entry: &CStr, path: &Path, record: &FailedRecord) -> Vec<Record> {
    let with = |rec: Record| {
        rec.field("RECLAIM_EVENT", "failed")
            .field("RECLAIM_ENTRY", entry.to_bytes())
            .field("RECLAIM_ATTEMPTS", record.attempts.to_string())
            .field(
                "RECLAIM_NEXT_ATTEMPT_UNIX",
                format!("{:.0}", record.next_attempt_unix),
            )
    };
    let mut out: Vec<Record> = record
        .errors
        .iter()
        .map(|e| {
            with(Record::new(Priority::Err, format!("cannot free {e}")))
                .path("RECLAIM_PATH", &e.path.exact())
                .field("RECLAIM_ERROR", e.error.as_bytes())
        })
        .collect();
    let failed = (record.errors.len() as u64).saturating_add(record.more);
    out.push(
        with(Record::new(
            Priority::Warning,
            format!(
                "{}: {} could not be freed (attempt {}); next attempt at {}",
                quote(path),
                plural(failed, "path", "paths"),
                record.attempts,
                format::local_time(record.next_attempt_unix)
            ),
        ))
        .path("RECLAIM_PATH", path),
    );
    out
}

/// The record of an entry left until its back-off ends.
fn backoff_record(entry: &CStr, path: &Path, record: &FailedRecord) -> Record {
    Record::new(
        Priority::Notice,
        format!(
            "{}: not retried before {} (failed {})",
            quote(path),
            format::local_time(record.next_attempt_unix),
            plural(u64::from(record.attempts), "time", "times")
        ),
    )
    .field("RECLAIM_EVENT", "backoff")
    .field("RECLAIM_ENTRY", entry.to_bytes())
    .path("RECLAIM_PATH", path)
    .field("RECLAIM_ATTEMPTS", record.attempts.to_string())
    .field(
        "RECLAIM_NEXT_ATTEMPT_UNIX",
        format!("{:.0}", record.next_attempt_unix),
    )
}

enum Step {
    /// Freed (its original path, for the log; how its bytes were counted; for a batch, how
    /// many paths it held; the end of a grace window this cut short).
    Freed(PathBuf, Measure, Option<u64>, Option<f64>),
    /// In its grace window until then.
    Grace(f64),
    /// Failed before; not due for another attempt until the record says (its original path).
    Backoff { path: PathBuf, record: FailedRecord },
    /// Another process holds it (a hide, a restore, a foreground shrink).
    Busy,
    /// Stopped by a signal; the entry stays (claimed) for the next reaper.
    Interrupted,
    /// Could not be fully freed this time (its original path; what failed, and when to try
    /// again).
    Failed { path: PathBuf, record: FailedRecord },
    /// Not something a reaper made (the reason); skipped.
    Damaged(Damage),
}

/// Why an entry is not something a reaper made: it is reported and skipped, never freed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Damage {
    #[error("is not a directory (not an entry reclaim made)")]
    NotADirectory,
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(Errno),
    #[error("the entry is owned by uid {found}, not by the trash's owner (uid {owner})")]
    Owner { found: u32, owner: u32 },
    #[error("meta.json {0}")]
    Record(safefile::Bad),
    #[error("its record names uid {found}, not the trash's owner (uid {owner})")]
    RecordOwner { found: u32, owner: u32 },
    #[error("failed.json {0}")]
    FailureRecord(safefile::Bad),
    #[error("holds both 'data' and 'reaping'")]
    DataAndReaping,
}

/// Frees one entry: claims `data` as `reaping` (restore no longer possible), frees it (a tree
/// with the engine, a large file with the shrinker, anything else by unlink), then removes
/// what is left of the entry (its record, leftovers of an interrupted run) and the entry.
fn reap_entry(
    trash: &Trash,
    name: &CStr,
    opts: &ReapOptions,
    state: &StateFile<'_>,
    counters: &Counters,
    sum: &mut ReapSummary,
    on_progress: OnProgress<'_>,
) -> Step {
    let entry = match dirfd::open_dir_at(&trash.dir, name) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Step::Busy,
        Err(Errno::LOOP | Errno::NOTDIR) => return Step::Damaged(Damage::NotADirectory),
        Err(e) => return Step::Damaged(Damage::Os(e)),
    };
    match locks::try_exclusive(&entry) {
        Ok(true) => {}
        Ok(false) => return Step::Busy,
        Err(e) => return Step::Damaged(Damage::Os(e)),
    }
    let meta = match check_entry(trash, &entry) {
        Ok(m) => m,
        Err(why) => return Step::Damaged(why),
    };
    let failed = match FailedRecord::read(&entry, trash.uid) {
        Ok(f) => f,
        Err(bad) => return Step::Damaged(Damage::FailureRecord(bad)),
    };
    let shown = meta.as_ref().map_or_else(
        || trash.shown(name, None),
        crate::trash::meta::Meta::original_path,
    );
    // A grace window this run cuts short (`reap --now`, or a file system short of space).
    let cut = meta
        .as_ref()
        .and_then(|m| m.grace_until_unix)
        .filter(|u| opts.now && *u > now_unix() && dirfd::lstat_at(&entry, DATA).is_ok());
    if let Some(f) = &failed {
        if !opts.retry_failed && f.next_attempt_unix > now_unix() {
            return Step::Backoff {
                path: shown,
                record: f.clone(),
            };
        }
    }
    if let Some(step) = claim(
        (trash, name),
        &entry,
        meta.as_ref(),
        &shown,
        failed.as_ref(),
        opts.now,
    ) {
        return step;
    }
    // A batch's paths as they are now (its record may name more: a hide killed midway).
    let held = meta
        .as_ref()
        .filter(|m| m.is_batch())
        .and_then(|_| trash::held_now(&entry));
    started(state, &shown, meta.as_ref());
    let pacing = opts
        .pacing
        .clone()
        .or_else(|| meta.as_ref().map(|m| m.pacing.clone()))
        .unwrap_or_default();
    let entry = Arc::new(entry);
    let mut measure = Measure::Nothing;
    if let Ok(facts) = dirfd::lstat_at(&*entry, REAPING) {
        // A file is counted before it goes (what no other name, process or file holds); a
        // tree by the file system's free space.
        measure = if facts.file_type == FileType::Directory {
            Measure::FreeSpace
        } else {
            Measure::Blocks
        };
        let freed = free_reaping(
            &entry,
            &facts,
            &pacing,
            opts,
            counters,
            sum,
            &shown,
            state,
            on_progress,
        );
        match freed {
            Ok(true) => {}
            Ok(false) => return Step::Interrupted,
            Err(failures) => {
                let held = held_names(trash, &entry, meta.as_ref());
                let at = (shown.as_path(), held.as_ref());
                return fail((trash, name), &entry, at, failed.as_ref(), &failures);
            }
        }
    }
    // What is left: the record, a failure record, leftovers of an interrupted run (a large one
    // is shrunk in place: the entry is private). All the trash owner's.
    let rest = clear_entry(trash, name, &entry, &pacing, opts, counters, sum, &shown);
    match rest {
        Ok(true) => Step::Freed(shown, measure, held, cut),
        Ok(false) => Step::Interrupted,
        Err(failures) => {
            let held = held_names(trash, &entry, meta.as_ref());
            fail(
                (trash, name),
                &entry,
                (shown.as_path(), held.as_ref()),
                failed.as_ref(),
                &failures,
            )
        }
    }
}

/// Claims the entry's data for freeing (`DATA` renamed to `REAPING`, made durable), unless its
/// grace window is still open (and `now` was not asked: `reap --now`); `Some(step)` when it is
/// not to be freed now. An entry already claimed (an interrupted run) is left as it is.
fn claim(
    at: (&Trash, &CStr),
    entry: &OwnedFd,
    meta: Option<&Meta>,
    shown: &Path,
    failed: Option<&FailedRecord>,
    now: bool,
) -> Option<Step> {
    dirfd::lstat_at(entry, DATA).ok()?;
    if let Some(until) = meta.and_then(|m| m.grace_until_unix) {
        if until > now_unix() && !now {
            return Some(Step::Grace(until));
        }
    }
    match crate::sys::rename::noreplace(
        entry,
        DATA,
        entry,
        REAPING,
        crate::sys::rename::Into::Private,
    ) {
        Ok(()) => {}
        Err(Errno::NOENT) => return Some(Step::Busy),
        Err(Errno::EXIST) => return Some(Step::Damaged(Damage::DataAndReaping)),
        Err(e) => return Some(Step::Damaged(Damage::Os(e))),
    }
    // Durable before the first byte is freed: after a crash a partly freed target must never
    // look whole (restorable).
    match fsync(entry) {
        Ok(()) => None,
        Err(e) => Some(fail(
            at,
            entry,
            (shown, None),
            failed,
            &[os_failure(shown, e)],
        )),
    }
}

/// Says in the state file that the entry shown as `shown` (recorded as `meta`) is being freed
/// now, with what is known of its size.
fn started(state: &StateFile<'_>, shown: &Path, meta: Option<&Meta>) {
    let shown_text = shown.to_string_lossy().into_owned();
    state.activate();
    let (entry_bytes, entry_files) = meta.map_or((None, None), |m| (m.allocated, m.files));
    let entry_tree = meta.map_or(true, |m| m.kind == "dir" || m.is_batch());
    state.set(|st| {
        st.state = "freeing".into();
        st.entry = Some(shown_text);
        st.next_due_unix = None;
        st.entry_bytes = entry_bytes;
        st.entry_files = entry_files;
        st.entry_freed_base = st.freed_bytes;
        st.entry_files_base = st.files;
        st.entry_started_unix = now_unix();
        st.entry_tree = entry_tree;
    });
}

/// Checks an open entry: the trash owner's directory, its record (if any) a plain file naming
/// the same owner. Returns the record.
fn check_entry(trash: &Trash, entry: &OwnedFd) -> Result<Option<Meta>, Damage> {
    let st = rustix::fs::fstat(entry).map_err(Damage::Os)?;
    if st.st_uid != trash.uid {
        return Err(Damage::Owner {
            found: st.st_uid,
            owner: trash.uid,
        });
    }
    let meta = Meta::read(entry, trash.uid).map_err(Damage::Record)?;
    if let Some(m) = &meta {
        if m.uid != trash.uid {
            return Err(Damage::RecordOwner {
                found: m.uid,
                owner: trash.uid,
            });
        }
    }
    Ok(meta)
}

fn os_failure(path: &Path, e: Errno) -> Failure {
    Failure {
        path: path.to_path_buf(),
        reason: Reason::Os(e),
    }
}

/// The names of a batch's paths by slot (`None` for any other entry, or without a list).
fn held_names(
    trash: &Trash,
    entry: &OwnedFd,
    meta: Option<&Meta>,
) -> Option<std::collections::HashMap<String, std::ffi::OsString>> {
    use std::os::unix::ffi::OsStringExt;
    meta.filter(|m| m.is_batch())?;
    let list = crate::trash::meta::HeldList::read(entry, trash.uid).ok()??;
    Some(
        list.items
            .iter()
            .filter_map(|h| {
                Some((
                    h.slot.to_string(),
                    std::ffi::OsString::from_vec(h.name.bytes()?),
                ))
            })
            .collect(),
    )
}

/// Records a failed attempt in the entry and says so: each failed path with the entry's ID
/// and where that path is now (inside the entry: the file to `chattr -i` is there, not at its
/// original path). In a batch (`held`: its names by slot) a path inside `reaping/<slot>` is
/// named by the path it had (`<directory>/<name>/...`).
fn fail(
    at: (&Trash, &CStr),
    entry: &OwnedFd,
    (shown, held): (
        &Path,
        Option<&std::collections::HashMap<String, std::ffi::OsString>>,
    ),
    previous: Option<&FailedRecord>,
    failures: &[Failure],
) -> Step {
    let (trash, name) = at;
    let mut record = FailedRecord::after(previous, failures, now_unix());
    let id = name.to_string_lossy().into_owned();
    for e in &mut record.errors {
        e.entry = Some(id.clone());
        let exact = e.path.exact();
        let rel = exact.strip_prefix(shown).ok().map(Path::to_path_buf);
        e.now_at = rel
            .as_ref()
            .map(|rel| trash.shown(name, Some(REAPING)).join(rel))
            .filter(|p| crate::sys::dirfd::lstat_path(p).is_ok())
            .map(crate::sys::quote::PathField::new);
        if let (Some(held), Some(rel)) = (held, &rel) {
            let mut parts = rel.components();
            let slot = parts
                .next()
                .map(|c| c.as_os_str().to_string_lossy().into_owned());
            if let Some(n) = slot.and_then(|s| held.get(&s)) {
                e.path = crate::sys::quote::PathField::new(shown.join(n).join(parts.as_path()));
            }
        }
    }
    let _ = record.write(entry);
    Step::Failed {
        path: shown.to_path_buf(),
        record,
    }
}

/// Frees `reaping` of an entry. `Ok(false)`: stopped by a signal.
#[allow(clippy::too_many_arguments)]
fn free_reaping(
    entry: &Arc<OwnedFd>,
    facts: &dirfd::Facts,
    pacing: &EntryPacing,
    opts: &ReapOptions,
    counters: &Counters,
    sum: &mut ReapSummary,
    shown: &Path,
    state: &StateFile<'_>,
    on_progress: OnProgress<'_>,
) -> Result<bool, Vec<Failure>> {
    let shown_text = shown.to_string_lossy().into_owned();
    match facts.file_type {
        FileType::Directory => {
            // The engine stats no file: what came back is the file system's free space (never
            // less than the directories' blocks, which it does count).
            let before = crate::sys::space::FreeSpace::of(&**entry);
            let known = counters.bytes.load(Ordering::Relaxed);
            let target = DirTarget {
                base: entry.clone(),
                name: REAPING.to_owned(),
                // Messages name what the user removed (its original path), not the trash.
                display: shown.to_path_buf(),
                ident: facts.ident,
            };
            // A listing pass ahead of the removal learns the total its progress is shown
            // against (unless the record has it). It gets a head start of up to
            // `LISTING_HEAD_START` (a tree of some thousands is listed by then, also on a busy
            // machine): a file the removal takes before the listing reached its directory is
            // missing from the total.
            let stop = AtomicBool::new(false);
            let count = state.snapshot().entry_files.is_none();
            let gentle = &mut sum.gentle;
            let subvolumes = &mut sum.subvolumes_deleted;
            let r = std::thread::scope(|s| {
                if count {
                    let (base, stop) = (entry.clone(), &stop);
                    let (done, listed) = std::sync::mpsc::channel::<()>();
                    let lister = std::thread::Builder::new()
                        .name("listing".into())
                        .spawn_scoped(s, move || {
                            if let Some(n) = crate::engine::listing::count(&base, REAPING, stop) {
                                state.set(|st| {
                                    st.entry_files.get_or_insert(n.files);
                                });
                            }
                            let _ = done.send(());
                        });
                    // Out of threads: no total, the removal goes ahead all the same.
                    if lister.is_ok() {
                        let _ = listed.recv_timeout(LISTING_HEAD_START);
                    }
                }
                let r = free_tree(
                    target,
                    (pacing, opts.floor),
                    &opts.engine,
                    counters,
                    gentle,
                    subvolumes,
                );
                stop.store(true, Ordering::Relaxed);
                r
            });
            let dirs = counters.bytes.load(Ordering::Relaxed) - known;
            sum.bytes_freed +=
                dirs.max(before.freed_since(&crate::sys::space::FreeSpace::of(&**entry)));
            r
        }
        FileType::RegularFile => {
            // What the file system gets back: nothing while another name, process or file
            // holds the blocks (counted before they go).
            let returned = crate::sys::freed::by_removal(entry, REAPING, facts);
            let t = std::time::Instant::now();
            let cb = |freed: u64, total: u64, _: Option<&crate::engine::pace::Pacer>| {
                on_progress(&Progress::Freeing {
                    what: &shown_text,
                    freed,
                    total,
                    files: 0,
                    total_files: 0,
                    secs: t.elapsed().as_secs_f64(),
                })
            };
            let o = shrink::remove_file(
                entry,
                REAPING,
                facts,
                &crate::engine::pace::Pacing {
                    floor: opts.floor,
                    ..pacing.pacing()
                },
                &shrink::Hiding::InPlace,
                &cb,
            );
            match o {
                Ok(o) if o.left.is_some() => Ok(false),
                Ok(o) => {
                    counters.files.fetch_add(1, Ordering::Relaxed);
                    sum.bytes_freed += returned;
                    if o.steps > 0 {
                        sum.gentle.push(crate::engine::shrink::Gentle {
                            path: crate::sys::quote::PathField::new(shown),
                            elapsed_s: t.elapsed().as_secs_f64(),
                            outcome: o,
                        });
                    }
                    Ok(true)
                }
                Err(Reason::Os(Errno::NOENT)) => Ok(true),
                Err(reason) => Err(vec![Failure {
                    path: shown.to_path_buf(),
                    reason,
                }]),
            }
        }
        _ => match crate::sys::safeopen::unlink_at(&**entry, REAPING) {
            Ok(()) | Err(Errno::NOENT) => {
                counters.files.fetch_add(1, Ordering::Relaxed);
                Ok(true)
            }
            Err(e) => Err(vec![os_failure(shown, e)]),
        },
    }
}

/// Removes the entry directory with whatever is left in it. `Ok(false)`: stopped by a signal.
#[allow(clippy::too_many_arguments)]
fn clear_entry(
    trash: &Trash,
    name: &CStr,
    entry: &Arc<OwnedFd>,
    pacing: &EntryPacing,
    opts: &ReapOptions,
    counters: &Counters,
    sum: &mut ReapSummary,
    shown: &Path,
) -> Result<bool, Vec<Failure>> {
    // The record goes last: until then a crash leaves an entry that still says what it was.
    let mut buf = dirfd::DirBuf::new(8 << 10);
    let mut others = false;
    if let Ok(list) = trash::reopen(entry) {
        let _ = dirfd::for_each_entry(&list, &mut buf, |n, _, _| {
            others |= n != trash::meta::META && n != trash::FAILED && n != trash::meta::HELD;
        });
    }
    if others {
        let base = Arc::new(trash::reopen(&trash.dir).map_err(|e| vec![os_failure(shown, e)])?);
        let ident = dirfd::fstat(&**entry)
            .map_err(|e| vec![os_failure(shown, e)])?
            .ident;
        let target = DirTarget {
            base,
            name: name.to_owned(),
            display: trash.shown(name, None),
            ident,
        };
        let r = free_tree(
            target,
            (pacing, opts.floor),
            &opts.engine,
            counters,
            &mut sum.gentle,
            &mut sum.subvolumes_deleted,
        );
        return r;
    }
    let _ = crate::sys::safeopen::unlink_at(&**entry, trash::FAILED);
    let _ = crate::sys::safeopen::unlink_at(&**entry, trash::meta::HELD);
    let _ = crate::sys::safeopen::unlink_at(&**entry, trash::meta::META);
    match crate::sys::safeopen::rmdir_at(&trash.dir, name) {
        Ok(()) | Err(Errno::NOENT) => Ok(true),
        Err(e) => Err(vec![os_failure(&trash.shown(name, None), e)]),
    }
}

/// Removes a tree of an entry with the engine, as `reclaim rm -r` does on this file system
/// (`remove::Start`: on this thread until it proves big, then its profile's workers unless
/// given, the probe and governor where pacing decides something; large files shrunk in place,
/// the tree being private), under `floor`. Subvolumes the file system deleted whole (nested
/// ones too) are added to `subvolumes`. `Ok(false)`: stopped by a signal.
fn free_tree(
    target: DirTarget,
    (pacing, floor): (&EntryPacing, crate::sys::space::Floor),
    engine: &remove::Options,
    counters: &Counters,
    gentle: &mut Vec<crate::engine::shrink::Gentle>,
    subvolumes: &mut u64,
) -> Result<bool, Vec<Failure>> {
    let mut engine = engine.clone();
    let mut start = remove::Start::default();
    start.pace = pacing.clone();
    start.floor = floor;
    start.threads_given = engine.threads != 0;
    start.govern = true;
    engine.start = Some(Arc::new(start));
    let paced_so = crate::engine::pace::Pacing {
        floor,
        ..pacing.pacing()
    };
    let tree_files = (!pacing.fast).then(|| Arc::new(shrink::TreeFiles::new(paced_so, true)));
    engine.large_files = tree_files.clone();
    let outcome = remove::remove_trees(vec![target], &engine, counters, &remove::Quiet);
    for (path, o, took) in tree_files.map(|tf| tf.take()).unwrap_or_default() {
        gentle.push(crate::engine::shrink::Gentle {
            path: crate::sys::quote::PathField::new(path),
            elapsed_s: took.as_secs_f64(),
            outcome: o,
        });
    }
    *subvolumes += outcome
        .subvolumes
        .iter()
        .filter_map(|s| s.deleted.as_ref().ok())
        .map(|d| 1 + d.nested.len() as u64)
        .sum::<u64>();
    if !outcome.failures.is_empty() {
        return Err(outcome.failures);
    }
    Ok(!interrupt::stopping())
}

/// Frees every trash this process may act on as `opts` says: its own in this process, other
/// users' (when root) each in a child running as that user. With `Locked::Wait`, a trash
/// another reaper holds is taken up after all the others: this waits for that reaper to
/// finish (telling `on_progress` what it does), then makes its own pass. With `Until::Empty`,
/// grace windows are waited out holding nothing open (trashes are opened again after each
/// wait).
pub fn reap_all(
    open: &dyn Fn() -> Result<Vec<Found>, OpenError>,
    opts: &ReapOptions,
    child_args: &[OsString],
    on_progress: OnProgress<'_>,
    on_line: &mut dyn FnMut(&str),
) -> ReapSummary {
    let mut sum = ReapSummary::default();
    // Failed entries are tried (at most) once per run, not again after each grace wait.
    let mut later = opts.clone();
    later.retry_failed = false;
    let mut first = true;
    // The trashes as first found: a later one at the same path must be the same directory.
    let mut seen: Vec<Found> = Vec::new();
    // Their file systems' free space while waiting: short of it, a pass frees grace entries.
    let mut watch = crate::sys::space::Watch::new(opts.floor);
    loop {
        let mut trashes = match open() {
            Ok(t) => t,
            // Gone since it was last looked at: said, and nothing left to do.
            Err(_) if !first && seen.iter().all(|t| t.still_there().is_err()) => {
                for t in &seen {
                    if let Err(why) = t.still_there() {
                        say_gone(t, &why, &opts.log);
                    }
                }
                return sum;
            }
            Err(e) => {
                sum.error = Some(e.to_string());
                return sum;
            }
        };
        if first {
            seen = trashes.clone();
        } else {
            trashes.retain(|t| {
                let replaced = seen.iter().any(|s| s.path == t.path && s.ident != t.ident);
                if replaced {
                    say_gone(t, "another directory took its name", &opts.log);
                    seen.retain(|s| s.path != t.path);
                }
                !replaced
            });
            if trashes.is_empty() {
                return sum;
            }
        }
        let pass_opts = if first { opts } else { &later };
        let pass = pass_over_all(&trashes, pass_opts, child_args, on_progress, on_line);
        let next = pass.next_grace_unix;
        let (remaining, waiting, last_grace) = (pass.remaining, pass.waiting, pass.last_grace_unix);
        sum.merge(pass);
        // What is left after the last pass (not a sum over passes).
        sum.remaining = remaining;
        sum.waiting = waiting;
        sum.last_grace_unix = last_grace;
        first = false;
        let Some(next) = next.filter(|_| opts.until == Until::Empty && !sum.interrupted) else {
            break;
        };
        // Say that this process waits (status shows it), unless another live one already
        // waits for these trashes at least as early: then it is theirs, and this one leaves.
        if waited_for_elsewhere(&trashes, next) {
            break;
        }
        let watching = (&mut watch, sum.last_grace_unix.unwrap_or(next));
        match wait_for(next, &mut trashes, &mut seen, watching, &opts.log) {
            Waited::Due | Waited::Pressed => {}
            Waited::AllGone => return sum,
            Waited::Emptied => break,
            Waited::Stopped => {
                sum.interrupted = true;
                break;
            }
        }
        sum.next_grace_unix = None;
    }
    sum
}

/// One pass over each of `trashes`; with `Locked::Wait`, those another reaper held are taken
/// up after all the others (reapers of other users waited for `FOREIGN_LOCK_WAIT` at most, all
/// together).
fn pass_over_all(
    trashes: &[Found],
    opts: &ReapOptions,
    child_args: &[OsString],
    on_progress: OnProgress<'_>,
    on_line: &mut dyn FnMut(&str),
) -> ReapSummary {
    let mut pass = ReapSummary::default();
    let mut held: Vec<(&Found, ReapSummary)> = Vec::new();
    for t in trashes {
        if interrupt::stopping() {
            pass.interrupted = true;
            break;
        }
        let s = pass_over(t, opts, child_args, on_progress, on_line);
        if opts.locked == Locked::Wait && !s.skipped_locked.is_empty() && !s.interrupted {
            held.push((t, s));
        } else {
            pass.merge(s);
        }
    }
    let foreign_deadline = std::time::Instant::now() + FOREIGN_LOCK_WAIT;
    for (t, skipped) in held {
        let s = after_reaper(
            t,
            skipped,
            opts,
            child_args,
            on_progress,
            on_line,
            foreign_deadline,
        );
        pass.merge(s);
    }
    pass
}

/// Whether another live process already waits for all of `trashes` (this process's own) to be
/// due by `next`; if not, this process says in each that it waits (status shows it). Each is
/// opened for the moment it takes to read or write its `reaper.json`.
fn waited_for_elsewhere(trashes: &[Found], next: f64) -> bool {
    let own: Vec<&Found> = trashes
        .iter()
        .filter(|t| !crate::sys::asuser::needed(t.uid))
        .collect();
    let covered = !own.is_empty()
        && own.len() == trashes.len()
        && own.iter().all(|f| {
            f.open()
                .ok()
                .and_then(|t| state::read(&t.dir, t.uid))
                .is_some_and(|st| {
                    st.pid != std::process::id()
                        && st.state == "waiting"
                        && st.next_due_unix.is_some_and(|d| d <= next)
                        && st.alive()
                })
        });
    if !covered {
        for f in &own {
            if let Ok(t) = f.open() {
                state::write_waiting(&t.dir, next);
            }
        }
    }
    covered
}

/// How a wait for a grace window ended.
enum Waited {
    /// The time came.
    Due,
    /// Every trash waited for is gone.
    AllGone,
    /// Nothing is left in the trashes (restored, or freed by `reap --now`): nothing to wait for.
    Emptied,
    /// A stop signal.
    Stopped,
    /// A file system of its trashes ran short of space: entries in their grace window are to
    /// be freed early (`pressure`).
    Pressed,
}

/// How often a waiting reaper looks whether its trashes still hold entries.
const EMPTIED_CHECK: Duration = Duration::from_secs(1);

/// Waits until `until`, holding nothing of the file system (a `umount` can go ahead
/// meanwhile) but for a look each `EMPTIED_CHECK` at whether `trashes` still hold entries
/// (each opened in turn, for that look only): a restore or `reap --now` that empties them ends
/// the wait (and the reaper) at once; so does a file system of this user's trashes running
/// short of space (`watch`, for entries held until `last`: the last grace window's end). Every
/// `GONE_CHECK` it looks whether `trashes` are still there: one that is gone (unmounted,
/// removed, replaced) is said (to `log`) and left, also in `seen`.
fn wait_for(
    until: f64,
    trashes: &mut Vec<Found>,
    seen: &mut Vec<Found>,
    (watch, last): (&mut crate::sys::space::Watch, f64),
    log: &Sink,
) -> Waited {
    let mut gone_checked = std::time::Instant::now();
    while now_unix() < until {
        let slice = (until - now_unix()).clamp(0.05, EMPTIED_CHECK.as_secs_f64());
        if !interrupt::sleep(Duration::from_secs_f64(slice)) {
            return Waited::Stopped;
        }
        if gone_checked.elapsed() >= GONE_CHECK {
            gone_checked = std::time::Instant::now();
            trashes.retain(|t| match t.still_there() {
                Ok(()) => true,
                Err(why) => {
                    say_gone(t, &why, log);
                    seen.retain(|s| s.path != t.path);
                    false
                }
            });
            if trashes.is_empty() {
                return Waited::AllGone;
            }
        }
        if trashes
            .iter()
            .all(|f| f.open().is_ok_and(|t| t.entries().is_empty()))
        {
            for f in trashes
                .iter()
                .filter(|f| !crate::sys::asuser::needed(f.uid))
            {
                if let Ok(t) = f.open() {
                    state::remove_mine(&t.dir, t.uid);
                }
            }
            return Waited::Emptied;
        }
        if pressure::pressed_while_waiting(trashes, watch, last) {
            return Waited::Pressed;
        }
    }
    Waited::Due
}

/// How often a reaper that waits, or works for a long time, looks whether its trash is still
/// there.
const GONE_CHECK: Duration = Duration::from_secs(2);

/// Says, once, that the trash `t` is gone (`why`) and that this reaper leaves it: where the
/// reaper logs, or on stderr when that is the trash's own log (gone with it).
fn say_gone(t: &Found, why: &str, to: &Sink) {
    let rec = Record::new(
        Priority::Warning,
        format!("{}: {why}; this reaper leaves it", quote(&t.path)),
    )
    .field("RECLAIM_EVENT", "gone")
    .path("RECLAIM_TRASH", &t.path);
    match to.dest() {
        Dest::None => {}
        Dest::File => Sink::new(Dest::Stderr).write(&rec, None),
        _ => to.write(&rec, None),
    }
}

/// One pass over `t`: here if it is this process's own trash (opened for the pass only), else
/// in a child running as its owner.
fn pass_over(
    t: &Found,
    opts: &ReapOptions,
    child_args: &[OsString],
    on_progress: OnProgress<'_>,
    on_line: &mut dyn FnMut(&str),
) -> ReapSummary {
    if !crate::sys::asuser::needed(t.uid) {
        return match t.open() {
            Ok(open) => run(std::slice::from_ref(&open), opts, on_progress),
            Err(e) => ReapSummary {
                errors: vec![ErrorEntry::new(&t.path, e.to_string())],
                ..ReapSummary::default()
            },
        };
    }
    // Nothing in it: no pass, no child (empty decoys by the thousand cost a listing each).
    if t.is_idle_and_empty() {
        return ReapSummary::default();
    }
    let mut args = child_args.to_vec();
    if opts.retry_failed {
        args.push("--retry-failed".into());
    }
    if opts.now {
        args.push("--now".into());
        match &opts.only {
            // Only the IDs of this trash (root only looks at the names there, the trash
            // opened for that look only).
            Some(ids) => {
                let here: Vec<&String> = match t.open() {
                    Ok(open) => ids.iter().filter(|i| open.has_entry(i)).collect(),
                    Err(_) => Vec::new(),
                };
                if here.is_empty() {
                    return ReapSummary::default();
                }
                args.push("--".into());
                args.extend(here.into_iter().map(OsString::from));
            }
            None => args.push("--all".into()),
        }
    }
    as_owner(&t.path, t.uid, &args, on_line)
}

/// Damaged entries of one trash logged one by one in a run (the rest in one line).
const MAX_DAMAGED_LOGGED: u64 = 3;

/// How long a tree's listing pass (its progress total) runs before the removal starts.
const LISTING_HEAD_START: Duration = Duration::from_millis(250);

/// How often a reaper waiting for another one looks whether it finished.
const WAIT_POLL: Duration = Duration::from_millis(200);

/// How long root's `reap` waits, in all, for reapers of other users to let go of their trashes:
/// a user's own reaper can be slowed down at will (`--iops 1`), so that user could otherwise
/// hold root's `reap` (and the cron jobs behind it) for as long as they like.
pub const FOREIGN_LOCK_WAIT: Duration = Duration::from_secs(30);

/// `Locked::Wait` for the trash `t` that `skipped` found held: waits until no process holds
/// its lock (read from `/proc/locks`, so root opens nothing of another user's trash), then
/// makes a pass over it, and again if another reaper took the lock first. Stopped by a
/// signal while waiting: `skipped`, marked interrupted. In another user's trash only a
/// `reclaim` process is waited for: a lock that user holds with anything else would hold up
/// root's `reap` for as long as they like; it is skipped, and said. A holder of another uid
/// than this process's is waited for until `foreign_deadline` only, and not at all while it is
/// stopped (SIGSTOP): the trash is then skipped, and said (that reaper frees what is due).
#[allow(clippy::too_many_arguments)]
fn after_reaper(
    t: &Found,
    mut skipped: ReapSummary,
    opts: &ReapOptions,
    child_args: &[OsString],
    on_progress: OnProgress<'_>,
    on_line: &mut dyn FnMut(&str),
    foreign_deadline: std::time::Instant,
) -> ReapSummary {
    let me = rustix::process::geteuid().as_raw();
    loop {
        while let Some(pid) = t.holder() {
            if crate::sys::asuser::needed(t.uid) && !runs_this_program(pid) {
                on_line(&format!(
                    "reclaim reap: not waiting for {}: its lock is held by process {pid}, which is not reclaim",
                    quote(&t.path)
                ));
                return skipped;
            }
            if let Some((uid, stopped)) = process_state(pid).filter(|(uid, _)| *uid != me) {
                let why = if stopped {
                    Some("which is stopped".to_string())
                } else {
                    (std::time::Instant::now() >= foreign_deadline)
                        .then(|| format!("for more than {} s", FOREIGN_LOCK_WAIT.as_secs()))
                };
                if let Some(why) = why {
                    on_line(&format!(
                        "reclaim reap: not waiting for {}: its lock is held by process {pid} of \
                         uid {uid}, {why}; that reaper frees what is due",
                        quote(&t.path)
                    ));
                    return skipped;
                }
            }
            // Another user's trash is read only as that user: root knows the pid alone (one's
            // own is opened for the look only).
            let st = (!crate::sys::asuser::needed(t.uid))
                .then(|| t.open().ok())
                .flatten()
                .and_then(|open| state::read(&open.dir, open.uid))
                .filter(|st| st.pid == pid);
            let freeing = st.as_ref().and_then(|st| {
                let e = st.entry.as_deref()?;
                Some((e, st.freed_bytes, st.rate_bps))
            });
            on_progress(&Progress::WaitingFor {
                trash: &t.path,
                pid,
                freeing,
            });
            if !interrupt::sleep(WAIT_POLL) {
                skipped.interrupted = true;
                return skipped;
            }
        }
        let s = pass_over(t, opts, child_args, on_progress, on_line);
        if s.skipped_locked.is_empty() || s.interrupted {
            return s;
        }
        // Taken again before this pass could (or its holder is not in /proc/locks): look
        // again a moment later.
        skipped = s;
        if !interrupt::sleep(WAIT_POLL) {
            skipped.interrupted = true;
            return skipped;
        }
    }
}

/// The effective uid of process `pid` and whether it is stopped (`T`, `t`), from `/proc`.
fn process_state(pid: u32) -> Option<(u32, bool)> {
    let status =
        crate::sys::safeopen::kernel::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    let uid = field("Uid:")?.split_whitespace().nth(1)?.parse().ok()?;
    let state = field("State:")?;
    Some((uid, state.starts_with('T') || state.starts_with('t')))
}

/// Whether process `pid` runs the same executable as this one.
fn runs_this_program(pid: u32) -> bool {
    let theirs = crate::sys::safeopen::kernel::read_link(format!("/proc/{pid}/exe"));
    matches!((theirs, crate::sys::safeopen::kernel::read_link("/proc/self/exe")), (Ok(a), Ok(b)) if a == b)
}

/// The flags that make a child reaper (another user's pass) log where this one does, each line
/// with its priority for this process to read (`Sink::relay`).
pub fn child_log_args(dest: Dest) -> [OsString; 2] {
    [
        format!("--log={}", dest.arg()).into(),
        "--log-prefix".into(),
    ]
}

/// Where a reaper's own messages and its children's stderr lines go: with the log when that is
/// the journal or syslog, else on stderr.
pub fn relay_sink(dest: Dest, prefix: bool) -> Sink {
    let to = match dest {
        Dest::Journal | Dest::Syslog => dest,
        Dest::None | Dest::File | Dest::Stderr => Dest::Stderr,
    };
    Sink::new(to).prefixed(prefix)
}

/// Reaps another user's trash (`path`, of `uid`) in a child running as that user (`reclaim
/// reap --trash T --once --json`), and returns its summary (a child that failed as an error
/// of it).
pub fn as_owner(
    path: &Path,
    uid: u32,
    args: &[OsString],
    on_line: &mut dyn FnMut(&str),
) -> ReapSummary {
    match pass_as_owner(path, uid, args, on_line) {
        Ok(s) => s,
        Err(e) => ReapSummary {
            errors: vec![ErrorEntry::new(path, e.to_string())],
            error: None,
            ..ReapSummary::default()
        },
    }
}

/// One `reap --trash T --once --json ARGS` pass over `path` in a child: as its owner `uid`
/// (this process's own user: no change of user); what it prints on stderr goes to `on_line`.
pub fn pass_as_owner(
    path: &Path,
    uid: u32,
    args: &[OsString],
    on_line: &mut dyn FnMut(&str),
) -> Result<ReapSummary, crate::sys::asuser::ChildError> {
    let who = crate::sys::asuser::needed(uid).then(|| crate::sys::asuser::Identity::of(uid));
    let mut argv: Vec<OsString> = vec![
        "reap".into(),
        "--trash".into(),
        path.as_os_str().to_owned(),
        "--once".into(),
        "--json".into(),
    ];
    argv.extend(args.iter().cloned());
    crate::sys::asuser::run_json::<ReapSummary>(who.as_ref(), &argv, on_line).map(|(s, _)| s)
}

#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use crate::trash::safefile::fuzz::bytes;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn reaper_records_from_arbitrary_bytes(text in bytes()) {
            let d = tempfile::tempdir().unwrap();
            let dir = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
            std::fs::write(d.path().join("failed.json"), &text).unwrap();
            std::fs::write(d.path().join("reaper.json"), &text).unwrap();
            let me = rustix::process::geteuid().as_raw();
            if let Ok(Some(f)) = super::failure::FailedRecord::read(&dir, me) {
                for e in &f.errors {
                    let _ = e.to_string();
                }
            }
            let _ = super::state::read(&dir, me).map(|s| s.alive());
            // What a child prints (hostile when it runs as another user).
            let _ = serde_json::from_slice::<super::ReapSummary>(&text);
        }
    }
}
