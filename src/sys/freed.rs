//! What removing one file gives back to its file system, counted before it goes: its allocated
//! blocks, less what stays in use afterwards: everything if another name keeps it (a hard link)
//! or another process has it open or mapped (the blocks go when it closes), and the extents it
//! shares with other files (reflinks, snapshots: `FIEMAP_EXTENT_SHARED`). So a report of freed
//! bytes never claims what someone else's link, open file or clone still holds (an attacker's
//! hard link to a big file cannot make root's reaper log any amount). Reads no data, changes
//! nothing (a write lease is taken and given back at once, to learn whether anyone else has the
//! file open).

use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd};

use rustix::fs::FileType;
use rustix::io::Errno;

use crate::sys::dirfd::Facts;

/// How a count of freed bytes was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Measure {
    /// Nothing was counted.
    #[default]
    Nothing,
    /// Per file, before its removal: allocated blocks no other name, process or file holds.
    Blocks,
    /// The file system's free space before and after (trees: no `stat` per file).
    FreeSpace,
    /// Some of each.
    Both,
}

impl Measure {
    /// This and `other` together.
    pub fn and(self, other: Measure) -> Measure {
        match (self, other) {
            (Measure::Nothing, m) | (m, Measure::Nothing) => m,
            (a, b) if a == b => a,
            _ => Measure::Both,
        }
    }

    /// The words for reports (empty for `Nothing`).
    pub fn text(self) -> &'static str {
        match self {
            Measure::Nothing => "",
            Measure::Blocks => "blocks no other name, process or file holds",
            Measure::FreeSpace => "the file system's free-space delta",
            Measure::Both => {
                "blocks no other name, process or file holds, and the free-space delta for trees"
            }
        }
    }

    /// The measure `text` names (what another process reported).
    pub fn from_text(s: &str) -> Measure {
        [Measure::Blocks, Measure::FreeSpace, Measure::Both]
            .into_iter()
            .find(|m| m.text() == s)
            .unwrap_or(Measure::Nothing)
    }
}

/// Bytes that removing the regular file `name` in `dir` (`facts`: its `lstat`) gives back:
/// 0 if it has other names or another process has it open or mapped, else its allocated bytes
/// less its shared extents. Anything else than a regular file gives back nothing that counts.
pub fn by_removal(dir: &OwnedFd, name: &CStr, facts: &Facts) -> u64 {
    if facts.file_type != FileType::RegularFile || facts.nlink != 1 || facts.allocated == 0 {
        return 0;
    }
    use crate::sys::safeopen::{self, Access, Bad};
    // O_NONBLOCK: a lease someone holds makes this fail at once (that process has it open).
    let fd = match safeopen::open_file_at(dir, name, Access::Read) {
        Ok((fd, _)) => fd,
        Err(Bad::Os(Errno::WOULDBLOCK) | Bad::NotRegular(_) | Bad::Missing) => return 0,
        // Not ours to open: as far as can be known, its blocks.
        Err(_) => return facts.allocated,
    };
    match crate::sys::dirfd::fstat(&fd) {
        Ok(now) if now.ident == facts.ident && now.nlink == 1 => {}
        _ => return 0,
    }
    if open_elsewhere(&fd) {
        return 0;
    }
    facts.allocated.saturating_sub(shared_bytes(&fd))
}

/// Whether another open file description or a mapping holds the file `fd` is open on: a write
/// lease is granted only to a file nobody else has open (and is given back at once). Leases
/// need the file's owner (or `CAP_LEASE`) and a file system that has them: without, `false`.
fn open_elsewhere(fd: &OwnedFd) -> bool {
    match crate::sys::lease::take_write(fd) {
        Ok(()) => {
            crate::sys::lease::release(fd);
            false
        }
        Err(why) => why == crate::sys::lease::NoLease::OpenElsewhere,
    }
}

/// `struct fiemap` with room for `EXTENTS` extents (linux/fiemap.h).
#[repr(C)]
struct Fiemap {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extents: [FiemapExtent; EXTENTS],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

const EXTENTS: usize = 128;
/// `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_EXTENT_LAST: u32 = 0x1;
const FIEMAP_EXTENT_SHARED: u32 = 0x2000;
/// Extents looked at, at most (a file in a million pieces is not mapped to the end: what is
/// past these counts as unshared).
const MAX_ROUNDS: usize = 256;

/// Bytes of the file `fd` is open on that lie in extents it shares with other files (0 where
/// the file system does not map extents).
fn shared_bytes(fd: &OwnedFd) -> u64 {
    let mut shared = 0u64;
    let mut start = 0u64;
    let mut map = Box::new(Fiemap {
        start: 0,
        length: 0,
        flags: 0,
        mapped_extents: 0,
        extent_count: 0,
        reserved: 0,
        extents: [FiemapExtent::default(); EXTENTS],
    });
    for _ in 0..MAX_ROUNDS {
        map.start = start;
        map.length = u64::MAX - start;
        map.flags = 0;
        map.mapped_extents = 0;
        map.extent_count = EXTENTS as u32;
        // SAFETY: FS_IOC_FIEMAP reads the header and writes at most `extent_count` extents into
        // `map`, which is a live `struct fiemap` with room for that many.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), FS_IOC_FIEMAP, &mut *map as *mut Fiemap) };
        if rc != 0 || map.mapped_extents == 0 {
            return shared;
        }
        let n = (map.mapped_extents as usize).min(EXTENTS);
        for e in &map.extents[..n] {
            if e.flags & FIEMAP_EXTENT_SHARED != 0 {
                shared = shared.saturating_add(e.length);
            }
        }
        let last = &map.extents[n - 1];
        if last.flags & FIEMAP_EXTENT_LAST != 0 {
            return shared;
        }
        start = last.logical.saturating_add(last.length);
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(dir: &OwnedFd, name: &CStr) -> Facts {
        crate::sys::dirfd::lstat_at(dir, name).unwrap()
    }

    #[test]
    fn links_and_open_files_give_back_nothing() {
        let d = tempfile::tempdir().unwrap();
        let dir = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
        std::fs::write(d.path().join("plain"), vec![1u8; 1 << 20]).unwrap();
        let f = facts(&dir, c"plain");
        assert_eq!(by_removal(&dir, c"plain", &f), f.allocated);
        assert!(f.allocated >= 1 << 20);
        std::fs::hard_link(d.path().join("plain"), d.path().join("link")).unwrap();
        assert_eq!(by_removal(&dir, c"link", &facts(&dir, c"link")), 0);
        std::fs::remove_file(d.path().join("plain")).unwrap();
        let held = std::fs::File::open(d.path().join("link")).unwrap();
        let f = facts(&dir, c"link");
        assert_eq!(f.nlink, 1);
        assert_eq!(by_removal(&dir, c"link", &f), 0, "open elsewhere");
        drop(held);
        assert_eq!(by_removal(&dir, c"link", &f), f.allocated);
        std::os::unix::fs::symlink("link", d.path().join("sym")).unwrap();
        assert_eq!(by_removal(&dir, c"sym", &facts(&dir, c"sym")), 0);
    }

    #[test]
    fn measures_combine() {
        assert_eq!(Measure::Nothing.and(Measure::Blocks), Measure::Blocks);
        assert_eq!(Measure::Blocks.and(Measure::Blocks), Measure::Blocks);
        assert_eq!(Measure::Blocks.and(Measure::FreeSpace), Measure::Both);
        for m in [Measure::Blocks, Measure::FreeSpace, Measure::Both] {
            assert_eq!(Measure::from_text(m.text()), m);
        }
    }
}
