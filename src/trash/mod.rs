//! The trash: one directory per file system and user (`<top>/.reclaim/<uid>/`, mode 0700),
//! into which `reclaim rm --background` renames targets so they vanish from their path at
//! once, whatever their size. Owns where a trash is, how it is opened safely (never through
//! a symlink, never another user's), and what its entries are. Never frees anything: that is
//! the reaper's job.

pub mod hide;
pub mod meta;
pub mod restore;

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{mkdirat, Mode};
use rustix::io::Errno;

use crate::dirfd::{self, Ident};
use crate::mounts::{self, Mount};

/// The directory at a trash's top holding every user's trash.
pub const TRASH_DIR: &str = ".reclaim";
/// Inside an entry: the target, whole and restorable.
pub const DATA: &CStr = c"data";
/// Inside an entry: the target once a reaper has claimed it (no longer restorable).
pub const REAPING: &CStr = c"reaping";
/// Inside a trash: the reaper's lock, its status and its log.
pub const LOCK: &CStr = c"lock";
pub const STATUS: &CStr = c"reaper.json";
pub const LOG: &CStr = c"reaper.log";

/// Why a trash cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrashError {
    #[error("{}", crate::error::errno_text(*.0))]
    Os(#[from] Errno),
    #[error("'{0}' is not a directory owned by this user with mode 0700 (refusing to use it)")]
    Unsafe(PathBuf),
    #[error("it is on no known mount")]
    NoMount,
    #[error("no writable directory for a trash on its file system (tried '{0}')")]
    NoWritable(PathBuf),
}

/// One user's trash on one file system, open.
#[derive(Debug)]
pub struct Trash {
    /// `<top>/.reclaim/<uid>`.
    pub dir: OwnedFd,
    pub path: PathBuf,
    /// The mount point of its file system.
    pub mount: PathBuf,
    pub uid: u32,
    pub ident: Ident,
    pub mnt_id: u64,
}

impl Trash {
    /// Opens (creating if `create`) the trash of `uid` under `top`, a directory on mount
    /// `mount`. Every component is opened relative to the last with `O_NOFOLLOW`, and must be
    /// a directory on the same mount, owned by `uid` (or root, for `.reclaim` itself), not
    /// writable by anyone else.
    pub fn open_in(top: &Path, mount: &Mount, uid: u32, create: bool) -> Result<Trash, TrashError> {
        let top_fd = dirfd::open_dir_path(top)?;
        let reclaim = c".reclaim";
        let outer = open_private(&top_fd, reclaim, &top.join(TRASH_DIR), &[uid, 0], create)?;
        let name = CString::new(uid.to_string()).expect("digits");
        let path = top.join(TRASH_DIR).join(uid.to_string());
        let dir = open_private(&outer, &name, &path, &[uid], create)?;
        let facts = dirfd::fstat(&dir)?;
        if facts.mnt_id != mount.id {
            return Err(TrashError::Unsafe(path));
        }
        Ok(Trash {
            dir,
            path,
            mount: mount.point.clone(),
            uid,
            ident: facts.ident,
            mnt_id: facts.mnt_id,
        })
    }

    /// Opens an existing trash by its path (`reclaim reap --trash DIR`).
    pub fn open_path(path: &Path) -> Result<Trash, TrashError> {
        let uid = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u32>().ok())
            .ok_or_else(|| TrashError::Unsafe(path.to_path_buf()))?;
        let outer = path
            .parent()
            .filter(|p| p.file_name() == Some(OsStr::new(TRASH_DIR)))
            .ok_or_else(|| TrashError::Unsafe(path.to_path_buf()))?;
        let top = outer.parent().unwrap_or(Path::new("/"));
        let facts = dirfd::stat_path(top)?;
        let mount = mounts::by_id(facts.mnt_id).ok_or(TrashError::NoMount)?;
        Trash::open_in(top, &mount, uid, false)
    }

    /// The entries (by name, oldest first) and nothing else of the trash.
    pub fn entries(&self) -> Vec<CString> {
        let mut names = Vec::new();
        let Ok(list) = reopen(&self.dir) else {
            return names;
        };
        let mut buf = dirfd::DirBuf::new(64 << 10);
        let _ = dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
            if meta::is_entry_name(name.to_bytes()) {
                names.push(name.to_owned());
            }
        });
        names.sort();
        names
    }

    /// Display path of something inside an entry.
    pub fn shown(&self, entry: &CStr, inner: Option<&CStr>) -> PathBuf {
        let p = self.path.join(OsStr::from_bytes(entry.to_bytes()));
        match inner {
            Some(i) => p.join(OsStr::from_bytes(i.to_bytes())),
            None => p,
        }
    }
}

/// A fresh fd on the same directory for listing (getdents moves the file offset).
pub fn reopen(dir: &OwnedFd) -> Result<OwnedFd, Errno> {
    dirfd::open_dir_at(dir, c".")
}

/// Opens (or makes, mode 0700) directory `name` in `parent`, never through a symlink, and
/// checks it is owned by one of `owners` and not group/other writable (or, for per-user
/// directories, not accessible at all by others).
fn open_private(
    parent: &OwnedFd,
    name: &CStr,
    shown: &Path,
    owners: &[u32],
    create: bool,
) -> Result<OwnedFd, TrashError> {
    if create {
        match mkdirat(parent, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let fd = match dirfd::open_dir_at(parent, name) {
        Ok(fd) => fd,
        Err(Errno::LOOP | Errno::NOTDIR) => return Err(TrashError::Unsafe(shown.to_path_buf())),
        Err(e) => return Err(e.into()),
    };
    let st = rustix::fs::fstat(&fd)?;
    let per_user = owners.len() == 1;
    let forbidden = if per_user { 0o077 } else { 0o022 };
    if !owners.contains(&st.st_uid) || st.st_mode & forbidden != 0 {
        return Err(TrashError::Unsafe(shown.to_path_buf()));
    }
    Ok(fd)
}

/// The real uid of this process.
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Finds (making it if needed) the trash for a target whose parent directory is `parent`:
/// the top of the parent's mount if this user may write there, else the highest writable
/// directory on the same mount above the parent. Never a directory inside the target.
pub fn locate(parent: &OwnedFd, uid: u32) -> Result<Trash, TrashError> {
    let facts = dirfd::fstat(parent)?;
    let mount = mounts::by_id(facts.mnt_id).ok_or(TrashError::NoMount)?;
    let real = mounts::fd_path(parent).ok_or(TrashError::NoMount)?;
    let below = real
        .strip_prefix(&mount.point)
        .map_err(|_| TrashError::NoMount)?;
    let mut candidates = vec![mount.point.clone()];
    let mut at = mount.point.clone();
    for c in below.components() {
        at.push(c);
        candidates.push(at.clone());
    }
    let mut first_error = None;
    for top in &candidates {
        let r = if uid != 0 && !writable(top) {
            Err(TrashError::NoWritable(top.clone()))
        } else {
            Trash::open_in(top, &mount, uid, true)
        };
        match r {
            Ok(t) => {
                if top != &mount.point {
                    register(&t.path);
                }
                return Ok(t);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or(TrashError::NoMount))
}

fn writable(dir: &Path) -> bool {
    rustix::fs::access(
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok()
}

/// Every trash this user may see: at the top of each local file system (all users' for root,
/// one's own otherwise) and the ones registered in the user's state directory.
pub fn discover(uid: u32) -> Vec<Trash> {
    let mut found: Vec<Trash> = Vec::new();
    let mut push = |t: Trash| {
        if !found.iter().any(|f| f.ident == t.ident) {
            found.push(t);
        }
    };
    let all = mounts::all();
    for m in all.iter().filter(|m| m.is_local()) {
        let top = m.point.join(TRASH_DIR);
        let Ok(st) = std::fs::symlink_metadata(&top) else {
            continue;
        };
        if !st.is_dir() {
            continue;
        }
        let uids: Vec<u32> = if uid == 0 {
            std::fs::read_dir(&top)
                .map(|rd| {
                    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                        .collect()
                })
                .unwrap_or_default()
        } else {
            vec![uid]
        };
        for u in uids {
            if let Ok(t) = Trash::open_in(&m.point, m, u, false) {
                push(t);
            }
        }
    }
    for p in registered() {
        if let Ok(t) = Trash::open_path(&p) {
            if t.uid == uid || uid == 0 {
                push(t);
            }
        }
    }
    found
}

/// `$XDG_STATE_HOME/reclaim/trashes` (or `~/.local/state/...`): trashes not at a mount top.
fn registry() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(base.join("reclaim/trashes"))
}

fn registered() -> Vec<PathBuf> {
    let Some(file) = registry() else {
        return Vec::new();
    };
    std::fs::read(file)
        .map(|t| {
            t.split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| PathBuf::from(OsStr::from_bytes(l)))
                .collect()
        })
        .unwrap_or_default()
}

/// Remembers a trash that is not at a mount top, so `status` and `reap` find it later.
fn register(trash: &Path) {
    let Some(file) = registry() else { return };
    let mut known = registered();
    if known.iter().any(|p| p == trash) || trash.as_os_str().as_bytes().contains(&b'\n') {
        return;
    }
    known.retain(|p| p.exists());
    known.push(trash.to_path_buf());
    let mut text = Vec::new();
    for p in known {
        text.extend_from_slice(p.as_os_str().as_bytes());
        text.push(b'\n');
    }
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let tmp = file.with_extension("tmp");
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, &file);
    }
}

/// Live allocated bytes of whatever an entry still holds (data, reaping, half-shrunk files).
pub fn entry_allocated(entry: &OwnedFd) -> u64 {
    let mut total = 0;
    let Ok(list) = reopen(entry) else { return 0 };
    let mut buf = dirfd::DirBuf::new(8 << 10);
    let _ = dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
        if name == meta::META {
            return;
        }
        if let Ok(f) = dirfd::lstat_at(entry.as_fd(), name) {
            if f.file_type != rustix::fs::FileType::Directory {
                total += f.allocated;
            }
        }
    });
    total
}
