//! The hide protocol (docs/ARCHITECTURE.md): make an entry directory, write its `meta.json`, then one
//! `rename(2)` of the target into it as `data`. A crash before the rename leaves the target
//! whole at its path (and a data-less entry the reaper removes); after it, whole in the trash.
//! `--durable` adds the fsyncs, in order: meta, entry and trash before the rename; the
//! target's old parent and the entry after it. A batch (`hide_batch`, for `prune`) puts many
//! paths of one directory into one entry, listed in `held.json` before any of them moves.

use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::fsync;

use crate::sys::rename::{noreplace, Into};
use rustix::io::Errno;

use super::entry::{self, Entry, Vanished};
use super::meta::{self, Meta};
use super::{Trash, DATA, REAPING};
use crate::sys::dirfd::{self, Facts, Lineage};
use crate::sys::error::Reason;
use crate::trash::meta::EntryPacing;

/// A target now in the trash.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Hidden {
    #[serde(flatten)]
    pub path: crate::sys::quote::PathField,
    pub id: String,
    pub trash: String,
    /// When its grace window ends (`--grace`): until then `reclaim restore ID` puts it back.
    /// Absent without a grace window (a reaper may free it at once: no restore to promise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restorable_until_unix: Option<f64>,
}

/// What `hide` needs to know besides the target.
pub struct HideOptions {
    pub grace: Option<std::time::Duration>,
    /// Allocated bytes and files of the target when the caller measured them (prune does),
    /// recorded so `status` and free-space targets count the entry while it is pending.
    pub known: Option<(u64, u64)>,
    pub durable: bool,
    pub pacing: EntryPacing,
}

/// Moves `name` in `base` (whose facts are `facts`, its absolute path `original`) into
/// `trash`. On any failure the target is where it was.
pub fn hide(
    trash: &Trash,
    base: &OwnedFd,
    name: &CStr,
    original: &Path,
    facts: &Facts,
    opts: &HideOptions,
) -> Result<Hidden, Reason> {
    hide_as(trash, base, name, original, facts, opts, DATA).map(|(h, _)| h)
}

/// Moves a large file about to be shrunk in the foreground into `trash` as an entry already
/// claimed (`reaping`: not restorable, since its bytes will be gone), so an interruption
/// leaves what is left of it to a reaper. Returns the entry, open and locked: no reaper takes
/// it while the caller holds it.
pub fn hide_claimed(
    trash: &Trash,
    base: &OwnedFd,
    name: &CStr,
    original: &Path,
    facts: &Facts,
    opts: &HideOptions,
) -> Result<(Hidden, OwnedFd), Reason> {
    hide_as(trash, base, name, original, facts, opts, REAPING)
}

fn hide_as(
    trash: &Trash,
    base: &OwnedFd,
    name: &CStr,
    original: &Path,
    facts: &Facts,
    opts: &HideOptions,
    into: &CStr,
) -> Result<(Hidden, OwnedFd), Reason> {
    // A reaper may take a fresh, still empty entry for the debris of a killed hide and remove
    // it between our mkdir and our lock: the target has not moved then; try a new entry.
    let mut tries = 0;
    loop {
        match hide_once(trash, base, name, original, facts, opts, into) {
            Err(Vanished) if tries < 3 => tries += 1,
            Err(Vanished) => return Err(Reason::Os(Errno::NOENT)),
            Ok(r) => return r,
        }
    }
}

/// The record of a new entry `id` for `original` (`facts` from its `lstat`, its parent's
/// `parent`), hidden `now`: what a reaper, `status` and `restore` read of it.
fn record(
    id: &str,
    trash: &Trash,
    parent: Lineage,
    original: &Path,
    facts: &Facts,
    opts: &HideOptions,
    now: f64,
) -> Meta {
    let mut m =
        Meta {
            version: 2,
            id: id.to_string(),
            original: String::new(),
            original_hex: None,
            parent_dev: parent.dev,
            parent_ino: parent.ino,
            parent: Some(parent),
            uid: trash.uid,
            created_unix: now,
            grace_until_unix: opts.grace.map(|g| now + g.as_secs_f64()),
            kind: kind(facts.file_type).into(),
            allocated: opts.known.map(|k| k.0).or_else(|| {
                (facts.file_type != rustix::fs::FileType::Directory)
                    .then_some(if facts.nlink <= 1 { facts.allocated } else { 0 })
            }),
            files: opts
                .known
                .map(|k| k.1)
                .or_else(|| (facts.file_type != rustix::fs::FileType::Directory).then_some(1)),
            pacing: opts.pacing.clone(),
            held: None,
            held_first: Vec::new(),
        };
    m.set_original(original);
    m
}

fn hide_once(
    trash: &Trash,
    base: &OwnedFd,
    name: &CStr,
    original: &Path,
    facts: &Facts,
    opts: &HideOptions,
    into: &CStr,
) -> Result<Result<(Hidden, OwnedFd), Reason>, Vanished> {
    // Locked until we return: a reaper skips a locked entry instead of removing it as debris.
    let Entry {
        id,
        name: cid,
        dir: entry,
    } = match Entry::make(trash)? {
        Ok(made) => made,
        Err(reason) => return Ok(Err(reason)),
    };
    let discard = |entry: &OwnedFd| {
        let _ = entry::tear_down(&trash.dir, &cid, entry, None);
    };
    let parent = match Lineage::of(base) {
        Ok(p) => p,
        Err(e) => {
            discard(&entry);
            return Ok(Err(Reason::Os(e)));
        }
    };
    let now = crate::sys::format::now_unix();
    let m = record(&id, trash, parent, original, facts, opts, now);
    let before = m
        .write_new(&entry, opts.durable)
        .and_then(|()| sync_if(opts.durable, &entry))
        .and_then(|()| sync_if(opts.durable, &trash.dir));
    if let Err(e) = before {
        if entry::removed(&entry) {
            return Err(Vanished);
        }
        discard(&entry);
        return Ok(Err(Reason::Os(e)));
    }
    if let Err(e) = noreplace(base, name, &entry, into, Into::Private) {
        if entry::removed(&entry) {
            return Err(Vanished);
        }
        discard(&entry);
        return Ok(Err(Reason::Os(e)));
    }
    match dirfd::lstat_at(&entry, into) {
        Ok(f) if f.ident == facts.ident => {}
        _ => {
            // Swapped between our lstat and the rename: put back whatever we moved.
            if noreplace(&entry, into, base, name, Into::Shared).is_ok() {
                discard(&entry);
            }
            return Ok(Err(Reason::Changed));
        }
    }
    if opts.durable {
        if let Err(e) = fsync(base).and_then(|()| fsync(&entry)) {
            return Ok(Err(Reason::Os(e)));
        }
    }
    Ok(Ok((
        Hidden {
            path: crate::sys::quote::PathField::new(original),
            id,
            trash: trash.path.to_string_lossy().into_owned(),
            restorable_until_unix: m.grace_until_unix.filter(|g| *g > now),
        },
        entry,
    )))
}

fn sync_if(on: bool, fd: &OwnedFd) -> Result<(), Errno> {
    if on {
        fsync(fd)
    } else {
        Ok(())
    }
}

pub fn kind(t: rustix::fs::FileType) -> &'static str {
    match t {
        rustix::fs::FileType::RegularFile => "file",
        rustix::fs::FileType::Directory => "dir",
        rustix::fs::FileType::Symlink => "symlink",
        _ => "other",
    }
}

/// Why a target is not hidden but removed in the foreground, if it must not go to the trash:
/// it is a mount point, contains one, or is (inside) a trash.
pub fn unsuitable(original: &Path, facts: &Facts, parent_mnt: u64) -> Option<String> {
    if facts.mnt_id != parent_mnt {
        return Some("it is a mount point".into());
    }
    if original
        .components()
        .any(|c| super::is_trash_name(c.as_os_str().as_bytes()))
    {
        return Some("it is inside reclaim's trash".into());
    }
    if facts.file_type == rustix::fs::FileType::Directory {
        if let Some(m) = crate::sys::mounts::inside(original).first() {
            return Some(format!(
                "another file system is mounted inside it ({}); moving it would move the mount",
                crate::sys::quote::quote(&m.point)
            ));
        }
    }
    None
}

/// The absolute path of `name` in `base`, if the directory has one.
pub fn absolute(base: &OwnedFd, name: &CStr) -> Option<PathBuf> {
    Some(crate::sys::mounts::fd_path(base)?.join(meta::os(name)))
}

/// One path of a batch: its name in the batch's directory, its facts (from its `lstat`) and
/// the size the caller measured (allocated bytes, files).
pub struct Item {
    pub name: std::ffi::CString,
    pub facts: Facts,
    pub known: Option<(u64, u64)>,
}

/// A batch hidden (`hide_batch`): one entry holding the paths that moved.
#[derive(Debug)]
pub struct Batch {
    pub id: String,
    pub trash: String,
    pub restorable_until_unix: Option<f64>,
    /// Per item, in order: `Some(Ok)` in the entry, `Some(Err)` not moved (why; it is where it
    /// was), `None` not tried (a stop signal came first; it is where it was).
    pub outcomes: Vec<Option<Result<(), Reason>>>,
}

/// Moves `items` of directory `base` (its absolute path `dir`) into one new entry of `trash`
/// (see `hide_batch_once` for the protocol). `Err`: no entry could be made, nothing moved.
pub fn hide_batch(
    trash: &Trash,
    base: &OwnedFd,
    dir: &Path,
    items: &[Item],
    opts: &HideOptions,
) -> Result<Batch, Reason> {
    let mut tries = 0;
    loop {
        match hide_batch_once(trash, base, dir, items, opts) {
            Err(Vanished) if tries < 3 => tries += 1,
            Err(Vanished) => return Err(Reason::Os(Errno::NOENT)),
            Ok(r) => return r,
        }
    }
}

/// The batch protocol: make the entry and lock it; write its list (`held.json`: each path's
/// name and slot) and then its record (`meta.json`: the directory's path and lineage), both
/// before anything moves; make `data`; then one `renameat2(RENAME_NOREPLACE)` per path into
/// `data/<slot>`, each checked to have moved what was examined (else put back). At every point
/// each path is at its original name or in `data` under a slot the list already names. Paths
/// that did not move are then dropped from the list (a crash before that leaves a list naming
/// slots that are empty: readers take an empty slot for a path that is where it was).
/// `--durable` fsyncs the list, the record, the entry and the trash before the first rename,
/// the directory, `data` and the entry after the last.
fn hide_batch_once(
    trash: &Trash,
    base: &OwnedFd,
    dir: &Path,
    items: &[Item],
    opts: &HideOptions,
) -> Result<Result<Batch, Reason>, Vanished> {
    use super::meta::{Held, HeldList, HeldName, BATCH};
    // Locked until the last path moved: a reaper never frees a batch still being filled, nor
    // takes it for debris.
    let Entry {
        id,
        name: cid,
        dir: entry,
    } = match Entry::make(trash)? {
        Ok(made) => made,
        Err(reason) => return Ok(Err(reason)),
    };
    let discard = |entry: &OwnedFd| {
        let _ = entry::tear_down(&trash.dir, &cid, entry, Some(DATA));
    };
    let parent = match Lineage::of(base) {
        Ok(p) => p,
        Err(e) => {
            discard(&entry);
            return Ok(Err(Reason::Os(e)));
        }
    };
    let mut list = HeldList {
        items: items
            .iter()
            .enumerate()
            .map(|(i, it)| {
                let dir_like = it.facts.file_type == rustix::fs::FileType::Directory;
                Held {
                    slot: i as u32,
                    name: HeldName::new(it.name.to_bytes()),
                    kind: kind(it.facts.file_type).into(),
                    allocated: it.known.map(|k| k.0).or_else(|| {
                        (!dir_like).then_some(if it.facts.nlink <= 1 {
                            it.facts.allocated
                        } else {
                            0
                        })
                    }),
                    files: it.known.map(|k| k.1).or_else(|| (!dir_like).then_some(1)),
                }
            })
            .collect(),
    };
    let now = crate::sys::format::now_unix();
    let mut m = Meta {
        version: 3,
        id: id.clone(),
        original: String::new(),
        original_hex: None,
        parent_dev: parent.dev,
        parent_ino: parent.ino,
        parent: Some(parent),
        uid: trash.uid,
        created_unix: now,
        grace_until_unix: opts.grace.map(|g| now + g.as_secs_f64()),
        kind: BATCH.into(),
        allocated: None,
        files: None,
        pacing: opts.pacing.clone(),
        held: None,
        held_first: Vec::new(),
    };
    m.set_original(dir);
    m.set_held(&list);
    let before = list
        .write_new(&entry, opts.durable)
        .and_then(|()| m.write_new(&entry, opts.durable))
        .and_then(|()| crate::sys::safeopen::mkdir_at(&entry, DATA, 0o700))
        .and_then(|()| sync_if(opts.durable, &entry))
        .and_then(|()| sync_if(opts.durable, &trash.dir));
    let data = before.and_then(|()| dirfd::open_dir_at(&entry, DATA));
    let data = match data {
        Ok(d) => d,
        Err(e) => {
            if entry::removed(&entry) {
                return Err(Vanished);
            }
            discard(&entry);
            return Ok(Err(Reason::Os(e)));
        }
    };
    let mut outcomes: Vec<Option<Result<(), Reason>>> = Vec::with_capacity(items.len());
    for (it, held) in items.iter().zip(&list.items) {
        if crate::sys::interrupt::stopping() {
            break;
        }
        let slot = held.slot_name();
        let moved = match noreplace(base, &it.name, &data, &slot, Into::Private) {
            Err(e) => Err(Reason::Os(e)),
            Ok(()) => match dirfd::lstat_at(&data, &slot) {
                Ok(f) if f.ident == it.facts.ident => Ok(()),
                _ => {
                    // Swapped between its lstat and the rename: put back whatever moved.
                    let _ = noreplace(&data, &slot, base, &it.name, Into::Shared);
                    Err(Reason::Changed)
                }
            },
        };
        outcomes.push(Some(moved));
    }
    outcomes.resize_with(items.len(), || None);
    let all = outcomes.iter().all(|o| matches!(o, Some(Ok(()))));
    if !all {
        list.items = list
            .items
            .into_iter()
            .zip(&outcomes)
            .filter(|(_, o)| matches!(o, Some(Ok(()))))
            .map(|(h, _)| h)
            .collect();
        if list.items.is_empty() {
            discard(&entry);
        } else {
            // The list first: a crash in between leaves a record whose counts are too high,
            // never a path in the entry that the list does not name.
            m.set_held(&list);
            let _ = list.rewrite(&entry).and_then(|()| m.rewrite(&entry));
        }
    }
    if opts.durable && !list.items.is_empty() {
        if let Err(e) = fsync(base)
            .and_then(|()| fsync(&data))
            .and_then(|()| fsync(&entry))
        {
            // In the trash (restorable), but not durably so: say it for each.
            for o in outcomes.iter_mut().flatten() {
                if o.is_ok() {
                    *o = Err(Reason::Os(e));
                }
            }
        }
    }
    Ok(Ok(Batch {
        id,
        trash: trash.path.to_string_lossy().into_owned(),
        restorable_until_unix: m.grace_until_unix.filter(|g| *g > now),
        outcomes,
    }))
}
