//! The removal's condition after a verified pack (`remove::Keep`): an original goes only if
//! the archive holds it at the same path and it is unchanged since it was read (HTAR's
//! paranoid rule: same inode, size, mtime and ctime) and, for a regular file, its bytes are the
//! archive's: it is opened, a write lease taken (granted only when no other process has it open
//! or mapped, and broken by anyone who opens it meanwhile), read and hashed, and compared with
//! the manifest's hash, which verification proved to be the archive's content; it is unlinked
//! while the lease still holds. Stat fields alone can be copied by anyone who can `stat`, and a
//! write through `mmap` to a page already dirty changes neither mtime nor ctime. A symlink
//! goes only if it still points where the archive's does. A check that cannot be made (no
//! leases here, not the file's owner) keeps the file, with why. New, changed, moved or
//! replaced entries stay and are reported. Directories go only if the archive holds them (and
//! the engine removes them only once empty). Never follows a symlink: it checks and unlinks
//! the name in its parent's fd.

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::AtFlags;
use rustix::io::Errno;

use super::manifest::{Kind, Manifest, Time};
use super::source::Stat;
use crate::engine::remove::{Keep, Kept};
use crate::sys::dirfd::Ident;
use crate::sys::error::Reason;
use crate::sys::lease::{self, NoLease};
use crate::sys::safeopen::{self, Access, Bad};

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

#[derive(Debug, Clone)]
struct Facts {
    kind: Kind,
    ino: u64,
    size: u64,
    mtime: Time,
    ctime: Time,
    nlink: u32,
    changed: bool,
    /// The content's BLAKE3 (regular files; `None` for a manifest without one: nothing goes).
    hash: Option<[u8; 32]>,
    /// A symlink's target, exactly.
    target: Option<Vec<u8>>,
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
                        hash: e
                            .hash
                            .as_deref()
                            .and_then(crate::sys::quote::unhex)
                            .and_then(|h| h.try_into().ok()),
                        target: e.target.as_deref().and_then(crate::sys::quote::unhex),
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

    /// Anything but a regular file the archive holds as one: a directory (walked), a symlink,
    /// FIFO or device (checked by `statx`, a symlink's target too), what is not in the archive
    /// or changed while it was packed (stays).
    fn unlink_other(&self, dir: &OwnedFd, name: &CStr, path: &Path) -> Kept {
        let want = match self.check(dir, name, path) {
            Ok(f) => f,
            Err(k) => return k,
        };
        if want.kind == Kind::File {
            // A file that was a directory or changed in the manifest: never reached here.
            return Kept::Stays(Reason::Kept("changed while it was packed".into()));
        }
        match safeopen::unlink_at(dir, name) {
            Ok(()) | Err(Errno::NOENT) => Kept::Gone,
            Err(Errno::ISDIR) => Kept::IsDir,
            Err(e) => Kept::Stays(Reason::Os(e)),
        }
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
        let Some(want) = self.by_path.get(&rel) else {
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
        if want.kind == Kind::Symlink {
            let target = rustix::fs::readlinkat(dir, name, Vec::new())
                .map_err(|e| Kept::Stays(Reason::Os(e)))?;
            if Some(target.as_bytes()) != want.target.as_deref() {
                return Err(stays(
                    "changed since it was packed (another symlink target)",
                ));
            }
        }
        Ok(want.clone())
    }
}

/// Proves the bytes of the regular file open as `fd` (`st`: its `fstat`) are the archive's
/// (`want`): the same inode, size and times, a write lease (nobody else has it open or mapped,
/// and whoever opens it from now on breaks the lease), its content hashed and compared with
/// the manifest's hash, the lease still held. `expected_ctime`: what its ctime must be (one of
/// several names: what our own unlink of another name left).
fn prove(
    fd: &OwnedFd,
    st: &rustix::fs::Stat,
    want: &Facts,
    expected_ctime: Time,
) -> Result<(), Kept> {
    let stays = |why: &str| Kept::Stays(Reason::Kept(why.to_string()));
    let time = |s: i64, ns: u64| Time(s, ns as u32);
    if st.st_ino != want.ino {
        return Err(stays("replaced since it was packed (another inode)"));
    }
    if st.st_size as u64 != want.size || time(st.st_mtime, st.st_mtime_nsec) != want.mtime {
        return Err(stays("modified since it was packed (size or mtime)"));
    }
    if time(st.st_ctime, st.st_ctime_nsec) != expected_ctime {
        return Err(stays(
            "changed since it was packed (ctime: owner, mode, links or xattrs)",
        ));
    }
    let Some(hash) = want.hash else {
        return Err(stays("the archive records no hash of it"));
    };
    match lease::take_write(fd) {
        Ok(()) => {}
        Err(NoLease::OpenElsewhere) => {
            return Err(stays(
                "another process has it open or mapped (it could still be written)",
            ))
        }
        Err(why) => return Err(stays(&format!("cannot prove it unchanged: {why}"))),
    }
    let same = content_is(fd, want.size, &hash).map_err(|e| Kept::Stays(Reason::Os(e)))?;
    if !lease::still_held(fd) {
        return Err(stays("another process opened it while it was compared"));
    }
    if !same {
        return Err(stays(
            "its content is no longer the archive's (written since it was read, as through a \
             mapping, which changes no time)",
        ));
    }
    Ok(())
}

/// Whether `fd` (of `size` bytes, under our lease: nobody writes it) holds bytes whose BLAKE3
/// is `hash`; `false` at once if another process opens it meanwhile (it waits for our lease to
/// go: not longer than one read).
fn content_is(fd: &OwnedFd, size: u64, hash: &[u8; 32]) -> Result<bool, Errno> {
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; (size as usize).clamp(1, 256 << 10)];
    let mut at = 0u64;
    while at < size {
        let want = buf.len().min((size - at) as usize);
        let n = match rustix::io::pread(fd, &mut buf[..want], at) {
            Ok(0) => return Ok(false),
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        at += n as u64;
        if at < size && !lease::still_held(fd) {
            return Ok(false);
        }
    }
    Ok(hasher.finalize().as_bytes() == hash)
}

impl Keep for Proven {
    fn unlink(&self, dir: &OwnedFd, name: &CStr, path: &Path) -> Kept {
        // A file the archive holds as one is opened at once (its facts from the open fd: no
        // separate stat) and goes only once proven by content.
        let file = self
            .rel(path)
            .and_then(|rel| self.by_path.get(&rel))
            .filter(|w| w.kind == Kind::File && !w.changed);
        let Some(want) = file else {
            return self.unlink_other(dir, name, path);
        };
        // Several names of one inode are unlinked one at a time (a second opener of the inode
        // would break the first one's lease, and each unlink moves the ctime the next expects).
        let mut ctimes = (want.nlink > 1).then(|| self.ctimes.lock().expect("ctimes lock"));
        let (fd, st) = match safeopen::open_file_at(dir, name, Access::Read) {
            Ok(v) => v,
            Err(Bad::Missing) => return Kept::Gone,
            Err(Bad::NotRegular("directory")) => return Kept::IsDir,
            Err(Bad::NotRegular(_)) => {
                return Kept::Stays(Reason::Kept(
                    "replaced since it was packed (another kind)".into(),
                ))
            }
            Err(Bad::Os(Errno::WOULDBLOCK)) => {
                return Kept::Stays(Reason::Kept("another process holds a lease on it".into()))
            }
            Err(Bad::Os(e)) => return Kept::Stays(Reason::Os(e)),
            Err(e) => return Kept::Stays(Reason::Kept(format!("it {e}"))),
        };
        let expected = ctimes
            .as_ref()
            .and_then(|c| c.get(&want.ino).copied())
            .unwrap_or(want.ctime);
        if let Err(k) = prove(&fd, &st, want, expected) {
            return k;
        }
        // The lease holds across the unlink.
        match safeopen::unlink_at(dir, name) {
            Ok(()) => {}
            Err(Errno::NOENT) => return Kept::Gone,
            Err(Errno::ISDIR) => return Kept::IsDir,
            Err(e) => return Kept::Stays(Reason::Os(e)),
        }
        if let Some(c) = ctimes.as_mut() {
            if let Ok(Some(s)) = Stat::of_fd(&fd) {
                c.insert(want.ino, s.ctime);
            }
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
            Some(f) if f.kind == Kind::Dir && ident.is_none_or(|i| i.ino == f.ino) => Ok(true),
            Some(_) => Err(Reason::Kept(
                "replaced since it was packed (another directory)".into(),
            )),
            None => Err(Reason::Kept(
                "not in the archive (new since it was packed)".into(),
            )),
        }
    }
}
