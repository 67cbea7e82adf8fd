//! One entry of a trash and the files it owns: `data` (the target, whole), `reaping` (the
//! target once a reaper claimed it), and its records: `meta.json` (`meta`), a batch's
//! `held.json` and the reaper's `failed.json`. Owns making an entry (a fresh directory, locked),
//! which of its names are records, and tearing it down once its data is gone (restored, freed,
//! or never moved): the one place an entry's files are removed by name. Never frees data: the
//! reaper does that, through the entry's fd.

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;

use rustix::io::Errno;

use super::{meta, Trash, FAILED};
use crate::sys::dirfd;
use crate::sys::error::Reason;
use crate::sys::locks;

/// An entry of a trash, open: its ID (its name in the trash) and its directory.
pub struct Entry {
    pub id: String,
    /// The ID as a name.
    pub name: CString,
    pub dir: OwnedFd,
}

/// The entry directory disappeared before the target was moved into it (a reaper took a
/// fresh, still empty entry for the debris of a killed hide).
pub struct Vanished;

impl Entry {
    /// A new entry directory in `trash`, opened and locked (until it is dropped: a reaper
    /// skips a locked entry instead of removing it as debris). `Err(Vanished)`: a reaper got
    /// there first and may be removing it: leave it to it.
    pub fn make(trash: &Trash) -> Result<Result<Entry, Reason>, Vanished> {
        let id = meta::new_id();
        let name = CString::new(id.clone()).expect("no NUL in an id");
        if let Err(e) = crate::sys::safeopen::mkdir_at(&trash.dir, &name, 0o700) {
            return Ok(Err(Reason::Os(e)));
        }
        let dir = match dirfd::open_dir_at(&trash.dir, &name) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Err(Vanished),
            Err(e) => {
                let _ = crate::sys::safeopen::rmdir_at(&trash.dir, &name);
                return Ok(Err(Reason::Os(e)));
            }
        };
        if !locks::try_exclusive(&dir).unwrap_or(true) {
            return Err(Vanished);
        }
        Ok(Ok(Entry { id, name, dir }))
    }
}

/// Whether the entry `dir` was removed while it was being filled (a reaper took it for debris).
pub fn removed(dir: &OwnedFd) -> bool {
    rustix::fs::fstat(dir).is_ok_and(|st| st.st_nlink == 0)
}

/// Whether `name` in an entry is one of its records (not data, nor what is left of it).
pub fn is_record(name: &CStr) -> bool {
    name == meta::META || name == FAILED || name == meta::HELD
}

/// Removes what is left of entry `id` of the trash `trash_dir` (open as `entry`) once its data
/// is gone: `inner`, the directory a batch's paths were in if it is empty now, then its records,
/// `meta.json` last (until then a crash leaves an entry that still says what it was), then the
/// entry itself. An entry already gone is torn down; anything else left in it keeps it (the
/// error).
pub fn tear_down(
    trash_dir: &OwnedFd,
    id: &CStr,
    entry: &OwnedFd,
    inner: Option<&CStr>,
) -> Result<(), Errno> {
    if let Some(inner) = inner {
        let _ = crate::sys::safeopen::rmdir_at(entry, inner);
    }
    let _ = crate::sys::safeopen::unlink_at(entry, FAILED);
    let _ = crate::sys::safeopen::unlink_at(entry, meta::HELD);
    let _ = crate::sys::safeopen::unlink_at(entry, meta::META);
    match crate::sys::safeopen::rmdir_at(trash_dir, id) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e),
    }
}
