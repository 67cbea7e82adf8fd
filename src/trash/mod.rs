//! The trash: one directory per file system and user, `<top>/.reclaim-<uid>/` (mode 0700, like
//! the FreeDesktop `.Trash-$uid`), into which `reclaim rm --background` renames targets so
//! they vanish from their path at once, whatever their size. Owns where a trash is, how it is
//! opened safely (never through a symlink, never one that is not the user's own) and what its
//! entries are. No directory is shared between users, so nobody can take another's trash
//! away: a name someone else squatted is reported and passed over for a fresh random one.
//! Never frees anything: that is the reaper's job.

pub mod hide;
pub mod meta;
pub mod restore;
pub mod safefile;

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{mkdirat, Mode};
use rustix::io::Errno;

use crate::sys::dirfd::{self, Ident};
use crate::sys::mounts::{self, Mount};
use crate::sys::quote::quote;

/// Prefix of a trash's name at its top: `.reclaim-<uid>`, or `.reclaim-<uid>.<random>` when
/// the plain name was taken by something that is not the user's trash.
pub const PREFIX: &str = ".reclaim-";
/// The first layout (`<top>/.reclaim/<uid>/`): still read, never made.
pub const LEGACY_DIR: &str = ".reclaim";
/// Inside an entry: the target, whole and restorable.
pub const DATA: &CStr = c"data";
/// Inside an entry: the target once a reaper has claimed it (no longer restorable).
pub const REAPING: &CStr = c"reaping";
/// Inside an entry: the reaper's record of attempts that failed.
pub const FAILED: &CStr = c"failed.json";
/// Inside a trash: the reaper's lock, its status and its log.
pub const LOCK: &CStr = c"lock";
pub const STATUS: &CStr = c"reaper.json";
pub const LOG: &CStr = c"reaper.log";

/// Why a trash cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrashError {
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(#[from] Errno),
    #[error("{} {why}; not using it", quote(.path))]
    Unsafe { path: PathBuf, why: String },
    #[error("it is on no known mount")]
    NoMount,
    #[error("no writable directory for a trash on its file system (tried {})", quote(.0))]
    NoWritable(PathBuf),
}

/// A directory with a trash's name that is not a usable trash, and why (`status` reports it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unusable {
    pub path: String,
    pub reason: String,
}

/// One user's trash on one file system, open.
#[derive(Debug)]
pub struct Trash {
    /// The trash directory.
    pub dir: OwnedFd,
    pub path: PathBuf,
    /// The mount point of its file system.
    pub mount: PathBuf,
    /// Its owner, whose entries it holds.
    pub uid: u32,
    pub ident: Ident,
}

/// The uid a trash name stands for: `.reclaim-<uid>` or `.reclaim-<uid>.<suffix>`.
pub fn name_uid(name: &[u8]) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX.as_bytes())?;
    let digits = rest.split(|&b| b == b'.').next()?;
    let after = &rest[digits.len()..];
    if digits.is_empty()
        || !digits.iter().all(u8::is_ascii_digit)
        || (digits.len() > 1 && digits[0] == b'0')
        || !(after.is_empty() || (after.len() > 1 && after[0] == b'.'))
    {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Whether a name in a directory is a trash of any layout (never a candidate for removal).
pub fn is_trash_name(name: &[u8]) -> bool {
    name == LEGACY_DIR.as_bytes() || name_uid(name).is_some()
}

/// Why the directory `fd` is not a usable trash of `uid` on mount `mnt_id`, if it is not.
fn unusable_why(fd: &OwnedFd, uid: u32, mnt_id: u64) -> Result<Option<String>, Errno> {
    let st = rustix::fs::fstat(fd)?;
    if st.st_uid != uid {
        return Ok(Some(format!("is owned by uid {}, not {uid}", st.st_uid)));
    }
    if st.st_mode & 0o077 != 0 {
        return Ok(Some(format!(
            "has mode {:04o}; a trash must be 0700",
            st.st_mode & 0o7777
        )));
    }
    if dirfd::fstat(fd)?.mnt_id != mnt_id {
        return Ok(Some("is on another mount".into()));
    }
    Ok(None)
}

impl Trash {
    /// Opens directory `name` in `top_fd` (path `top`, on `mount`) as the trash of `uid`,
    /// never through a symlink; anything else than a 0700 directory of `uid` on that mount is
    /// `Unsafe`.
    fn open_at(
        top_fd: &OwnedFd,
        top: &Path,
        name: &CStr,
        mount: &Mount,
        uid: u32,
    ) -> Result<Trash, TrashError> {
        let path = top.join(OsStr::from_bytes(name.to_bytes()));
        let unsafe_ = |why: &str| TrashError::Unsafe {
            path: path.clone(),
            why: why.into(),
        };
        let dir = match dirfd::open_dir_at(top_fd, name) {
            Ok(fd) => fd,
            Err(Errno::LOOP) => return Err(unsafe_("is a symbolic link")),
            Err(Errno::NOTDIR) => return Err(unsafe_("is not a directory")),
            // Another user's directory that this one may not even read.
            Err(e @ (Errno::ACCESS | Errno::PERM)) => {
                return Err(unsafe_(&format!(
                    "cannot be opened ({}): not this user's",
                    crate::sys::error::errno_text(e)
                )))
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(why) = unusable_why(&dir, uid, mount.id)? {
            return Err(TrashError::Unsafe { path, why });
        }
        let facts = dirfd::fstat(&dir)?;
        Ok(Trash {
            dir,
            path,
            mount: mount.point.clone(),
            uid,
            ident: facts.ident,
        })
    }

    /// The trash of `uid` in `top` (a directory on `mount`), made if there is none: the plain
    /// name, else (someone else has it) the first usable `.reclaim-<uid>.*`, else a fresh one
    /// with a random suffix. The names passed over are returned with why.
    pub fn find_or_make(
        top: &Path,
        mount: &Mount,
        uid: u32,
    ) -> Result<(Trash, Vec<Unusable>), TrashError> {
        let top_fd = dirfd::open_dir_path(top)?;
        let mut passed = Vec::new();
        let plain = CString::new(format!("{PREFIX}{uid}")).expect("digits");
        match Trash::open_in_or_make(&top_fd, top, &plain, mount, uid) {
            Ok(t) => return Ok((t, passed)),
            Err(TrashError::Unsafe { path, why }) => passed.push(Unusable {
                path: path.to_string_lossy().into_owned(),
                reason: why,
            }),
            Err(e) => return Err(e),
        }
        for name in alternates(&top_fd, uid) {
            match Trash::open_at(&top_fd, top, &name, mount, uid) {
                Ok(t) => return Ok((t, passed)),
                Err(TrashError::Unsafe { path, why }) => passed.push(Unusable {
                    path: path.to_string_lossy().into_owned(),
                    reason: why,
                }),
                Err(_) => {}
            }
        }
        for _ in 0..8 {
            let fresh =
                CString::new(format!("{PREFIX}{uid}.{}", safefile::random_hex(6))).expect("hex");
            match Trash::open_in_or_make(&top_fd, top, &fresh, mount, uid) {
                Ok(t) => return Ok((t, passed)),
                // Taken by someone else between our mkdir and open, or a clash: another name.
                Err(TrashError::Unsafe { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(TrashError::NoWritable(top.to_path_buf()))
    }

    /// Opens `name` in `top_fd` as `uid`'s trash, making it (0700) if it does not exist.
    fn open_in_or_make(
        top_fd: &OwnedFd,
        top: &Path,
        name: &CStr,
        mount: &Mount,
        uid: u32,
    ) -> Result<Trash, TrashError> {
        match Trash::open_at(top_fd, top, name, mount, uid) {
            Err(TrashError::Os(Errno::NOENT)) => {}
            r => return r,
        }
        match mkdirat(top_fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        Trash::open_at(top_fd, top, name, mount, uid)
    }

    /// Opens an existing trash by its path (`--trash DIR`): `<top>/.reclaim-<uid>[.<suffix>]`
    /// or the first layout's `<top>/.reclaim/<uid>`. Its owner must be the uid its name says
    /// and, unless the caller is root, the caller.
    pub fn open_path(path: &Path) -> Result<Trash, TrashError> {
        let bad = |why: &str| TrashError::Unsafe {
            path: path.to_path_buf(),
            why: why.into(),
        };
        let name = path
            .file_name()
            .ok_or_else(|| bad("is not a trash (expected <dir>/.reclaim-<uid>)"))?;
        let parent = path.parent().unwrap_or(Path::new("/"));
        let (top, uid) = match name_uid(name.as_bytes()) {
            Some(uid) => (parent, uid),
            None => {
                let uid = name.to_str().and_then(|n| n.parse::<u32>().ok());
                match (uid, parent.file_name()) {
                    (Some(uid), Some(d)) if d == OsStr::new(LEGACY_DIR) => {
                        (parent.parent().unwrap_or(Path::new("/")), uid)
                    }
                    _ => return Err(bad(
                        "is not a trash (expected <dir>/.reclaim-<uid> or <dir>/.reclaim/<uid>)",
                    )),
                }
            }
        };
        let me = uid_of_process();
        if me != 0 && me != uid {
            return Err(bad(&format!("belongs to uid {uid}, not to you (uid {me})")));
        }
        let top_fd = dirfd::open_dir_path(top)?;
        let mount = mounts::by_id(dirfd::fstat(&top_fd)?.mnt_id).ok_or(TrashError::NoMount)?;
        let cname = CString::new(name.as_bytes()).map_err(|_| bad("has a NUL byte"))?;
        if name_uid(name.as_bytes()).is_some() {
            return Trash::open_at(&top_fd, top, &cname, &mount, uid);
        }
        let outer = legacy_outer(&top_fd, top)?;
        let mut t = Trash::open_at(&outer, &top.join(LEGACY_DIR), &cname, &mount, uid)?;
        t.path = path.to_path_buf();
        Ok(t)
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

    /// Whether `id` names an entry of this trash (an entry's name, present: looked up, not
    /// opened).
    pub fn has_entry(&self, id: &str) -> bool {
        meta::is_entry_name(id.as_bytes())
            && CString::new(id).is_ok_and(|c| dirfd::lstat_at(&self.dir, &c).is_ok())
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

/// `<top>/.reclaim` of the first layout, checked: a directory of root or of a user, writable
/// by nobody else.
fn legacy_outer(top_fd: &OwnedFd, top: &Path) -> Result<OwnedFd, TrashError> {
    let path = top.join(LEGACY_DIR);
    let fd = match dirfd::open_dir_at(top_fd, c".reclaim") {
        Ok(fd) => fd,
        Err(Errno::LOOP | Errno::NOTDIR) => {
            return Err(TrashError::Unsafe {
                path,
                why: "is not a directory".into(),
            })
        }
        Err(e) => return Err(e.into()),
    };
    let st = rustix::fs::fstat(&fd)?;
    if st.st_mode & 0o022 != 0 {
        return Err(TrashError::Unsafe {
            path,
            why: "is writable by others".into(),
        });
    }
    Ok(fd)
}

/// The `.reclaim-<uid>.<suffix>` names in `top`, in name order.
fn alternates(top_fd: &OwnedFd, uid: u32) -> Vec<CString> {
    let want = format!("{PREFIX}{uid}.");
    let mut names = Vec::new();
    let Ok(list) = reopen(top_fd) else {
        return names;
    };
    let mut buf = dirfd::DirBuf::new(64 << 10);
    let _ = dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
        if name.to_bytes().starts_with(want.as_bytes()) && name_uid(name.to_bytes()) == Some(uid) {
            names.push(name.to_owned());
        }
    });
    names.sort();
    names
}

/// A fresh fd on the same directory for listing (getdents moves the file offset).
pub fn reopen(dir: &OwnedFd) -> Result<OwnedFd, Errno> {
    dirfd::open_dir_at(dir, c".")
}

/// The real uid of this process.
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

fn uid_of_process() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Finds (making it if needed) the trash for a target whose parent directory is `parent`:
/// at the top of the parent's mount if this user may write there, else in the highest writable
/// directory on the same mount above the parent. Never a directory inside the target. Also
/// returns the trash names it passed over (squatted by someone else).
pub fn locate(parent: &OwnedFd, uid: u32) -> Result<(Trash, Vec<Unusable>), TrashError> {
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
            Trash::find_or_make(top, &mount, uid)
        };
        match r {
            Ok((t, passed)) => {
                if top != &mount.point {
                    register(&t.path);
                }
                return Ok((t, passed));
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

/// What `discover` found: the usable trashes, names that look like a trash but are not usable
/// (another owner, a symlink, open permissions), and file systems that did not answer.
#[derive(Debug, Default)]
pub struct Discovery {
    pub trashes: Vec<Trash>,
    pub unusable: Vec<Unusable>,
    pub unreachable: Vec<Unusable>,
}

/// Limits `discover` to file systems mounted at or below this directory (a container's view, a
/// test's scratch directory).
pub const UNDER_ENV: &str = "RECLAIM_UNDER";

/// How long `discover` waits for a network or FUSE file system to answer (a dead NFS server,
/// a stopped FUSE daemon): it is then skipped and named.
pub const PROBE_DEADLINE: std::time::Duration = std::time::Duration::from_millis(1500);

/// Every trash this user may see: at the top of each file system (all users' for root, one's
/// own otherwise; only those mounted under `$RECLAIM_UNDER` if set), in either layout, and
/// the ones registered in the user's state directory. Network and FUSE file systems are looked
/// at in threads with a deadline, so an unanswering one delays this by at most
/// `PROBE_DEADLINE` and is named in `unreachable`. Root only opens and lists directories here;
/// it reads no file of a user's trash.
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
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Vec<Result<Trash, TrashError>>)>();
    let mut waiting: Vec<usize> = Vec::new();
    for (i, m) in mounts.iter().enumerate() {
        if m.is_local() {
            for r in at_mount(m, uid) {
                found.add(r);
            }
        } else {
            // Might never answer: in a thread of its own, abandoned after the deadline (a
            // blocked thread ends with the process).
            let (m, tx) = (m.clone(), tx.clone());
            waiting.push(i);
            std::thread::spawn(move || {
                let _ = tx.send((i, at_mount(&m, uid)));
            });
        }
    }
    drop(tx);
    let deadline = std::time::Instant::now() + PROBE_DEADLINE;
    while !waiting.is_empty() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok((i, results)) => {
                waiting.retain(|w| *w != i);
                for r in results {
                    found.add(r);
                }
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
    for p in registered().into_iter().filter(|p| inside(p)) {
        match Trash::open_path(&p) {
            Ok(t) if t.uid == uid || uid == 0 => found.add(Ok(t)),
            Ok(_) => {}
            Err(e) => found.add(Err(e)),
        }
    }
    found
}

impl Discovery {
    fn add(&mut self, r: Result<Trash, TrashError>) {
        match r {
            Ok(t) => {
                if !self.trashes.iter().any(|f| f.ident == t.ident) {
                    self.trashes.push(t);
                }
            }
            Err(TrashError::Unsafe { path, why }) => self.unusable.push(Unusable {
                path: path.to_string_lossy().into_owned(),
                reason: why,
            }),
            Err(_) => {}
        }
    }
}

/// The trashes (this user's, or everyone's for root) at the top of mount `m`.
fn at_mount(m: &Mount, uid: u32) -> Vec<Result<Trash, TrashError>> {
    let mut out = Vec::new();
    let Ok(top_fd) = dirfd::open_dir_path(&m.point) else {
        return out;
    };
    // The top must be the mount's own root (an overmounted or moved top is skipped).
    if dirfd::fstat(&top_fd).map(|f| f.mnt_id) != Ok(m.id) {
        return out;
    }
    let mut names = Vec::new();
    let mut legacy = false;
    if let Ok(list) = reopen(&top_fd) {
        let mut buf = dirfd::DirBuf::new(64 << 10);
        let _ = dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
            let b = name.to_bytes();
            if b == LEGACY_DIR.as_bytes() {
                legacy = true;
            } else if let Some(u) = name_uid(b) {
                if uid == 0 || u == uid {
                    names.push((name.to_owned(), u));
                }
            }
        });
    }
    names.sort();
    for (name, u) in names {
        out.push(Trash::open_at(&top_fd, &m.point, &name, m, u));
    }
    if legacy {
        match legacy_outer(&top_fd, &m.point) {
            Ok(outer) => {
                for u in legacy_uids(&outer, uid) {
                    let name = CString::new(u.to_string()).expect("digits");
                    let outer_path = m.point.join(LEGACY_DIR);
                    out.push(Trash::open_at(&outer, &outer_path, &name, m, u));
                }
            }
            Err(e) => out.push(Err(e)),
        }
    }
    out
}

/// The uids with a trash in a first-layout `.reclaim` (root: all; others: their own).
fn legacy_uids(outer: &OwnedFd, uid: u32) -> Vec<u32> {
    if uid != 0 {
        return vec![uid];
    }
    let mut uids = Vec::new();
    if let Ok(list) = reopen(outer) {
        let mut buf = dirfd::DirBuf::new(64 << 10);
        let _ = dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
            if let Some(u) = name.to_str().ok().and_then(|n| n.parse().ok()) {
                uids.push(u);
            }
        });
    }
    uids.sort_unstable();
    uids
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

/// Live allocated bytes of whatever an entry still holds (data, reaping, half-shrunk files),
/// directories not walked.
pub fn entry_allocated(entry: &OwnedFd) -> u64 {
    let mut total: u64 = 0;
    let Ok(list) = reopen(entry) else { return 0 };
    let mut buf = dirfd::DirBuf::new(8 << 10);
    let _ = dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
        if name == meta::META || name == FAILED {
            return;
        }
        if let Ok(f) = dirfd::lstat_at(entry.as_fd(), name) {
            if f.file_type != rustix::fs::FileType::Directory {
                total = total.saturating_add(f.allocated);
            }
        }
    });
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trash_names_say_their_uid() {
        assert_eq!(name_uid(b".reclaim-1000"), Some(1000));
        assert_eq!(name_uid(b".reclaim-0"), Some(0));
        assert_eq!(name_uid(b".reclaim-1000.3fa9c2"), Some(1000));
        assert_eq!(name_uid(b".reclaim-"), None);
        assert_eq!(name_uid(b".reclaim-01"), None);
        assert_eq!(name_uid(b".reclaim-10x"), None);
        assert_eq!(name_uid(b".reclaim-10."), None);
        assert_eq!(name_uid(b".reclaim-99999999999"), None);
        assert_eq!(name_uid(b".reclaim"), None);
        assert!(is_trash_name(b".reclaim"));
        assert!(is_trash_name(b".reclaim-7"));
        assert!(!is_trash_name(b".reclaim-shrink.1f"));
    }
}

/// The parsers of what a trash holds (and what a child prints), fed arbitrary bytes: never a
/// panic, and whatever parses is usable (paths come back, names quote on one line).
#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use super::safefile::fuzz::bytes;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn records_from_arbitrary_bytes(text in bytes()) {
            let d = tempfile::tempdir().unwrap();
            let dir = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
            std::fs::write(d.path().join("meta.json"), &text).unwrap();
            let me = rustix::process::geteuid().as_raw();
            if let Ok(Some(m)) = crate::trash::meta::Meta::read(&dir, me) {
                let _ = m.original_path();
                let _ = m.in_grace(0.0);
                let _ = crate::sys::quote::quote(m.original_path());
            }
            // What a child prints (hostile when it runs as another user).
            let _ = serde_json::from_slice::<crate::trash::restore::Report>(&text);
        }

        #[test]
        fn names_quote_on_one_printable_line(name in prop::collection::vec(any::<u8>(), 0..40)) {
            for utf8 in [false, true] {
                let q = crate::sys::quote::quote_bytes(&name, utf8);
                prop_assert!(!q.chars().any(char::is_control), "{q:?}");
            }
            let _ = crate::trash::name_uid(&name);
            let _ = crate::trash::meta::is_entry_name(&name);
        }
    }
}
