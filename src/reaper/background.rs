//! `reclaim rm --background` and `--wait` (for `reaper::rm`): hides each target into its file
//! system's trash (one rename), then either starts a detached reaper or frees the entries in
//! this process. Targets that cannot go to a trash (a mount point, one inside it, no usable
//! trash) are handed back to the foreground path with the reason.

use std::collections::HashMap;
use std::ffi::{CStr, OsString};
use std::os::fd::OwnedFd;
use std::sync::Arc;

use crate::reaper::{self, spawn, ReapOptions, Until};
use crate::sys::dirfd;
use crate::sys::error::Reason;
use crate::trash::hide::{self, Hidden, HideOptions};
use crate::trash::{self, Trash};

/// What became of one target.
pub enum Hide {
    Hidden(Hidden),
    /// Not hidden; remove it in the foreground. The reason is for the user.
    Fallback(String),
    /// Not hidden, and must not be removed either: a grace window was asked for and cannot be
    /// honoured (the reason is for the user).
    Refused(String),
    Failed(Reason),
    /// Not tried: a stop signal came first (it is where it was).
    NotTried,
}

/// Why targets in a directory cannot go to a trash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoTrash {
    /// The directory itself could not be examined.
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(rustix::io::Errno),
    #[error("no usable trash on its file system ({0})")]
    Unusable(trash::TrashError),
}

/// The trash found for a parent directory, or why there is none.
type Located = Result<Arc<Trash>, NoTrash>;

/// Hides targets, one trash per parent directory's file system, opened once.
pub struct Hider {
    opts: HideOptions,
    uid: u32,
    /// The free space to leave the others (`--min-free`): a grace window on a file system
    /// already under it is refused (the reaper would free the entry at once); `--wait`'s
    /// reaping watches it.
    floor: crate::sys::space::Floor,
    /// Trashes by the parent directory they were located from.
    by_parent: std::sync::Mutex<HashMap<(u64, u64), Located>>,
    /// Every trash used, with the ids hidden into it, in order.
    pub used: Vec<(Arc<Trash>, Vec<String>)>,
    /// Trash names passed over because someone else had them (said once, with `-v`: the first
    /// few and how many).
    pub passed_over: std::sync::Mutex<crate::trash::Passed>,
}

impl Hider {
    pub fn new(opts: HideOptions, floor: crate::sys::space::Floor) -> Self {
        Hider {
            opts,
            uid: trash::uid(),
            floor,
            by_parent: Default::default(),
            used: Vec::new(),
            passed_over: Default::default(),
        }
    }

    /// What becomes of a target no trash could take (`graced`: a grace window was asked for):
    /// without a grace window nothing is promised but removal, which the foreground does; with
    /// one, an undo was asked for: refuse rather than remove for good.
    fn fall_back(graced: bool, why: String) -> Hide {
        if graced {
            Hide::Refused(why)
        } else {
            Hide::Fallback(why)
        }
    }

    /// Why a grace window cannot be kept on `trash`'s file system, if it is under the floor of
    /// free space already: the reaper would free the entry at once (DESIGN §7: a promise of
    /// undo is refused rather than dropped; the target stays).
    fn short_of_space(&self, trash: &Trash) -> Option<String> {
        let p = crate::sys::space::under_floor(&trash.dir, self.floor)?;
        Some(format!(
            "its file system is short of space ({} has {} free, under the floor of {}: a reaper \
             would free it at once); remove it without --grace, or give a lower --min-free",
            crate::sys::quote::quote(&p.mount),
            crate::sys::format::bytes(p.avail),
            crate::sys::format::bytes(p.floor)
        ))
    }

    /// The trash names passed over since the last call (said with the next hidden entry).
    pub fn take_passed_over(&self) -> crate::trash::Passed {
        std::mem::take(&mut *self.passed_over.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The trash for targets in `base` (located once per parent directory).
    pub fn trash_for(&self, base: &OwnedFd) -> Located {
        let parent = dirfd::fstat(base).map_err(NoTrash::Os)?;
        let key = (parent.ident.dev, parent.ident.ino);
        let uid = self.uid;
        let mut passed = self.passed_over.lock().unwrap_or_else(|e| e.into_inner());
        self.by_parent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_insert_with(|| match trash::locate(base, uid) {
                Ok((t, p)) => {
                    passed.absorb(p);
                    Ok(Arc::new(t))
                }
                Err(e) => Err(NoTrash::Unusable(e)),
            })
            .clone()
    }

    /// Hides `name` in `base`.
    pub fn hide(&mut self, base: &OwnedFd, name: &CStr, known: Option<(u64, u64)>) -> Hide {
        let facts = match dirfd::lstat_at(base, name) {
            Ok(f) => f,
            Err(e) => return Hide::Failed(Reason::Os(e)),
        };
        let parent = match dirfd::fstat(base) {
            Ok(p) => p,
            Err(e) => return Hide::Failed(Reason::Os(e)),
        };
        let Some(original) = hide::absolute(base, name) else {
            return Hide::Fallback("its directory has no path".into());
        };
        let graced = self.opts.grace.is_some_and(|g| !g.is_zero());
        let fallback = |why: String| Self::fall_back(graced, why);
        if let Some(why) = hide::unsuitable(&original, &facts, parent.mnt_id) {
            return fallback(why);
        }
        let trash = match self.trash_for(base) {
            Ok(t) => t,
            Err(why) => return fallback(why.to_string()),
        };
        if let Some(why) = graced.then(|| self.short_of_space(&trash)).flatten() {
            return Hide::Refused(why);
        }
        if graced && self.uid != 0 {
            // `restore` gives back only what the trash's owner owns.
            match rustix::fs::statat(base, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if st.st_uid != self.uid => {
                    return Hide::Refused(format!(
                        "it is owned by uid {}, and only a user's own files can be restored from their trash (remove it without --grace, or as its owner)",
                        st.st_uid
                    ))
                }
                Ok(_) => {}
                Err(e) => return Hide::Failed(Reason::Os(e)),
            }
        }
        self.opts.known = known;
        match hide::hide(&trash, base, name, &original, &facts, &self.opts) {
            Ok(h) => {
                match self.used.iter_mut().find(|(t, _)| t.ident == trash.ident) {
                    Some((_, ids)) => ids.push(h.id.clone()),
                    None => self.used.push((trash.clone(), vec![h.id.clone()])),
                }
                Hide::Hidden(h)
            }
            // A full file system (the day people delete things most): no room for the entry's
            // record, so free the space the direct way.
            Err(Reason::Os(e @ (rustix::io::Errno::NOSPC | rustix::io::Errno::DQUOT))) => {
                fallback(format!(
                    "no room for its trash entry ({})",
                    crate::sys::error::errno_text(e)
                ))
            }
            // Another mount, or (xfs) another project-quota tree: rename(2) cannot move it.
            Err(Reason::Os(rustix::io::Errno::XDEV)) => fallback(
                "it cannot be renamed into the trash (EXDEV: another mount or quota project)"
                    .into(),
            ),
            // The target itself is gone, or was swapped for another: say so.
            Err(e @ (Reason::Os(rustix::io::Errno::NOENT) | Reason::Changed)) => Hide::Failed(e),
            // Anything else went wrong making its entry (a network file system's client can
            // answer mkdir or a rename oddly): the target is where it was.
            Err(Reason::Os(e)) => fallback(format!(
                "its trash entry could not be made ({})",
                crate::sys::error::errno_text(e)
            )),
            Err(e) => Hide::Failed(e),
        }
    }

    /// Hides `items` of the directory `base` together: as few entries as can hold them (one,
    /// up to `meta::MAX_HELD` paths), each path's outcome in order. What `hide` does for one
    /// target, each is checked for first (a mount point, inside a trash, someone else's file
    /// with a grace window); a path no entry could take falls back as `hide` says.
    pub fn hide_batch(&mut self, base: &OwnedFd, items: Vec<hide::Item>) -> Vec<Hide> {
        let mut out: Vec<Option<Hide>> = (0..items.len()).map(|_| None).collect();
        let parent = match dirfd::fstat(base) {
            Ok(p) => p,
            Err(e) => return items.iter().map(|_| Hide::Failed(Reason::Os(e))).collect(),
        };
        let Some(dir) = crate::sys::mounts::fd_path(base) else {
            return items
                .iter()
                .map(|_| Hide::Fallback("its directory has no path".into()))
                .collect();
        };
        let graced = self.opts.grace.is_some_and(|g| !g.is_zero());
        let fallback = |why: String| Self::fall_back(graced, why);
        let trash = match self.trash_for(base) {
            Ok(t) => t,
            Err(why) => return items.iter().map(|_| fallback(why.to_string())).collect(),
        };
        if let Some(why) = graced.then(|| self.short_of_space(&trash)).flatten() {
            return items.iter().map(|_| Hide::Refused(why.clone())).collect();
        }
        // Those that may go, with where they are in `items`.
        let mut going: Vec<(usize, hide::Item)> = Vec::new();
        for (i, it) in items.into_iter().enumerate() {
            let original = dir.join(crate::trash::meta::os(&it.name));
            if let Some(why) = hide::unsuitable(&original, &it.facts, parent.mnt_id) {
                out[i] = Some(fallback(why));
                continue;
            }
            if graced && self.uid != 0 {
                // `restore` gives back only what the trash's owner owns.
                match rustix::fs::statat(base, &it.name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) if st.st_uid != self.uid => {
                        out[i] = Some(Hide::Refused(format!(
                            "it is owned by uid {}, and only a user's own files can be restored from their trash (remove it without --grace, or as its owner)",
                            st.st_uid
                        )));
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        out[i] = Some(Hide::Failed(Reason::Os(e)));
                        continue;
                    }
                }
            }
            going.push((i, it));
        }
        while !going.is_empty() {
            // Up to `MAX_HELD` paths, and as many as keep the list below its bound (a name
            // takes at most 6 bytes a byte in JSON, and some 100 bytes around it).
            let (mut n, mut bytes) = (0, 0u64);
            while n < going.len().min(crate::trash::meta::MAX_HELD) {
                let more = going[n].1.name.to_bytes().len() as u64 * 6 + 100;
                if n > 0 && bytes + more > crate::trash::meta::MAX_HELD_BYTES {
                    break;
                }
                bytes += more;
                n += 1;
            }
            let rest = going.split_off(n);
            let (at, chunk): (Vec<usize>, Vec<hide::Item>) = going.into_iter().unzip();
            going = rest;
            match hide::hide_batch(&trash, base, &dir, &chunk, &self.opts) {
                Ok(b) => {
                    let mut any = false;
                    for ((i, it), o) in at.into_iter().zip(&chunk).zip(b.outcomes) {
                        let original = dir.join(crate::trash::meta::os(&it.name));
                        out[i] = Some(match o {
                            Some(Ok(())) => {
                                any = true;
                                Hide::Hidden(Hidden {
                                    path: crate::sys::quote::PathField::new(&original),
                                    id: b.id.clone(),
                                    trash: b.trash.clone(),
                                    restorable_until_unix: b.restorable_until_unix,
                                })
                            }
                            Some(Err(e)) => self.failed_hide(e, graced),
                            None => Hide::NotTried,
                        });
                    }
                    if any {
                        match self.used.iter_mut().find(|(t, _)| t.ident == trash.ident) {
                            Some((_, ids)) => ids.push(b.id.clone()),
                            None => self.used.push((trash.clone(), vec![b.id.clone()])),
                        }
                    }
                }
                Err(e) => {
                    for i in at {
                        out[i] = Some(self.failed_hide(e.clone(), graced));
                    }
                }
            }
        }
        out.into_iter()
            .map(|o| o.unwrap_or(Hide::NotTried))
            .collect()
    }

    /// What a failed hide of one target means for it (as `hide` says).
    fn failed_hide(&self, e: Reason, graced: bool) -> Hide {
        let fallback = |why: String| Self::fall_back(graced, why);
        match e {
            Reason::Os(e @ (rustix::io::Errno::NOSPC | rustix::io::Errno::DQUOT)) => {
                fallback(format!(
                    "no room for its trash entry ({})",
                    crate::sys::error::errno_text(e)
                ))
            }
            Reason::Os(rustix::io::Errno::XDEV) => fallback(
                "it cannot be renamed into the trash (EXDEV: another mount or quota project)"
                    .into(),
            ),
            e @ (Reason::Os(rustix::io::Errno::NOENT) | Reason::Changed) => Hide::Failed(e),
            Reason::Os(e) => fallback(format!(
                "its trash entry could not be made ({})",
                crate::sys::error::errno_text(e)
            )),
            e => Hide::Failed(e),
        }
    }

    /// `--background`: starts a detached reaper for each trash used that has none (unless
    /// `RECLAIM_NO_SPAWN=1`). Returns the pids started.
    pub fn start_reapers(&self, reaper_args: &[OsString]) -> Vec<u32> {
        start_reapers(self.used.iter().map(|(t, _)| &**t), reaper_args)
    }

    /// `--wait`: frees the entries hidden by this run, here; waits while another reaper holds
    /// a trash (it frees them too). Then, if older entries are left, starts a reaper for them.
    /// Stopped by a signal: the entries not freed are left to a detached reaper started here
    /// (never left claimed with nobody to free them).
    pub fn wait(
        &self,
        engine: &crate::engine::remove::Settings,
        reaper_args: &[OsString],
        on_progress: reaper::OnProgress<'_>,
    ) -> reaper::ReapSummary {
        let mut sum = reaper::ReapSummary::default();
        for (t, ids) in &self.used {
            let opts = ReapOptions {
                until: Until::Once,
                // Waited for below, where this run's entries are watched.
                locked: reaper::Locked::Skip,
                pacing: None,
                engine: engine.clone(),
                only: Some(ids.clone()),
                log: crate::sys::logging::Sink::quiet(),
                retry_failed: true,
                now: false,
                floor: self.floor,
                relieve: true,
                early: None,
            };
            loop {
                let pending: Vec<&String> = ids
                    .iter()
                    .filter(|i| {
                        std::ffi::CString::new(i.as_bytes())
                            .is_ok_and(|c| dirfd::lstat_at(&t.dir, &c).is_ok())
                    })
                    .collect();
                if pending.is_empty() {
                    break;
                }
                if crate::sys::interrupt::stopping() {
                    sum.interrupted = true;
                    break;
                }
                let s = reaper::run(std::slice::from_ref(t), &opts, on_progress);
                let locked = !s.skipped_locked.is_empty();
                let stuck = !s.errors.is_empty() || s.interrupted;
                let idle = s.entries_freed == 0;
                merge(&mut sum, s);
                if stuck {
                    break;
                }
                if locked {
                    // Another reaper has the trash; it frees our entries too (oldest first).
                    on_progress(&reaper::Progress::OthersFree);
                }
                if idle {
                    // Locked by another reaper, or an entry busy for a moment (a restore).
                    crate::sys::interrupt::sleep(std::time::Duration::from_millis(200));
                }
            }
            if sum.interrupted {
                break;
            }
        }
        // What could not be freed (an immutable or append-only file inside a tree) goes back
        // where it was, as `rm -rf` leaves it: the user waited for this removal, and the
        // errors name those paths at their original place.
        if !sum.interrupted {
            self.put_back_failed(&mut sum);
        }
        // Older entries left in those trashes (not ours to wait for): a reaper frees them.
        let busy = self.used.iter().map(|(t, _)| &**t);
        start_reapers(busy.filter(|t| !t.entries().is_empty()), reaper_args);
        // Of this run's entries, how many are left (stopped by a signal, or failed).
        sum.remaining = self
            .used
            .iter()
            .map(|(t, ids)| {
                ids.iter()
                    .filter(|i| {
                        std::ffi::CString::new(i.as_bytes())
                            .is_ok_and(|c| dirfd::lstat_at(&t.dir, &c).is_ok())
                    })
                    .count() as u64
            })
            .sum();
        sum.skipped_locked.clear();
        sum
    }
}

impl Hider {
    /// Puts back what is left of this run's entries that a reaper could not fully free (they
    /// have a failure record); their errors then name the paths where they are again.
    fn put_back_failed(&self, sum: &mut reaper::ReapSummary) {
        for (t, ids) in &self.used {
            for id in ids {
                let failed = std::ffi::CString::new(id.as_bytes()).is_ok_and(|c| {
                    dirfd::open_dir_at(&t.dir, &c)
                        .is_ok_and(|e| dirfd::lstat_at(&e, trash::FAILED).is_ok())
                });
                if !failed {
                    continue;
                }
                // The restore opens the trash again by its path (checked to be this one).
                let Ok(found) = trash::Found::of(t) else {
                    continue;
                };
                let back = crate::trash::restore::restore(
                    std::slice::from_ref(&found),
                    std::ffi::OsStr::new(id),
                    self.uid,
                    None,
                );
                // Errors about what is back now name it where it is.
                let back: Vec<std::path::PathBuf> = back
                    .iter()
                    .filter_map(|r| r.as_ref().ok().map(|r| r.path.exact()))
                    .collect();
                for e in sum
                    .errors
                    .iter_mut()
                    .filter(|e| e.entry.as_ref() == Some(id))
                    .filter(|e| back.iter().any(|b| e.path.exact().starts_with(b)))
                {
                    e.entry = None;
                    e.now_at = None;
                }
            }
        }
    }
}

fn merge(into: &mut reaper::ReapSummary, s: reaper::ReapSummary) {
    into.entries_freed += s.entries_freed;
    into.files += s.files;
    into.dirs += s.dirs;
    into.bytes_freed += s.bytes_freed;
    into.errors.extend(s.errors);
    into.gentle.extend(s.gentle);
    into.freed_early.extend(s.freed_early);
    into.interrupted |= s.interrupted;
}

/// Starts a detached reaper for each of `trashes` that has none (unless `RECLAIM_NO_SPAWN=1`);
/// returns the pids started.
fn start_reapers<'t>(
    trashes: impl Iterator<Item = &'t Trash>,
    reaper_args: &[OsString],
) -> Vec<u32> {
    if !spawn::enabled() {
        return Vec::new();
    }
    // A running reaper lists the trash again before it leaves, so it sees our entries.
    // (A try of the lock, not a read of /proc/locks: that costs up to 10 ms.)
    // The lock taken here goes to the reaper started: no moment without a holder.
    trashes
        .filter_map(|t| match reaper::TrashLock::try_take(t) {
            Ok(Some(lock)) => spawn::detached(t, reaper_args, Some(lock.fd())).ok(),
            _ => None,
        })
        .collect()
}

/// Starts a detached reaper for `trash` if none holds it (unless `RECLAIM_NO_SPAWN=1`).
pub fn start_reaper(trash: &Trash, reaper_args: &[OsString]) -> bool {
    !start_reapers(std::iter::once(trash), reaper_args).is_empty()
}
