//! The trash registry, `<state directory>/reclaim/trashes`: this user's trashes that are not at
//! a mount top (`locate` makes one below the top when the top is not writable), so that
//! `status`, `reap` and `restore` find them again (discovery finds the others by listing the
//! tops). One JSON object per line: the path and the trash's identity when it was registered
//! (device, inode, owner, birth time, generation), which a trash found there later must have
//! (a directory that took its name is not it); a line of the first format (a bare path) has
//! no identity. Kept only in a state directory of the caller's own (`userdirs`), and read and
//! written as hostile ground (`safefile`): the file must be a regular file of the caller's,
//! and is replaced whole (a fresh name, then a rename), never written in place. The same
//! records go to the machine's index (`index`), which root reads.

use std::ffi::{CStr, OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use rustix::io::Errno;

use super::safefile::{self, Bad, Expect};
use super::Trash;
use crate::sys::dirfd::Lineage;
use crate::sys::error::errno_text;
use crate::sys::quote::quote;

const DIR: &CStr = c"reclaim";
const FILE: &CStr = c"trashes";
/// The most the registry may hold.
const MAX_BYTES: u64 = 1 << 20;

fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Why a trash cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("no state directory of this user's own (HOME or XDG_STATE_HOME)")]
    NoStateDirectory,
    /// The state directory could not be made ...
    #[error("cannot make {}: {}", quote(.0), errno_text(*.1))]
    Make(PathBuf, Errno),
    /// ... or opened.
    #[error("cannot open {}: {}", quote(.0), errno_text(*.1))]
    Open(PathBuf, Errno),
    /// The registry's own directory in it is not one to use (in the trash's words).
    #[error("{} {}", quote(.0), .1)]
    Dir(PathBuf, Bad),
    #[error("cannot read its identity: {}", errno_text(*.0))]
    Identity(Errno),
    #[error("cannot write the trash registry: {}", errno_text(*.0))]
    Write(Errno),
}

/// The registry's directory (made if `create`), or why there is none.
fn dir(create: bool) -> Result<OwnedFd, RegistryError> {
    let home = crate::sys::userdirs::state_home().ok_or(RegistryError::NoStateDirectory)?;
    let shown = || home.join("reclaim");
    if create {
        // Below a directory of the caller's own (`userdirs`): nobody else made these names.
        crate::sys::safeopen::make_dir_path(&home, 0o700)
            .map_err(|e| RegistryError::Make(shown(), e))?;
    }
    let home_fd = crate::sys::dirfd::open_dir_path(&home)
        .map_err(|e| RegistryError::Open(home.clone(), e))?;
    let r = if create {
        safefile::open_or_make_dir(&home_fd, DIR, 0o700, me())
    } else {
        crate::sys::dirfd::open_dir_at(&home_fd, DIR).map_err(Bad::Os)
    };
    r.map_err(|b| RegistryError::Dir(shown(), b))
}

/// Whether a trash could be registered now (the state directory is usable).
pub fn available() -> Result<(), RegistryError> {
    dir(true).map(drop)
}

/// A registered trash: where, and what it was when registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registered {
    pub path: PathBuf,
    /// `None` for a line of the first format.
    pub lineage: Option<Lineage>,
}

/// One line of the registry.
#[derive(Serialize, Deserialize)]
struct Line {
    /// The path's bytes, in hex (any bytes but NUL).
    path_hex: String,
    /// For people reading the file.
    #[serde(default)]
    path: String,
    lineage: Lineage,
}

/// The trashes registered (in the order they were).
pub fn registered() -> Vec<Registered> {
    let Ok(dir) = dir(false) else {
        return Vec::new();
    };
    let want = Expect {
        owners: &[me()],
        max: MAX_BYTES,
        one_link: true,
    };
    let Ok(text) = safefile::read_checked(&dir, FILE, &want) else {
        return Vec::new();
    };
    parse(&text)
}

/// The records of a registry's text (one JSON object a line, or a bare path of the first
/// format); lines that are neither are left out.
pub fn parse(text: &[u8]) -> Vec<Registered> {
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| match serde_json::from_slice::<Line>(l) {
            Ok(line) => Some(Registered {
                path: PathBuf::from(OsString::from_vec(crate::sys::quote::unhex(
                    &line.path_hex,
                )?)),
                lineage: Some(line.lineage),
            }),
            Err(_) if l.first() == Some(&b'/') => Some(Registered {
                path: PathBuf::from(OsStr::from_bytes(l)),
                lineage: None,
            }),
            Err(_) => None,
        })
        .collect()
}

/// The text of a registry holding `records`.
pub fn render(records: &[Registered]) -> Vec<u8> {
    let mut text = Vec::new();
    for r in records {
        let bytes = r.path.as_os_str().as_bytes();
        match r.lineage {
            Some(lineage) => {
                let line = Line {
                    path_hex: bytes.iter().map(|b| format!("{b:02x}")).collect(),
                    path: r.path.to_string_lossy().into_owned(),
                    lineage,
                };
                text.extend(serde_json::to_vec(&line).expect("a line serializes"));
            }
            // Kept as it was (no newline in it: it was read as one line).
            None => text.extend_from_slice(bytes),
        }
        text.push(b'\n');
    }
    text
}

/// `known` with `trash` (of `lineage`) in it and the trashes that are gone left out, or
/// `None` if it is there already with that identity (nothing to write).
pub fn with(
    mut known: Vec<Registered>,
    trash: &Trash,
    lineage: Lineage,
) -> Option<Vec<Registered>> {
    if known
        .iter()
        .any(|r| r.path == trash.path && r.lineage == Some(lineage))
    {
        return None;
    }
    known.retain(|r| r.path != trash.path && crate::sys::dirfd::stat_path(&r.path).is_ok());
    known.push(Registered {
        path: trash.path.clone(),
        lineage: Some(lineage),
    });
    Some(known)
}

/// Remembers `trash` (a trash not at a mount top) with its identity; those registered that
/// are gone are forgotten.
pub fn register(trash: &Trash) -> Result<(), RegistryError> {
    let lineage = Lineage::of(&trash.dir).map_err(RegistryError::Identity)?;
    let dir = dir(true)?;
    let Some(known) = with(registered(), trash, lineage) else {
        return Ok(());
    };
    safefile::replace(&dir, FILE, &render(&known)).map_err(RegistryError::Write)
}

/// `t`, opened at the path of `r`, if it is the trash registered there: the same directory
/// (device, inode, owner, birth time and generation as recorded), never just the same name.
pub fn check(t: Trash, r: &Registered) -> Result<Trash, super::TrashError> {
    let Some(was) = r.lineage else {
        return Ok(t);
    };
    match Lineage::of(&t.dir) {
        Ok(now) if was.same(&now) => Ok(t),
        Ok(_) => Err(super::TrashError::Unsafe {
            path: t.path.clone(),
            why: "is not the trash registered there (another directory took its name)".into(),
        }),
        Err(e) => Err(super::TrashError::Os(e)),
    }
}

/// The trash a record names (`r`, from this user's registry or the machine's index, in a file
/// of `owner`), opened beneath the top of mount `m` (`top_fd`): never through a symlink nor
/// into another mount (`dirfd::open_dir_beneath`), a trash of `owner` by its name and by
/// every check a trash passes (`Trash::open_at`), and the directory recorded (`check`).
pub fn open_recorded(
    m: &crate::sys::mounts::Mount,
    top_fd: &OwnedFd,
    r: &Registered,
    owner: u32,
) -> Result<Trash, super::TrashError> {
    use super::TrashError;
    let unsafe_ = |why: &str| TrashError::Unsafe {
        path: r.path.clone(),
        why: why.into(),
    };
    let rel = r
        .path
        .strip_prefix(&m.point)
        .map_err(|_| unsafe_("is not on the file system its path names"))?;
    let (Some(name), Some(parent)) = (rel.file_name(), rel.parent()) else {
        return Err(unsafe_("is not a trash (expected <dir>/.reclaim-<uid>)"));
    };
    if super::name_uid(name.as_bytes()) != Some(owner) {
        return Err(unsafe_(&format!("is not a trash of uid {owner}")));
    }
    let cname = std::ffi::CString::new(name.as_bytes()).map_err(|_| unsafe_("has a NUL byte"))?;
    let dir = if parent.as_os_str().is_empty() {
        super::reopen(top_fd)
    } else {
        crate::sys::dirfd::open_dir_beneath(top_fd, parent)
    };
    let dir = match dir {
        Ok(d) => d,
        // A symbolic link on the way (ELOOP, or ENOTDIR as the last directory), or a mount.
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR | rustix::io::Errno::XDEV) => {
            return Err(unsafe_(
                "is reached through a symbolic link, a file or another mount",
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let top = m.point.join(parent);
    let t = Trash::open_at(&dir, &top, &cname, m, owner)?;
    check(t, r)
}
