//! The bench's scratch directory: made where no other user can swap it, reached only through
//! its fd, emptied and removed through the same fd when dropped. The engine's because it
//! removes (the command layer never does).

use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Why the scratch directory could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    #[error("cannot work in {}: {why}", crate::sys::quote::quote(.dir))]
    Cannot {
        dir: std::path::PathBuf,
        why: String,
    },
    #[error("cannot make {}: {}", crate::sys::quote::quote(.0), .1)]
    Make(std::path::PathBuf, String),
    #[error("{} was moved or replaced while the bench ran; stopping", crate::sys::quote::quote(.0))]
    Moved(std::path::PathBuf),
}

/// The bench's scratch directory: made (0700) in the parent's fd under a fresh name, held open,
/// and reached through `/proc/<pid>/fd/<n>` (also by the removal commands it runs), so a swap
/// of its name for a symlink changes nothing. Emptied and removed on drop, through the same fd;
/// its name in the parent is removed only while it is still this directory.
pub struct Scratch {
    parent: std::os::fd::OwnedFd,
    name: std::ffi::CString,
    fd: std::os::fd::OwnedFd,
    ident: crate::sys::dirfd::Ident,
    /// `/proc/<pid>/fd/<n>`.
    path: std::path::PathBuf,
    /// Where it was made, for messages.
    pub shown: std::path::PathBuf,
}

impl Scratch {
    pub fn make(parent: &Path) -> Result<Scratch, ScratchError> {
        use crate::sys::dirfd;
        let cannot = |why: String| ScratchError::Cannot {
            dir: parent.to_path_buf(),
            why,
        };
        let parent_fd =
            dirfd::open_dir_path(parent).map_err(|e| cannot(crate::sys::error::errno_text(e)))?;
        let st =
            rustix::fs::fstat(&parent_fd).map_err(|e| cannot(crate::sys::error::errno_text(e)))?;
        let me = rustix::process::geteuid().as_raw();
        if let Some(why) = dirfd::others_may_move_names(&st, me) {
            return Err(cannot(format!(
                "{why}, so its scratch directory could be swapped for another; give a \
                 directory only you or root may change, or a sticky one like /tmp"
            )));
        }
        for _ in 0..8 {
            let name = format!("reclaim-bench-{}", crate::trash::safefile::random_hex(6));
            let name = std::ffi::CString::new(name).expect("no NUL");
            match crate::sys::safeopen::mkdir_at(&parent_fd, &name, 0o700) {
                Ok(()) => {}
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => return Err(cannot(crate::sys::error::errno_text(e))),
            }
            let fd = dirfd::open_dir_at(&parent_fd, &name)
                .map_err(|e| cannot(crate::sys::error::errno_text(e)))?;
            let facts = dirfd::fstat(&fd).map_err(|e| cannot(crate::sys::error::errno_text(e)))?;
            let own =
                rustix::fs::fstat(&fd).map_err(|e| cannot(crate::sys::error::errno_text(e)))?;
            if own.st_uid != me
                || facts.ident.dev != dirfd::fstat(&parent_fd).map_or(0, |f| f.ident.dev)
            {
                return Err(cannot("its new scratch directory was replaced".into()));
            }
            let path = format!("/proc/{}/fd/{}", std::process::id(), fd.as_raw_fd()).into();
            let shown = parent.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
            return Ok(Scratch {
                parent: parent_fd,
                name,
                fd,
                ident: facts.ident,
                path,
                shown,
            });
        }
        Err(cannot("no fresh name for a scratch directory".into()))
    }

    /// Where to reach what is inside (`/proc/<pid>/fd/<n>`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the directory `dir` (a name directly inside, reached as `path()`'s child).
    pub fn make_dir(&self, dir: &Path) -> Result<(), ScratchError> {
        let name = dir
            .file_name()
            .and_then(|n| std::ffi::CString::new(n.as_bytes()).ok())
            .ok_or_else(|| ScratchError::Make(dir.to_path_buf(), "no name".into()))?;
        crate::sys::safeopen::mkdir_at(&self.fd, &name, 0o755)
            .map_err(|e| ScratchError::Make(dir.to_path_buf(), crate::sys::error::errno_text(e)))
    }

    /// Fails if the scratch directory is no longer at its name (someone moved it).
    pub fn check(&self) -> Result<(), ScratchError> {
        match crate::sys::dirfd::lstat_at(&self.parent, &self.name) {
            Ok(f) if f.ident == self.ident => Ok(()),
            _ => Err(ScratchError::Moved(self.shown.clone())),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // What is inside, through the fd (each a real directory: remove_dir_all never follows
        // a symlink it meets).
        let mut names = Vec::new();
        if let Ok(list) = crate::trash::reopen(&self.fd) {
            let mut buf = crate::sys::dirfd::DirBuf::new(8 << 10);
            let _ = crate::sys::dirfd::for_each_entry(&list, &mut buf, |n, _, _| {
                names.push(std::ffi::OsStr::from_bytes(n.to_bytes()).to_owned())
            });
        }
        for n in names {
            if let Ok(n) = std::ffi::CString::new(n.as_bytes()) {
                let _ = crate::sys::safeopen::remove_tree_at(&self.fd, &n);
            }
        }
        if crate::sys::dirfd::lstat_at(&self.parent, &self.name)
            .is_ok_and(|f| f.ident == self.ident)
        {
            let _ = crate::sys::safeopen::rmdir_at(&self.parent, &self.name);
        }
    }
}
