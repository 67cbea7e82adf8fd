//! Renaming without ever overwriting, on every file system: `renameat2(RENAME_NOREPLACE)` where
//! the kernel and the file system have it; where they answer `EINVAL`/`ENOSYS`/`EOPNOTSUPP`
//! (NFS and FUSE reject rename flags) a fallback that keeps the promise. Into a private
//! directory only reclaim writes (a trash entry) a plain rename after checking the name is
//! free is safe. Into a directory others may write (a restore, a hidden name) the name is taken
//! atomically first — a hard link for a non-directory, an empty directory for a directory —
//! and only then the object is renamed over that placeholder of its own.

use std::ffi::CStr;
use std::os::fd::AsFd;

use rustix::fs::{linkat, mkdirat, openat, renameat, renameat_with, statat, unlinkat};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

/// Renames `old` in `old_dir` to `new` in `new_dir`, replacing what `new` names (as
/// `rename(2)`): only where the caller made `new` itself or holds the only right to it.
pub fn plain(old_dir: impl AsFd, old: &CStr, new_dir: impl AsFd, new: &CStr) -> Result<(), Errno> {
    super::one_name(old)?;
    super::one_name(new)?;
    renameat(old_dir, old, new_dir, new)
}

/// Where a name is renamed into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Into {
    /// A directory only this user's reclaim writes (a trash entry, made 0700 by us).
    Private,
    /// A directory others may write too (a user's directory): never clobber a name there.
    Shared,
}

/// Renames `old` in `old_dir` to `new` in `new_dir`, failing with `EEXIST` (never replacing)
/// if `new` exists.
pub fn noreplace(
    old_dir: impl AsFd,
    old: &CStr,
    new_dir: impl AsFd,
    new: &CStr,
    into: Into,
) -> Result<(), Errno> {
    let (od, nd) = (old_dir.as_fd(), new_dir.as_fd());
    super::one_name(old)?;
    super::one_name(new)?;
    match renameat_with(od, old, nd, new, RenameFlags::NOREPLACE) {
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => fallback(od, old, nd, new, into),
        r => r,
    }
}

/// The fallback of `noreplace` for file systems without rename flags.
pub fn fallback(
    od: impl AsFd,
    old: &CStr,
    nd: impl AsFd,
    new: &CStr,
    into: Into,
) -> Result<(), Errno> {
    let (od, nd) = (od.as_fd(), nd.as_fd());
    let st = statat(od, old, AtFlags::SYMLINK_NOFOLLOW)?;
    if into == Into::Private {
        return match statat(nd, new, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => Err(Errno::EXIST),
            Err(Errno::NOENT) => renameat(od, old, nd, new),
            Err(e) => Err(e),
        };
    }
    if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
        // An empty directory of ours holds the name; a rename over an empty directory
        // replaces it in one step.
        mkdirat(nd, new, Mode::from_raw_mode(0o700))?;
        return renameat(od, old, nd, new).inspect_err(|_| {
            let _ = unlinkat(nd, new, AtFlags::REMOVEDIR);
        });
    }
    // A second name for the same inode, made atomically (fails if the name exists); then the
    // old name goes. A crash in between leaves both names of one whole file.
    match linkat(od, old, nd, new, AtFlags::empty()) {
        Ok(()) => {
            return unlinkat(od, old, AtFlags::empty()).inspect_err(|_| {
                let _ = unlinkat(nd, new, AtFlags::empty());
            })
        }
        Err(Errno::EXIST) => return Err(Errno::EXIST),
        // No hard links here (some FUSE file systems), or not allowed: a placeholder file.
        Err(_) => {}
    }
    let placeholder = openat(
        nd,
        new,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    drop(placeholder);
    renameat(od, old, nd, new).inspect_err(|_| {
        let _ = unlinkat(nd, new, AtFlags::empty());
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(p: &std::path::Path) -> std::os::fd::OwnedFd {
        super::super::open_dir_path(p).unwrap()
    }

    #[test]
    fn fallback_never_clobbers_and_moves_every_kind() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        let (fa, fb) = (dir(&a), dir(&b));
        std::fs::write(a.join("file"), b"x").unwrap();
        std::fs::create_dir(a.join("dir")).unwrap();
        std::fs::write(a.join("dir/in"), b"y").unwrap();
        std::os::unix::fs::symlink("nowhere", a.join("link")).unwrap();
        rustix::fs::mknodat(&fa, c"fifo", FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        for into in [Into::Shared, Into::Private] {
            for name in [c"file", c"dir", c"link", c"fifo"] {
                let (from, to) = match into {
                    Into::Shared => (&fa, &fb),
                    Into::Private => (&fb, &fa),
                };
                fallback(from, name, to, name, into).unwrap();
                assert_eq!(
                    statat(from, name, AtFlags::SYMLINK_NOFOLLOW).err(),
                    Some(Errno::NOENT)
                );
                assert!(statat(to, name, AtFlags::SYMLINK_NOFOLLOW).is_ok());
            }
        }
        assert_eq!(std::fs::read(a.join("dir/in")).unwrap(), b"y");
        assert_eq!(std::fs::metadata(a.join("file")).unwrap().len(), 1);
        // A taken name is never replaced, whatever the kinds.
        std::fs::write(b.join("taken"), b"keep").unwrap();
        std::fs::create_dir(b.join("taken-dir")).unwrap();
        for (name, taken) in [
            (c"file", c"taken"),
            (c"dir", c"taken"),
            (c"file", c"taken-dir"),
            (c"dir", c"taken-dir"),
        ] {
            for into in [Into::Shared, Into::Private] {
                assert_eq!(fallback(&fa, name, &fb, taken, into), Err(Errno::EXIST));
            }
        }
        assert_eq!(std::fs::read(b.join("taken")).unwrap(), b"keep");
        assert!(std::fs::read_dir(b.join("taken-dir"))
            .unwrap()
            .next()
            .is_none());
        assert!(a.join("file").exists() && a.join("dir/in").exists());
    }
}
