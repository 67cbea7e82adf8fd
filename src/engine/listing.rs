//! A listing pass: counts a tree's files and directories from its directories' entries alone
//! (`getdents64` and `d_type`; an `lstat` only where the file system gives no type), run
//! ahead of the tree's removal so that a progress line can show "N of TOTAL files" and an ETA
//! without a stat per file. Only reads; opens every directory relative to its parent with
//! `O_NOFOLLOW|O_DIRECTORY` and never leaves the tree's device.

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rustix::fs::FileType;

use crate::sys::dirfd;

/// What a listing pass counted: non-directories and directories (the top included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Listed {
    pub files: u64,
    pub dirs: u64,
}

/// Counts the tree `name` in `base`. `None` if it could not count all of it: a directory went
/// away before it was listed (the removal got there first), could not be opened, or `stop`
/// was set (the removal is over).
pub fn count(base: &Arc<OwnedFd>, name: &CStr, stop: &AtomicBool) -> Option<Listed> {
    let top = dirfd::lstat_at(&**base, name).ok()?;
    if top.file_type != FileType::Directory {
        return Some(Listed { files: 1, dirs: 0 });
    }
    let dev = top.ident.dev;
    let mut n = Listed::default();
    let mut buf = dirfd::DirBuf::new(64 << 10);
    // Depth first, each pending directory with its parent's fd: a parent stays open only while
    // a child of it waits, so a deep chain holds few fds.
    let mut todo: Vec<(Arc<OwnedFd>, CString)> = vec![(base.clone(), name.to_owned())];
    while let Some((parent, dir)) = todo.pop() {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let fd = Arc::new(dirfd::open_dir_at(&*parent, &dir).ok()?);
        drop(parent);
        if dirfd::fstat(&*fd).ok()?.ident.dev != dev {
            // Another file system (the engine does not enter it either).
            continue;
        }
        n.dirs += 1;
        let mut subdirs = Vec::new();
        let mut unknown = Vec::new();
        dirfd::for_each_entry(&fd, &mut buf, |child, ty, _| match ty {
            FileType::Directory => subdirs.push(child.to_owned()),
            FileType::Unknown => unknown.push(child.to_owned()),
            _ => n.files += 1,
        })
        .ok()?;
        for child in unknown {
            match dirfd::lstat_at(&*fd, &child).ok()?.file_type {
                FileType::Directory => subdirs.push(child),
                _ => n.files += 1,
            }
        }
        todo.extend(subdirs.into_iter().map(|c| (fd.clone(), c)));
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_files_and_directories_of_a_tree() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t");
        for i in 0..5 {
            std::fs::create_dir_all(t.join(format!("d{i}/e"))).unwrap();
            std::fs::write(t.join(format!("d{i}/f")), "x").unwrap();
            std::os::unix::fs::symlink("f", t.join(format!("d{i}/e/l"))).unwrap();
        }
        let base = Arc::new(dirfd::open_dir_path(d.path()).unwrap());
        let stop = AtomicBool::new(false);
        assert_eq!(
            count(&base, c"t", &stop),
            Some(Listed {
                files: 10,
                dirs: 11
            })
        );
        stop.store(true, Ordering::Relaxed);
        assert_eq!(count(&base, c"t", &stop), None);
        assert_eq!(count(&base, c"missing", &AtomicBool::new(false)), None);
    }
}
