//! Directory file descriptors: what identifies a directory (device, inode, mount id, lineage)
//! so a reopen can prove it reached the same one, `statx` of fds and names, and listings.
//! Opening is `safeopen`'s (re-exported here: always relative to a parent fd, never following
//! a symlink). Owns no policy about what to delete.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{statx, AtFlags, FileType, RawDir, Statx, StatxFlags};
use rustix::io::Errno;

pub use crate::sys::safeopen::{
    open_dir_at, open_dir_at_noatime, open_dir_at_only, open_dir_beneath, open_dir_path,
    open_dir_path_only, others_may_move_names,
};

/// What identifies a directory on a running system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ident {
    pub dev: u64,
    pub ino: u64,
}

/// The facts `statx` gives about an inode that removal needs.
#[derive(Clone, Copy, Debug)]
pub struct Facts {
    pub ident: Ident,
    pub mnt_id: u64,
    pub file_type: FileType,
    pub nlink: u32,
    /// Allocated bytes (`st_blocks * 512`).
    pub allocated: u64,
    /// `st_size`.
    pub size: u64,
    /// Modification and access times (seconds since the epoch; a scan's pack candidates).
    pub mtime: i64,
    pub atime: i64,
}

impl Facts {
    fn from_statx(s: &Statx) -> Self {
        Facts {
            ident: Ident {
                dev: rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor),
                ino: s.stx_ino,
            },
            // 0 where the kernel does not tell it (before 5.8): callers fall back to `st_dev`.
            mnt_id: if s.stx_mask & StatxFlags::MNT_ID.bits() != 0 {
                s.stx_mnt_id
            } else {
                0
            },
            file_type: FileType::from_raw_mode(s.stx_mode.into()),
            nlink: s.stx_nlink,
            allocated: s.stx_blocks * 512,
            size: s.stx_size,
            mtime: s.stx_mtime.tv_sec,
            atime: s.stx_atime.tv_sec,
        }
    }
}

const MASK: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::INO)
    .union(StatxFlags::NLINK)
    .union(StatxFlags::SIZE)
    .union(StatxFlags::BLOCKS)
    .union(StatxFlags::MNT_ID)
    .union(StatxFlags::MTIME)
    .union(StatxFlags::ATIME);

/// `statx` of `name` in `dir`, not following a final symlink.
pub fn lstat_at<Fd: AsFd>(dir: Fd, name: &CStr) -> Result<Facts, Errno> {
    statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, MASK).map(|s| Facts::from_statx(&s))
}

/// `statx` of `name` in `dir` as the client already knows it (`AT_STATX_DONT_SYNC`): on a
/// network or FUSE file system no round trip to revalidate attributes it has cached (from a
/// READDIRPLUS listing, or the lookup an unlink needs anyway); identical to `lstat_at` on a
/// local one. For decisions that the caller checks again on an open fd.
pub fn lstat_at_cached<Fd: AsFd>(dir: Fd, name: &CStr) -> Result<Facts, Errno> {
    statx(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC,
        MASK,
    )
    .map(|s| Facts::from_statx(&s))
}

/// `statx` of `path` relative to the current directory, following symlinks.
pub fn stat_path(path: &std::path::Path) -> Result<Facts, Errno> {
    statx(rustix::fs::CWD, path, AtFlags::empty(), MASK).map(|s| Facts::from_statx(&s))
}

/// `statx` of `path` relative to the current directory, not following a final symlink.
pub fn lstat_path(path: &std::path::Path) -> Result<Facts, Errno> {
    statx(rustix::fs::CWD, path, AtFlags::SYMLINK_NOFOLLOW, MASK).map(|s| Facts::from_statx(&s))
}

/// `statx` of an open fd.
pub fn fstat(fd: impl AsFd) -> Result<Facts, Errno> {
    statx(fd, c"", AtFlags::EMPTY_PATH, MASK).map(|s| Facts::from_statx(&s))
}

/// A reusable `getdents64` buffer (one per worker thread).
pub struct DirBuf(Vec<MaybeUninit<u8>>);

impl DirBuf {
    pub fn new(bytes: usize) -> Self {
        DirBuf(vec![MaybeUninit::uninit(); bytes])
    }
}

/// Calls `f(name, d_type, d_ino)` for every entry of `dir` except `.` and `..`.
pub fn for_each_entry(
    dir: &OwnedFd,
    buf: &mut DirBuf,
    mut f: impl FnMut(&CStr, FileType, u64),
) -> Result<(), Errno> {
    let mut raw = RawDir::new(dir, &mut buf.0);
    while let Some(entry) = raw.next() {
        let entry = entry?;
        let name = entry.file_name();
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        f(name, entry.file_type(), entry.ino());
    }
    Ok(())
}

/// Reads the next piece of `dir`: one `getdents64` into at most `bytes` of `buf`, calling
/// `f(name, d_type, d_ino)` for its entries except `.` and `..`. Returns whether there may be
/// more (false once the end was reached). On a FUSE mount the size asked is the size of the
/// READDIR request: one round trip per piece.
pub fn read_piece(
    dir: &OwnedFd,
    buf: &mut DirBuf,
    bytes: usize,
    mut f: impl FnMut(&CStr, FileType, u64),
) -> Result<bool, Errno> {
    let len = bytes.clamp(1024, buf.0.len());
    let mut raw = RawDir::new(dir, &mut buf.0[..len]);
    let mut any = false;
    // The first `next` reads; stop where the buffer runs out, before it would read again.
    while let Some(entry) = raw.next() {
        let entry = entry?;
        any = true;
        let name = entry.file_name();
        let b = name.to_bytes();
        if b != b"." && b != b".." {
            f(name, entry.file_type(), entry.ino());
        }
        if raw.is_buffer_empty() {
            break;
        }
    }
    Ok(any)
}

/// What tells a directory from a later one that got the same device and inode number (ext4
/// reuses inodes at once): its owner, its birth time (statx `btime`) where the file system
/// records one, and its inode generation (`FS_IOC_GETVERSION`) where it has that.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lineage {
    pub dev: u64,
    pub ino: u64,
    pub uid: u32,
    /// Birth time (seconds, nanoseconds), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub btime: Option<(i64, u32)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
}

impl Lineage {
    /// The lineage of an open file or directory.
    pub fn of(fd: impl AsFd) -> Result<Lineage, Errno> {
        let fd = fd.as_fd();
        let s = statx(
            fd,
            c"",
            AtFlags::EMPTY_PATH,
            StatxFlags::INO | StatxFlags::UID | StatxFlags::BTIME,
        )?;
        let btime = (s.stx_mask & StatxFlags::BTIME.bits() != 0
            && (s.stx_btime.tv_sec != 0 || s.stx_btime.tv_nsec != 0))
            .then_some((s.stx_btime.tv_sec, s.stx_btime.tv_nsec));
        Ok(Lineage {
            dev: rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor),
            ino: s.stx_ino,
            uid: s.stx_uid,
            btime,
            generation: generation(fd),
        })
    }

    /// Whether `now` is the same directory as this recorded one: same device, inode and owner,
    /// and the same birth time and generation wherever this record has them. (A record without
    /// either, from a file system that keeps neither, is matched by device, inode and owner.)
    pub fn same(&self, now: &Lineage) -> bool {
        (self.dev, self.ino, self.uid) == (now.dev, now.ino, now.uid)
            && self.btime.is_none_or(|b| now.btime == Some(b))
            && self.generation.is_none_or(|g| now.generation == Some(g))
    }
}

/// The inode generation (`FS_IOC_GETVERSION`; ext2/3/4, btrfs and others), if the file system
/// answers it.
fn generation(fd: std::os::fd::BorrowedFd<'_>) -> Option<u64> {
    use std::os::fd::AsRawFd;
    // _IOR('v', 1, long)
    const FS_IOC_GETVERSION: libc::c_ulong = 0x8008_7601;
    let mut v: libc::c_long = 0;
    // SAFETY: the ioctl writes one long into `v`, which lives for the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), FS_IOC_GETVERSION, &mut v) };
    (rc == 0).then_some(v as u64)
}
