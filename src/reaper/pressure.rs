//! Space pressure in a reaper (DESIGN §14): an undo window must never cost an application its
//! disk. A reaper holding a trash watches its file system's free space (`sys::space::Watch`,
//! about once a second); when it is under the floor, or falling fast enough to reach it before
//! the reaper would give back what it holds, the entries still in their grace window there are
//! freed at once, oldest first, one at a time and looked at again after each, until the floor
//! holds. Each is said (the log, `--json`'s `freed_early`) and recorded in the trash's
//! `early.json`, so `status` counts it and `restore` says why it is gone. Pacing yields on its
//! own (`engine::pace`). It frees only entries of the trash this process holds, as its owner,
//! and not in a pass a parent runs (`ReapOptions::relieve`): every user's trashes on a file
//! system, in one order, are the supervisor's (`relief`). Never prints.

use std::ffi::{CStr, CString};

use super::{ReapOptions, ReapSummary};
use crate::sys::dirfd;
use crate::sys::format::now_unix;
use crate::sys::logging::{Priority, Record};
use crate::sys::quote::{quote, PathField};
use crate::sys::space::{Pressure, Watch};
use crate::trash::early::{Early, EarlyRecord};
use crate::trash::meta::{EntryPacing, Meta};
use crate::trash::{Found, Trash, DATA};

/// The entries of `trash` in their grace window now (not claimed), oldest first, with when
/// each window ends.
pub fn graced(trash: &Trash) -> Vec<(CString, f64)> {
    let now = now_unix();
    trash
        .entries()
        .into_iter()
        .filter_map(|name| {
            let entry = dirfd::open_dir_at(&trash.dir, &name).ok()?;
            dirfd::lstat_at(&entry, DATA).ok()?;
            let m = Meta::read(&entry, trash.uid).ok()??;
            let until = m
                .grace_until_unix
                .filter(|u| *u > now && m.uid == trash.uid)?;
            Some((name, until))
        })
        .collect()
}

/// The options that free an entry early: now, at full speed (never more harshly than `rm`
/// would: the file system needs the space), said as cut short by `p`.
pub fn early_options(opts: &ReapOptions, p: Pressure) -> ReapOptions {
    ReapOptions {
        now: true,
        retry_failed: true,
        early: Some(p),
        pacing: Some(EntryPacing {
            fast: true,
            ..EntryPacing::default()
        }),
        ..opts.clone()
    }
}

/// How the pass holding a trash frees one of its entries (`name`, as these options say), adding
/// it to the summary: `Some(true)` freed, `Some(false)` left, `None` a stop signal came.
pub(super) type Take<'a> = &'a mut dyn FnMut(&CStr, &ReapOptions, &mut ReapSummary) -> Option<bool>;

/// Frees the entries of `trash` (held by this process) that are in their grace window, oldest
/// first, while its file system is pressed (`watch`): one at a time (`take`), the space read
/// afresh after each. Whether any was freed.
pub(super) fn relieve(
    trash: &Trash,
    opts: &ReapOptions,
    watch: &mut Watch,
    sum: &mut ReapSummary,
    take: Take<'_>,
) -> bool {
    // Pressed at all, looking as far ahead as the watch trusts? (Cheap: no entry is read.)
    if watch.pressure(&trash.dir, None, false).is_none() {
        return false;
    }
    let mut graced = graced(trash);
    let mut freed = false;
    let mut fresh = false;
    while !graced.is_empty() {
        if crate::sys::interrupt::stopping() {
            sum.interrupted = true;
            break;
        }
        // What this reaper holds there is given back when the last window ends, at the
        // earliest.
        let last = graced.iter().map(|g| g.1).fold(0.0, f64::max);
        let Some(p) = watch.pressure(&trash.dir, Some(last - now_unix()), fresh) else {
            break;
        };
        fresh = true;
        let (name, _) = graced.remove(0);
        let early = early_options(opts, p);
        match take(&name, &early, sum) {
            Some(true) => {
                freed = true;
                // It was counted as waiting for its window when it was first looked at.
                sum.waiting = sum.waiting.saturating_sub(1);
            }
            Some(false) => {}
            None => {
                sum.interrupted = true;
                break;
            }
        }
    }
    freed
}

/// Says and records that entry `name` (from `path`) of `trash` was freed before its grace
/// window ended (`until`) because its file system was pressed so (`p`): a warning in the
/// reaper's log, a record in `early.json`, and `freed_early` in the summary.
pub(super) fn freed_early(
    trash: &Trash,
    opts: &ReapOptions,
    name: &CStr,
    (path, until): (&std::path::Path, f64),
    p: &Pressure,
    sum: &mut ReapSummary,
) {
    let e = Early {
        id: name.to_string_lossy().into_owned(),
        original: PathField::new(path),
        freed_unix: now_unix(),
        grace_until_unix: until,
        space: p.clone(),
    };
    let rec = Record::new(Priority::Warning, format!("{}: {}", quote(path), e.text()))
        .field("RECLAIM_EVENT", "freed_early")
        .field("RECLAIM_ENTRY", name.to_bytes())
        .path("RECLAIM_PATH", path)
        .field("RECLAIM_FREE_BYTES", p.avail.to_string())
        .field("RECLAIM_FLOOR_BYTES", p.floor.to_string());
    super::records::log(trash, &opts.log, rec);
    let _ = EarlyRecord::add(&trash.dir, trash.uid, e.clone());
    sum.freed_early.push(e);
}

/// Whether a file system of this user's `trashes` (each opened for the look) is pressed
/// (`watch`, read afresh) while it holds entries in their grace window until `last`: a
/// waiting reaper then makes a pass, which frees them early.
pub(super) fn pressed_while_waiting(trashes: &[Found], watch: &mut Watch, last: f64) -> bool {
    trashes
        .iter()
        .filter(|f| !crate::sys::asuser::needed(f.uid))
        .filter_map(|f| f.open().ok())
        .any(|t| {
            watch
                .pressure(&t.dir, Some(last - now_unix()), true)
                .is_some()
                && !graced(&t).is_empty()
        })
}
