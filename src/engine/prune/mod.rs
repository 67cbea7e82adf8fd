//! `reclaim prune`'s library half: lists the entries of the given directories (filtered by
//! name; their times and allocated bytes) for the retention rules (`policy.rs`, a pure
//! function), and lays out the plan entry by entry. Removing the chosen entries is
//! `reaper::rm`'s (the same path as `reclaim rm -r`). It only ever looks at direct entries of
//! the directories it was given, never follows a symlink, and never lists names starting with
//! a dot unless asked (so never `.reclaim`), a mount point (another file system, or a bind
//! mount of the same one), or the `lost+found` at the top of a mount (fsck's, not data).
//! Without `--match`, only the names of the dominant shape are candidates (`shape`).

pub mod policy;
pub mod shape;

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{statx, AtFlags, FileType, StatxFlags};
use rustix::io::Errno;
use serde::Serialize;

use crate::engine::remove;
use crate::sys::dirfd;
use policy::{Candidate, Plan, SortBy, Space};

/// Which entries of a pruned directory are candidates.
#[derive(Clone, Debug, Default)]
pub struct Names {
    /// Only names matching this shell pattern (`--match`).
    pub pattern: Option<crate::engine::glob::Name>,
    /// Names starting with a dot too (`--all`).
    pub all: bool,
}

/// One entry of a pruned directory.
#[derive(Debug, Serialize)]
pub struct Entry {
    #[serde(flatten)]
    pub path: crate::sys::quote::PathField,
    pub kind: &'static str,
    pub mtime_unix: f64,
    pub allocated: Option<u64>,
    pub files: Option<u64>,
    pub remove: bool,
    pub reasons: Vec<String>,
    /// The path exactly (for the removal).
    #[serde(skip)]
    pub path_os: PathBuf,
}

/// A listed entry: the policy's candidate, and its path, kind and file count.
pub type Listed = (Candidate, (PathBuf, &'static str, Option<u64>));

/// Why a directory could not be listed (then nothing is removed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListError {
    /// Opening, examining or reading the directory itself failed.
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(Errno),
    /// One of its entries could not be examined.
    #[error("{}: {}", crate::sys::quote::quote(.path), crate::sys::error::errno_text(*.error))]
    Entry { path: PathBuf, error: Errno },
}

/// The entries of `dir` (filtered by name), with their times and allocated bytes (a
/// directory's as the engine's dry run counts them, one walk each); the file system's device
/// and space.
pub fn list(dir: &Path, only: &Names) -> Result<(Vec<Listed>, u64, Space), ListError> {
    let fd = dirfd::open_dir_path(dir).map_err(ListError::Os)?;
    let fd = Arc::new(fd);
    let me = dirfd::fstat(&*fd).map_err(ListError::Os)?;
    let dev = me.ident.dev;
    let top = mount_top(&fd, &me);
    let vfs = rustix::fs::fstatvfs(&*fd).map_err(ListError::Os)?;
    let sp = Space {
        total: vfs.f_blocks * vfs.f_frsize,
        avail: vfs.f_bavail * vfs.f_frsize,
        pending: 0,
    };
    let mut names = Vec::new();
    let list = dirfd::open_dir_at(&*fd, c".").map_err(ListError::Os)?;
    let mut buf = dirfd::DirBuf::new(256 << 10);
    dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
        let b = name.to_bytes();
        if (b.starts_with(b".") && !only.all)
            || crate::trash::is_trash_name(b)
            || (top && b == b"lost+found")
        {
            return;
        }
        if let Some(p) = &only.pattern {
            if !p.is_match(name.to_bytes()) {
                return;
            }
        }
        names.push(name.to_owned());
    })
    .map_err(ListError::Os)?;
    let mut out = Vec::new();
    for name in names {
        let st = match statx(&*fd, &name, AtFlags::SYMLINK_NOFOLLOW, STATX) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(error) => {
                return Err(ListError::Entry {
                    path: dir.join(OsStr::from_bytes(name.to_bytes())),
                    error,
                })
            }
        };
        let st_dev = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
        if st_dev != dev || st.stx_mnt_id != me.mnt_id {
            // A mount point: not an entry of this directory's file system.
            continue;
        }
        let ft = FileType::from_raw_mode(st.stx_mode.into());
        let mtime = st.stx_mtime.tv_sec as f64 + f64::from(st.stx_mtime.tv_nsec) * 1e-9;
        let (allocated, files) = if ft == FileType::Directory {
            let (b, f) = remove::measure(&fd, &name, &dir.join(OsStr::from_bytes(name.to_bytes())));
            (Some(b), Some(f))
        } else {
            let own = if st.stx_nlink <= 1 {
                st.stx_blocks * 512
            } else {
                0
            };
            (Some(own), Some(1))
        };
        out.push((
            Candidate {
                name: String::from_utf8_lossy(name.to_bytes()).into_owned(),
                mtime,
                allocated,
                dev,
            },
            (
                dir.join(OsStr::from_bytes(name.to_bytes())),
                crate::trash::hide::kind(ft),
                files,
            ),
        ));
    }
    Ok((out, dev, sp))
}

/// What `list` asks `statx` for.
const STATX: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::MODE)
    .union(StatxFlags::NLINK)
    .union(StatxFlags::BLOCKS)
    .union(StatxFlags::MTIME)
    .union(StatxFlags::MNT_ID);

/// Whether directory `fd` (whose facts are `me`) is the top of a mount: its `..` is on
/// another mount, or is itself (`/`). Unknown counts as a top (then `lost+found` is left out).
fn mount_top(fd: &OwnedFd, me: &dirfd::Facts) -> bool {
    match dirfd::open_dir_at_only(fd, c"..").and_then(dirfd::fstat) {
        Ok(up) => up.mnt_id != me.mnt_id || up.ident == me.ident,
        Err(_) => true,
    }
}

/// The plan's entries, newest first, each with its decision.
pub fn plan_entries(listed: &[Listed], plan: &Plan, sort: SortBy) -> Vec<Entry> {
    let mut plan_entries: Vec<Entry> = listed
        .iter()
        .zip(&plan.decisions)
        .map(|((c, (path, kind, files)), d)| Entry {
            path: crate::sys::quote::PathField::new(path),
            kind,
            mtime_unix: c.mtime,
            allocated: c.allocated,
            files: *files,
            remove: d.remove,
            reasons: d.reasons.clone(),
            path_os: path.clone(),
        })
        .collect();
    let cands: Vec<Candidate> = listed.iter().map(|(c, _)| c.clone()).collect();
    let order = policy::newest_first(&cands, sort);
    let mut slots: Vec<Option<Entry>> = plan_entries.drain(..).map(Some).collect();
    order.iter().filter_map(|&i| slots[i].take()).collect()
}
