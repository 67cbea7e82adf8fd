//! Thin syscall wrappers for the passthrough: everything is relative to a
//! directory fd (`*at` calls) or an `O_PATH` fd, errors are FUSE `Errno`s.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::ptr::NonNull;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr, FileType, INodeNo};

pub type Res<T> = Result<T, Errno>;

/// The calling thread's errno as an `Errno`.
pub fn last() -> Errno {
    Errno::from_i32(
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
    )
}

fn check(rc: libc::c_int) -> Res<libc::c_int> {
    if rc < 0 {
        Err(last())
    } else {
        Ok(rc)
    }
}

pub fn cstr(name: &OsStr) -> Res<CString> {
    CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)
}

pub const EMPTY: &CStr = c"";

pub fn openat(dir: RawFd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> Res<OwnedFd> {
    // SAFETY: valid C string; the returned fd is owned by us.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    // SAFETY: fd >= 0 is a fresh descriptor.
    check(fd).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `O_PATH` handle on `dir/name` without following a final symlink.
pub fn open_path(dir: RawFd, name: &CStr) -> Res<OwnedFd> {
    openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0)
}

/// Reopen an fd (typically `O_PATH`) through `/proc/self/fd` with real access flags.
pub fn reopen(proc_fd: RawFd, fd: RawFd, flags: libc::c_int) -> Res<OwnedFd> {
    let name = CString::new(fd.to_string()).expect("digits");
    openat(proc_fd, &name, flags & !libc::O_NOFOLLOW, 0)
}

/// lstat of `dir/name`, or of the fd itself when `name` is empty.
pub fn statat(dir: RawFd, name: &CStr) -> Res<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    let flags = libc::AT_SYMLINK_NOFOLLOW
        | if name.is_empty() {
            libc::AT_EMPTY_PATH
        } else {
            0
        };
    // SAFETY: valid fd/path and an output buffer of the right type.
    check(unsafe { libc::fstatat(dir, name.as_ptr(), st.as_mut_ptr(), flags) })?;
    // SAFETY: fstatat succeeded and filled it.
    Ok(unsafe { st.assume_init() })
}

pub fn fstat(fd: RawFd) -> Res<libc::stat> {
    statat(fd, EMPTY)
}

pub fn mkdirat(dir: RawFd, name: &CStr, mode: u32) -> Res<()> {
    // SAFETY: valid C string.
    check(unsafe { libc::mkdirat(dir, name.as_ptr(), mode as libc::mode_t) }).map(drop)
}

pub fn mknodat(dir: RawFd, name: &CStr, mode: u32, rdev: u32) -> Res<()> {
    // SAFETY: valid C string.
    check(unsafe {
        libc::mknodat(
            dir,
            name.as_ptr(),
            mode as libc::mode_t,
            rdev as libc::dev_t,
        )
    })
    .map(drop)
}

pub fn symlinkat(target: &CStr, dir: RawFd, name: &CStr) -> Res<()> {
    // SAFETY: valid C strings.
    check(unsafe { libc::symlinkat(target.as_ptr(), dir, name.as_ptr()) }).map(drop)
}

pub fn unlinkat(dir: RawFd, name: &CStr, flags: libc::c_int) -> Res<()> {
    // SAFETY: valid C string.
    check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }).map(drop)
}

pub fn renameat(odir: RawFd, oname: &CStr, ndir: RawFd, nname: &CStr) -> Res<()> {
    // SAFETY: valid C strings.
    check(unsafe { libc::renameat(odir, oname.as_ptr(), ndir, nname.as_ptr()) }).map(drop)
}

/// Hard link to the inode behind `fd` (needs CAP_DAC_READ_SEARCH: we run as root).
pub fn link_fd(fd: RawFd, ndir: RawFd, nname: &CStr) -> Res<()> {
    // SAFETY: valid fds and C strings.
    check(unsafe {
        libc::linkat(
            fd,
            EMPTY.as_ptr(),
            ndir,
            nname.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    })
    .map(drop)
}

pub fn readlink_fd(fd: RawFd) -> Res<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: buffer of the given length.
    let n = unsafe { libc::readlinkat(fd, EMPTY.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(last());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// lchown semantics on an `O_PATH` fd; `u32::MAX` leaves an id unchanged.
pub fn chown_fd(fd: RawFd, uid: u32, gid: u32) -> Res<()> {
    // SAFETY: plain syscall.
    check(unsafe {
        libc::fchownat(
            fd,
            EMPTY.as_ptr(),
            uid,
            gid,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

/// chmod through `/proc/self/fd/N` (fchmod refuses `O_PATH` fds).
pub fn chmod_fd(proc_fd: RawFd, fd: RawFd, mode: u32) -> Res<()> {
    let name = CString::new(fd.to_string()).expect("digits");
    // SAFETY: valid C string.
    check(unsafe { libc::fchmodat(proc_fd, name.as_ptr(), mode as libc::mode_t, 0) }).map(drop)
}

/// utimensat on the fd itself (AT_EMPTY_PATH, Linux >= 5.8).
pub fn utimens_fd(fd: RawFd, times: &[libc::timespec; 2]) -> Res<()> {
    // SAFETY: valid fd and a two-element array.
    check(unsafe {
        libc::utimensat(
            fd,
            EMPTY.as_ptr(),
            times.as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

pub fn ftruncate(fd: RawFd, size: u64) -> Res<()> {
    // SAFETY: plain syscall.
    check(unsafe { libc::ftruncate(fd, size as libc::off_t) }).map(drop)
}

pub fn fsync(fd: RawFd, datasync: bool) -> Res<()> {
    // SAFETY: plain syscall.
    check(unsafe {
        if datasync {
            libc::fdatasync(fd)
        } else {
            libc::fsync(fd)
        }
    })
    .map(drop)
}

pub fn fallocate(fd: RawFd, mode: i32, offset: u64, len: u64) -> Res<()> {
    // SAFETY: plain syscall.
    check(unsafe { libc::fallocate(fd, mode, offset as libc::off_t, len as libc::off_t) }).map(drop)
}

pub fn fstatvfs(fd: RawFd) -> Res<libc::statvfs> {
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: output buffer of the right type.
    check(unsafe { libc::fstatvfs(fd, st.as_mut_ptr()) })?;
    // SAFETY: filled by the kernel.
    Ok(unsafe { st.assume_init() })
}

pub fn system_time(sec: i64, nsec: i64) -> SystemTime {
    if sec >= 0 {
        UNIX_EPOCH + Duration::new(sec as u64, nsec as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(sec.unsigned_abs()) + Duration::from_nanos(nsec as u64)
    }
}

pub fn file_type(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

pub fn dtype(d_type: u8) -> Option<FileType> {
    Some(match d_type {
        libc::DT_DIR => FileType::Directory,
        libc::DT_REG => FileType::RegularFile,
        libc::DT_LNK => FileType::Symlink,
        libc::DT_FIFO => FileType::NamedPipe,
        libc::DT_SOCK => FileType::Socket,
        libc::DT_CHR => FileType::CharDevice,
        libc::DT_BLK => FileType::BlockDevice,
        _ => return None,
    })
}

/// FUSE attributes of a backing `stat`, under FUSE inode number `nodeid`.
pub fn attr(st: &libc::stat, nodeid: u64) -> FileAttr {
    FileAttr {
        ino: INodeNo(nodeid),
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        atime: system_time(st.st_atime, st.st_atime_nsec),
        mtime: system_time(st.st_mtime, st.st_mtime_nsec),
        ctime: system_time(st.st_ctime, st.st_ctime_nsec),
        crtime: UNIX_EPOCH,
        kind: file_type(st.st_mode),
        perm: (st.st_mode & 0o7777) as u16,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev as u32,
        blksize: st.st_blksize as u32,
        flags: 0,
    }
}

/// What a negative lookup answers: inode 0 means "no such entry, cache that for the TTL".
pub fn negative_attr() -> FileAttr {
    FileAttr {
        ino: INodeNo(0),
        size: 0,
        blocks: 0,
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: FileType::RegularFile,
        perm: 0,
        nlink: 0,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

/// One entry read from a directory stream.
pub struct DirEnt {
    pub ino: u64,
    /// Position after this entry (what the kernel passes back as the next offset).
    pub off: i64,
    pub kind: Option<FileType>,
    pub name: CString,
}

/// An open directory stream (`DIR*`) with the position of the last entry handed out.
pub struct DirStream {
    dir: NonNull<libc::DIR>,
    /// Offset of the next entry `next()` returns (0 = start).
    pub pos: i64,
}

// SAFETY: the DIR is only used through &mut (behind a Mutex).
unsafe impl Send for DirStream {}

impl DirStream {
    /// Takes ownership of `fd` (a directory opened for reading).
    pub fn new(fd: OwnedFd) -> Res<DirStream> {
        let raw = fd.as_raw_fd();
        // SAFETY: on success the DIR owns the fd.
        let dir = unsafe { libc::fdopendir(raw) };
        match NonNull::new(dir) {
            Some(dir) => {
                std::mem::forget(fd);
                Ok(DirStream { dir, pos: 0 })
            }
            None => Err(last()),
        }
    }

    /// The directory's fd (for `*at` calls relative to it).
    pub fn fd(&self) -> RawFd {
        // SAFETY: valid DIR.
        unsafe { libc::dirfd(self.dir.as_ptr()) }
    }

    pub fn seek(&mut self, off: i64) {
        if off != self.pos {
            // SAFETY: valid DIR; offsets come from earlier d_off values (or 0).
            unsafe {
                if off == 0 {
                    libc::rewinddir(self.dir.as_ptr());
                } else {
                    libc::seekdir(self.dir.as_ptr(), off as libc::c_long);
                }
            }
            self.pos = off;
        }
    }

    /// Next entry, `Ok(None)` at the end. Advances `pos`.
    pub fn next_entry(&mut self) -> Res<Option<DirEnt>> {
        // SAFETY: errno is thread-local; readdir's result is valid until the next call.
        unsafe {
            *libc::__errno_location() = 0;
            let e = libc::readdir64(self.dir.as_ptr());
            if e.is_null() {
                let errno = *libc::__errno_location();
                return if errno == 0 {
                    Ok(None)
                } else {
                    Err(Errno::from_i32(errno))
                };
            }
            let e = &*e;
            let name = CStr::from_ptr(e.d_name.as_ptr()).to_owned();
            self.pos = e.d_off;
            Ok(Some(DirEnt {
                ino: e.d_ino,
                off: e.d_off,
                kind: dtype(e.d_type),
                name,
            }))
        }
    }
}

impl Drop for DirStream {
    fn drop(&mut self) {
        // SAFETY: we own the DIR.
        unsafe { libc::closedir(self.dir.as_ptr()) };
    }
}

/// Raise RLIMIT_NOFILE as far as allowed (every inode the kernel caches holds an fd).
pub fn raise_nofile() -> u64 {
    let max = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(1 << 20);
    // SAFETY: getrlimit/setrlimit with valid pointers.
    unsafe {
        let mut rl = std::mem::zeroed::<libc::rlimit>();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl);
        let want = libc::rlimit {
            rlim_cur: max,
            rlim_max: max.max(rl.rlim_max),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
            return max;
        }
        rl.rlim_cur = rl.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
        rl.rlim_cur
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_before_and_after_the_epoch() {
        assert_eq!(system_time(1, 5), UNIX_EPOCH + Duration::new(1, 5));
        assert_eq!(
            system_time(-2, 500_000_000),
            UNIX_EPOCH - Duration::from_millis(1500)
        );
    }

    #[test]
    fn modes_map_to_types() {
        assert_eq!(file_type(libc::S_IFDIR | 0o755), FileType::Directory);
        assert_eq!(file_type(libc::S_IFIFO), FileType::NamedPipe);
        assert_eq!(file_type(libc::S_IFREG | 0o644), FileType::RegularFile);
        assert_eq!(dtype(libc::DT_UNKNOWN), None);
    }
}
