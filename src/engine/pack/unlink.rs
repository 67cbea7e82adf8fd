//! The removal's condition after a verified pack (`remove::Keep`): an original goes only if
//! the archive holds it at the same path and it is unchanged since it was read (HTAR's
//! paranoid rule: same inode, size, mtime and ctime). New, changed, moved or replaced
//! entries stay and are reported. Directories go only if the archive holds them (and the
//! engine removes them only once empty). Never follows a symlink: it checks and unlinks the
//! name in its parent's fd.

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{unlinkat, AtFlags, OFlags};
use rustix::io::Errno;

use super::manifest::{Kind, Manifest, Time};
use super::source::Stat;
use crate::engine::remove::{Keep, Kept};
use crate::sys::dirfd::Ident;
use crate::sys::error::Reason;

/// The condition: the manifest's entries by path.
#[derive(Debug)]
pub struct Proven {
    /// The packed directory as the engine shows it (paths are relative to it).
    display: PathBuf,
    by_path: HashMap<Vec<u8>, Facts>,
    /// The directory itself stays (`--mount` mounts the archive on it).
    keep_root: bool,
    /// The ctime each inode with several names is expected to have now: each of our own
    /// unlinks of one of its names changes it.
    ctimes: Mutex<HashMap<u64, Time>>,
}

#[derive(Debug, Clone, Copy)]
struct Facts {
    kind: Kind,
    ino: u64,
    size: u64,
    mtime: Time,
    ctime: Time,
    nlink: u32,
    changed: bool,
}

impl Proven {
    pub fn new(display: PathBuf, m: &Manifest, keep_root: bool) -> Proven {
        let by_path = m
            .entries
            .iter()
            .map(|e| {
                (
                    e.rel(),
                    Facts {
                        kind: e.kind,
                        ino: e.ino,
                        size: e.size,
                        mtime: e.mtime,
                        ctime: e.ctime,
                        nlink: e.nlink,
                        changed: e.changed,
                    },
                )
            })
            .collect();
        Proven {
            display,
            by_path,
            keep_root,
            ctimes: Mutex::new(HashMap::new()),
        }
    }

    fn rel(&self, path: &Path) -> Option<Vec<u8>> {
        path.strip_prefix(&self.display)
            .ok()
            .map(|p| p.as_os_str().as_bytes().to_vec())
    }

    fn check(&self, dir: &OwnedFd, name: &CStr, path: &Path) -> Result<Facts, Kept> {
        let stays = |why: &str| Kept::Stays(Reason::Kept(why.to_string()));
        let Some(rel) = self.rel(path) else {
            return Err(stays("outside the packed directory"));
        };
        let now = match Stat::of(dir, name, AtFlags::empty()) {
            Ok(Some(s)) => s,
            Ok(None) => return Err(stays("not in the archive (a socket)")),
            Err(Errno::NOENT) => return Err(Kept::Gone),
            Err(e) => return Err(Kept::Stays(Reason::Os(e))),
        };
        if now.kind == Kind::Dir {
            return Err(Kept::IsDir);
        }
        let Some(&want) = self.by_path.get(&rel) else {
            return Err(stays("not in the archive (new since it was packed)"));
        };
        if want.changed {
            return Err(stays("changed while it was packed"));
        }
        if (now.ino, now.kind) != (want.ino, want.kind) {
            return Err(stays("replaced since it was packed (another inode)"));
        }
        if now.size != want.size || now.mtime != want.mtime {
            return Err(stays("modified since it was packed (size or mtime)"));
        }
        // An inode with several names: its ctime moves with each of our own unlinks of its
        // other names, which another worker may be doing between this stat and a read of the
        // ctime that unlink left (CI saw a hard link refused so): `unlink` compares it under
        // the lock that orders those unlinks.
        if want.nlink <= 1 && now.ctime != want.ctime {
            return Err(stays(
                "changed since it was packed (ctime: owner, mode, links or xattrs)",
            ));
        }
        Ok(want)
    }
}

impl Keep for Proven {
    fn unlink(&self, dir: &OwnedFd, name: &CStr, path: &Path) -> Kept {
        let want = match self.check(dir, name, path) {
            Ok(f) => f,
            Err(k) => return k,
        };
        if want.nlink <= 1 {
            return match unlinkat(dir, name, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => Kept::Gone,
                Err(Errno::ISDIR) => Kept::IsDir,
                Err(e) => Kept::Stays(Reason::Os(e)),
            };
        }
        // Several names: hold the inode (O_PATH) across the unlink to learn the ctime our own
        // unlink gave it, which the next name must show.
        let mut ctimes = self.ctimes.lock().expect("ctimes lock");
        let held = match rustix::fs::openat(
            dir,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Kept::Gone,
            Err(e) => return Kept::Stays(Reason::Os(e)),
        };
        let expected = *ctimes.get(&want.ino).unwrap_or(&want.ctime);
        match Stat::of_fd(&held) {
            Ok(Some(s)) if s.ino == want.ino && s.ctime == expected => {}
            _ => return Kept::Stays(Reason::Kept("changed since it was packed (ctime)".into())),
        }
        match unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) => {}
            Err(Errno::NOENT) => return Kept::Gone,
            Err(e) => return Kept::Stays(Reason::Os(e)),
        }
        if let Ok(Some(s)) = Stat::of_fd(&held) {
            ctimes.insert(want.ino, s.ctime);
        }
        Kept::Gone
    }

    fn rmdir(&self, ident: Option<Ident>, path: &Path) -> Result<bool, Reason> {
        let Some(rel) = self.rel(path) else {
            return Err(Reason::Kept("outside the packed directory".into()));
        };
        if rel.is_empty() && self.keep_root {
            return Ok(false);
        }
        match self.by_path.get(&rel) {
            Some(f) if f.kind == Kind::Dir && ident.map_or(true, |i| i.ino == f.ino) => Ok(true),
            Some(_) => Err(Reason::Kept(
                "replaced since it was packed (another directory)".into(),
            )),
            None => Err(Reason::Kept(
                "not in the archive (new since it was packed)".into(),
            )),
        }
    }
}
