//! Reaping one entry: opened and locked, checked (`Damage`), claimed (`data` renamed to
//! `reaping`, durable), freed (a tree with the engine, a large file with the shrinker, anything
//! else by unlink), then torn down; a failed attempt recorded for its back-off. Never follows
//! a symlink, never leaves the entry's directory, never frees an entry in its grace window
//! unless asked (`--now`).

use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::{fsync, FileType};
use rustix::io::Errno;

use super::failure::FailedRecord;
use super::state::StateFile;
use super::{OnProgress, Progress, ReapOptions, ReapSummary};
use crate::engine::remove::{self, Counters, DirTarget};
use crate::engine::shrink;
use crate::sys::dirfd;
use crate::sys::error::{Failure, Reason};
use crate::sys::format::now_unix;
use crate::sys::freed::Measure;
use crate::sys::interrupt;
use crate::sys::locks;
use crate::trash::meta::EntryPacing;
use crate::trash::meta::Meta;
use crate::trash::{self, safefile, Trash, DATA, REAPING};

pub(super) enum Step {
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
pub(super) enum Damage {
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
pub(super) fn reap_entry(
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
    let entry_tree = meta.is_none_or(|m| m.kind == "dir" || m.is_batch());
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
            others |= !trash::entry::is_record(n);
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
    match trash::entry::tear_down(&trash.dir, name, entry, None) {
        Ok(()) => Ok(true),
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
    engine: &remove::Settings,
    counters: &Counters,
    gentle: &mut Vec<crate::engine::shrink::Gentle>,
    subvolumes: &mut u64,
) -> Result<bool, Vec<Failure>> {
    let mut engine = engine.clone();
    let mut start = remove::Start::default();
    start.pace = pacing.clone();
    start.floor = floor;
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

/// How long a tree's listing pass (its progress total) runs before the removal starts.
const LISTING_HEAD_START: Duration = Duration::from_millis(250);
