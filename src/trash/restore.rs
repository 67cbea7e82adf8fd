//! `reclaim restore`'s library half (`cmd::restore` reports): puts a trashed target back at
//! its original path, while it is still whole (no reaper has claimed it). One rename, the other
//! way; refuses rather than overwrite anything or put it into another directory than it came
//! from (the same device, inode, owner and birth time or generation). By original path it
//! considers only the caller's own entries; root may name another user's entry by its ID, and
//! then restores it as that user. An entry a reaper freed before its grace window ended (the
//! file system ran short of space) is said as such, with why (`early.json`).

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{fsync, AtFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::meta::{self, Meta};
use super::{Found, Trash, DATA, REAPING};
use crate::sys::dirfd::{self, Lineage};
use crate::sys::error::ErrorEntry;
use crate::sys::locks;
use crate::sys::quote::{quote, PathField};

/// Why an entry was not restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    #[error("no such entry in any trash this user can see")]
    NotFound,
    #[error("already being freed by the reaper, cannot restore")]
    Reaping,
    #[error("busy (being hidden, freed or restored right now); try again")]
    Busy,
    #[error("original path is taken")]
    Taken,
    #[error("its original directory {} is gone or was replaced", quote(.0))]
    ParentGone(PathBuf),
    #[error("its record (meta.json) is missing or unreadable: the original path is unknown")]
    NoMeta,
    #[error("the entry is damaged ({0}); not restoring it")]
    Damaged(String),
    #[error("{} exists; --to never overwrites", quote(.0))]
    DestinationTaken(PathBuf),
    #[error("{} is on another file system than the entry (a restore is a rename)", quote(.0))]
    OtherFileSystem(PathBuf),
    #[error("cannot restore to {}: {}", quote(.0), crate::sys::error::errno_text(*.1))]
    Destination(PathBuf, Errno),
    #[error("{0}")]
    Os(Errno),
    #[error("{0}")]
    Child(String),
    #[error("it holds {0} paths, and --to puts back one (restore it without --to, or one path of it by its original path)")]
    ManyPaths(u64),
    #[error("its record names no single name in its directory ({0}); left in the entry")]
    BadName(String),
    /// A reaper freed it before its grace window ended (its file system ran short of space):
    /// when, and the file system's space then.
    #[error("{0}; nothing is left to restore")]
    FreedEarly(String),
}

/// A restored entry.
#[derive(Debug, Serialize, Deserialize)]
pub struct Restored {
    pub id: String,
    #[serde(flatten)]
    pub path: PathField,
    /// What was left of an entry a reaper could not fully free (a failed entry), not the
    /// whole target.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// What `restore --json` prints.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Report {
    pub restored: Vec<Restored>,
    pub errors: Vec<ErrorEntry>,
}

/// Why an entry was not restored: its original path and ID when known, and the reason.
pub type Failed = (Option<PathBuf>, Option<String>, RestoreError);

/// What `restore_entry` and `as_owner` fail with (the ID is added by `restore`).
type EntryFailed = (Option<PathBuf>, RestoreError);

/// Restores the entry named by `arg`: an entry id (in any of `trashes`), or an original path
/// (then the newest entry from that path among the trashes of `me`; of a batch entry, that
/// path alone). With `to`, the entry goes there instead (a new name on the same file system,
/// never over an existing one). One outcome per path the entry held (one for most entries).
pub fn restore(
    trashes: &[Found],
    arg: &OsStr,
    me: u32,
    to: Option<&Path>,
) -> Vec<Result<Restored, Failed>> {
    let Some((trash, id, only)) = find(trashes, arg, me) else {
        return vec![Err(freed_early(trashes, arg, me).unwrap_or((
            None,
            None,
            RestoreError::NotFound,
        )))];
    };
    let r = if crate::sys::asuser::needed(trash.uid) {
        as_owner(&trash, &id, to)
    } else {
        restore_entry(&trash, &id, to, only.as_deref())
    };
    let id = id.to_string_lossy().into_owned();
    r.into_iter()
        .map(|r| r.map_err(|(o, e)| (o, Some(id.clone()), e)))
        .collect()
}

/// Restores entry `id` of `trash`, in this process (which is its owner, or root for root's):
/// of a batch, each path it holds (`only`: that one), one outcome each.
fn restore_entry(
    trash: &Trash,
    id: &CString,
    to: Option<&Path>,
    only: Option<&Path>,
) -> Vec<Result<Restored, EntryFailed>> {
    match restore_one(trash, id, to, only) {
        Ok(Many(v)) => v,
        Ok(One(r)) => vec![Ok(r)],
        Err(e) => vec![Err(e)],
    }
}

/// What `restore_one` did: one entry's single path, or a batch's paths.
enum Done {
    One(Restored),
    Many(Vec<Result<Restored, EntryFailed>>),
}
use Done::{Many, One};

fn restore_one(
    trash: &Trash,
    id: &CString,
    to: Option<&Path>,
    only: Option<&Path>,
) -> Result<Done, EntryFailed> {
    let entry = dirfd::open_dir_at(&trash.dir, id).map_err(|e| match e {
        Errno::NOENT => (None, RestoreError::NotFound),
        e => (None, RestoreError::Os(e)),
    })?;
    let owner = rustix::fs::fstat(&entry)
        .map_err(|e| (None, RestoreError::Os(e)))?
        .st_uid;
    if owner != trash.uid {
        return Err((
            None,
            RestoreError::Damaged(format!(
                "the entry is owned by uid {owner}, not by the trash's owner (uid {})",
                trash.uid
            )),
        ));
    }
    let m = Meta::read(&entry, trash.uid)
        .map_err(|bad| (None, RestoreError::Damaged(format!("meta.json {bad}"))))?;
    let original = m.as_ref().map(Meta::original_path);
    let fail = |e: RestoreError| (original.clone(), e);
    if !locks::try_exclusive(&entry).map_err(|e| fail(RestoreError::Os(e)))? {
        return Err(fail(if dirfd::lstat_at(&entry, REAPING).is_ok() {
            RestoreError::Reaping
        } else {
            RestoreError::Busy
        }));
    }
    // The data, whole; or what is left of it after a reaper's attempt failed (nobody frees it
    // now: the entry is locked here), which goes back as it is, as `rm -rf` would leave it.
    let failed = dirfd::lstat_at(&entry, super::FAILED).is_ok();
    let inner = if dirfd::lstat_at(&entry, DATA).is_ok() {
        DATA
    } else if failed && dirfd::lstat_at(&entry, REAPING).is_ok() {
        REAPING
    } else {
        return Err(fail(RestoreError::Reaping));
    };
    let partial = inner == REAPING;
    let m = m.ok_or_else(|| fail(RestoreError::NoMeta))?;
    if m.uid != trash.uid {
        return Err(fail(RestoreError::Damaged(format!(
            "its record names uid {}, not the trash's owner (uid {})",
            m.uid, trash.uid
        ))));
    }
    // The entry's data must be the trash owner's own (root may have hidden anyone's).
    let data_owner = rustix::fs::statat(&entry, inner, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| fail(RestoreError::Os(e)))?
        .st_uid;
    if trash.uid != 0 && data_owner != trash.uid {
        return Err(fail(RestoreError::Damaged(format!(
            "its data is owned by uid {data_owner}, not by the trash's owner (uid {})",
            trash.uid
        ))));
    }
    if m.is_batch() {
        if to.is_some() {
            return Err(fail(RestoreError::ManyPaths(m.held.unwrap_or(0))));
        }
        return Ok(Many(restore_batch(trash, id, &entry, &m, inner, only)));
    }
    if let Some(to) = to {
        return restore_to(trash, id, &entry, &m, to, inner)
            .map(One)
            .map_err(fail);
    }
    let path = m.original_path();
    let (parent, name) = split(&path).ok_or_else(|| fail(RestoreError::NoMeta))?;
    let gone = || fail(RestoreError::ParentGone(parent.to_path_buf()));
    let pfd = dirfd::open_dir_path(parent).map_err(|_| gone())?;
    let now = Lineage::of(&pfd).map_err(|e| fail(RestoreError::Os(e)))?;
    let same = match &m.parent {
        Some(recorded) => recorded.same(&now),
        // A first-layout record knows device and inode only.
        None => (now.dev, now.ino) == (m.parent_dev, m.parent_ino),
    };
    if !same {
        return Err(gone());
    }
    crate::sys::rename::noreplace(&entry, inner, &pfd, &name, crate::sys::rename::Into::Shared)
        .map_err(|e| {
            fail(match e {
                Errno::EXIST | Errno::NOTEMPTY => RestoreError::Taken,
                e => RestoreError::Os(e),
            })
        })?;
    // The target is back; what is left is an empty record (a crash here leaves a data-less
    // entry, which the reaper removes).
    let _ = fsync(&pfd);
    let _ = super::entry::tear_down(&trash.dir, id, &entry, None);
    Ok(One(Restored {
        id: m.id,
        path: PathField::new(&path),
        partial,
    }))
}

/// Puts back the paths of batch entry `id` (locked by the caller; its record `m`, its paths in
/// `inner`, `data` or what is left of `reaping`): each into the directory the record names,
/// only if that is the same directory (its lineage), each under the name its list gives (one
/// name, never a path), never over an existing name. A path whose slot is empty is not in the
/// entry (never moved by a hide that was killed, or put back by a restore that was): it is
/// passed over. What cannot go back stays in the entry, and the list is rewritten to what is
/// left; an entry left empty goes.
fn restore_batch(
    trash: &Trash,
    id: &CString,
    entry: &std::os::fd::OwnedFd,
    m: &Meta,
    inner: &std::ffi::CStr,
    only: Option<&Path>,
) -> Vec<Result<Restored, EntryFailed>> {
    use super::meta::HeldList;
    let dir = m.original_path();
    let whole = |e: RestoreError| vec![Err((Some(dir.clone()), e))];
    let list = match HeldList::read(entry, trash.uid) {
        Ok(Some(l)) => l,
        Ok(None) => return whole(RestoreError::NoMeta),
        Err(bad) => return whole(RestoreError::Damaged(format!("held.json {bad}"))),
    };
    let held = match dirfd::open_dir_at(entry, inner) {
        Ok(fd) => fd,
        Err(e) => return whole(RestoreError::Os(e)),
    };
    match rustix::fs::fstat(&held) {
        Ok(st) if st.st_uid == trash.uid => {}
        Ok(st) => {
            return whole(RestoreError::Damaged(format!(
                "its data is owned by uid {}, not by the trash's owner (uid {})",
                st.st_uid, trash.uid
            )))
        }
        Err(e) => return whole(RestoreError::Os(e)),
    }
    let gone = || whole(RestoreError::ParentGone(dir.clone()));
    let Ok(pfd) = dirfd::open_dir_path(&dir) else {
        return gone();
    };
    let same = match (Lineage::of(&pfd), &m.parent) {
        (Ok(now), Some(recorded)) => recorded.same(&now),
        _ => false,
    };
    if !same {
        return gone();
    }
    let partial = inner == REAPING;
    let mut out = Vec::new();
    let mut left = Vec::new();
    for h in list.items {
        let Some(name) = h.name.bytes() else {
            out.push(Err((
                Some(dir.join(&h.name.name)),
                RestoreError::BadName(quote(&h.name.name)),
            )));
            left.push(h);
            continue;
        };
        let path = dir.join(OsStr::from_bytes(&name));
        if only.is_some_and(|o| o != path) {
            left.push(h);
            continue;
        }
        let slot = h.slot_name();
        let owner = match rustix::fs::statat(&held, &slot, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st.st_uid,
            Err(Errno::NOENT) => continue,
            Err(e) => {
                out.push(Err((Some(path), RestoreError::Os(e))));
                left.push(h);
                continue;
            }
        };
        // Root may have hidden anyone's; a user gets back only their own.
        if trash.uid != 0 && owner != trash.uid {
            out.push(Err((
                Some(path),
                RestoreError::Damaged(format!(
                    "it is owned by uid {owner}, not by the trash's owner (uid {})",
                    trash.uid
                )),
            )));
            left.push(h);
            continue;
        }
        let cname = CString::new(name).expect("checked: no NUL");
        let back = crate::sys::rename::noreplace(
            &held,
            &slot,
            &pfd,
            &cname,
            crate::sys::rename::Into::Shared,
        );
        match back {
            Ok(()) => out.push(Ok(Restored {
                id: m.id.clone(),
                path: PathField::new(&path),
                partial,
            })),
            Err(e) => {
                let why = match e {
                    Errno::EXIST | Errno::NOTEMPTY => RestoreError::Taken,
                    e => RestoreError::Os(e),
                };
                out.push(Err((Some(path), why)));
                left.push(h);
            }
        }
    }
    if let (Some(o), true) = (only, out.is_empty()) {
        return vec![Err((Some(o.to_path_buf()), RestoreError::NotFound))];
    }
    let _ = fsync(&pfd);
    if left.is_empty() {
        // All back: the entry goes (a crash on the way leaves a record whose slots are empty,
        // which restores nothing and which the reaper removes).
        let _ = super::entry::tear_down(&trash.dir, id, entry, Some(inner));
    } else {
        // What is left, listed (the list first: its record's counts may lag, never a path).
        let rest = HeldList { items: left };
        let mut m = m.clone();
        m.set_held(&rest);
        let _ = fsync(&held);
        let _ = rest.rewrite(entry).and_then(|()| m.rewrite(entry));
    }
    out
}

/// `restore --to`: the entry's data renamed to `to` (its directory as the caller names it,
/// symlinks in it followed as any command would; the caller's permissions decide), never over
/// an existing name, only on the same file system. The entry, locked by the caller, goes.
fn restore_to(
    trash: &Trash,
    id: &CString,
    entry: &std::os::fd::OwnedFd,
    m: &Meta,
    to: &Path,
    inner: &std::ffi::CStr,
) -> Result<Restored, RestoreError> {
    let dest = absolute(to).ok_or_else(|| RestoreError::Destination(to.into(), Errno::INVAL))?;
    let (parent, name) =
        split(&dest).ok_or_else(|| RestoreError::Destination(to.into(), Errno::INVAL))?;
    let pfd = dirfd::open_dir_path(parent)
        .or_else(|e| match e {
            Errno::ACCESS => dirfd::open_dir_path_only(parent),
            e => Err(e),
        })
        .map_err(|e| RestoreError::Destination(parent.into(), e))?;
    crate::sys::rename::noreplace(entry, inner, &pfd, &name, crate::sys::rename::Into::Shared)
        .map_err(|e| match e {
            Errno::EXIST | Errno::NOTEMPTY => RestoreError::DestinationTaken(dest.clone()),
            Errno::XDEV => RestoreError::OtherFileSystem(dest.clone()),
            e => RestoreError::Destination(dest.clone(), e),
        })?;
    let _ = fsync(&pfd);
    let _ = super::entry::tear_down(&trash.dir, id, entry, None);
    Ok(Restored {
        id: m.id.clone(),
        path: PathField::new(&dest),
        partial: inner == REAPING,
    })
}

/// Restores entry `id` of another user's `trash` in a child running as that user.
fn as_owner(trash: &Trash, id: &CString, to: Option<&Path>) -> Vec<Result<Restored, EntryFailed>> {
    let who = crate::sys::asuser::Identity::of(trash.uid);
    let mut argv: Vec<OsString> = vec![
        "restore".into(),
        "--json".into(),
        "--trash".into(),
        trash.path.clone().into_os_string(),
    ];
    if let Some(to) = to {
        // Absolute: the child runs in the same directory, but say exactly what was asked.
        let dest = absolute(to).unwrap_or_else(|| to.to_path_buf());
        argv.push("--to".into());
        argv.push(dest.into_os_string());
    }
    argv.push(OsStr::from_bytes(id.to_bytes()).to_owned());
    let mut lines = |_: &str| {};
    match crate::sys::asuser::run_json::<Report>(Some(&who), &argv, &mut lines) {
        Ok((r, _)) => {
            // Only what this entry is: its ID, never more than a record may hold.
            let want = id.to_string_lossy();
            let mut out: Vec<Result<Restored, EntryFailed>> = r
                .restored
                .into_iter()
                .filter(|ok| ok.id == want)
                .map(Ok)
                .chain(
                    r.errors
                        .into_iter()
                        .map(|e| Err((Some(e.path.exact()), RestoreError::Child(e.error)))),
                )
                .take(super::meta::MAX_HELD)
                .collect();
            if out.is_empty() {
                out.push(Err((None, RestoreError::Child("no result".into()))));
            }
            out
        }
        Err(e) => vec![Err((None, RestoreError::Child(e.to_string())))],
    }
}

fn split(p: &Path) -> Option<(&Path, CString)> {
    let name = CString::new(p.file_name()?.as_bytes()).ok()?;
    Some((p.parent()?, name))
}

/// The trash (open) and entry name for `arg`: an entry id in any of `trashes`, or the newest
/// entry recorded from that original path in the trashes of `me` only (another user's record
/// could name any path); of a batch entry, with that path (the only one to restore). The
/// trashes are opened one at a time.
fn find(trashes: &[Found], arg: &OsStr, me: u32) -> Option<(Trash, CString, Option<PathBuf>)> {
    let bytes = arg.as_bytes();
    if meta::is_entry_name(bytes) {
        let name = CString::new(bytes).ok()?;
        return trashes
            .iter()
            .filter_map(|f| f.open().ok())
            .find(|t| dirfd::lstat_at(&t.dir, &name).is_ok())
            .map(|t| (t, name, None));
    }
    let wanted = absolute(Path::new(arg))?;
    let mut best: Option<(Trash, CString, Option<PathBuf>)> = None;
    let mine = trashes.iter().filter(|t| t.uid == me);
    for t in mine.filter_map(|f| f.open().ok()) {
        let mut newest: Option<(CString, bool)> = None;
        for name in t.entries() {
            // Newer than the newest so far, in this trash or an earlier one.
            let bar = newest
                .as_ref()
                .map(|(n, _)| n)
                .or(best.as_ref().map(|(_, b, _)| b));
            if bar.is_some_and(|b| name.as_bytes() <= b.as_bytes()) {
                continue;
            }
            let Ok(entry) = dirfd::open_dir_at(&t.dir, &name) else {
                continue;
            };
            let Ok(Some(m)) = Meta::read(&entry, t.uid) else {
                continue;
            };
            if m.uid != t.uid {
                continue;
            }
            if m.is_batch() {
                if holds(&entry, &t, &m, &wanted) {
                    newest = Some((name, true));
                }
            } else if m.original_path() == wanted {
                newest = Some((name, false));
            }
        }
        if let Some((name, batch)) = newest {
            best = Some((t, name, batch.then(|| wanted.clone())));
        }
    }
    best
}

/// Why `arg`, found in no trash, is gone, if a reaper freed it before its grace window ended
/// (`early.json`): by ID in any of `trashes` (another user's through a child as that user, only
/// where such a record is), by original path in those of `me` (the newest).
fn freed_early(trashes: &[Found], arg: &OsStr, me: u32) -> Option<Failed> {
    let bytes = arg.as_bytes();
    let failed = |e: &super::early::Early| {
        (
            Some(e.original.exact()),
            Some(e.id.clone()),
            RestoreError::FreedEarly(format!(
                "a reaper freed it at {}, before its grace window ended: {}",
                crate::sys::format::local_time(e.freed_unix),
                e.space.text()
            )),
        )
    };
    if meta::is_entry_name(bytes) {
        let id = arg.to_string_lossy();
        for f in trashes {
            let Ok(t) = f.open() else { continue };
            if crate::sys::asuser::needed(t.uid) {
                if dirfd::lstat_at(&t.dir, super::early::EARLY).is_err() {
                    continue;
                }
                let name = CString::new(bytes).ok()?;
                let said = as_owner(&t, &name, None).into_iter().find_map(|r| match r {
                    Err((original, RestoreError::Child(e)))
                        if e != RestoreError::NotFound.to_string() =>
                    {
                        Some((original, Some(id.to_string()), RestoreError::Child(e)))
                    }
                    _ => None,
                });
                if said.is_some() {
                    return said;
                }
            } else if let Ok(Some(r)) = super::early::EarlyRecord::read(&t.dir, t.uid) {
                if let Some(e) = r.by_id(&id) {
                    return Some(failed(e));
                }
            }
        }
        return None;
    }
    let wanted = absolute(Path::new(arg))?;
    let mut newest: Option<super::early::Early> = None;
    for t in trashes.iter().filter(|t| t.uid == me) {
        let Ok(t) = t.open() else { continue };
        let Ok(Some(r)) = super::early::EarlyRecord::read(&t.dir, t.uid) else {
            continue;
        };
        if let Some(e) = r.by_path(&wanted) {
            if !newest
                .as_ref()
                .is_some_and(|n| e.freed_unix <= n.freed_unix)
            {
                newest = Some(e.clone());
            }
        }
    }
    newest.as_ref().map(failed)
}

/// Whether batch entry `entry` (its record `m`) lists `path`.
fn holds(entry: &std::os::fd::OwnedFd, t: &Trash, m: &Meta, path: &Path) -> bool {
    if path.parent() != Some(m.original_path().as_path()) {
        return false;
    }
    let Some(name) = path.file_name() else {
        return false;
    };
    let Ok(Some(list)) = super::meta::HeldList::read(entry, t.uid) else {
        return false;
    };
    list.items
        .iter()
        .any(|h| h.name.bytes().as_deref() == Some(name.as_bytes()))
}

/// `arg` as the absolute path reclaim recorded: its parent canonicalized, its name kept.
pub fn absolute(arg: &Path) -> Option<PathBuf> {
    let name = arg.file_name()?;
    let parent = match arg.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let real = crate::sys::safeopen::canonical_dir(&parent)
        .ok()
        .or_else(|| lexical_absolute(&parent))?;
    Some(real.join(name))
}

/// For a parent that no longer exists: made absolute and `.`/`..` resolved by name.
fn lexical_absolute(p: &Path) -> Option<PathBuf> {
    let mut out = if p.is_absolute() {
        PathBuf::new()
    } else {
        std::env::current_dir().ok()?
    };
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    Some(out)
}
