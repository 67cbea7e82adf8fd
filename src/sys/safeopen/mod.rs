//! The one way reclaim opens, creates, mounts or removes anything by name (DESIGN §7: safe by
//! construction). Every other module goes through these functions; `tests/tests/layers.rs`
//! fails on a path-based `std::fs` call, `File::open`/`create`, `OpenOptions`, or a raw
//! `openat`/`unlinkat`/`renameat`/`mkdirat`/`mount` anywhere else in `src/`.
//!
//! The rules it holds:
//! - A name is looked up relative to a directory fd the caller verified, one component at a
//!   time: `O_NOFOLLOW` always (a symlink in its place fails, `ELOOP`), `O_CLOEXEC` always,
//!   `O_NONBLOCK|O_NOCTTY` on files (a FIFO or a terminal planted under the name never blocks
//!   or becomes our terminal), and the type checked by `fstat` before any byte is read or
//!   written (`open_file_at`, `file::checked`).
//! - What is created is created new (`O_CREAT|O_EXCL`, `mkdirat`, `symlinkat`, `linkat`,
//!   `mknodat`): a name someone else made first is an error, never written through. A file
//!   that must replace another is written under a fresh random name and renamed over it
//!   (`file::replace`).
//! - What is removed or created is one name in its directory: never a path with `/`, never
//!   `.` or `..` (`EINVAL`).
//! - Whoever else may write in a directory is said by `others_may_move_names` (the owner rule:
//!   the caller or root owns it and nobody else may write there, or it is sticky).
//! - Mounts attach to a checked directory fd through the kernel's mount API, never to a path
//!   (`mount`).
//! - The kernel's own files (`/proc`, `/sys`) are read through `kernel`, bounded.
//!
//! Paths exist for the caller's messages; the only by-path lookups are the explicitly named
//! ones (`open_dir_path*`, `kernel::*`), used for the directories a user named on the command
//! line (followed as `rm` follows the parents of its arguments) and for the kernel's files.
//! Owns no policy about what to delete.

pub mod file;
pub mod kernel;
pub mod mount;
pub mod rename;

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

pub use file::Bad;

/// Whether `name` is one entry of a directory: not empty, no `/`, not `.` or `..`. Removing or
/// creating anything else by "name" would reach outside the directory the caller verified.
pub fn is_one_name(name: &CStr) -> bool {
    let b = name.to_bytes();
    !b.is_empty() && b != b"." && b != b".." && !b.contains(&b'/')
}

fn one_name(name: &CStr) -> Result<(), Errno> {
    if is_one_name(name) {
        Ok(())
    } else {
        Err(Errno::INVAL)
    }
}

// ---------------------------------------------------------------------------------------------
// Directories.

/// Opens directory `name` relative to `parent` with `O_DIRECTORY|O_NOFOLLOW`: a symlink or a
/// non-directory in its place fails (ELOOP/ENOTDIR) instead of being followed. `..` and `.`
/// are allowed here (the walk reopens a directory's parent through `..` and checks it).
#[inline]
pub fn open_dir_at<Fd: AsFd>(parent: Fd, name: &CStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// `open_dir_at` with `O_NOATIME` (reading it leaves its access time alone), where the
/// caller may ask for it (its owner, or `CAP_FOWNER`); plainly otherwise.
pub fn open_dir_at_noatime<Fd: AsFd>(parent: Fd, name: &CStr) -> Result<OwnedFd, Errno> {
    let parent = parent.as_fd();
    match rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOATIME,
        Mode::empty(),
    ) {
        Err(Errno::PERM) => open_dir_at(parent, name),
        other => other,
    }
}

/// Opens directory `name` relative to `parent` as `O_PATH` (search permission is enough),
/// `O_NOFOLLOW`: a handle for `*at` calls and `fstat` only, never to read it.
#[inline]
pub fn open_dir_at_only<Fd: AsFd>(parent: Fd, name: &CStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The directory `dir` refers to, opened again for reading (an `O_PATH` handle cannot be
/// listed or fsynced).
pub fn reopen_dir<Fd: AsFd>(dir: Fd) -> Result<OwnedFd, Errno> {
    open_dir_at(dir, c".")
}

/// Opens a directory by path (following symlinks in it, as `rm` does for the parents of its
/// arguments): only for a directory the user named.
pub fn open_dir_path(path: &Path) -> Result<OwnedFd, Errno> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// `/dev/null`, opened read-write for a standard fd that was closed (`startup`): by its fixed
/// path, never through a symlink, and only if it is the null device (character device 1:3);
/// anything else planted there is refused (`ENODEV`).
pub fn null_device() -> Result<OwnedFd, Errno> {
    let fd = rustix::fs::open(
        "/dev/null",
        OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd)?;
    let rdev = st.st_rdev;
    let null = FileType::from_raw_mode(st.st_mode) == FileType::CharacterDevice
        && rustix::fs::major(rdev) == 1
        && rustix::fs::minor(rdev) == 3;
    if null {
        Ok(fd)
    } else {
        Err(Errno::NODEV)
    }
}

/// Opens a directory by path as `O_PATH` (search permission is enough): for use as the base
/// of `*at` calls only, never to read it. Only for a directory the user named.
pub fn open_dir_path_only(path: &Path) -> Result<OwnedFd, Errno> {
    rustix::fs::open(
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Opens the relative path `rel` beneath `root` with `openat2`: never through a symlink, never
/// into another mount, never above `root` (`RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
/// RESOLVE_NO_XDEV`); files also `O_NONBLOCK|O_NOCTTY`. An empty `rel` is `root` itself.
pub fn open_beneath(root: impl AsFd, rel: &[u8], flags: OFlags) -> Result<OwnedFd, Errno> {
    const RESOLVE: ResolveFlags = ResolveFlags::NO_SYMLINKS
        .union(ResolveFlags::NO_XDEV)
        .union(ResolveFlags::BENEATH);
    // openat2 refuses flags O_PATH ignores.
    let extra = if flags.contains(OFlags::PATH) {
        OFlags::empty()
    } else if flags.contains(OFlags::DIRECTORY) {
        OFlags::NOCTTY
    } else {
        OFlags::NOCTTY | OFlags::NONBLOCK
    };
    let rel = if rel.is_empty() { &b"."[..] } else { rel };
    rustix::fs::openat2(
        root,
        rel,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC | extra,
        Mode::empty(),
        RESOLVE,
    )
}

/// Opens the directory `rel` beneath `top` to read it (`open_beneath`): a path read from a
/// record someone else wrote, reached only on the file system it names.
pub fn open_dir_beneath(top: impl AsFd, rel: &Path) -> Result<OwnedFd, Errno> {
    use std::os::unix::ffi::OsStrExt;
    open_beneath(
        top,
        rel.as_os_str().as_bytes(),
        OFlags::RDONLY | OFlags::DIRECTORY,
    )
}

/// The directory at `path`, made (with `mode`, each missing component by `mkdirat` and opened
/// without following a symlink) where it is missing: `mkdir -p` for a directory whose nearest
/// existing ancestor the caller checked (a state directory of the user's own). The way to that
/// ancestor is followed, as `rm` follows the parents of its arguments.
pub fn make_dir_path(path: &Path, mode: u32) -> Result<OwnedFd, Errno> {
    use std::os::unix::ffi::OsStrExt;
    let mut missing = Vec::new();
    let mut at = path;
    let mut dir = loop {
        match open_dir_path(at) {
            Ok(fd) => break fd,
            Err(Errno::NOENT) => {
                missing.push(at.file_name().ok_or(Errno::NOENT)?);
                at = at.parent().ok_or(Errno::NOENT)?;
                if at.as_os_str().is_empty() {
                    at = Path::new(".");
                }
            }
            Err(e) => return Err(e),
        }
    };
    for name in missing.into_iter().rev() {
        let name = std::ffi::CString::new(name.as_bytes()).map_err(|_| Errno::INVAL)?;
        match mkdir_at(&dir, &name, mode) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e),
        }
        dir = open_dir_at(&dir, &name)?;
    }
    Ok(dir)
}

/// The absolute path of the directory `path` names, its symlinks resolved: as the kernel
/// names the directory it opened (`/proc/self/fd`), so what is resolved is what was opened.
pub fn canonical_dir(path: &Path) -> Result<std::path::PathBuf, Errno> {
    use std::os::fd::AsRawFd;
    let fd = open_dir_path_only(path)?;
    kernel::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Removes the tree `name` in `dir` (a directory and everything below it, or a single
/// non-directory), each directory opened from its parent's fd without following a symlink, a
/// symlink removed as itself. For reclaim's own scratch directories (bench); the removal
/// engine does the real work elsewhere. At most `MAX_DEPTH` levels.
pub fn remove_tree_at(dir: impl AsFd, name: &CStr) -> Result<(), Errno> {
    const MAX_DEPTH: usize = 4096;
    one_name(name)?;
    match unlink_at_with(&dir, name, AtFlags::empty()) {
        Err(Errno::ISDIR | Errno::PERM) => {}
        r => return r,
    }
    // (directory, its name in the one below it): the deepest last.
    let mut stack: Vec<(OwnedFd, std::ffi::CString)> =
        vec![(open_dir_at(&dir, name)?, name.to_owned())];
    let mut buf = vec![std::mem::MaybeUninit::uninit(); 64 << 10];
    while let Some((fd, _)) = stack.last() {
        let mut sub = None;
        // From the start each time: what was buffered when the walk went down is read again.
        rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(0))?;
        let mut raw = rustix::fs::RawDir::new(fd, &mut buf);
        while let Some(e) = raw.next() {
            let e = e?;
            let n = e.file_name();
            if n == c"." || n == c".." {
                continue;
            }
            if e.file_type() == FileType::Directory {
                sub = Some(n.to_owned());
                break;
            }
            match unlink_at_with(fd, n, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(Errno::ISDIR | Errno::PERM) => {
                    sub = Some(n.to_owned());
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        match sub {
            Some(n) if stack.len() < MAX_DEPTH => {
                let child = open_dir_at(fd, &n)?;
                stack.push((child, n));
            }
            Some(_) => return Err(Errno::LOOP),
            None => {
                let (_, n) = stack.pop().expect("not empty");
                match stack.last() {
                    Some((parent, _)) => rmdir_at(parent, &n)?,
                    None => rmdir_at(&dir, &n)?,
                }
            }
        }
    }
    Ok(())
}

/// Opens the relative path `rel` from `base` with `openat2(RESOLVE_NO_SYMLINKS)`: never
/// through a symlink (`ELOOP`), `..` allowed (the kernel's, no link on the way). For paths a
/// user listed (`--from`).
pub fn open_no_symlinks(base: impl AsFd, rel: &[u8], flags: OFlags) -> Result<OwnedFd, Errno> {
    let rel = if rel.is_empty() { &b"."[..] } else { rel };
    rustix::fs::openat2(
        base,
        rel,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
        ResolveFlags::NO_SYMLINKS,
    )
}

/// Makes directory `name` in `dir` with `mode` (less the umask); fails if the name exists.
#[inline]
pub fn mkdir_at(dir: impl AsFd, name: impl AsRef<CStr>, mode: u32) -> Result<(), Errno> {
    let name = name.as_ref();
    one_name(name)?;
    rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(mode))
}

/// Removes the empty directory `name` in `dir`.
#[inline]
pub fn rmdir_at(dir: impl AsFd, name: impl AsRef<CStr>) -> Result<(), Errno> {
    let name = name.as_ref();
    one_name(name)?;
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)
}

/// Why someone other than `uid` and root could rename or remove the names in the directory
/// `st` describes (take away what `uid` makes there): `None` if it belongs to `uid` or root
/// and is writable by nobody else, or sticky (only a name's owner may then move it).
pub fn others_may_move_names(st: &rustix::fs::Stat, uid: u32) -> Option<String> {
    const STICKY: u32 = 0o1000;
    if st.st_uid != 0 && st.st_uid != uid {
        return Some(format!("it is owned by uid {}", st.st_uid));
    }
    if st.st_mode & 0o022 != 0 && st.st_mode & STICKY == 0 {
        return Some(format!(
            "others may write in it (mode {:04o}) and it is not sticky",
            st.st_mode & 0o7777
        ));
    }
    None
}

/// Why another user than the caller (and root) could change what a path names
/// (`path_is_steady`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsteady {
    #[error("it is not an absolute path")]
    NotAbsolute,
    #[error("it holds '..'")]
    DotDot,
    #[error("a NUL in it")]
    Nul,
    /// `/` itself cannot be opened.
    #[error("/: {}", crate::sys::error::errno_text(*.0))]
    Root(Errno),
    /// A directory or the last component on the way cannot be examined.
    #[error("{}: {}", crate::sys::quote::quote(.path), crate::sys::error::errno_text(*.errno))]
    Os { path: PathBuf, errno: Errno },
    /// A directory on the way lets others move its names (`others_may_move_names`'s why).
    #[error("{}: {why}", crate::sys::quote::quote(.path))]
    OthersMayMove { path: PathBuf, why: String },
    #[error("{} is a symbolic link", crate::sys::quote::quote(.0))]
    Symlink(PathBuf),
}

/// Why another user than `uid` (and root) could change what `path` names, if one could: some
/// directory on the way from `/` belongs to someone else or lets others move its names
/// (`others_may_move_names`), or the last component is a symbolic link. Looked at one
/// component at a time without following a symlink; `..` is refused. For a path that will be
/// used again later by name (a line of /etc/fstab, a systemd unit).
pub fn path_is_steady(path: &Path, uid: u32) -> Result<(), Unsteady> {
    use std::os::unix::ffi::OsStrExt;
    if !path.is_absolute() {
        return Err(Unsteady::NotAbsolute);
    }
    let mut dir = open_dir_path_only(Path::new("/")).map_err(Unsteady::Root)?;
    let mut so_far = PathBuf::from("/");
    let comps: Vec<&[u8]> = path
        .as_os_str()
        .as_bytes()
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .collect();
    let os = |path: &Path| {
        let path = path.to_path_buf();
        move |errno| Unsteady::Os { path, errno }
    };
    for (i, c) in comps.iter().enumerate() {
        let st = rustix::fs::fstat(&dir).map_err(os(&so_far))?;
        if let Some(why) = others_may_move_names(&st, uid) {
            return Err(Unsteady::OthersMayMove { path: so_far, why });
        }
        if *c == b".." {
            return Err(Unsteady::DotDot);
        }
        so_far.push(std::ffi::OsStr::from_bytes(c));
        let name = std::ffi::CString::new(*c).map_err(|_| Unsteady::Nul)?;
        let st = rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW).map_err(os(&so_far))?;
        if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
            return Err(Unsteady::Symlink(so_far));
        }
        if i + 1 == comps.len() {
            break;
        }
        dir = open_dir_at_only(&dir, &name).map_err(os(&so_far))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Files.

/// How a file is opened by `open_file_at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Opens the existing file `name` in `dir` for `access`, never through a symlink, never
/// blocking on a FIFO or becoming a terminal (`O_NOFOLLOW|O_NONBLOCK|O_NOCTTY|O_CLOEXEC`,
/// `O_NOATIME` where allowed for reads), and checks with `fstat` that it is a regular file:
/// a FIFO, a device or a socket under the name is `Bad::NotRegular` (a FIFO with no reader
/// is refused by the kernel first: `ENXIO`). The fd and its `fstat`.
pub fn open_file_at(
    dir: impl AsFd,
    name: &CStr,
    access: Access,
) -> Result<(OwnedFd, rustix::fs::Stat), Bad> {
    let dir = dir.as_fd();
    let base = OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let flags = match access {
        Access::Read => OFlags::RDONLY,
        Access::Write => OFlags::WRONLY,
    } | base;
    let opened = if access == Access::Read {
        match rustix::fs::openat(dir, name, flags | OFlags::NOATIME, Mode::empty()) {
            Err(Errno::PERM) => rustix::fs::openat(dir, name, flags, Mode::empty()),
            r => r,
        }
    } else {
        rustix::fs::openat(dir, name, flags, Mode::empty())
    };
    let fd = match opened {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Err(Bad::Missing),
        Err(Errno::LOOP) => return Err(Bad::NotRegular("symbolic link")),
        Err(e) => return Err(Bad::Os(e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(Bad::Os)?;
    let t = FileType::from_raw_mode(st.st_mode);
    if t != FileType::RegularFile {
        return Err(Bad::NotRegular(file::type_name(t)));
    }
    Ok((fd, st))
}

/// Creates the new file `name` in `dir` (`O_CREAT|O_EXCL|O_NOFOLLOW`: fails if anything has
/// the name, a dangling symlink too) with `flags` (the access mode and extras such as
/// `O_APPEND`) and `mode` (less the umask). Close-on-exec unless `inherit` (a tool that opens
/// it through `/proc/self/fd`).
pub fn create_at(
    dir: impl AsFd,
    name: &CStr,
    flags: OFlags,
    mode: u32,
    inherit: bool,
) -> Result<OwnedFd, Errno> {
    one_name(name)?;
    let cloexec = if inherit {
        OFlags::empty()
    } else {
        OFlags::CLOEXEC
    };
    rustix::fs::openat(
        dir,
        name,
        flags | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | cloexec,
        Mode::from_raw_mode(mode),
    )
}

/// An unnamed file in the directory `dir` (`O_TMPFILE`): nothing is left behind, whatever
/// happens. `EOPNOTSUPP`/`EISDIR` where the file system has none.
pub fn create_unnamed_in(dir: impl AsFd, flags: OFlags, mode: u32) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        dir,
        c".",
        flags | OFlags::TMPFILE | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )
}

/// An anonymous file in memory (`memfd_create`): no name anywhere, close-on-exec.
pub fn anonymous(label: &CStr) -> Result<std::fs::File, Errno> {
    rustix::fs::memfd_create(label, rustix::fs::MemfdFlags::CLOEXEC).map(std::fs::File::from)
}

/// Removes the non-directory `name` in `dir` (a symlink itself, never what it points to).
#[inline]
pub fn unlink_at(dir: impl AsFd, name: impl AsRef<CStr>) -> Result<(), Errno> {
    let name = name.as_ref();
    one_name(name)?;
    rustix::fs::unlinkat(dir, name, AtFlags::empty())
}

/// Removes `name` in `dir` with `flags` (`AT_REMOVEDIR` for a directory).
#[inline]
pub fn unlink_at_with(dir: impl AsFd, name: impl AsRef<CStr>, flags: AtFlags) -> Result<(), Errno> {
    let name = name.as_ref();
    one_name(name)?;
    rustix::fs::unlinkat(dir, name, flags)
}

/// Removes what the user named, by the path as typed relative to `dir` (the current
/// directory, or the fd a removal holds for it), as coreutils does (`unlinkat(AT_FDCWD,
/// path)`): GNU mode's operand may have several components and a trailing slash; the way to
/// it is followed, as `rm` follows the way to its arguments, and the last component never is
/// (`unlinkat` does not follow it). Only for an operand (GNU mode refuses `.` and `..` before
/// this, in coreutils' words); an entry found in a directory is removed by its one name
/// (`unlink_at_with`).
pub fn unlink_operand(dir: impl AsFd, path: &CStr, flags: AtFlags) -> Result<(), Errno> {
    rustix::fs::unlinkat(dir, path, flags)
}

/// Makes `new` in `new_dir` another name of `old` in `old_dir` (never following a symlink;
/// fails if `new` exists).
pub fn link_at(
    old_dir: impl AsFd,
    old: &CStr,
    new_dir: impl AsFd,
    new: &CStr,
) -> Result<(), Errno> {
    one_name(old)?;
    one_name(new)?;
    rustix::fs::linkat(old_dir, old, new_dir, new, AtFlags::empty())
}

/// Makes the symbolic link `name` in `dir` pointing to `target` (never followed by us).
pub fn symlink_at(target: &[u8], dir: impl AsFd, name: &CStr) -> Result<(), Errno> {
    use std::os::unix::ffi::OsStrExt;
    one_name(name)?;
    rustix::fs::symlinkat(std::ffi::OsStr::from_bytes(target), dir, name)
}

/// Makes the FIFO or device node `name` in `dir`.
pub fn mknod_at(
    dir: impl AsFd,
    name: &CStr,
    kind: FileType,
    mode: u32,
    dev: u64,
) -> Result<(), Errno> {
    one_name(name)?;
    rustix::fs::mknodat(dir, name, kind, Mode::from_raw_mode(mode), dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_or_creating_takes_one_name_only() {
        let d = tempfile::tempdir().unwrap();
        let dir = open_dir_path(d.path()).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/f"), b"x").unwrap();
        for bad in [c"", c".", c"..", c"sub/f", c"/etc/passwd"] {
            assert_eq!(unlink_at(&dir, bad), Err(Errno::INVAL), "{bad:?}");
            assert_eq!(rmdir_at(&dir, bad), Err(Errno::INVAL), "{bad:?}");
            assert_eq!(mkdir_at(&dir, bad, 0o700), Err(Errno::INVAL), "{bad:?}");
            assert_eq!(
                create_at(&dir, bad, OFlags::WRONLY, 0o600, false).err(),
                Some(Errno::INVAL)
            );
        }
        assert!(d.path().join("sub/f").exists());
    }

    #[test]
    fn files_open_only_as_regular_files_and_never_block() {
        let d = tempfile::tempdir().unwrap();
        let dir = open_dir_path(d.path()).unwrap();
        std::fs::write(d.path().join("f"), b"x").unwrap();
        std::os::unix::fs::symlink("f", d.path().join("l")).unwrap();
        mknod_at(&dir, c"p", FileType::Fifo, 0o600, 0).unwrap();
        assert!(open_file_at(&dir, c"f", Access::Read).is_ok());
        assert_eq!(
            open_file_at(&dir, c"l", Access::Read).err(),
            Some(Bad::NotRegular("symbolic link"))
        );
        // A FIFO without a writer opens for reading at once (O_NONBLOCK) and is refused.
        assert_eq!(
            open_file_at(&dir, c"p", Access::Read).err(),
            Some(Bad::NotRegular("FIFO"))
        );
        // Without a reader, opening it for writing fails at once.
        assert!(open_file_at(&dir, c"p", Access::Write).is_err());
        assert_eq!(
            open_file_at(&dir, c"none", Access::Read).err(),
            Some(Bad::Missing)
        );
        assert_eq!(
            create_at(&dir, c"l", OFlags::WRONLY, 0o600, false).err(),
            Some(Errno::EXIST)
        );
    }

    #[test]
    fn trees_are_removed_below_their_fd_and_symlinks_are_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let dir = open_dir_path(d.path()).unwrap();
        let outside = d.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), b"k").unwrap();
        std::fs::create_dir_all(d.path().join("t/a/b/c")).unwrap();
        std::fs::write(d.path().join("t/a/b/c/f"), b"x").unwrap();
        std::fs::write(d.path().join("t/a/g"), b"x").unwrap();
        std::os::unix::fs::symlink(&outside, d.path().join("t/a/link")).unwrap();
        remove_tree_at(&dir, c"t").unwrap();
        assert!(!d.path().join("t").exists());
        assert!(outside.join("keep").exists());
        std::fs::write(d.path().join("file"), b"x").unwrap();
        remove_tree_at(&dir, c"file").unwrap();
        assert!(!d.path().join("file").exists());
        let made = make_dir_path(&d.path().join("x/y/z"), 0o700).unwrap();
        assert!(rustix::fs::fstat(&made).is_ok() && d.path().join("x/y/z").is_dir());
        assert_eq!(
            canonical_dir(&d.path().join("x/y/../y")).unwrap(),
            d.path().canonicalize().unwrap().join("x/y")
        );
    }

    #[test]
    fn a_path_through_a_symlink_or_a_shared_directory_is_not_steady() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("a")).unwrap();
        std::os::unix::fs::symlink("a", root.join("l")).unwrap();
        let me = rustix::process::geteuid().as_raw();
        // The temp dir's parent (/tmp) is sticky: steady.
        assert_eq!(path_is_steady(&root.join("a"), me), Ok(()));
        assert!(path_is_steady(&root.join("l"), me)
            .unwrap_err()
            .to_string()
            .contains("symbolic link"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(path_is_steady(&root.join("a"), me)
            .unwrap_err()
            .to_string()
            .contains("others may write"));
        assert!(path_is_steady(Path::new("relative"), me).is_err());
        assert_eq!(
            path_is_steady(Path::new("relative"), me).map_err(|e| e.to_string()),
            Err("it is not an absolute path".to_string())
        );
    }
}
