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

use super::{index, legacy_outer, name_uid, registry, reopen, Gone, Trash, TrashError, Unusable};
use super::{LEGACY_DIR, PREFIX};
use crate::sys::dirfd::{self, Ident};
use crate::sys::mounts::{self, Mount};

/// A user's trashes considered on one file system (more are skipped, and said).
pub const MAX_PER_USER: usize = 8;

/// Names that are not usable trashes listed (with why) beyond their count.
pub const MAX_LISTED: usize = 5;

pub use super::UNDER_ENV;

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
    /// The trashes in `trashes`, by identity (one found twice, by a mount and the registry, is
    /// one).
    seen: std::collections::HashSet<Ident>,
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
    pub fn still_there(&self) -> Result<(), Gone> {
        let Some(p) = cpath(&self.path) else {
            return Err(Gone::NulInPath);
        };
        match statx(rustix::fs::CWD, &p, AtFlags::SYMLINK_NOFOLLOW, MASK) {
            Ok(s) => {
                let now = Found::from_statx(self.path.clone(), self.mount.clone(), self.uid, &s);
                if now.ident != self.ident || now.btime != self.btime {
                    Err(Gone::Replaced)
                } else if now.mnt_id != self.mnt_id {
                    Err(Gone::Unmounted)
                } else {
                    Ok(())
                }
            }
            Err(Errno::NOENT | Errno::NOTDIR) => {
                if mounts::by_id(self.mnt_id).is_none() {
                    Err(Gone::Unmounted)
                } else {
                    Err(Gone::Removed)
                }
            }
            Err(e) => Err(Gone::Unknown(e)),
        }
    }

    /// Whether it holds nothing at all but, maybe, a lock nobody holds: no entry, no log, no
    /// state (listed only: root may list another user's trash, never read in it). Such a trash
    /// needs no pass and has nothing to show, so root starts no child for it (thousands of
    /// empty decoy trashes cost a listing each). `false` if it cannot be listed.
    pub fn is_idle_and_empty(&self) -> bool {
        let Ok(t) = self.open() else {
            return false;
        };
        let Ok(list) = reopen(&t.dir) else {
            return false;
        };
        let mut other = false;
        let mut buf = dirfd::DirBuf::new(4 << 10);
        let listed = dirfd::for_each_entry(&list, &mut buf, |n, _, _| other |= n != super::LOCK);
        listed.is_ok() && !other && self.holder().is_none()
    }

    /// The pid of the process holding its lock (a reaper at work), from `/proc/locks`,
    /// without opening anything in it.
    pub fn holder(&self) -> Option<u32> {
        let lock = dirfd::lstat_at(rustix::fs::CWD, &cpath(&self.path.join("lock"))?).ok()?;
        crate::sys::locks::holder(crate::sys::locks::Kind::Flock, lock.ident)
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
}

/// Why `name` in `dir` is not a usable trash of `uid` on mount `mnt_id`, from a `statx` (nothing
/// opened); `None` if it may be one (`Trash::open_at` then checks the open directory).
pub fn examine(dir: &OwnedFd, name: &std::ffi::CStr, uid: u32, mnt_id: u64) -> Option<String> {
    match statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, MASK) {
        Ok(s) => unusable_why(&s, uid, mnt_id),
        Err(Errno::NOENT) => Some("is gone".into()),
        Err(e) => Some(format!(
            "cannot be examined ({})",
            crate::sys::error::errno_text(e)
        )),
    }
}

impl Discovery {
    /// A discovery of just `t` (a trash named on the command line).
    pub fn one(t: Found) -> Discovery {
        let mut d = Discovery::default();
        d.add(t);
        d
    }

    /// Notes a name that is not a usable trash (the first `MAX_LISTED` with why, the rest
    /// counted).
    pub fn passed_over(&mut self, u: Unusable) {
        self.passed_over_with(|| u);
    }

    /// `passed_over`, the name and why made only if it is to be listed.
    fn passed_over_with(&mut self, u: impl FnOnce() -> Unusable) {
        if self.unusable.len() < MAX_LISTED {
            self.unusable.push(u());
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
        if self.seen.insert(t.ident) {
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
    discover_with(uid, None)
}

/// `discover`, for a process that looks again and again (`reap --watch`): `memo` keeps, from
/// one look to the next, which names at the tops are directories of another user than their
/// name says (a verdict only root could change, by `chown`), so thousands of names squatting
/// a user's trash cost one `statx` each once, not at every look. A verdict is kept for the
/// same name and inode only, never for a plain `.reclaim-<uid>`, and for `MEMO_LIFE` at most.
pub fn discover_with(uid: u32, memo: Option<&mut Memo>) -> Discovery {
    discover_in(uid, memo, None)
}

/// `discover`, on the one file system of mount `mnt_id` (where a path was: its trashes only,
/// the mount table read only as far as that mount).
pub fn discover_on(uid: u32, mnt_id: u64) -> Discovery {
    discover_in(uid, None, Some(mnt_id))
}

fn discover_in(uid: u32, mut memo: Option<&mut Memo>, only: Option<u64>) -> Discovery {
    if let Some(m) = memo.as_deref_mut() {
        m.start_look();
    }
    let under = std::env::var_os(UNDER_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let inside = |p: &Path| under.as_ref().is_none_or(|u| p.starts_with(u));
    let mut found = Discovery::default();
    // One file system (`discover_on`): only its line of the table is read; a record of a
    // trash below another mount is not taken for one of this mount's (it is opened beneath
    // this mount's top, with no other mount on the way).
    let mounts: Vec<Mount> = match only {
        Some(id) => mounts::by_id(id).into_iter().collect(),
        None => mounts::all(),
    }
    .into_iter()
    .filter(|m| m.may_hold_trash() && inside(&m.point))
    .collect();
    let mut records = recorded(uid, &mounts, &inside, &mut found);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Discovery)>();
    let mut waiting: Vec<usize> = Vec::new();
    for (i, m) in mounts.iter().enumerate() {
        let below = std::mem::take(&mut records[i]);
        if m.is_local() {
            at_mount(m, uid, &mut found, memo.as_deref_mut());
            recorded_at(m, &below, &mut found);
            continue;
        }
        // Might never answer: in a thread of its own, abandoned after the deadline (a blocked
        // thread ends with the process).
        let (m2, tx) = (m.clone(), tx.clone());
        let spawned = std::thread::Builder::new()
            .name("reclaim-probe".into())
            .spawn(move || {
                let mut d = Discovery::default();
                at_mount(&m2, uid, &mut d, None);
                recorded_at(&m2, &below, &mut d);
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
    found
}

/// A trash recorded below a mount top (in this user's registry or the machine's index), the
/// uid whose record names it, and whether it may simply be gone (an index record: nothing to
/// say then).
#[derive(Clone)]
struct Recorded {
    owner: u32,
    r: registry::Registered,
    quiet_if_gone: bool,
}

/// The trashes recorded below the tops that this process may see: its own registry's, and
/// the index's (every user's for root), each with the mount its path is on (an index into
/// `mounts`: the longest mount point its path starts with). Unusable index files and records
/// beyond the limits are said in `out`.
fn recorded(
    uid: u32,
    mounts: &[Mount],
    inside: &dyn Fn(&Path) -> bool,
    out: &mut Discovery,
) -> Vec<Vec<Recorded>> {
    let mut by_mount: Vec<Vec<Recorded>> = vec![Vec::new(); mounts.len()];
    let own = registry::registered().into_iter().map(|r| Recorded {
        owner: uid,
        r,
        quiet_if_gone: false,
    });
    let read = index::read(uid);
    for u in read.unusable {
        out.passed_over(u);
    }
    for (u, n) in read.skipped {
        out.skip(u, n);
    }
    let indexed = read.records.into_iter().map(|(owner, r)| Recorded {
        owner,
        r,
        quiet_if_gone: true,
    });
    for rec in own.chain(indexed).filter(|rec| inside(&rec.r.path)) {
        let on = mounts
            .iter()
            .enumerate()
            .filter(|(_, m)| rec.r.path.starts_with(&m.point))
            .max_by_key(|(_, m)| m.point.as_os_str().len());
        if let Some((i, _)) = on {
            by_mount[i].push(rec);
        }
    }
    by_mount
}

/// Adds to `out` the trashes of `records` on mount `m` (see `registry::open_recorded`): one at
/// a time, opened, checked, closed.
fn recorded_at(m: &Mount, records: &[Recorded], out: &mut Discovery) {
    if records.is_empty() {
        return;
    }
    let Ok(top_fd) = dirfd::open_dir_path(&m.point) else {
        return;
    };
    if dirfd::fstat(&top_fd).map(|f| f.mnt_id) != Ok(m.id) {
        return;
    }
    for rec in records {
        let found = registry::open_recorded(m, &top_fd, &rec.r, rec.owner)
            .and_then(|t| Found::of(&t).map_err(TrashError::from));
        match found {
            Ok(t) => out.add(t),
            Err(TrashError::Os(Errno::NOENT)) if rec.quiet_if_gone => {}
            Err(e) => out.unusable_err(rec.r.path.clone(), e),
        }
    }
}

/// What the listing of a mount top found.
struct Listed {
    names: Names,
    /// Each user's names (indices into `names`).
    by_user: HashMap<u32, Vec<usize>>,
    /// Whether the top holds the legacy trash directory.
    legacy: bool,
}

/// Every name at the top of `m` (open as `top_fd`) that looks like a trash of a user this
/// process looks for (`uid`; root: everyone), with its type and inode as the listing says, by
/// user; the names' bytes in one buffer. A listing that fails is said in `out`.
fn list_top(top_fd: &OwnedFd, m: &Mount, uid: u32, out: &mut Discovery) -> Listed {
    let mut names = Names::default();
    let mut by_user: HashMap<u32, Vec<usize>> = HashMap::new();
    let mut legacy = false;
    if let Ok(list) = reopen(top_fd) {
        let mut buf = dirfd::DirBuf::new(64 << 10);
        // Names of one user tend to come together: their list is kept at hand.
        let mut current: Option<(u32, Vec<usize>)> = None;
        let listed = dirfd::for_each_entry(&list, &mut buf, |name, ft, ino| {
            let b = name.to_bytes();
            if !b.starts_with(b".reclaim") {
                return;
            }
            if b == LEGACY_DIR.as_bytes() {
                legacy = true;
            } else if let Some(u) = name_uid(b) {
                if uid == 0 || u == uid {
                    let i = names.push(b, ft, ino);
                    match &mut current {
                        Some((cu, list)) if *cu == u => list.push(i),
                        _ => {
                            if let Some((cu, list)) = current.take() {
                                by_user.entry(cu).or_default().extend(list);
                            }
                            current = Some((u, vec![i]));
                        }
                    }
                }
            }
        });
        if let Some((cu, list)) = current.take() {
            by_user.entry(cu).or_default().extend(list);
        }
        if let Err(e) = listed {
            out.unreachable.push(Unusable {
                path: m.point.to_string_lossy().into_owned(),
                reason: format!(
                    "could not be listed to the end ({}); some trashes may not have been \
                     looked at",
                    crate::sys::error::errno_text(e)
                ),
            });
        }
    }
    Listed {
        names,
        by_user,
        legacy,
    }
}

/// The trashes (this user's, or everyone's for root) at the top of mount `m`, into `out`.
fn at_mount(m: &Mount, uid: u32, out: &mut Discovery, mut memo: Option<&mut Memo>) {
    let top_fd = match dirfd::open_dir_path(&m.point) {
        Ok(fd) => fd,
        Err(e) => {
            return out.unreachable.push(Unusable {
                path: m.point.to_string_lossy().into_owned(),
                reason: format!(
                    "cannot be listed ({}); its trashes were not looked at",
                    crate::sys::error::errno_text(e)
                ),
            })
        }
    };
    // The top must be the mount's own root (an overmounted or moved top is skipped).
    if dirfd::fstat(&top_fd).map(|f| f.mnt_id) != Ok(m.id) {
        return;
    }
    let Listed {
        names,
        mut by_user,
        legacy,
    } = list_top(&top_fd, m, uid, out);
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
        let mut mine = InOrder::new(
            &names,
            by_user.remove(&u).unwrap_or_default(),
            plain.as_bytes(),
        );
        // The plain name first, then the others in name order (as `find_or_make` tries them);
        // examined in that order until MAX_PER_USER usable ones are found, the rest counted.
        let mut taken = 0usize;
        let mut skipped = 0u64;
        while let Some(i) = mine.take() {
            if taken >= MAX_PER_USER {
                skipped = 1 + mine.left() as u64;
                break;
            }
            let (name, ft, ino) = names.get(i);
            let top = Top { m, fd: &top_fd };
            if examine_listed(
                &top,
                u,
                (name, ft, ino),
                plain.as_bytes(),
                memo.as_deref_mut(),
                out,
            ) {
                taken += 1;
            }
        }
        for (_, path, s) in legacy_found.iter().filter(|(lu, _, _)| *lu == u) {
            if taken >= MAX_PER_USER {
                skipped += 1;
                continue;
            }
            out.add(Found::from_statx(path.clone(), m.point.clone(), u, s));
            taken += 1;
        }
        if skipped > 0 {
            out.skip(u, skipped);
        }
    }
}

/// A mount top, open.
struct Top<'a> {
    m: &'a Mount,
    fd: &'a OwnedFd,
}

/// Examines one listed name (`name`, its type and inode as listed) that looks like a trash of
/// `u` at the top (`plain`: that user's plain trash name): a usable trash is added to `out` and
/// `true` returned; anything else is passed over (the first few said, the rest counted). What
/// the listing's type tells spares a `statx`; so does `memo`, for a name another user's
/// directory held at an earlier look (never for the plain name).
fn examine_listed(
    top: &Top,
    u: u32,
    (name, ft, ino): (&[u8], FileType, u64),
    plain: &[u8],
    mut memo: Option<&mut Memo>,
    out: &mut Discovery,
) -> bool {
    let m = top.m;
    let shown = || {
        m.point
            .join(OsStr::from_bytes(name))
            .to_string_lossy()
            .into_owned()
    };
    // The listing's type says it is no directory (a symlink, a file): no statx.
    if !matches!(ft, FileType::Directory | FileType::Unknown) {
        out.passed_over_with(|| Unusable {
            path: shown(),
            reason: unusable_type(ft),
        });
        return false;
    }
    // Another user's directory under this name, as seen at an earlier look.
    let plain_name = name == plain;
    if let Some(owner) = memo
        .as_deref_mut()
        .filter(|_| !plain_name)
        .and_then(|mm| mm.foreign(m.id, ino, name))
    {
        out.passed_over_with(|| Unusable {
            path: shown(),
            reason: format!("is owned by uid {owner}, not {u}"),
        });
        return false;
    }
    let Ok(cname) = CString::new(name) else {
        return false;
    };
    match statx(top.fd, &cname, AtFlags::SYMLINK_NOFOLLOW, MASK) {
        Ok(s) if usable(&s, u, m.id) => {
            let path = m.point.join(OsStr::from_bytes(name));
            out.add(Found::from_statx(path, m.point.clone(), u, &s));
            return true;
        }
        Ok(s) => {
            if s.stx_uid != u && !plain_name && s.stx_ino == ino {
                if let Some(mm) = memo {
                    mm.remember(m.id, ino, name, s.stx_uid);
                }
            }
            out.passed_over_with(|| Unusable {
                path: shown(),
                reason: unusable_why(&s, u, m.id).unwrap_or_default(),
            })
        }
        // Gone between the listing and now: nothing to say.
        Err(Errno::NOENT) => {}
        Err(e) => out.passed_over_with(|| Unusable {
            path: shown(),
            reason: format!("cannot be examined ({})", crate::sys::error::errno_text(e)),
        }),
    }
    false
}

/// Names from a listing, their bytes in one buffer (tens of thousands of decoys cost no
/// allocation each).
#[derive(Default)]
struct Names {
    bytes: Vec<u8>,
    /// (start, end, type, inode).
    items: Vec<(usize, usize, FileType, u64)>,
}

impl Names {
    fn push(&mut self, name: &[u8], ft: FileType, ino: u64) -> usize {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.items.push((start, self.bytes.len(), ft, ino));
        self.items.len() - 1
    }

    fn get(&self, i: usize) -> (&[u8], FileType, u64) {
        let (a, b, ft, ino) = self.items[i];
        (&self.bytes[a..b], ft, ino)
    }

    fn name(&self, i: usize) -> &[u8] {
        let (a, b, _, _) = self.items[i];
        &self.bytes[a..b]
    }
}

/// What `discover_with` keeps from one look to the next (see there).
#[derive(Debug, Default)]
pub struct Memo {
    /// (mount id, inode) -> (name, owner): a directory of another user than its name says.
    foreign: HashMap<(u64, u64), (Vec<u8>, u32)>,
    /// The verdicts used or made in the current look (the others are forgotten after it).
    kept: HashMap<(u64, u64), (Vec<u8>, u32)>,
    since: Option<std::time::Instant>,
}

/// How long a verdict of `Memo` is used before every name is examined afresh.
pub const MEMO_LIFE: std::time::Duration = std::time::Duration::from_secs(60);

impl Memo {
    fn start_look(&mut self) {
        let fresh = self.since.is_some_and(|t| t.elapsed() < MEMO_LIFE);
        self.foreign = if fresh {
            std::mem::take(&mut self.kept)
        } else {
            self.since = Some(std::time::Instant::now());
            HashMap::new()
        };
        self.kept = HashMap::new();
    }

    /// The owner of `name` (inode `ino` on mount `mnt`) if it was another user's at an earlier
    /// look.
    fn foreign(&mut self, mnt: u64, ino: u64, name: &[u8]) -> Option<u32> {
        let (n, owner) = self.foreign.remove(&(mnt, ino))?;
        if n != name {
            return None;
        }
        self.kept.insert((mnt, ino), (n, owner));
        Some(owner)
    }

    fn remember(&mut self, mnt: u64, ino: u64, name: &[u8], owner: u32) {
        self.kept.insert((mnt, ino), (name.to_vec(), owner));
    }
}

/// The names `ids` (indices into `names`), the one equal to `plain` first, then the others in
/// byte order, ordered a chunk at a time as they are taken (a user with 30,000 names, of which
/// the first few are looked at, is not sorted whole; the chunks double, so going through all
/// costs one sort).
struct InOrder<'n> {
    names: &'n Names,
    ready: std::collections::VecDeque<usize>,
    rest: Vec<usize>,
    chunk: usize,
}

impl<'n> InOrder<'n> {
    fn new(names: &'n Names, mut ids: Vec<usize>, plain: &[u8]) -> InOrder<'n> {
        let first = ids.iter().position(|&i| names.name(i) == plain);
        let head = first.map(|i| ids.swap_remove(i));
        InOrder {
            names,
            ready: head.into_iter().collect(),
            rest: ids,
            chunk: 4 * MAX_PER_USER,
        }
    }

    fn take(&mut self) -> Option<usize> {
        if self.ready.is_empty() && !self.rest.is_empty() {
            // The `chunk` smallest names left, in order.
            let names = self.names;
            let by_name = |a: &usize, b: &usize| names.name(*a).cmp(names.name(*b));
            let k = self.chunk.min(self.rest.len());
            if k < self.rest.len() {
                self.rest.select_nth_unstable_by(k - 1, by_name);
            }
            let mut chunk: Vec<usize> = self.rest.drain(..k).collect();
            chunk.sort_unstable_by(by_name);
            self.ready.extend(chunk);
            self.chunk *= 2;
        }
        self.ready.pop_front()
    }

    /// How many are left.
    fn left(&self) -> usize {
        self.ready.len() + self.rest.len()
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
                reason: format!("cannot be examined ({})", crate::sys::error::errno_text(e)),
            }),
        }
    }
}

/// Whether what `s` describes is a usable trash of `uid` on mount `mnt_id` (allocating
/// nothing: thousands of decoys are examined with it).
fn usable(s: &rustix::fs::Statx, uid: u32, mnt_id: u64) -> bool {
    FileType::from_raw_mode(s.stx_mode.into()) == FileType::Directory
        && s.stx_uid == uid
        && u32::from(s.stx_mode) & 0o077 == 0
        && s.stx_mnt_id == mnt_id
}

/// Why something of type `t` (not a directory) is not a trash.
fn unusable_type(t: FileType) -> String {
    if t == FileType::Symlink {
        "is a symbolic link; not using it".into()
    } else {
        "is not a directory; not using it".into()
    }
}

/// Why what `s` describes is not a usable trash of `uid` on mount `mnt_id` (as
/// `Trash::open_at` decides, from a `statx`).
fn unusable_why(s: &rustix::fs::Statx, uid: u32, mnt_id: u64) -> Option<String> {
    let t = FileType::from_raw_mode(s.stx_mode.into());
    if t != FileType::Directory {
        return Some(unusable_type(t));
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
    fn names_come_plain_first_then_in_order() {
        let mut names = Names::default();
        let mut ids = Vec::new();
        for n in ["b", "p", "a", "d", "c"] {
            ids.push(names.push(n.as_bytes(), FileType::Directory, 1));
        }
        for i in (0..100).rev() {
            ids.push(names.push(format!("z{i:03}").as_bytes(), FileType::Directory, 1));
        }
        let mut it = InOrder::new(&names, ids, b"p");
        let order: Vec<String> = std::iter::from_fn(|| it.take())
            .map(|i| String::from_utf8_lossy(names.name(i)).into_owned())
            .collect();
        assert_eq!(&order[..5], ["p", "a", "b", "c", "d"]);
        assert_eq!(order.len(), 105);
        let mut rest = order[5..].to_vec();
        rest.sort();
        assert_eq!(rest, order[5..]);
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
