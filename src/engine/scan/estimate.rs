//! How long `reclaim rm -r` would take for a scanned tree: a quick calibration on the same
//! file system (create a few thousand empty files and some empty directories in a private
//! directory, then time the engine's work on them: list, unlink, rmdir, in one directory and
//! across workers), scaled by the tree's counts. The timing must be on the scanned file system,
//! so the private directory is made on it.
//!
//! It never writes inside a scanned tree: the private directory is made only in a place on
//! the PATH's mount that is neither a scanned PATH nor below one (`places`: the user's cache
//! directory `<cache home>/reclaim` (`sys::userdirs::cache_home`), and with `--estimate` also
//! `$TMPDIR`, the mount top, a directory above the PATH); with none, there is no estimate. A
//! scan writes nothing outside reclaim's own cache directory unless asked. The cache directory is made
//! (mode 0700, one `mkdirat` per missing component) only once the nearest existing directory
//! above it is known to be the caller's or root's, written by nobody else, on the PATH's mount
//! and outside every scanned tree; each component is opened without following a symlink and
//! `reclaim` itself must belong to the caller with mode 0700 (whoever made it first). It
//! removes only names it created itself, inside a directory it created (mode 0700, checked to
//! be its own after opening it without following symlinks), and it cleans up on every way
//! out: errors and early returns (a guard), and Ctrl-C or `kill` (INT, TERM, HUP, QUIT wait
//! until the cleanup is done). It never touches anything else (the cache directory it made
//! stays, empty, for the next scan).

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use rustix::fs::{statx, AtFlags, OFlags, StatxFlags};
use rustix::io::Errno;
use serde::Serialize;

use crate::sys::dirfd::{self, DirBuf, Ident};
use crate::sys::error::errno_text;
use crate::sys::quote::quote;

/// Empty files unlinked by one worker in one directory.
const ONE_DIR_FILES: usize = 1000;
/// Empty files unlinked across all workers (each in its own directory).
const PARALLEL_FILES: usize = 3000;
/// Empty directories opened, listed and removed per worker.
const DIRS_PER_WORKER: usize = 25;
/// Creating stops after this long per phase (a slow or remote file system), once each
/// directory has at least `MIN_FILES` files and `MIN_DIRS` directories.
const CREATE_BUDGET: Duration = Duration::from_millis(400);
const MIN_FILES: usize = 50;
const MIN_DIRS: usize = 4;

/// How much a calibration creates and removes: the full measure for work that proves big
/// (`Sizes::FULL`), or no more than the work itself for a small one (`Sizes::for_work`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub one_dir_files: usize,
    pub parallel_files: usize,
    pub dirs_per_worker: usize,
}

impl Sizes {
    pub const FULL: Sizes = Sizes {
        one_dir_files: ONE_DIR_FILES,
        parallel_files: PARALLEL_FILES,
        dirs_per_worker: DIRS_PER_WORKER,
    };

    /// For `work`: the full measure if its removal would prove big (`remove::start`); for a
    /// small one, which `reclaim rm` removes on one thread, files and directories like its
    /// own, at least `MIN_FILES` and `MIN_DIRS` (a scan of 20 files calibrated with 4,000 took
    /// a second).
    pub fn for_work(work: &Work) -> Sizes {
        if !small(work) {
            return Sizes::FULL;
        }
        let names = usize::try_from(work.names).unwrap_or(usize::MAX);
        let dirs = usize::try_from(work.dirs).unwrap_or(usize::MAX);
        Sizes {
            one_dir_files: MIN_FILES,
            parallel_files: names.clamp(MIN_FILES, PARALLEL_FILES),
            dirs_per_worker: dirs.clamp(MIN_DIRS, DIRS_PER_WORKER),
        }
    }
}

/// Whether `reclaim rm -r` would remove `work` on one thread (it never proves big by size).
pub fn small(work: &Work) -> bool {
    work.names + work.dirs < crate::engine::remove::start::BIG_LISTED
}

/// What the calibration measured on one file system.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// The directory the private calibration directory was made in.
    pub path: String,
    /// What that directory is (`cache`, `temp-dir`, `mount-top`, `above`).
    pub place: Option<PlaceKind>,
    /// Workers, as `reclaim rm -r` would use on this file system.
    pub threads: usize,
    /// Empty files created and removed.
    pub files: u64,
    /// Unlinks per second across `threads` workers, each in its own directory.
    pub unlinks_per_s: f64,
    /// Unlinks per second by one worker in one directory.
    pub unlinks_per_s_one_dir: f64,
    /// Empty directories opened, listed and removed per second across the workers.
    pub dirs_per_s: f64,
    /// How long the calibration took, creation and cleanup included.
    pub took_s: f64,
}

/// Why a file system could not be calibrated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalibrationError {
    #[error("cannot make a calibration directory in {}: {error}", crate::sys::quote::quote(.shown))]
    Create {
        shown: PathBuf,
        error: PrivateDirError,
    },
    /// A step of the measurement failed (`mkdir`, `create`, `unlink`, `rmdir`).
    #[error("{step}: {}", errno_text(*.error))]
    Step { step: &'static str, error: Errno },
    #[error(
        "could not remove its calibration directory in {}: {error}",
        crate::sys::quote::quote(.shown)
    )]
    Cleanup { shown: PathBuf, error: Errno },
}

/// Why the private calibration directory could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrivateDirError {
    #[error("{}", errno_text(*.0))]
    Os(Errno),
    /// What was opened is not the directory made here (replaced under us).
    #[error("the new directory changed under us; left alone")]
    Changed,
    #[error("it is on another file system")]
    OtherFileSystem,
    /// Every random name tried was taken.
    #[error("no free name")]
    NoFreeName,
}

/// What kind of place a calibration directory is made in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlaceKind {
    /// The user's cache directory (`$XDG_CACHE_HOME/reclaim`, `~/.cache/reclaim`, root's
    /// `/var/cache/reclaim`), when it is on the PATH's mount.
    Cache,
    /// `$TMPDIR` (or `/tmp`).
    TempDir,
    /// The top of the PATH's mount.
    MountTop,
    /// A directory between the mount top and the PATH.
    Above,
}

impl std::fmt::Display for PlaceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PlaceKind::Cache => "the cache directory",
            PlaceKind::TempDir => "$TMPDIR",
            PlaceKind::MountTop => "the mount top",
            PlaceKind::Above => "the directory",
        })
    }
}

/// A directory to calibrate in: on the PATH's mount, writable, outside every scanned tree.
#[derive(Debug)]
pub struct Place {
    pub kind: PlaceKind,
    pub path: PathBuf,
    /// Opened `O_PATH` (a base for `mkdirat`).
    pub fd: OwnedFd,
}

/// A place looked at and not used (or where the calibration failed), and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {} {why}", quote(.path))]
pub struct Passed {
    pub kind: PlaceKind,
    pub path: PathBuf,
    pub why: PassedWhy,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PassedWhy {
    #[error("is on another file system")]
    OtherFileSystem,
    #[error("is on another mount of it")]
    OtherMount,
    #[error("is inside the scanned tree")]
    Inside,
    #[error("is not writable")]
    NotWritable,
    #[error("is not a private directory of this user")]
    NotPrivate,
    /// Not used, for a reason worth a line even when another place works (someone else's,
    /// a symlink, writable by others).
    #[error("is not used: {0}")]
    Refused(String),
    #[error("cannot be opened: {}", errno_text(*.0))]
    Os(Errno),
    #[error("failed: {0}")]
    Failed(CalibrationError),
    /// Outside reclaim's cache directory, without `--estimate`.
    #[error("is not used without --estimate")]
    NotAsked,
}

/// Where a calibration for the directory PATH open as `root` may run, best first, and the
/// places passed over; without `anywhere` (`--estimate`) only reclaim's cache directory. `trees` are the device and inode of every directory PATH scanned: no
/// place is one of them or below one (its `..` chain, up to `/`, meets none of them), and every
/// place is on `root`'s mount, so the private directory made there is outside every scanned
/// tree. A place that cannot be told to be outside is passed over.
pub fn places(root: &OwnedFd, trees: &[Ident], anywhere: bool) -> Places {
    let mut found: Vec<Place> = Vec::new();
    let mut passed = Vec::new();
    let mut refused = Vec::new();
    let Ok(me) = dirfd::fstat(root) else {
        return Places {
            found,
            passed,
            refused,
        };
    };
    let mut candidates = Vec::new();
    match crate::sys::userdirs::cache_home() {
        Ok(Some(home)) => candidates.push((PlaceKind::Cache, home.join("reclaim"))),
        Ok(None) => {}
        Err(why) => refused.push(why.to_string()),
    }
    candidates.push((PlaceKind::TempDir, std::env::temp_dir()));
    if let Some(mount) = crate::sys::mounts::by_id(me.mnt_id) {
        let top = mount.point;
        candidates.push((PlaceKind::MountTop, top.clone()));
        if let Some(below) = crate::sys::mounts::fd_path(root)
            .as_deref()
            .and_then(|real| real.strip_prefix(&top).ok())
        {
            let mut at = top.clone();
            let parts: Vec<_> = below.components().collect();
            // Down to the PATH's parent: the PATH itself is a scanned tree.
            for c in parts.iter().take(parts.len().saturating_sub(1)) {
                at.push(c);
                candidates.push((PlaceKind::Above, at.clone()));
            }
        }
    }
    let mut seen: Vec<Ident> = Vec::new();
    for (kind, path) in candidates {
        let pass = |why: PassedWhy| Passed {
            kind,
            path: path.clone(),
            why,
        };
        // Without --estimate, nothing is written outside reclaim's own cache directory.
        if kind != PlaceKind::Cache && !anywhere {
            passed.push(pass(PassedWhy::NotAsked));
            continue;
        }
        let fd = match open_place(kind, &path, &me, trees) {
            Ok(fd) => fd,
            Err(why) => {
                passed.push(pass(why));
                continue;
            }
        };
        let facts = match dirfd::fstat(&fd) {
            Ok(f) => f,
            Err(e) => {
                passed.push(pass(PassedWhy::Os(e)));
                continue;
            }
        };
        if seen.contains(&facts.ident) {
            continue;
        }
        seen.push(facts.ident);
        let why = if facts.ident.dev != me.ident.dev {
            Some(PassedWhy::OtherFileSystem)
        } else if facts.mnt_id != me.mnt_id {
            Some(PassedWhy::OtherMount)
        } else if !outside(&fd, trees) {
            Some(PassedWhy::Inside)
        } else if rustix::fs::accessat(
            &fd,
            c".",
            rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
            AtFlags::EACCESS,
        )
        .is_err()
        {
            Some(PassedWhy::NotWritable)
        } else {
            None
        };
        match why {
            // Directories above the PATH that this user may not write are the rule: no news.
            Some(PassedWhy::NotWritable) if kind == PlaceKind::Above => {}
            Some(why) => passed.push(pass(why)),
            None => found.push(Place { kind, path, fd }),
        }
    }
    for p in &passed {
        if let PassedWhy::Refused(why) = &p.why {
            refused.push(format!("not using {} {}: {why}", p.kind, quote(&p.path)));
        }
    }
    Places {
        found,
        passed,
        refused,
    }
}

/// What `places` found.
#[derive(Debug)]
pub struct Places {
    /// Where a calibration may run, best first.
    pub found: Vec<Place>,
    /// The places passed over, and why.
    pub passed: Vec<Passed>,
    /// Lines worth saying even when a place was found: a cache directory (or the base the
    /// environment names for it) that is not used because someone else could own it.
    pub refused: Vec<String>,
}

/// Opens a candidate place `O_PATH`; the cache directory as `open_cache` does.
fn open_place(
    kind: PlaceKind,
    path: &Path,
    me: &dirfd::Facts,
    trees: &[Ident],
) -> Result<OwnedFd, PassedWhy> {
    if kind == PlaceKind::Cache {
        return open_cache(path, me, trees);
    }
    dirfd::open_dir_path_only(path).map_err(PassedWhy::Os)
}

/// Opens (making it if need be) the cache directory `path` for a calibration on the mount of
/// `me`. Its nearest existing ancestor is opened (following symlinks there: the user's own
/// `HOME`) and must be a directory of the caller or root that nobody else may write (for
/// root: root's, not group-writable either), on `me`'s mount and outside every scanned tree,
/// before anything is made: so nothing is ever made on another file system or inside a
/// scanned tree. Below it each missing component is made with `mkdirat` (mode 0700) and every
/// component opened with `O_NOFOLLOW`: a symlink in its place is refused, never followed.
/// `reclaim` itself must then be a directory of the caller's own with mode 0700; anything
/// else (another user made it first, root's for a user, open modes) is refused with why.
fn open_cache(path: &Path, me: &dirfd::Facts, trees: &[Ident]) -> Result<OwnedFd, PassedWhy> {
    let uid = rustix::process::geteuid().as_raw();
    // The nearest ancestor that exists, and the names below it down to `path`.
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    let mut at = path;
    let base = loop {
        match dirfd::open_dir_path_only(at) {
            Ok(fd) => break fd,
            Err(Errno::NOENT) => {
                let (Some(parent), Some(name)) = (at.parent(), at.file_name()) else {
                    return Err(PassedWhy::Os(Errno::NOENT));
                };
                missing.push(name);
                at = parent;
            }
            Err(e) => return Err(PassedWhy::Os(e)),
        }
    };
    if missing.is_empty() {
        // `path` itself exists (perhaps through a symlink, which the open followed): open it
        // again, below its parent, without following one.
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(PassedWhy::NotPrivate);
        };
        let parent = dirfd::open_dir_path_only(parent).map_err(PassedWhy::Os)?;
        trusted_above(&parent, uid, me, trees)?;
        return private_below(&parent, name, uid, true);
    }
    trusted_above(&base, uid, me, trees)?;
    let mut cur = base;
    while let Some(name) = missing.pop() {
        let last = missing.is_empty();
        cur = private_below(&cur, name, uid, last)?;
    }
    Ok(cur)
}

/// Checks the existing directory a cache directory is (or will be) made in: the caller's or
/// root's, written by nobody else (root: by neither group nor others), on `me`'s file system
/// and mount, outside every scanned tree.
fn trusted_above(
    fd: &OwnedFd,
    uid: u32,
    me: &dirfd::Facts,
    trees: &[Ident],
) -> Result<(), PassedWhy> {
    let st = rustix::fs::fstat(fd).map_err(PassedWhy::Os)?;
    let facts = dirfd::fstat(fd).map_err(PassedWhy::Os)?;
    if facts.ident.dev != me.ident.dev {
        return Err(PassedWhy::OtherFileSystem);
    }
    if facts.mnt_id != me.mnt_id {
        return Err(PassedWhy::OtherMount);
    }
    if !outside(fd, trees) {
        return Err(PassedWhy::Inside);
    }
    untrusted(&st, uid, false).map_or(Ok(()), |why| {
        Err(PassedWhy::Refused(format!("the directory it is in {why}")))
    })
}

/// Why a directory with `st` may not hold (or, `own`, be) a cache directory of `uid`: owned
/// by another user (`own`: by anyone but `uid`), writable by others (root: also by its group;
/// `own`: any access for others at all).
fn untrusted(st: &rustix::fs::Stat, uid: u32, own: bool) -> Option<String> {
    let owner_ok = if own {
        st.st_uid == uid
    } else {
        st.st_uid == 0 || st.st_uid == uid
    };
    if !owner_ok {
        return Some(format!(
            "is owned by uid {}, not by {}",
            st.st_uid,
            if uid == 0 {
                "root".to_string()
            } else if own {
                format!("uid {uid}")
            } else {
                format!("uid {uid} or root")
            }
        ));
    }
    let open = match (own, uid) {
        (true, _) => 0o077,
        (false, 0) => 0o022,
        (false, _) => 0o002,
    };
    (st.st_mode & open != 0).then(|| {
        format!(
            "has mode {:04o}{}",
            st.st_mode & 0o7777,
            if own {
                ", not 0700"
            } else {
                ": others may write in it"
            }
        )
    })
}

/// Makes directory `name` in `dir` (mode 0700) unless it exists, opens it without following a
/// symlink, and checks it: a directory of the caller's own, mode 0700 (`own`, the `reclaim`
/// directory), or one of the caller or root written by nobody else.
fn private_below(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    uid: u32,
    own: bool,
) -> Result<OwnedFd, PassedWhy> {
    let name = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(name))
        .map_err(|_| PassedWhy::NotPrivate)?;
    match crate::sys::safeopen::mkdir_at(dir, &name, 0o700) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(PassedWhy::Os(e)),
    }
    let fd = dirfd::open_dir_at_only(dir, &name).map_err(|e| match e {
        Errno::LOOP | Errno::NOTDIR => {
            let symlink = rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink());
            PassedWhy::Refused(
                if symlink {
                    "it is a symbolic link (never followed)"
                } else {
                    "it is not a directory"
                }
                .into(),
            )
        }
        e => PassedWhy::Os(e),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(PassedWhy::Os)?;
    match untrusted(&st, uid, own) {
        None => Ok(fd),
        Some(why) => Err(PassedWhy::Refused(format!("it {why}"))),
    }
}

/// Whether directory `fd` is none of `trees` and below none of them: its `..` chain (across
/// mounts, up to `/`) meets none. Unknown (an error, a chain too long) counts as inside.
pub(crate) fn outside(fd: &OwnedFd, trees: &[Ident]) -> bool {
    let up = |d: &OwnedFd| dirfd::open_dir_at_only(d, c"..");
    let Ok(mut cur) = dirfd::open_dir_at_only(fd, c".") else {
        return false;
    };
    let Ok(mut ident) = dirfd::fstat(&cur).map(|f| f.ident) else {
        return false;
    };
    for _ in 0..4096 {
        if trees.contains(&ident) {
            return false;
        }
        let Ok(parent) = up(&cur) else {
            return false;
        };
        let Ok(parent_ident) = dirfd::fstat(&parent).map(|f| f.ident) else {
            return false;
        };
        if parent_ident == ident {
            return true;
        }
        (cur, ident) = (parent, parent_ident);
    }
    false
}

/// What a removal of the scanned tree would do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Non-directory names (each an unlink).
    pub names: u64,
    /// Of those, names in directories of at least `engine::walk::BIG_DIR` entries: the engine unlinks
    /// those at about one directory's pace, since every unlink takes the directory's lock.
    pub big_dir_names: u64,
    pub dirs: u64,
}

/// Seconds `reclaim rm -r` would take for `work` at the rates of `c` (warm cache).
pub fn seconds(work: &Work, c: &Calibration) -> f64 {
    let rate = |r: f64| if r > 0.0 { r } else { f64::INFINITY };
    let big = work.big_dir_names.min(work.names);
    big as f64 / rate(c.unlinks_per_s_one_dir)
        + (work.names - big) as f64 / rate(c.unlinks_per_s)
        + work.dirs as f64 / rate(c.dirs_per_s)
}

/// Whether the file system of `fd` is mounted read-only (nothing can be removed there).
pub fn read_only(fd: impl AsFd) -> bool {
    rustix::fs::fstatvfs(fd).is_ok_and(|s| s.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY))
}

/// Calibrates in a private directory made inside `base` (shown as `shown`), which must be on
/// the device `dev`, with `threads` workers and files and directories as `sizes` says.
pub fn calibrate(
    base: &OwnedFd,
    shown: &Path,
    dev: u64,
    threads: usize,
    sizes: Sizes,
) -> Result<Calibration, CalibrationError> {
    let started = Instant::now();
    let threads = threads.max(1);
    // A Ctrl-C from here on ends the process only once the directory is cleaned up.
    let _deferred = DeferSignals::new();
    let mut private = Private::create(base, dev).map_err(|error| CalibrationError::Create {
        shown: shown.to_path_buf(),
        error,
    })?;
    let measured = measure(&mut private, threads, sizes);
    let cleaned = private.cleanup();
    let (files, one, par, dirs) = measured?;
    cleaned.map_err(|error| CalibrationError::Cleanup {
        shown: shown.to_path_buf(),
        error,
    })?;
    Ok(Calibration {
        path: shown.to_string_lossy().into_owned(),
        place: None,
        threads,
        files,
        unlinks_per_s_one_dir: one,
        unlinks_per_s: par,
        dirs_per_s: dirs,
        took_s: started.elapsed().as_secs_f64(),
    })
}

/// Creates the files and directories, times their removal; returns (files, unlinks/s in one
/// directory, unlinks/s across workers, directories/s).
fn measure(
    p: &mut Private,
    threads: usize,
    sizes: Sizes,
) -> Result<(u64, f64, f64, f64), CalibrationError> {
    let fail = |step: &'static str, error: Errno| CalibrationError::Step { step, error };
    // One directory, one worker.
    let one = p.add_sub(c"one").map_err(|e| fail("mkdir", e))?;
    let deadline = Instant::now() + CREATE_BUDGET;
    p.fill(one, sizes.one_dir_files, 0, deadline)
        .map_err(|e| fail("create", e))?;
    // One directory per worker, with files and empty subdirectories.
    let per = (sizes.parallel_files / threads).max(MIN_FILES);
    let deadline = Instant::now() + CREATE_BUDGET;
    let mut subs = Vec::new();
    for i in 0..threads {
        let name = CString::new(format!("w{i}")).expect("no NUL");
        let s = p.add_sub(&name).map_err(|e| fail("mkdir", e))?;
        p.fill(s, per, sizes.dirs_per_worker, deadline)
            .map_err(|e| fail("create", e))?;
        subs.push(s);
    }

    let mut buf = DirBuf::new(256 * 1024);
    let t = Instant::now();
    let n_one = p.subs[one].files;
    unlink_files(&p.subs[one].fd, n_one, &mut buf).map_err(|e| fail("unlink", e))?;
    let one_rate = n_one as f64 / t.elapsed().as_secs_f64().max(1e-9);
    p.subs[one].files = 0;

    let barrier = Barrier::new(subs.len());
    let (par_files, par_secs) = timed_parallel(&barrier, p, &subs, |sub, buf| {
        unlink_files(&sub.fd, sub.files, buf).map(|()| sub.files)
    })
    .map_err(|e| fail("unlink", e))?;
    for &s in &subs {
        p.subs[s].files = 0;
    }
    let (dirs, dir_secs) = timed_parallel(&barrier, p, &subs, |sub, buf| {
        for i in 0..sub.dirs {
            let name = dir_name(i);
            let d = dirfd::open_dir_at(&sub.fd, &name)?;
            dirfd::for_each_entry(&d, buf, |_, _, _| {})?;
            drop(d);
            crate::sys::safeopen::rmdir_at(&sub.fd, &name)?;
        }
        Ok(sub.dirs)
    })
    .map_err(|e| fail("rmdir", e))?;
    for &s in &subs {
        p.subs[s].dirs = 0;
    }
    Ok((
        (n_one + par_files) as u64,
        one_rate,
        par_files as f64 / par_secs.max(1e-9),
        dirs as f64 / dir_secs.max(1e-9),
    ))
}

/// Runs `f` on each sub in its own thread, started together; returns the summed counts and
/// the wall time.
fn timed_parallel(
    barrier: &Barrier,
    p: &Private,
    subs: &[usize],
    f: impl Fn(&Sub, &mut DirBuf) -> Result<usize, Errno> + Sync,
) -> Result<(usize, f64), Errno> {
    let results: Vec<Result<(usize, Instant, Instant), Errno>> = std::thread::scope(|s| {
        let handles: Vec<_> = subs
            .iter()
            .map(|&i| {
                let sub = &p.subs[i];
                let f = &f;
                s.spawn(move || {
                    let mut buf = DirBuf::new(64 * 1024);
                    barrier.wait();
                    let t0 = Instant::now();
                    let n = f(sub, &mut buf)?;
                    Ok((n, t0, Instant::now()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("calibration worker panicked"))
            .collect()
    });
    let mut total = 0;
    let mut first: Option<Instant> = None;
    let mut last: Option<Instant> = None;
    for r in results {
        let (n, t0, t1) = r?;
        total += n;
        first = Some(first.map_or(t0, |f| f.min(t0)));
        last = Some(last.map_or(t1, |l| l.max(t1)));
    }
    let secs = match (first, last) {
        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    Ok((total, secs))
}

/// Lists `dir` (as the engine does before unlinking) and unlinks `f0..f{n}`.
fn unlink_files(dir: &OwnedFd, n: usize, buf: &mut DirBuf) -> Result<(), Errno> {
    dirfd::for_each_entry(dir, buf, |_, _, _| {})?;
    for i in 0..n {
        crate::sys::safeopen::unlink_at(dir, file_name(i))?;
    }
    Ok(())
}

fn file_name(i: usize) -> CString {
    CString::new(format!("f{i}")).expect("no NUL")
}

fn dir_name(i: usize) -> CString {
    CString::new(format!("d{i}")).expect("no NUL")
}

/// Blocks the signals that end a process from a terminal or a service manager (INT, TERM,
/// HUP, QUIT) in this thread and the threads it starts, until dropped; one that arrived
/// meanwhile is delivered then. (Called while no other thread of the process runs, so none
/// can take the signal instead.)
struct DeferSignals {
    old: libc::sigset_t,
}

impl DeferSignals {
    fn new() -> Self {
        // SAFETY: plain signal-set manipulation on local, zero-initialised sigset_t values;
        // pthread_sigmask changes only this thread's mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::sigaddset(&mut set, sig);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            DeferSignals { old }
        }
    }
}

impl Drop for DeferSignals {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `new`, in the same thread.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}

/// A subdirectory of the private directory, with how many of its `f<i>` files and `d<i>`
/// directories exist (were created and not yet removed).
struct Sub {
    name: CString,
    fd: OwnedFd,
    files: usize,
    dirs: usize,
}

/// The private calibration directory. Everything in it was created here, under names this
/// type generated; dropping it removes exactly those names and then the directory.
struct Private<'a> {
    base: &'a OwnedFd,
    name: CString,
    fd: Option<OwnedFd>,
    subs: Vec<Sub>,
}

impl<'a> Private<'a> {
    /// `mkdirat` under a fresh random name, then opened without following symlinks and
    /// checked: a directory owned by us, mode 0700, on device `dev`, empty.
    fn create(base: &'a OwnedFd, dev: u64) -> Result<Private<'a>, PrivateDirError> {
        let pid = std::process::id();
        for attempt in 0..16u32 {
            let nonce = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                ^ (u64::from(attempt) << 48);
            let name =
                CString::new(format!(".reclaim-scan-calibration.{pid}.{nonce:x}")).expect("no NUL");
            match crate::sys::safeopen::mkdir_at(base, &name, 0o700) {
                Ok(()) => {}
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(PrivateDirError::Os(e)),
            }
            let fd = dirfd::open_dir_at(base, &name).map_err(PrivateDirError::Os)?;
            let st = statx(
                &fd,
                c"",
                AtFlags::EMPTY_PATH,
                StatxFlags::TYPE | StatxFlags::MODE | StatxFlags::UID,
            )
            .map_err(PrivateDirError::Os)?;
            let ours = st.stx_uid == rustix::process::geteuid().as_raw()
                && u32::from(st.stx_mode) & 0o7777 == 0o700;
            let mut entries = 0;
            let mut buf = DirBuf::new(4096);
            dirfd::for_each_entry(&fd, &mut buf, |_, _, _| entries += 1)
                .map_err(PrivateDirError::Os)?;
            if !ours || entries != 0 {
                // Not the directory we made (replaced under us): leave it alone.
                return Err(PrivateDirError::Changed);
            }
            if rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor) != dev {
                drop(fd);
                let _ = crate::sys::safeopen::rmdir_at(base, &name);
                return Err(PrivateDirError::OtherFileSystem);
            }
            return Ok(Private {
                base,
                name,
                fd: Some(fd),
                subs: Vec::new(),
            });
        }
        Err(PrivateDirError::NoFreeName)
    }

    fn dir(&self) -> &OwnedFd {
        self.fd.as_ref().expect("open until cleanup")
    }

    fn add_sub(&mut self, name: &std::ffi::CStr) -> Result<usize, Errno> {
        crate::sys::safeopen::mkdir_at(self.dir(), name, 0o700)?;
        let fd = match dirfd::open_dir_at(self.dir(), name) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = crate::sys::safeopen::rmdir_at(self.dir(), name);
                return Err(e);
            }
        };
        self.subs.push(Sub {
            name: name.to_owned(),
            fd,
            files: 0,
            dirs: 0,
        });
        Ok(self.subs.len() - 1)
    }

    /// Creates up to `files` empty files and `dirs` empty directories in sub `i` (fewer after
    /// `deadline`, but at least `MIN_FILES` and `MIN_DIRS`).
    fn fill(
        &mut self,
        i: usize,
        files: usize,
        dirs: usize,
        deadline: Instant,
    ) -> Result<(), Errno> {
        let sub = &mut self.subs[i];
        for n in 0..files {
            if n >= MIN_FILES && n % 16 == 0 && Instant::now() > deadline {
                break;
            }
            let fd = crate::sys::safeopen::create_at(
                &sub.fd,
                &file_name(n),
                OFlags::WRONLY,
                0o600,
                false,
            )?;
            drop(fd);
            sub.files = n + 1;
        }
        for n in 0..dirs {
            if n >= MIN_DIRS && Instant::now() > deadline {
                break;
            }
            crate::sys::safeopen::mkdir_at(&sub.fd, dir_name(n), 0o700)?;
            sub.dirs = n + 1;
        }
        Ok(())
    }

    /// Removes every name created here, then the directory; the first error, if any.
    fn cleanup(&mut self) -> Result<(), Errno> {
        let Some(fd) = self.fd.take() else {
            return Ok(());
        };
        let mut first: Result<(), Errno> = Ok(());
        let mut note = |r: Result<(), Errno>| {
            if let (Err(e), Ok(())) = (r, &first) {
                if e != Errno::NOENT {
                    first = Err(e);
                }
            }
        };
        for sub in self.subs.drain(..) {
            for i in 0..sub.files {
                note(crate::sys::safeopen::unlink_at(&sub.fd, file_name(i)));
            }
            for i in 0..sub.dirs {
                note(crate::sys::safeopen::rmdir_at(&sub.fd, dir_name(i)));
            }
            drop(sub.fd);
            note(crate::sys::safeopen::rmdir_at(&fd, &sub.name));
        }
        drop(fd);
        note(crate::sys::safeopen::rmdir_at(self.base, &self.name));
        first
    }
}

impl Drop for Private<'_> {
    fn drop(&mut self) {
        let _ = self.cleanup();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal() -> Calibration {
        Calibration {
            path: "/tmp".into(),
            place: Some(PlaceKind::TempDir),
            threads: 2,
            files: 4000,
            unlinks_per_s: 100_000.0,
            unlinks_per_s_one_dir: 50_000.0,
            dirs_per_s: 10_000.0,
            took_s: 0.1,
        }
    }

    #[test]
    fn scales_by_counts() {
        let w = Work {
            names: 1_000_000,
            big_dir_names: 100_000,
            dirs: 10_000,
        };
        let s = seconds(&w, &cal());
        assert!((s - (2.0 + 9.0 + 1.0)).abs() < 1e-9, "{s}");
        assert_eq!(seconds(&Work::default(), &cal()), 0.0);
    }

    #[test]
    fn a_small_tree_is_calibrated_no_larger_than_it_is() {
        let twenty = Work {
            names: 20,
            big_dir_names: 0,
            dirs: 1,
        };
        assert!(small(&twenty));
        let s = Sizes::for_work(&twenty);
        assert_eq!((s.parallel_files, s.dirs_per_worker), (MIN_FILES, MIN_DIRS));
        assert!(s.one_dir_files <= MIN_FILES);
        let mid = Work {
            names: 2_000,
            big_dir_names: 0,
            dirs: 20,
        };
        assert_eq!(Sizes::for_work(&mid).parallel_files, 2_000);
        assert_eq!(Sizes::for_work(&mid).dirs_per_worker, 20);
        let big = Work {
            names: 1_000_000,
            big_dir_names: 0,
            dirs: 10_000,
        };
        assert!(!small(&big));
        assert_eq!(Sizes::for_work(&big), Sizes::FULL);
    }

    #[test]
    fn calibrates_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let base = dirfd::open_dir_path(dir.path()).unwrap();
        let dev = dirfd::fstat(&base).unwrap().ident.dev;
        let c = calibrate(&base, dir.path(), dev, 2, Sizes::FULL).unwrap();
        assert!(
            c.files > 0 && c.unlinks_per_s > 0.0 && c.dirs_per_s > 0.0,
            "{c:?}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn refuses_another_device_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let base = dirfd::open_dir_path(dir.path()).unwrap();
        let dev = dirfd::fstat(&base).unwrap().ident.dev;
        assert!(calibrate(&base, dir.path(), dev ^ 1, 2, Sizes::FULL).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
