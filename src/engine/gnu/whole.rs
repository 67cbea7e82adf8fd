//! The fast path of `rm` mode: a directory operand goes to reclaim's parallel engine when
//! nothing needs GNU's order of work (no `-v`, no prompt), and the paths that could not be
//! removed are then given back in the order GNU `rm` would have met them. Those paths' parent
//! directories are still there (a failure keeps every ancestor), so their order is read back
//! from the directories themselves: position in a fresh listing (by inode above 10,000
//! entries, as fts), a directory's own failure after those inside it.

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{nonexistent, Rules};
use crate::engine::remove::{self, Counters, DirTarget, Quiet};
use crate::sys::dirfd::{self, DirBuf, Ident};
use crate::sys::error::{Failure, Reason};

/// Removes the directory operand `name` in `parent` (expected to be `ident`, shown as `path`)
/// with everything in it; `Err`: what could not be removed, in GNU's order.
pub(super) fn remove(
    o: &Rules,
    large: &Arc<crate::engine::shrink::TreeFiles>,
    parent: BorrowedFd<'_>,
    name: &CStr,
    path: &[u8],
    ident: Ident,
) -> Result<(), Vec<Failure>> {
    // The engine holds its own fd of the parent (the current directory for an operand).
    let base = if parent.as_raw_fd() == rustix::fs::CWD.as_raw_fd() {
        dirfd::open_dir_path_only(std::path::Path::new("."))
    } else {
        rustix::io::fcntl_dupfd_cloexec(parent, 3)
    };
    let base = match base {
        Ok(fd) => fd,
        Err(e) => {
            return Err(vec![Failure {
                path: PathBuf::from(OsStr::from_bytes(path)),
                reason: Reason::Os(e),
            }])
        }
    };
    let base = Arc::new(base);
    let opts = remove::Settings {
        cross_mounts: true,
        large_files: Some(large.clone()),
        report_vanished: true,
        // GNU rm walks a subvolume (and fails where it fails inside).
        destroy_subvolumes: false,
        // On this thread until the tree proves big, then its file system's profile and
        // measured pool (as GNU rm, no governor).
        start: Some(Arc::new(remove::Start::default())),
        ..remove::Settings::default()
    };
    // The operand's directory, held open for reading the order back afterwards: its
    // path may name it through a symlink inside it (`a/` with `a -> .`), gone by then.
    let root = dirfd::open_dir_at(&*base, name)
        .ok()
        .filter(|fd| dirfd::fstat(fd).is_ok_and(|f| f.ident == ident));
    let display = PathBuf::from(OsStr::from_bytes(path));
    let target = DirTarget {
        base: base.clone(),
        name: name.to_owned(),
        display: display.clone(),
        ident,
    };
    let outcome = remove::remove_trees(vec![target], &opts, &Counters::default(), &Quiet);
    let mut failures: Vec<Failure> = outcome
        .failures
        .into_iter()
        .filter(|f| !(o.ignore_missing && matches!(f.reason, Reason::Os(e) if nonexistent(e))))
        .collect();
    if failures.is_empty() {
        return Ok(());
    }
    in_gnu_order(root.as_ref(), &display, &mut failures);
    Err(failures)
}

/// Sorts `failures` (paths under `display`, the tree opened as `root`) into fts' order.
fn in_gnu_order(root: Option<&OwnedFd>, display: &Path, failures: &mut [Failure]) {
    let mut order = Positions {
        root,
        display,
        known: HashMap::new(),
        buf: DirBuf::new(64 * 1024),
    };
    let keys: Vec<Vec<(usize, Vec<u8>)>> = failures.iter().map(|f| order.key(&f.path)).collect();
    let mut idx: Vec<usize> = (0..failures.len()).collect();
    idx.sort_by(|&a, &b| {
        let (ka, kb) = (&keys[a], &keys[b]);
        // Inside a directory before the directory itself (post-order).
        if ka.len() != kb.len() && ka.starts_with(kb) {
            return std::cmp::Ordering::Less;
        }
        if ka.len() != kb.len() && kb.starts_with(ka) {
            return std::cmp::Ordering::Greater;
        }
        ka.cmp(kb)
    });
    let sorted: Vec<Failure> = idx.iter().map(|&i| failures[i].clone()).collect();
    failures.clone_from_slice(&sorted);
}

/// Listing positions of names, per directory below the operand.
struct Positions<'a> {
    root: Option<&'a OwnedFd>,
    display: &'a Path,
    known: HashMap<Vec<u8>, HashMap<Vec<u8>, usize>>,
    buf: DirBuf,
}

impl Positions<'_> {
    /// The sort key of `path`: per component below the operand, its position in its parent's
    /// listing (unknown names last, by name).
    fn key(&mut self, path: &Path) -> Vec<(usize, Vec<u8>)> {
        let Ok(rel) = path.strip_prefix(self.display) else {
            return Vec::new();
        };
        let comps: Vec<Vec<u8>> = rel
            .components()
            .map(|c| c.as_os_str().as_bytes().to_vec())
            .collect();
        let mut key = Vec::with_capacity(comps.len());
        for i in 0..comps.len() {
            let dir = comps[..i].join(&b'/');
            let positions = self.positions(&dir, &comps[..i]);
            let pos = positions.get(&comps[i]).copied().unwrap_or(usize::MAX);
            key.push((pos, comps[i].clone()));
        }
        key
    }

    fn positions(&mut self, key: &[u8], comps: &[Vec<u8>]) -> &HashMap<Vec<u8>, usize> {
        if !self.known.contains_key(key) {
            let listed = self.list(comps).unwrap_or_default();
            self.known.insert(key.to_vec(), listed);
        }
        &self.known[key]
    }

    /// Opens the directory `comps` below the operand (never following a symlink) and lists it.
    fn list(&mut self, comps: &[Vec<u8>]) -> Option<HashMap<Vec<u8>, usize>> {
        // A fresh open of the same directory (a dup would share the read position).
        let mut fd: OwnedFd = dirfd::open_dir_at(self.root?, c".").ok()?;
        for c in comps {
            let name = CString::new(c.clone()).ok()?;
            fd = dirfd::open_dir_at(&fd, &name).ok()?;
        }
        let mut entries: Vec<(Vec<u8>, u64)> = Vec::new();
        dirfd::for_each_entry(&fd, &mut self.buf, |n, _, ino| {
            entries.push((n.to_bytes().to_vec(), ino));
        })
        .ok()?;
        if entries.len() > crate::engine::walk::BIG_DIR && super::walk::inode_sort_helps(fd.as_fd())
        {
            entries.sort_by_key(|e| e.1);
        }
        Some(
            entries
                .into_iter()
                .enumerate()
                .map(|(i, (n, _))| (n, i))
                .collect(),
        )
    }
}
