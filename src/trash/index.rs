//! The machine's index of trashes below mount tops: one file per user in `/var/tmp`,
//! `.reclaim-trashes-<uid>`, which that user's `reclaim` writes when it makes or uses a trash
//! below a top (`locate`), and which root's `status`, `reap` and `reap --watch` read, so they
//! find every user's trashes, not only those at the tops (a user's own `registry` is in a home
//! root never reads). `/var/tmp` is on every Linux machine, writable by everyone with the
//! sticky bit and kept across reboots: no install step. With `RECLAIM_UNDER=DIR` the index is
//! `DIR/var/tmp` (a container's view, the tests).
//!
//! Trust: a file is read only if it is a regular file of the uid its name says, with one link
//! and at most `MAX_BYTES`, opened without following a symlink or blocking (`safefile`); a
//! record in it counts only if it names a trash of that same uid (`.reclaim-<uid>`), and that
//! trash is opened beneath the top of the mount its path names, never through a symlink nor
//! into another mount, then checked as every trash is (a 0700 directory of that uid on that
//! mount, the identity recorded) before root acts in it, and root acts there only as that
//! user (`sys/asuser.rs`). So a record a user forges points root at nothing but a trash of
//! that user's own. Another user who squats the name makes the writer take
//! `.reclaim-trashes-<uid>.<hex>` instead; decoys cost root one listing of the directory and a
//! bounded read each, at most `MAX_FILES` files and `MAX_RECORDS` records per user (the rest
//! counted). Never removes anything.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use rustix::fs::{statx, AtFlags, FileType, StatxFlags};
use rustix::io::Errno;

use super::registry::{self, Registered};
use super::safefile::{self, Bad, Expect};
use super::{Trash, Unusable};
use crate::sys::dirfd::{self, Lineage};
use crate::sys::error::errno_text;
use crate::sys::quote::quote;

/// Prefix of an index file's name: `.reclaim-trashes-<uid>[.<hex>]`.
pub const PREFIX: &str = ".reclaim-trashes-";
/// The most one index file may hold.
const MAX_BYTES: u64 = 256 << 10;
/// A user's index files considered (the plain name first; more are counted).
pub const MAX_FILES: usize = 4;
/// A user's records considered (more are counted and said, as skipped trashes).
pub const MAX_RECORDS: usize = 64;
/// An index file untouched this long is written again when its trash is used (systemd's
/// tmpfiles ages files in /var/tmp out after 30 days).
const REFRESH_SECS: i64 = 86_400;

/// The index's directory.
pub fn dir_path() -> PathBuf {
    let under = std::env::var_os(super::UNDER_ENV).filter(|v| !v.is_empty());
    match under {
        Some(u) => PathBuf::from(u).join("var/tmp"),
        None => PathBuf::from("/var/tmp"),
    }
}

/// The uid an index file's name stands for.
fn name_uid(name: &[u8]) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX.as_bytes())?;
    super::name_uid(&[super::PREFIX.as_bytes(), rest].concat())
}

/// Why a trash cannot be recorded in the index, or the index not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("cannot open {}: {}", quote(.0), errno_text(*.1))]
    Open(PathBuf, Errno),
    /// The index's directory, open, cannot be examined.
    #[error("{}", errno_text(*.0))]
    Stat(Errno),
    /// The index's directory belongs to this uid, not root.
    #[error("{} is owned by uid {}, not root", quote(.0), .1)]
    NotRoots(PathBuf, u32),
    #[error("{} is writable by others without the sticky bit", quote(.0))]
    NotSticky(PathBuf),
    #[error("cannot read its identity: {}", errno_text(*.0))]
    Identity(Errno),
    /// The index file (its path) could not be written.
    #[error("cannot write {}: {}", quote(.0), errno_text(*.1))]
    Write(PathBuf, Errno),
}

/// Why a name in the index's directory is not an index file of one's own (`own`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum NotOwn {
    /// Another type of file (its name in messages).
    #[error("is a {0}")]
    Kind(&'static str),
    /// Owned by `found`, not `uid`.
    #[error("is owned by uid {found}, not {uid}")]
    Owner { found: u32, uid: u32 },
    #[error("has other names (hard links)")]
    Links,
    #[error("cannot be examined ({})", errno_text(*.0))]
    Os(Errno),
}

/// The index's directory, open, if it is one all users may add a file to and none may take
/// another's away: root's, and sticky or writable by root alone. `Ok(None)` where there is
/// none (a container without `/var/tmp`); `Err` says what is wrong with it.
fn open_dir() -> Result<Option<OwnedFd>, IndexError> {
    const STICKY: u32 = 0o1000;
    let path = dir_path();
    let fd = match dirfd::open_dir_path(&path) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(IndexError::Open(path, e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(IndexError::Stat)?;
    if st.st_uid != 0 {
        return Err(IndexError::NotRoots(path, st.st_uid));
    }
    if st.st_mode & 0o022 != 0 && st.st_mode & STICKY == 0 {
        return Err(IndexError::NotSticky(path));
    }
    Ok(Some(fd))
}

/// Whether `name` in `dir` is an index file of `uid` that may be read and replaced: a regular
/// file of `uid` with one link (`Ok(None)` if there is nothing of that name), with its mtime.
fn own(dir: &OwnedFd, name: &CStr, uid: u32) -> Result<Option<i64>, NotOwn> {
    let mask = StatxFlags::TYPE | StatxFlags::UID | StatxFlags::NLINK | StatxFlags::MTIME;
    match statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, mask) {
        Ok(s) => {
            let ft = FileType::from_raw_mode(u32::from(s.stx_mode));
            if ft != FileType::RegularFile {
                Err(NotOwn::Kind(safefile::type_name(ft)))
            } else if s.stx_uid != uid {
                Err(NotOwn::Owner {
                    found: s.stx_uid,
                    uid,
                })
            } else if s.stx_nlink != 1 {
                Err(NotOwn::Links)
            } else {
                Ok(Some(s.stx_mtime.tv_sec))
            }
        }
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(NotOwn::Os(e)),
    }
}

/// The names in `dir` of index files (`uid`'s only, unless `uid` is root), with their uid.
fn listed(dir: &OwnedFd, uid: u32) -> Vec<(u32, CString)> {
    let mut names = Vec::new();
    let Ok(list) = super::reopen(dir) else {
        return names;
    };
    let mut buf = dirfd::DirBuf::new(64 << 10);
    let _ = dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
        if let Some(u) = name_uid(name.to_bytes()) {
            if uid == 0 || u == uid {
                names.push((u, name.to_owned()));
            }
        }
    });
    // Each user's plain name first, then the others in name order.
    names.sort_by(|(a, x), (b, y)| (a, x.to_bytes().len(), x).cmp(&(b, y.to_bytes().len(), y)));
    names
}

/// Records `trash` (of this process's uid, below a mount top) in the index. `Ok(false)` if
/// the machine has no index directory; `Err` says why it could not be recorded.
pub fn publish(trash: &Trash) -> Result<bool, IndexError> {
    let uid = trash.uid;
    let Some(dir) = open_dir()? else {
        return Ok(false);
    };
    let lineage = Lineage::of(&trash.dir).map_err(IndexError::Identity)?;
    let plain = CString::new(format!("{PREFIX}{uid}")).expect("digits");
    // The plain name, else the first alternate of this user's own, else a fresh one.
    let mut chosen = None;
    match own(&dir, &plain, uid) {
        Ok(m) => chosen = Some((plain, m)),
        Err(_) => {
            for (_, name) in listed(&dir, uid) {
                if let Ok(Some(m)) = own(&dir, &name, uid) {
                    chosen = Some((name, Some(m)));
                    break;
                }
            }
        }
    }
    let (name, mtime) = chosen.unwrap_or_else(|| {
        let fresh = format!("{PREFIX}{uid}.{}", safefile::random_hex(6));
        (CString::new(fresh).expect("hex"), None)
    });
    let known = match mtime {
        Some(_) => safefile::read_checked(&dir, &name, &expect(&[uid]))
            .map(|t| registry::parse(&t))
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let stale = mtime.is_some_and(|m| crate::sys::format::now_unix() as i64 - m > REFRESH_SECS);
    let records = match registry::with(known.clone(), trash, lineage) {
        Some(r) => r,
        None if stale => known,
        None => return Ok(true),
    };
    safefile::replace_mode(&dir, &name, &registry::render(&records), 0o600)
        .map_err(|e| IndexError::Write(dir_path().join(OsStr::from_bytes(name.to_bytes())), e))?;
    Ok(true)
}

fn expect(owners: &[u32]) -> Expect<'_> {
    Expect {
        owners,
        max: MAX_BYTES,
        one_link: true,
    }
}

/// What the index says: each record with the uid whose file holds it, the files and records
/// that cannot be used (with why), and per user how many records were beyond `MAX_RECORDS`.
#[derive(Debug, Default)]
pub struct Read {
    pub records: Vec<(u32, Registered)>,
    pub unusable: Vec<Unusable>,
    pub skipped: Vec<(u32, u64)>,
}

/// The records of the index this process may use: every user's for root, its own otherwise.
pub fn read(uid: u32) -> Read {
    let mut out = Read::default();
    let dir = match open_dir() {
        Ok(Some(d)) => d,
        Ok(None) => return out,
        Err(why) => {
            out.unusable.push(Unusable {
                path: dir_path().to_string_lossy().into_owned(),
                reason: format!("{why}; the trashes below mount tops were not looked for"),
            });
            return out;
        }
    };
    let shown = |name: &CStr| {
        dir_path()
            .join(OsStr::from_bytes(name.to_bytes()))
            .to_string_lossy()
            .into_owned()
    };
    let mut files: Vec<(u32, usize)> = Vec::new();
    let mut records: Vec<(u32, usize)> = Vec::new();
    for (u, name) in listed(&dir, uid) {
        let n = count(&mut files, u);
        if n > MAX_FILES {
            continue;
        }
        let text = match safefile::read_checked(&dir, &name, &expect(&[u])) {
            Ok(t) => t,
            Err(Bad::Missing) => continue,
            Err(b) => {
                out.unusable.push(Unusable {
                    path: shown(&name),
                    reason: format!("{b}; not read"),
                });
                continue;
            }
        };
        for r in registry::parse(&text) {
            let owner = r
                .path
                .file_name()
                .and_then(|n| super::name_uid(n.as_bytes()));
            if owner != Some(u) || r.lineage.is_none() || !r.path.is_absolute() {
                out.unusable.push(Unusable {
                    path: shown(&name),
                    reason: format!(
                        "names {}, not a trash of uid {u}; passed over",
                        crate::sys::quote::quote(&r.path)
                    ),
                });
                continue;
            }
            if count(&mut records, u) > MAX_RECORDS {
                match out.skipped.iter_mut().find(|(s, _)| *s == u) {
                    Some((_, n)) => *n += 1,
                    None => out.skipped.push((u, 1)),
                }
                continue;
            }
            out.records.push((u, r));
        }
    }
    out
}

/// Adds one to `u`'s count in `counts`; the new count.
fn count(counts: &mut Vec<(u32, usize)>, u: u32) -> usize {
    match counts.iter_mut().find(|(c, _)| *c == u) {
        Some((_, n)) => {
            *n += 1;
            *n
        }
        None => {
            counts.push((u, 1));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_names_say_their_uid() {
        assert_eq!(name_uid(b".reclaim-trashes-4301"), Some(4301));
        assert_eq!(name_uid(b".reclaim-trashes-4301.a1b2c3"), Some(4301));
        assert_eq!(name_uid(b".reclaim-trashes-"), None);
        assert_eq!(name_uid(b".reclaim-trashes-01"), None);
        assert_eq!(name_uid(b".reclaim-4301"), None);
        assert_eq!(name_uid(b"..reclaim-trashes-4301.1f.tmp"), None);
    }
}
