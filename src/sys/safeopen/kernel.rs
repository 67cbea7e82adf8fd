//! The kernel's own files, read by path: `/proc` and `/sys` (the mount table, `/proc/locks`,
//! a device's queue settings, the link an fd has in `/proc/self/fd`), and the programs reclaim
//! starts, found on `PATH`. Anything else is refused (`EINVAL`): files a user could have made
//! are opened relative to a verified directory fd (the rest of `safeopen`). Reads are bounded.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// The most a kernel file is read (the mount table of a machine with thousands of mounts
/// stays well below).
pub const MAX_KERNEL_FILE: u64 = 64 << 20;

fn kernel_path(path: &Path) -> Result<(), Errno> {
    let b = path.as_os_str().as_bytes();
    let under = |top: &[u8]| b == top || (b.starts_with(top) && b.get(top.len()) == Some(&b'/'));
    if (under(b"/proc") || under(b"/sys")) && !b.windows(2).any(|w| w == b"..") {
        Ok(())
    } else {
        Err(Errno::INVAL)
    }
}

/// A file of `/proc` or `/sys` opened to be read as a stream (the mount table, read only as
/// far as a question needs).
pub fn open(path: impl AsRef<Path>) -> Result<std::fs::File, Errno> {
    let path = path.as_ref();
    kernel_path(path)?;
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map(std::fs::File::from)
}

/// The contents of a file of `/proc` or `/sys`, at most `MAX_KERNEL_FILE` bytes.
pub fn read(path: impl AsRef<Path>) -> Result<Vec<u8>, Errno> {
    super::file::read_fd_bounded(open(path)?, MAX_KERNEL_FILE).map_err(|e| match e {
        super::Bad::Os(e) => e,
        _ => Errno::FBIG,
    })
}

/// Writes `bytes` to a file of `/proc/sys` or `/sys` (a kernel setting).
pub fn write(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), Errno> {
    let path = path.as_ref();
    kernel_path(path)?;
    let fd = rustix::fs::open(
        path,
        OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut done = 0;
    while done < bytes.len() {
        done += rustix::io::write(&fd, &bytes[done..])?;
    }
    Ok(())
}

/// `read` as text (invalid UTF-8 replaced).
pub fn read_to_string(path: impl AsRef<Path>) -> Result<String, Errno> {
    read(path).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Where a link of `/proc` points (`/proc/self/fd/N`: the path of an open file, as the kernel
/// knows it).
pub fn read_link(path: impl AsRef<Path>) -> Result<PathBuf, Errno> {
    let path = path.as_ref();
    kernel_path(path)?;
    rustix::fs::readlinkat(rustix::fs::CWD, path, Vec::new())
        .map(|c| PathBuf::from(OsString::from_vec(c.into_bytes())))
}

/// Names in a directory of `/proc` or `/sys` (`/proc`'s pids, `/sys/block`'s disks).
pub fn list(path: impl AsRef<Path>) -> Result<Vec<OsString>, Errno> {
    let path = path.as_ref();
    kernel_path(path)?;
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut names = Vec::new();
    let mut buf = vec![std::mem::MaybeUninit::uninit(); 64 << 10];
    let mut dir = rustix::fs::RawDir::new(&fd, &mut buf);
    while let Some(e) = dir.next() {
        let n = e?.file_name().to_bytes().to_vec();
        if n != b"." && n != b".." {
            names.push(OsString::from_vec(n));
        }
    }
    Ok(names)
}

/// The path a path of `/sys` or `/proc` resolves to (its links followed: `/sys/dev/block/7:0`
/// is a link into `/sys/devices`), which must stay inside them.
pub fn canonical(path: impl AsRef<Path>) -> Result<PathBuf, Errno> {
    let path = path.as_ref();
    kernel_path(path)?;
    let real =
        std::fs::canonicalize(path).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    kernel_path(&real)?;
    Ok(real)
}

/// Whether a path of `/proc` or `/sys` exists (following links, as the kernel's own are).
pub fn exists(path: impl AsRef<Path>) -> bool {
    let path = path.as_ref();
    kernel_path(path).is_ok() && rustix::fs::access(path, rustix::fs::Access::EXISTS).is_ok()
}

/// The program `name` on `PATH` (else the usual system directories): the first regular file
/// there that may be executed.
pub fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| {
            rustix::fs::stat(p).is_ok_and(|st| {
                rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile
                    && st.st_mode & 0o111 != 0
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_kernels_files_are_read_by_path() {
        assert!(read("/proc/self/mountinfo").is_ok());
        assert!(open("/proc/self/mountinfo").is_ok());
        assert_eq!(open("/etc/passwd").err(), Some(Errno::INVAL));
        assert_eq!(read("/etc/passwd").err(), Some(Errno::INVAL));
        assert_eq!(read("/proc/../etc/passwd").err(), Some(Errno::INVAL));
        assert!(read_link("/proc/self/exe").is_ok());
        assert!(!list("/proc").unwrap().is_empty());
        assert!(program("sh").is_some());
        assert!(program("no-such-program-here").is_none());
    }
}
