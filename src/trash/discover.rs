//! Finding every trash this user may see (root: every user's), bounded and holding nothing
//! open: each mount top is listed once and each name that looks like a trash is examined with
//! `statx` (no fd); what is found is a `Found` (path, owner, identity), opened later by whoever
//! works on it, one at a time, and checked to be the same directory then. A user's trashes on
//! one file system beyond `MAX_PER_USER` are not considered (the plain name first, then the
//! others in name order: every trash that user's `reclaim rm` would use is among them), and
//! said, once per user; names that are not usable trashes (squatted, symlinks, open modes) are
//! counted, the first few kept with why. So decoys by the thousand cost root one listing and
//! a `statx` each, never an fd, a thread or a child each, and hide no other user's trash. A
//! name that cannot be examined is reported; it never hides the others. Never opens a file.

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{statx, AtFlags, FileType, StatxFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::{legacy_outer, name_uid, registry, reopen, Trash, TrashError, Unusable};
use super::{LEGACY_DIR, PREFIX};
use crate::dirfd::{self, Ident};
use crate::mounts::{self, Mount};

/// A user's trashes considered on one file system (more are skipped, and said).
pub const MAX_PER_USER: usize = 8;

/// Names that are not usable trashes listed (with why) beyond their count.
pub const MAX_LISTED: usize = 5;

/// Limits `discover` to file systems mounted at or below this directory (a container's view, a
/// test's scratch directory).
pub const UNDER_ENV: &str = "RECLAIM_UNDER";

/// How long `discover` waits for a network or FUSE file system to answer (a dead NFS server,
/// a stopped FUSE daemon): it is then skipped and named.
pub const PROBE_DEADLINE: std::time::Duration = std::time::Duration::from_millis(1500);

/// A trash as discovery found it, not open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    /// The mount point of its file system.
    pub mount: PathBuf,
    /// Its owner, whose entries it holds.
    pub uid: u32,
    pub ident: Ident,
    pub mnt_id: u64,
    /// Its birth time, where the file system records one.
    pub btime: Option<(i64, u32)>,
    /// Its inode and times when found (entries added or removed change them).
    pub signature: (u64, i64, i64, i64, i64),
}

/// A user with trashes on a file system beyond `MAX_PER_USER`, and how many were skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub uid: u32,
    pub trashes: u64,
}

/// What `discover` found: the trashes to consider, the first names that look like a trash but
/// are not usable (another owner, a symlink, open permissions, an error) and how many more,
/// the trashes skipped per user, and file systems that did not answer.
#[derive(Debug, Default)]
pub struct Discovery {
    pub trashes: Vec<Found>,
    pub unusable: Vec<Unusable>,
    pub unusable_more: u64,
    pub skipped: Vec<Skipped>,
    pub unreachable: Vec<Unusable>,
}

const MASK: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::MODE)
    .union(StatxFlags::UID)
    .union(StatxFlags::INO)
    .union(StatxFlags::MNT_ID)
    .union(StatxFlags::BTIME)
    .union(StatxFlags::MTIME)
    .union(StatxFlags::CTIME);

impl Found {
    /// What discovery would record of the open trash `t`.
    pub fn of(t: &Trash) -> Result<Found, Errno> {
        let s = statx(&t.dir, c"", AtFlags::EMPTY_PATH, MASK)?;
        Ok(Found::from_statx(
            t.path.clone(),
            t.mount.clone(),
            t.uid,
            &s,
        ))
    }

    fn from_statx(path: PathBuf, mount: PathBuf, uid: u32, s: &rustix::fs::Statx) -> Found {
        let btime = (s.stx_mask & StatxFlags::BTIME.bits() != 0
            && (s.stx_btime.tv_sec != 0 || s.stx_btime.tv_nsec != 0))
            .then_some((s.stx_btime.tv_sec, s.stx_btime.tv_nsec));
        Found {
            path,
            mount,
            uid,
            ident: Ident {
                dev: rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor),
                ino: s.stx_ino,
            },
            mnt_id: s.stx_mnt_id,
            btime,
            signature: (
                s.stx_ino,
                s.stx_mtime.tv_sec,
                i64::from(s.stx_mtime.tv_nsec),
                s.stx_ctime.tv_sec,
                i64::from(s.stx_ctime.tv_nsec),
            ),
        }
    }

    /// Opens it (by its path, never through a symlink, as `Trash::open_path` does) and checks
    /// it is still the directory that was found: same device, inode and birth time.
    pub fn open(&self) -> Result<Trash, TrashError> {
        let t = Trash::open_path(&self.path)?;
        let now = Found::of(&t)?;
        if t.uid != self.uid || now.ident != self.ident || now.btime != self.btime {
            return Err(TrashError::Unsafe {
                path: self.path.clone(),
                why: "was replaced by another directory since it was found".into(),
            });
        }
        Ok(t)
    }

    /// Whether it is still where it was found: the same directory (device, inode, birth time)
    /// at its path, on a mount that is still there. Examined by path, nothing opened.
    pub fn still_there(&self) -> Result<(), String> {
        let Some(p) = cpath(&self.path) else {
            return Err("its path holds a NUL byte".into());
        };
        match statx(rustix::fs::CWD, &p, AtFlags::SYMLINK_NOFOLLOW, MASK) {
            Ok(s) => {
                let now = Found::from_statx(self.path.clone(), self.mount.clone(), self.uid, &s);
                if now.ident != self.ident || now.btime != self.btime {
                    Err("another directory took its name".into())
                } else if now.mnt_id != self.mnt_id {
                    Err("its file system was unmounted".into())
                } else {
                    Ok(())
                }
            }
            Err(Errno::NOENT | Errno::NOTDIR) => {
                if mounts::by_id(self.mnt_id).is_none() {
                    Err("its file system was unmounted".into())
                } else {
                    Err("it was removed".into())
                }
            }
            Err(e) => Err(format!(
                "it cannot be examined ({})",
                crate::error::errno_text(e)
            )),
        }
    }

    /// The pid of the process holding its lock (a reaper at work), from `/proc/locks`,
    /// without opening anything in it.
    pub fn holder(&self) -> Option<u32> {
        let lock = dirfd::lstat_at(rustix::fs::CWD, &cpath(&self.path.join("lock"))?).ok()?;
        crate::locks::holder(crate::locks::Kind::Flock, lock.ident)
    }
}

fn cpath(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_bytes()).ok()
}

/// Names passed over (not usable as a trash): the first `MAX_LISTED` with why, and how many
/// more.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Passed {
    pub first: Vec<Unusable>,
    pub more: u64,
}

impl Passed {
    pub fn push(&mut self, u: Unusable) {
        if self.first.len() < MAX_LISTED {
            self.first.push(u);
        } else {
            self.more += 1;
        }
    }

    /// Adds what `other` passed over.
    pub fn absorb(&mut self, other: Passed) {
        for u in other.first {
            self.push(u);
        }
        self.more += other.more;
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_empty() && self.more == 0
    }
}

/// Why `name` in `dir` is not a usable trash of `uid` on mount `mnt_id`, from a `statx` (nothing
/// opened); `None` if it may be one (`Trash::open_at` then checks the open directory).
pub fn examine(dir: &OwnedFd, name: &std::ffi::CStr, uid: u32, mnt_id: u64) -> Option<String> {
    match statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, MASK) {
        Ok(s) => unusable_why(&s, uid, mnt_id),
        Err(Errno::NOENT) => Some("is gone".into()),
        Err(e) => Some(format!(
            "cannot be examined ({})",
            crate::error::errno_text(e)
        )),
    }
}

impl Discovery {
    /// Notes a name that is not a usable trash (the first `MAX_LISTED` with why, the rest
    /// counted).
    pub fn passed_over(&mut self, u: Unusable) {
        if self.unusable.len() < MAX_LISTED {
            self.unusable.push(u);
        } else {
            self.unusable_more += 1;
        }
    }

    /// Adds another discovery's findings (a file system looked at in a thread).
    fn merge(&mut self, other: Discovery) {
        for t in other.trashes {
            self.add(t);
        }
        for u in other.unusable {
            self.passed_over(u);
        }
        self.unusable_more += other.unusable_more;
        for s in other.skipped {
            self.skip(s.uid, s.trashes);
        }
        self.unreachable.extend(other.unreachable);
    }

    fn add(&mut self, t: Found) {
        if !self.trashes.iter().any(|f| f.ident == t.ident) {
            self.trashes.push(t);
        }
    }

    fn skip(&mut self, uid: u32, n: u64) {
        match self.skipped.iter_mut().find(|s| s.uid == uid) {
            Some(s) => s.trashes += n,
            None => self.skipped.push(Skipped { uid, trashes: n }),
        }
    }

    fn unusable_err(&mut self, path: PathBuf, e: TrashError) {
        let reason = match e {
            TrashError::Unsafe { why, .. } => why,
            e => format!("cannot be used ({e})"),
        };
        self.passed_over(Unusable {
            path: path.to_string_lossy().into_owned(),
            reason,
        });
    }
}

/// Every trash this user may see: at the top of each file system (all users' for root, one's
/// own otherwise; only those mounted under `$RECLAIM_UNDER` if set), in either layout, and
/// the ones registered in the user's state directory. Network and FUSE file systems are looked
/// at in threads with a deadline, so an unanswering one delays this by at most
/// `PROBE_DEADLINE` and is named in `unreachable`. Root only lists directories and examines
/// names here; it opens no trash and reads no file of a user's.
pub fn discover(uid: u32) -> Discovery {
    let under = std::env::var_os(UNDER_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let inside = |p: &Path| under.as_ref().map_or(true, |u| p.starts_with(u));
    let mut found = Discovery::default();
    let mounts: Vec<Mount> = mounts::all()
        .into_iter()
        .filter(|m| m.may_hold_trash() && inside(&m.point))
        .collect();
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Discovery)>();
    let mut waiting: Vec<usize> = Vec::new();
    for (i, m) in mounts.iter().enumerate() {
        if m.is_local() {
            at_mount(m, uid, &mut found);
            continue;
        }
        // Might never answer: in a thread of its own, abandoned after the deadline (a blocked
        // thread ends with the process).
        let (m2, tx) = (m.clone(), tx.clone());
        let spawned = std::thread::Builder::new()
            .name("reclaim-probe".into())
            .spawn(move || {
                let mut d = Discovery::default();
                at_mount(&m2, uid, &mut d);
                let _ = tx.send((i, d));
            });
        match spawned {
            Ok(_) => waiting.push(i),
            Err(e) => found.unreachable.push(Unusable {
                path: m.point.to_string_lossy().into_owned(),
                reason: format!("was not looked at (no thread to look at it with: {e})"),
            }),
        }
    }
    drop(tx);
    let deadline = std::time::Instant::now() + PROBE_DEADLINE;
    while !waiting.is_empty() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok((i, d)) => {
                waiting.retain(|w| *w != i);
                found.merge(d);
            }
            Err(_) => break,
        }
    }
    for i in waiting {
        found.unreachable.push(Unusable {
            path: mounts[i].point.to_string_lossy().into_owned(),
            reason: format!(
                "did not answer within {:.1} s ({} file system: a dead server or a stopped \
                 daemon?); its trashes were not looked at",
                PROBE_DEADLINE.as_secs_f64(),
                mounts[i].fstype
            ),
        });
    }
    for r in registry::registered()
        .into_iter()
        .filter(|r| inside(&r.path))
    {
        // One at a time: opened, checked against what was registered, closed.
        let checked = Trash::open_path(&r.path)
            .and_then(|t| registry::check(t, &r))
            .and_then(|t| Found::of(&t).map_err(TrashError::from));
        match checked {
            Ok(t) if t.uid == uid || uid == 0 => found.add(t),
            Ok(_) => {}
            Err(e) => found.unusable_err(r.path.clone(), e),
        }
    }
    found
}

/// The trashes (this user's, or everyone's for root) at the top of mount `m`, into `out`.
fn at_mount(m: &Mount, uid: u32, out: &mut Discovery) {
    let top_fd = match dirfd::open_dir_path(&m.point) {
        Ok(fd) => fd,
        Err(e) => {
            return out.unreachable.push(Unusable {
                path: m.point.to_string_lossy().into_owned(),
                reason: format!(
                    "cannot be listed ({}); its trashes were not looked at",
                    crate::error::errno_text(e)
                ),
            })
        }
    };
    // The top must be the mount's own root (an overmounted or moved top is skipped).
    if dirfd::fstat(&top_fd).map(|f| f.mnt_id) != Ok(m.id) {
        return;
    }
    // Every name that looks like a trash of a user this process looks for, examined.
    let mut by_user: HashMap<u32, Vec<(CString, rustix::fs::Statx)>> = HashMap::new();
    let mut names = Vec::new();
    let mut legacy = false;
    if let Ok(list) = reopen(&top_fd) {
        let mut buf = dirfd::DirBuf::new(64 << 10);
        let listed = dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
            let b = name.to_bytes();
            if b == LEGACY_DIR.as_bytes() {
                legacy = true;
            } else if let Some(u) = name_uid(b) {
                if uid == 0 || u == uid {
                    names.push((name.to_owned(), u));
                }
            }
        });
        if let Err(e) = listed {
            out.unreachable.push(Unusable {
                path: m.point.to_string_lossy().into_owned(),
                reason: format!(
                    "could not be listed to the end ({}); some trashes may not have been \
                     looked at",
                    crate::error::errno_text(e)
                ),
            });
        }
    }
    for (name, u) in names {
        let path = m.point.join(OsStr::from_bytes(name.to_bytes()));
        match statx(&top_fd, &name, AtFlags::SYMLINK_NOFOLLOW, MASK) {
            Ok(s) => match unusable_why(&s, u, m.id) {
                None => by_user.entry(u).or_default().push((name, s)),
                Some(why) => out.passed_over(Unusable {
                    path: path.to_string_lossy().into_owned(),
                    reason: why,
                }),
            },
            // Gone between the listing and now: nothing to say.
            Err(Errno::NOENT) => {}
            Err(e) => out.passed_over(Unusable {
                path: path.to_string_lossy().into_owned(),
                reason: format!("cannot be examined ({})", crate::error::errno_text(e)),
            }),
        }
    }
    let mut legacy_found: Vec<(u32, PathBuf, rustix::fs::Statx)> = Vec::new();
    if legacy {
        match legacy_outer(&top_fd, &m.point) {
            Ok(outer) => legacy_at(
                &outer,
                &m.point.join(LEGACY_DIR),
                m,
                uid,
                out,
                &mut legacy_found,
            ),
            Err(e) => out.unusable_err(m.point.join(LEGACY_DIR), e),
        }
    }
    let mut users: Vec<u32> = by_user.keys().copied().collect();
    users.extend(legacy_found.iter().map(|(u, _, _)| *u));
    users.sort_unstable();
    users.dedup();
    for u in users {
        let plain = format!("{PREFIX}{u}");
        let mut mine = by_user.remove(&u).unwrap_or_default();
        // The plain name first, then the others in name order (as `find_or_make` tries them).
        mine.sort_by(|(a, _), (b, _)| {
            (a.to_bytes() != plain.as_bytes(), a.as_bytes())
                .cmp(&(b.to_bytes() != plain.as_bytes(), b.as_bytes()))
        });
        let mut all: Vec<(PathBuf, rustix::fs::Statx)> = mine
            .into_iter()
            .map(|(n, s)| (m.point.join(OsStr::from_bytes(n.to_bytes())), s))
            .collect();
        all.extend(
            legacy_found
                .iter()
                .filter(|(lu, _, _)| *lu == u)
                .map(|(_, p, s)| (p.clone(), *s)),
        );
        if all.len() > MAX_PER_USER {
            out.skip(u, (all.len() - MAX_PER_USER) as u64);
        }
        for (path, s) in all.into_iter().take(MAX_PER_USER) {
            out.add(Found::from_statx(path, m.point.clone(), u, &s));
        }
    }
}

/// The first layout's trashes (`<top>/.reclaim/<uid>`) this process looks for.
fn legacy_at(
    outer: &OwnedFd,
    outer_path: &Path,
    m: &Mount,
    uid: u32,
    out: &mut Discovery,
    found: &mut Vec<(u32, PathBuf, rustix::fs::Statx)>,
) {
    let mut uids: Vec<u32> = Vec::new();
    if let Ok(list) = reopen(outer) {
        let mut buf = dirfd::DirBuf::new(64 << 10);
        let _ = dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
            if let Some(u) = name.to_str().ok().and_then(|n| n.parse::<u32>().ok()) {
                if (uid == 0 || u == uid) && name.to_bytes() == u.to_string().as_bytes() {
                    uids.push(u);
                }
            }
        });
    }
    uids.sort_unstable();
    for u in uids {
        let name = CString::new(u.to_string()).expect("digits");
        let path = outer_path.join(u.to_string());
        match statx(outer, &name, AtFlags::SYMLINK_NOFOLLOW, MASK) {
            Ok(s) => match unusable_why(&s, u, m.id) {
                None => found.push((u, path, s)),
                Some(why) => out.passed_over(Unusable {
                    path: path.to_string_lossy().into_owned(),
                    reason: why,
                }),
            },
            Err(Errno::NOENT) => {}
            Err(e) => out.passed_over(Unusable {
                path: path.to_string_lossy().into_owned(),
                reason: format!("cannot be examined ({})", crate::error::errno_text(e)),
            }),
        }
    }
}

/// Why what `s` describes is not a usable trash of `uid` on mount `mnt_id` (as
/// `Trash::open_at` decides, from a `statx`).
fn unusable_why(s: &rustix::fs::Statx, uid: u32, mnt_id: u64) -> Option<String> {
    let t = FileType::from_raw_mode(s.stx_mode.into());
    if t == FileType::Symlink {
        return Some("is a symbolic link; not using it".into());
    }
    if t != FileType::Directory {
        return Some("is not a directory; not using it".into());
    }
    if s.stx_uid != uid {
        return Some(format!("is owned by uid {}, not {uid}", s.stx_uid));
    }
    let mode = u32::from(s.stx_mode);
    if mode & 0o077 != 0 {
        return Some(format!(
            "has mode {:04o}; a trash must be 0700",
            mode & 0o7777
        ));
    }
    if s.stx_mnt_id != mnt_id {
        return Some("is on another mount".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_passed_over_are_counted_beyond_the_first_few() {
        let mut out = Discovery::default();
        for i in 0..(MAX_LISTED + 3) {
            out.passed_over(Unusable {
                path: format!("p{i}"),
                reason: "r".into(),
            });
        }
        assert_eq!(out.unusable.len(), MAX_LISTED);
        assert_eq!(out.unusable_more, 3);
        out.skip(7, 2);
        out.skip(7, 3);
        out.skip(8, 1);
        assert_eq!(
            out.skipped,
            vec![
                Skipped { uid: 7, trashes: 5 },
                Skipped { uid: 8, trashes: 1 }
            ]
        );
    }

    #[test]
    fn only_a_0700_directory_of_its_uid_is_a_trash() {
        let d = tempfile::tempdir().unwrap();
        let me = rustix::process::geteuid().as_raw();
        let dir = dirfd::open_dir_path(d.path()).unwrap();
        let mnt = dirfd::fstat(&dir).unwrap().mnt_id;
        let mk = |name: &str, mode: u32| {
            let p = d.path().join(name);
            std::fs::create_dir(&p).unwrap();
            std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode))
                .unwrap();
        };
        mk("good", 0o700);
        mk("open", 0o755);
        std::os::unix::fs::symlink("good", d.path().join("link")).unwrap();
        std::fs::write(d.path().join("file"), "").unwrap();
        let why = |name: &std::ffi::CStr, uid: u32| {
            let s = statx(&dir, name, AtFlags::SYMLINK_NOFOLLOW, MASK).unwrap();
            unusable_why(&s, uid, mnt)
        };
        assert_eq!(why(c"good", me), None);
        assert!(why(c"good", me + 1).is_some_and(|w| w.contains("owned by")));
        assert!(why(c"open", me).is_some_and(|w| w.contains("0755")));
        assert!(why(c"link", me).is_some_and(|w| w.contains("symbolic link")));
        assert!(why(c"file", me).is_some_and(|w| w.contains("not a directory")));
        let s = statx(&dir, c"good", AtFlags::SYMLINK_NOFOLLOW, MASK).unwrap();
        assert_eq!(
            unusable_why(&s, me, mnt + 1).as_deref(),
            Some("is on another mount")
        );
    }
}
