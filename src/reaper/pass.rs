//! A pass over the trashes: over one trash this process holds the lock of (`run`: every due
//! entry in turn, the ticker that tells progress, a last look before it lets go), and over
//! each trash found (`pass_over`: its own here, another user's in a child as that user). What
//! became of each entry goes to the summary and the log. Frees nothing itself: one entry is
//! `entry`'s.

use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::child::{as_owner, Ask, ChildArgs, Now};
use super::entry::{reap_entry, Step};
use super::records::{
    backoff_record, damaged_beyond_logged, failed_records, freed_record, log, say_gone,
    MAX_DAMAGED_LOGGED,
};
use super::state::StateFile;
use super::summary::{max_opt, min_opt};
use super::{pressure, state, OnProgress, Progress, ReapOptions, ReapSummary, TrashLock, Until};
use crate::engine::remove::Counters;
use crate::sys::dirfd;
use crate::sys::error::ErrorEntry;
use crate::sys::format::now_unix;
use crate::sys::interrupt;
use crate::sys::logging::{Priority, Record, Sink};
use crate::sys::quote::quote;
use crate::trash::{Found, Trash};

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
                && pressure::relieve(trash, opts, &mut watch, sum, &mut |name, early, sum| {
                    take(
                        trash,
                        name,
                        early,
                        (&state, &files),
                        sum,
                        &mut damaged,
                        on_progress,
                    )
                });
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

/// How often a reaper that waits, or works for a long time, looks whether its trash is still
/// there.
pub(super) const GONE_CHECK: Duration = Duration::from_secs(2);

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

/// One pass over `t`: here if it is this process's own trash (opened for the pass only), else
/// in a child running as its owner.
pub(super) fn pass_over(
    t: &Found,
    opts: &ReapOptions,
    child_args: &ChildArgs,
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
    let here: Vec<String>;
    let now = match (&opts.only, opts.now) {
        (_, false) => Now::Due,
        (None, true) => Now::All,
        // Only the IDs of this trash (root only looks at the names there, the trash opened
        // for that look only).
        (Some(ids), true) => {
            here = match t.open() {
                Ok(open) => ids.iter().filter(|i| open.has_entry(i)).cloned().collect(),
                Err(_) => Vec::new(),
            };
            if here.is_empty() {
                return ReapSummary::default();
            }
            Now::Ids(&here)
        }
    };
    let ask = Ask {
        retry_failed: opts.retry_failed,
        now,
        early: None,
    };
    as_owner(&t.path, t.uid, (child_args, &ask), on_line)
}
