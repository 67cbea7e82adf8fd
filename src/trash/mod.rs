//! The trash: one directory per file system and user, `<top>/.reclaim-<uid>/` (mode 0700, like
//! the FreeDesktop `.Trash-$uid`), into which `reclaim rm --background` renames targets so
//! they vanish from their path at once, whatever their size. Owns where a trash is, how it is
//! opened safely (never through a symlink, never one that is not the user's own) and what its
//! entries are. No directory is shared between users, so nobody can take another's trash
//! away: a name someone else squatted is reported and passed over for a fresh random one, and
//! a trash is made only where nobody else may move names (`locate`). Finding every
//! trash is `discover`'s; the trashes below a top are remembered in `registry`. Never frees
//! anything: that is the reaper's job.

pub mod discover;
pub mod early;
pub mod entry;
pub mod hide;
pub mod index;
pub mod meta;
pub mod registry;
pub mod restore;
pub mod safefile;

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::io::Errno;

pub use discover::{discover, discover_on, discover_with, Discovery, Found, Memo, Passed, Skipped};

use crate::sys::dirfd::{self, Ident};
use crate::sys::mounts::{self, Mount};
use crate::sys::quote::quote;

/// Limits `discover` to file systems mounted at or below this directory, whose `var/tmp` is
/// then the index's (`index`): a container's view, a test's scratch directory.
pub const UNDER_ENV: &str = "RECLAIM_UNDER";

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
    /// The trash directory could not be made: the file system's own reason (no space, read
    /// only, quota, permission), with where.
    #[error("cannot make {}: {}", quote(.0), crate::sys::error::errno_text(*.1))]
    Make(PathBuf, Errno),
    #[error("the file system is read-only")]
    ReadOnly,
    /// A trash below the mount top that could not be registered (nothing would find it again).
    #[error("a trash below the mount top could not be recorded: {0}")]
    Unregistered(registry::RegistryError),
    /// A directory where another user could take a trash away (rename or remove it).
    #[error("{} {why}: another user could take a trash there away", quote(.path))]
    Exposed { path: PathBuf, why: String },
}

/// Why a trash found before is not where it was found any more (`discover::Found::still_there`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Gone {
    #[error("its path holds a NUL byte")]
    NulInPath,
    #[error("another directory took its name")]
    Replaced,
    #[error("its file system was unmounted")]
    Unmounted,
    #[error("it was removed")]
    Removed,
    /// Its path cannot be examined: whether it is there is not known.
    #[error("it cannot be examined ({})", crate::sys::error::errno_text(*.0))]
    Unknown(Errno),
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

/// Whether the directory `name`, owned by `owner` with `mode`, is one of reclaim's trashes as
/// reclaim makes them: `.reclaim-<uid>` of that uid, mode 0700, or the first layout's
/// `.reclaim` of root. A directory that only has the name is not (anyone can make one).
pub fn is_trash_dir(name: &[u8], owner: u32, mode: u32) -> bool {
    match name_uid(name) {
        Some(uid) => uid == owner && mode & 0o077 == 0,
        None => name == LEGACY_DIR.as_bytes() && owner == 0,
    }
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
    /// with a random suffix. The names passed over are returned with why (the first few, and
    /// how many): each is examined with `statx` before it is opened, so thousands of squatted
    /// names cost no more than a listing and a `statx` each.
    pub fn find_or_make(
        top: &Path,
        mount: &Mount,
        uid: u32,
    ) -> Result<(Trash, Passed), TrashError> {
        let top_fd = dirfd::open_dir_path(top)?;
        let mut passed = Passed::default();
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
            if let Some(why) = discover::examine(&top_fd, &name, uid, mount.id) {
                passed.push(Unusable {
                    path: top
                        .join(OsStr::from_bytes(name.to_bytes()))
                        .to_string_lossy()
                        .into_owned(),
                    reason: why,
                });
                continue;
            }
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
        match crate::sys::safeopen::mkdir_at(top_fd, name, 0o700) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(Errno::ROFS) => return Err(TrashError::ReadOnly),
            Err(e) => {
                let path = top.join(OsStr::from_bytes(name.to_bytes()));
                return Err(TrashError::Make(path, e));
            }
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
/// directory on the same mount above the parent. Never a directory inside the target, and
/// never where another user could take it away: the directory, and every one from the top down
/// to it, belongs to this user or root and is writable by nobody else or sticky
/// (`dirfd::others_may_move_names`). Also returns the trash names it passed over (squatted by
/// someone else).
pub fn locate(parent: &OwnedFd, uid: u32) -> Result<(Trash, Passed), TrashError> {
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
        let below = top != &mount.point;
        if let Some(why) = exposed(top, uid) {
            // Nor anything below it: its names (the way to what is below) could be moved.
            return Err(TrashError::Exposed {
                path: top.clone(),
                why,
            });
        }
        let r = if uid != 0 && !writable(top)? {
            Err(TrashError::NoWritable(top.clone()))
        } else if let (true, Err(why)) = (below, registry::available()) {
            // Found by the registry alone: without one, nothing would find it again.
            Err(TrashError::Unregistered(why))
        } else {
            Trash::find_or_make(top, &mount, uid)
        };
        match r {
            Ok((t, mut passed)) => {
                if below {
                    if let Err(why) = registry::register(&t) {
                        first_error.get_or_insert(TrashError::Unregistered(why));
                        continue;
                    }
                    // So that root's status, reap and service find it too (said, not fatal:
                    // this user's own reaper and commands find it through the registry).
                    if let Err(why) = index::publish(&t) {
                        passed.push(Unusable {
                            path: index::dir_path().to_string_lossy().into_owned(),
                            reason: format!(
                                "{why}: root's reclaim will not see {}",
                                quote(&t.path)
                            ),
                        });
                    }
                }
                return Ok((t, passed));
            }
            // A whole file system's condition: no other directory on it would do better.
            Err(e @ (TrashError::ReadOnly | TrashError::Make(_, Errno::NOSPC | Errno::DQUOT))) => {
                return Err(e)
            }
            // The first reason, but one from trying to make a trash beats "not writable".
            Err(e) => match &first_error {
                None | Some(TrashError::NoWritable(_)) => first_error = Some(e),
                Some(_) => {}
            },
        }
    }
    Err(first_error.unwrap_or(TrashError::NoMount))
}

/// Why another user than `uid` (and root) could rename or remove what is made in `dir`.
fn exposed(dir: &Path, uid: u32) -> Option<String> {
    match rustix::fs::stat(dir) {
        Ok(st) => dirfd::others_may_move_names(&st, uid),
        Err(e) => Some(format!(
            "cannot be examined ({})",
            crate::sys::error::errno_text(e)
        )),
    }
}

/// Whether this user may make names in `dir`; a read-only file system is said as such.
fn writable(dir: &Path) -> Result<bool, TrashError> {
    match rustix::fs::access(
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    ) {
        Ok(()) => Ok(true),
        Err(Errno::ROFS) => Err(TrashError::ReadOnly),
        Err(_) => Ok(false),
    }
}

/// How many paths a batch entry holds now: the names in its `data` (or, once claimed, in
/// `reaping`), whatever its record says (a hide killed midway leaves a record naming more).
pub fn held_now(entry: &OwnedFd) -> Option<u64> {
    let inner = dirfd::open_dir_at(entry, DATA)
        .or_else(|_| dirfd::open_dir_at(entry, REAPING))
        .ok()?;
    let mut n = 0u64;
    let mut buf = dirfd::DirBuf::new(64 << 10);
    dirfd::for_each_entry(&inner, &mut buf, |_, _, _| n += 1).ok()?;
    Some(n)
}

/// Live allocated bytes of whatever an entry still holds (data, reaping, half-shrunk files),
/// directories not walked.
pub fn entry_allocated(entry: &OwnedFd) -> u64 {
    let mut total: u64 = 0;
    let Ok(list) = reopen(entry) else { return 0 };
    let mut buf = dirfd::DirBuf::new(8 << 10);
    let _ = dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
        if entry::is_record(name) {
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

    #[test]
    fn a_trash_dir_is_its_uids_and_0700_not_only_its_name() {
        let dir = 0o040000;
        assert!(is_trash_dir(b".reclaim-7", 7, dir | 0o700));
        assert!(is_trash_dir(b".reclaim-7.x2", 7, dir | 0o700));
        assert!(!is_trash_dir(b".reclaim-7", 8, dir | 0o700));
        assert!(!is_trash_dir(b".reclaim-7", 7, dir | 0o755));
        assert!(is_trash_dir(b".reclaim", 0, dir | 0o755));
        assert!(!is_trash_dir(b".reclaim", 7, dir | 0o755));
        assert!(!is_trash_dir(b".reclaim-shrink.1f", 0, dir | 0o700));
    }
}

/// The parsers of what a trash holds (and what a child prints), fed arbitrary bytes: never a
/// panic, whatever parses is usable (paths come back, names quote on one line), and memory
/// held stays bounded. A modest number of cases in every run; `records_many` (ignored: CI
/// runs it with `--include-ignored`) runs `RECLAIM_FUZZ_CASES` (default 100,000).
#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use super::safefile::fuzz::bytes;

    thread_local! {
        /// A directory for the records of a thread's cases (in memory where there is a tmpfs).
        static DIR: (tempfile::TempDir, std::os::fd::OwnedFd) = {
            let d = tempfile::tempdir_in("/dev/shm").or_else(|_| tempfile::tempdir()).unwrap();
            let fd = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
            (d, fd)
        };
    }

    fn records_case(text: &[u8]) -> Result<(), TestCaseError> {
        DIR.with(|(d, dir)| {
            let me = rustix::process::geteuid().as_raw();
            let ((), held) = crate::sys::testing::peak_during(|| {
                std::fs::write(d.path().join("meta.json"), text).unwrap();
                if let Ok(Some(m)) = crate::trash::meta::Meta::read(dir, me) {
                    let _ = m.original_path();
                    let _ = m.in_grace(0.0);
                    let _ = crate::sys::quote::quote(m.original_path());
                }
            });
            prop_assert!(
                held < (1 << 20) + 64 * text.len(),
                "meta.json held {}",
                held
            );
            // A batch's list: whatever parses yields only single names (or none).
            std::fs::write(d.path().join("held.json"), text).unwrap();
            if let Ok(Some(l)) = crate::trash::meta::HeldList::read(dir, me) {
                for h in &l.items {
                    if let Some(b) = h.name.bytes() {
                        prop_assert!(
                            !b.is_empty() && !b.contains(&b'/') && b != b"." && b != b".."
                        );
                    }
                    let _ = h.slot_name();
                }
                let _ = l.totals();
            }
            // What a child prints (hostile when it runs as another user).
            let _ = serde_json::from_slice::<crate::trash::restore::Report>(text);
            Ok(())
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn records_from_arbitrary_bytes(text in bytes()) {
            records_case(&text)?;
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

    #[test]
    #[ignore = "RECLAIM_FUZZ_CASES (default 100,000) cases of the trash's records: a minute or two; CI runs it with --include-ignored"]
    fn records_many() {
        let cases = std::env::var("RECLAIM_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100_000);
        let config = ProptestConfig {
            cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        proptest::test_runner::TestRunner::new(config)
            .run(&bytes(), |t| records_case(&t))
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
