//! Command-line arguments turned into safe removal targets: refuses `.`/`..` and anything that
//! resolves to `/` (by device and inode, not by string), opens each argument's parent directory
//! once, and decides, from `lstat` of the name in that fd, whether it is a tree or a single
//! entry. It never follows the final component of an argument.

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::FileType;
use rustix::io::Errno;

use crate::engine::remove::DirTarget;
use crate::sys::dirfd::{self, Ident};
use crate::sys::error::Reason;
use crate::sys::space::FreeSpace;

/// One argument, checked and ready to remove.
pub enum Target {
    /// A directory to remove recursively.
    Tree(DirTarget),
    /// A non-directory (file, symlink, fifo, ...) or, with `-d`, a directory to `rmdir`.
    Entry {
        base: Arc<OwnedFd>,
        name: CString,
        display: PathBuf,
        is_dir: bool,
        allocated: u64,
        /// What `lstat` said (gentle removal re-checks it on the opened fd).
        facts: dirfd::Facts,
    },
}

/// Why an argument is not a target. `Missing` is kept apart because `-f` silences it.
#[derive(Debug, PartialEq, Eq)]
pub enum Rejection {
    Missing,
    Refused(Reason),
}

/// The root directory's identity, which no argument may have (GNU mode asks it too, before
/// its own walk: `engine::gnu`). A check that cannot be made fails closed: the caller refuses.
pub fn root_ident() -> Result<Ident, Errno> {
    dirfd::lstat_at(rustix::fs::CWD, c"/").map(|f| f.ident)
}

/// Resolves arguments, sharing one open fd per distinct parent directory.
pub struct Resolver {
    /// `/`'s identity; where it could not be stated, every argument is refused.
    root: Result<Ident, Errno>,
    parents: HashMap<PathBuf, Arc<OwnedFd>>,
    /// Free space of each file system met, read before anything on it was removed.
    pub space_before: FreeSpace,
    pub recursive: bool,
    pub dir_ok: bool,
    /// `--preserve-root=all`: refuse a directory argument on another device than its parent.
    pub preserve_all_root: bool,
    /// Read each file system's free space (`space_before`, `space_now`): the bytes a removal
    /// freed are to be said.
    pub count_space: bool,
}

impl Resolver {
    pub fn new(recursive: bool, dir_ok: bool) -> Self {
        Resolver {
            root: root_ident(),
            parents: HashMap::new(),
            space_before: FreeSpace::default(),
            recursive,
            dir_ok,
            preserve_all_root: false,
            count_space: true,
        }
    }

    /// Checks one argument.
    pub fn resolve(&mut self, arg: &Path) -> Result<Target, Rejection> {
        let bytes = arg.as_os_str().as_bytes();
        if bytes.is_empty() {
            return Err(Rejection::Missing);
        }
        let trimmed = trim_trailing_slashes(bytes);
        let slash = trimmed.len() != bytes.len();
        // Compare with "/" by identity: "/", "//", "/tmp/..", a symlink to "/", a bind mount.
        let root = self
            .root
            .map_err(|e| Rejection::Refused(Reason::RootUnknown(e)))?;
        if trimmed.is_empty() || self.resolves_to_root(root, arg, slash) {
            return Err(Rejection::Refused(Reason::Root));
        }
        let (parent, name) = match trimmed.iter().rposition(|&b| b == b'/') {
            Some(i) => (&trimmed[..i.max(1)], &trimmed[i + 1..]),
            None => (&b"."[..], trimmed),
        };
        let dot = name == b"." || name == b"..";
        let name = CString::new(name).map_err(|_| Rejection::Refused(Reason::Os(Errno::INVAL)))?;
        // The parent first: `file/.` names nothing (ENOTDIR, which -f ignores, as GNU's).
        let base = self.parent_fd(Path::new(OsStr::from_bytes(parent)))?;
        if dot {
            return Err(Rejection::Refused(Reason::DotOrDotDot));
        }
        let facts = match dirfd::lstat_at(&*base, &name) {
            Ok(f) => f,
            Err(Errno::NOENT) => return Err(Rejection::Missing),
            Err(e) => return Err(Rejection::Refused(Reason::Os(e))),
        };
        // As GNU rm shows it: `a///` is `a/`, so its entries are `a/x`.
        let display = PathBuf::from(OsStr::from_bytes(trim_slashes(bytes)));
        if self.preserve_all_root
            && facts.file_type == FileType::Directory
            && dirfd::fstat(&*base).is_ok_and(|p| p.ident.dev != facts.ident.dev)
        {
            return Err(Rejection::Refused(Reason::OtherDevice));
        }
        match facts.file_type {
            FileType::Directory if self.recursive => Ok(Target::Tree(DirTarget {
                base,
                name,
                display,
                ident: facts.ident,
            })),
            FileType::Directory if self.dir_ok => Ok(Target::Entry {
                base,
                name,
                display,
                is_dir: true,
                allocated: facts.allocated,
                facts,
            }),
            FileType::Directory => Err(Rejection::Refused(Reason::IsDirectory)),
            FileType::Symlink if slash => Err(Rejection::Refused(Reason::SymlinkWithSlash)),
            _ if slash => Err(Rejection::Refused(Reason::Os(Errno::NOTDIR))),
            _ => Ok(Target::Entry {
                base,
                name,
                display,
                is_dir: false,
                allocated: if facts.nlink <= 1 { facts.allocated } else { 0 },
                facts,
            }),
        }
    }

    /// Whether `arg` is `/` itself: a symlink to `/` is only a link (removing it removes the
    /// link), unless a trailing slash names what it points to.
    fn resolves_to_root(&self, root: Ident, arg: &Path, slash: bool) -> bool {
        let facts = if slash {
            dirfd::stat_path(arg)
        } else {
            CString::new(arg.as_os_str().as_bytes())
                .map_err(|_| Errno::INVAL)
                .and_then(|c| dirfd::lstat_at(rustix::fs::CWD, &c))
        };
        facts.is_ok_and(|f| f.ident == root)
    }

    fn parent_fd(&mut self, parent: &Path) -> Result<Arc<OwnedFd>, Rejection> {
        if let Some(fd) = self.parents.get(parent) {
            return Ok(fd.clone());
        }
        // A parent that may be searched but not read (`chmod 0300`) is still a parent: an
        // O_PATH fd is enough for unlinkat, openat and rename in it.
        let opened = match dirfd::open_dir_path(parent) {
            Err(Errno::ACCESS) => dirfd::open_dir_path_only(parent),
            other => other,
        };
        let fd = match opened {
            Ok(fd) => Arc::new(fd),
            Err(Errno::NOENT) => return Err(Rejection::Missing),
            Err(e) => return Err(Rejection::Refused(Reason::Os(e))),
        };
        if self.count_space {
            self.space_before.add(&*fd);
        }
        self.parents.insert(parent.to_path_buf(), fd.clone());
        Ok(fd)
    }

    /// Free space now, on the same file systems as `space_before`.
    pub fn space_now(&self) -> FreeSpace {
        let mut now = FreeSpace::default();
        if self.count_space {
            self.parents.values().for_each(|fd| now.add(&**fd));
        }
        now
    }
}

fn trim_trailing_slashes(mut b: &[u8]) -> &[u8] {
    while let [rest @ .., b'/'] = b {
        b = rest;
    }
    b
}

/// fts' root name: two or more trailing slashes become one; `///` becomes `/`, `//` stays.
pub fn trim_slashes(arg: &[u8]) -> &[u8] {
    let mut len = arg.len();
    if len > 2 && arg[len - 1] == b'/' {
        while len > 1 && arg[len - 2] == b'/' {
            len -= 1;
        }
    }
    &arg[..len]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_names_lose_extra_slashes_as_in_fts() {
        assert_eq!(trim_slashes(b"a///"), b"a/");
        assert_eq!(trim_slashes(b"a/"), b"a/");
        assert_eq!(trim_slashes(b"//"), b"//");
        assert_eq!(trim_slashes(b"///"), b"/");
    }

    fn refused(r: Result<Target, Rejection>) -> Option<Reason> {
        match r {
            Err(Rejection::Refused(reason)) => Some(reason),
            _ => None,
        }
    }

    #[test]
    fn refuses_root_spellings_by_inode() {
        let mut r = Resolver::new(true, false);
        for p in ["/", "//", "/tmp/..", "/./", "/usr/.."] {
            assert_eq!(refused(r.resolve(Path::new(p))), Some(Reason::Root), "{p}");
        }
    }

    #[test]
    fn an_unknown_root_refuses_every_argument() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "").unwrap();
        let mut r = Resolver::new(true, false);
        r.root = Err(Errno::ACCESS);
        for p in [f.as_path(), dir.path(), Path::new("/")] {
            assert_eq!(
                refused(r.resolve(p)),
                Some(Reason::RootUnknown(Errno::ACCESS)),
                "{}",
                p.display()
            );
        }
        assert!(f.exists());
    }

    #[test]
    fn refuses_dot_and_dotdot_as_last_component() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("f"), "").unwrap();
        let mut r = Resolver::new(true, false);
        // As GNU rm: what names nothing is missing (`b/..`) or not a directory (`f/.`).
        assert!(matches!(
            r.resolve(&dir.path().join("b/..")),
            Err(Rejection::Missing)
        ));
        assert_eq!(
            refused(r.resolve(&dir.path().join("f/."))),
            Some(Reason::Os(Errno::NOTDIR))
        );
        for p in [".", "..", "./.", "a/.."] {
            let p = dir.path().join(p);
            let got = refused(r.resolve(&p));
            assert!(
                matches!(got, Some(Reason::DotOrDotDot)),
                "{}: {got:?}",
                p.display()
            );
        }
    }

    #[test]
    fn missing_is_separate_from_refusal() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Resolver::new(true, false);
        assert!(matches!(
            r.resolve(&dir.path().join("nope")),
            Err(Rejection::Missing)
        ));
        assert!(matches!(
            r.resolve(&dir.path().join("nope/deeper")),
            Err(Rejection::Missing)
        ));
    }

    #[test]
    fn directory_needs_recursive_or_dir_flag() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let p = dir.path().join("d");
        assert_eq!(
            refused(Resolver::new(false, false).resolve(&p)),
            Some(Reason::IsDirectory)
        );
        assert!(matches!(
            Resolver::new(false, true).resolve(&p),
            Ok(Target::Entry { is_dir: true, .. })
        ));
        assert!(matches!(
            Resolver::new(true, false).resolve(&p),
            Ok(Target::Tree(_))
        ));
    }
}
