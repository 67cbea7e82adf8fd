//! btrfs's own ioctls, as plain calls on fds the caller has verified: what subvolume a
//! directory is the root of, its child subvolumes, the file system's own deletion of a
//! subvolume (`BTRFS_IOC_SNAP_DESTROY_V2` by id, `BTRFS_IOC_SNAP_DESTROY` by name on older
//! kernels) and its cleaner's queue. Decides nothing about what to delete; never opens a path.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};

use rustix::io::Errno;
use rustix::ioctl::{ioctl, opcode, Opcode, Updater};

/// `statfs`'s `f_type` of btrfs.
const BTRFS_SUPER_MAGIC: i64 = 0x9123_683E;
/// The inode number of every subvolume's root directory.
const FIRST_FREE_OBJECTID: u64 = 256;
const MAGIC: u8 = 0x94;
const SUBVOL_SPEC_BY_ID: u64 = 1 << 4;

#[repr(C)]
struct InoLookup {
    treeid: u64,
    objectid: u64,
    name: [u8; 4080],
}

#[repr(C)]
struct InoLookupUser {
    dirid: u64,
    treeid: u64,
    name: [u8; 256],
    path: [u8; 4080 - 256],
}

#[repr(C)]
#[derive(Clone, Copy)]
struct RootRef {
    treeid: u64,
    dirid: u64,
}

#[repr(C)]
struct RootRefs {
    min_treeid: u64,
    rootref: [RootRef; 255],
    num_items: u8,
    align: [u8; 7],
}

#[repr(C)]
struct VolArgs {
    fd: i64,
    name: [u8; 4088],
}

#[repr(C)]
struct VolArgsV2 {
    fd: i64,
    transid: u64,
    flags: u64,
    unused: [u64; 4],
    /// The name, or (with `SUBVOL_SPEC_BY_ID`) the subvolume id in its first 8 bytes.
    name: [u8; 4040],
}

#[repr(C)]
struct SubvolWait {
    subvolid: u64,
    mode: u32,
    count: u32,
}

const INO_LOOKUP: Opcode = opcode::read_write::<InoLookup>(MAGIC, 18);
const GET_SUBVOL_ROOTREF: Opcode = opcode::read_write::<RootRefs>(MAGIC, 61);
const INO_LOOKUP_USER: Opcode = opcode::read_write::<InoLookupUser>(MAGIC, 62);
const SNAP_DESTROY: Opcode = opcode::write::<VolArgs>(MAGIC, 15);
const SNAP_DESTROY_V2: Opcode = opcode::write::<VolArgsV2>(MAGIC, 63);
const SUBVOL_SYNC_WAIT: Opcode = opcode::write::<SubvolWait>(MAGIC, 65);
const SYNC: Opcode = opcode::none(MAGIC, 8);
const WAIT_SYNC: Opcode = opcode::write::<u64>(MAGIC, 22);
const START_SYNC: Opcode = opcode::read::<u64>(MAGIC, 24);
const SYNC_WAIT_FOR_ONE: u32 = 0;
const SYNC_WAIT_FOR_QUEUED: u32 = 1;
const SYNC_COUNT: u32 = 2;

/// A zeroed argument struct (every field of these is an integer or a byte array).
fn zeroed<T>() -> Box<T> {
    // SAFETY: only used for the `repr(C)` structs above, made of integers and byte arrays,
    // for which all-zero bytes are a valid value (and what the kernel expects of unused
    // fields).
    unsafe { Box::new(std::mem::zeroed()) }
}

/// Runs ioctl `OP` with `arg` as its in/out argument.
fn call<const OP: Opcode, T>(fd: impl AsFd, arg: &mut T) -> Result<(), Errno> {
    // SAFETY: every opcode above is paired with the struct the kernel's uapi header declares
    // for it (same layout, `repr(C)`), `arg` is a valid, exclusively borrowed value of that
    // struct for the whole call, and the kernel writes at most `size_of::<T>()` bytes.
    unsafe { ioctl(fd, Updater::<OP, T>::new(arg)) }
}

/// Whether `fd` is on btrfs.
pub fn is_btrfs(fd: impl AsFd) -> bool {
    #[allow(clippy::unnecessary_cast)]
    rustix::fs::fstatfs(fd).is_ok_and(|s| s.f_type as i64 == BTRFS_SUPER_MAGIC)
}

/// Whether the directory `fd` (with inode number `ino`) is the root of a btrfs subvolume.
pub fn is_subvolume_root(fd: impl AsFd, ino: u64) -> bool {
    ino == FIRST_FREE_OBJECTID && is_btrfs(fd)
}

/// The id of the subvolume `fd` is in (unprivileged).
pub fn subvolume_id(fd: impl AsFd) -> Result<u64, Errno> {
    let mut a = zeroed::<InoLookup>();
    a.objectid = FIRST_FREE_OBJECTID;
    call::<INO_LOOKUP, _>(fd, &mut *a)?;
    Ok(a.treeid)
}

/// A subvolume directly inside another one: its id and where it is, relative to the root of
/// the containing subvolume (`path` ends with `/` or is empty; `name` is its entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    pub id: u64,
    pub path: Vec<u8>,
    pub name: CString,
}

/// The subvolumes directly inside the subvolume whose root is `fd` (unprivileged: kernel 4.18+,
/// only those the caller may search).
pub fn children(fd: impl AsFd) -> Result<Vec<Child>, Errno> {
    let fd = fd.as_fd();
    let mut refs = Vec::new();
    let mut a = zeroed::<RootRefs>();
    loop {
        let r = call::<GET_SUBVOL_ROOTREF, _>(fd, &mut *a);
        let n = usize::from(a.num_items).min(a.rootref.len());
        refs.extend_from_slice(&a.rootref[..n]);
        match r {
            Ok(()) => break,
            // More than fit in one answer: `min_treeid` says where to go on.
            Err(Errno::OVERFLOW) => a.num_items = 0,
            Err(e) => return Err(e),
        }
    }
    let mut out = Vec::with_capacity(refs.len());
    for r in refs {
        let mut l = zeroed::<InoLookupUser>();
        l.dirid = r.dirid;
        l.treeid = r.treeid;
        call::<INO_LOOKUP_USER, _>(fd, &mut *l)?;
        let cut = |b: &[u8]| b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())].to_vec();
        let name = CString::new(cut(&l.name)).map_err(|_| Errno::INVAL)?;
        out.push(Child {
            id: r.treeid,
            path: cut(&l.path),
            name,
        });
    }
    Ok(out)
}

/// How a subvolume was deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Destroyed {
    /// `BTRFS_IOC_SNAP_DESTROY_V2` with its id: exactly the subvolume that was verified.
    SnapDestroyV2,
    /// `BTRFS_IOC_SNAP_DESTROY` by name (kernels before 5.7), after checking the name still
    /// holds that subvolume.
    SnapDestroy,
}

/// Deletes subvolume `id`, the entry `name` of the directory `parent` (the caller verified
/// both), with the file system's own deletion: it leaves the namespace at once and the
/// kernel's cleaner frees its blocks in the background. The kernel applies `rmdir`'s
/// permission checks (and for a user without `CAP_SYS_ADMIN` needs `user_subvol_rm_allowed`);
/// it refuses a subvolume that still holds subvolumes (`ENOTEMPTY`).
pub fn destroy(parent: &OwnedFd, name: &CStr, id: u64) -> Result<Destroyed, Errno> {
    let mut a = zeroed::<VolArgsV2>();
    a.flags = SUBVOL_SPEC_BY_ID;
    a.name[..8].copy_from_slice(&id.to_ne_bytes());
    match call::<SNAP_DESTROY_V2, _>(parent, &mut *a) {
        Ok(()) => return Ok(Destroyed::SnapDestroyV2),
        // An older kernel: no v2 (ENOTTY) or no deletion by id (EOPNOTSUPP).
        Err(Errno::NOTTY | Errno::OPNOTSUPP) => {}
        Err(e) => return Err(e),
    }
    let bytes = name.to_bytes();
    let mut v = zeroed::<VolArgs>();
    if bytes.len() >= v.name.len() || bytes.contains(&b'/') {
        return Err(Errno::INVAL);
    }
    // By name: the entry must still be that subvolume's root.
    let now = crate::sys::dirfd::open_dir_at(parent, name)?;
    if subvolume_id(&now)? != id {
        return Err(Errno::STALE);
    }
    drop(now);
    v.name[..bytes.len()].copy_from_slice(bytes);
    call::<SNAP_DESTROY, _>(parent, &mut *v).map(|()| Destroyed::SnapDestroy)
}

/// Commits the running transaction and wakes btrfs's cleaner (`BTRFS_IOC_SYNC`), so that it
/// starts on deleted subvolumes now rather than at the next commit interval (30 s by default).
pub fn poke_cleaner(fd: impl AsFd) -> Result<(), Errno> {
    // SAFETY: BTRFS_IOC_SYNC takes no argument.
    unsafe { ioctl(fd, rustix::ioctl::NoArg::<SYNC>::new()) }
}

/// Commits the running transaction and waits for it (`BTRFS_IOC_START_SYNC`, then
/// `BTRFS_IOC_WAIT_SYNC` on its id): what a transaction freed is discarded in its commit under
/// `discard=sync`, which `fdatasync` (the log tree) does not reach. Unlike `syncfs` it writes
/// nobody's dirty data; no capability needed.
pub fn commit(fd: impl AsFd) -> Result<(), Errno> {
    let fd = fd.as_fd();
    let mut transid = 0u64;
    call::<START_SYNC, _>(fd, &mut transid)?;
    call::<WAIT_SYNC, _>(fd, &mut transid)
}

/// Deleted subvolumes whose blocks the cleaner has not freed yet, on the btrfs of `fd`
/// (`CAP_SYS_ADMIN`, kernel 6.8+; `ENOTTY` before).
pub fn cleaner_queue(fd: impl AsFd) -> Result<u32, Errno> {
    let mut a = SubvolWait {
        subvolid: 0,
        mode: SYNC_COUNT,
        count: 0,
    };
    call::<SUBVOL_SYNC_WAIT, _>(fd, &mut a)?;
    Ok(a.count)
}

/// Waits until the cleaner has freed subvolume `id` (`Some`), or every deleted subvolume
/// queued now (`None`). `CAP_SYS_ADMIN`, kernel 6.8+. Pokes the cleaner first
/// (`BTRFS_IOC_SYNC` commits and wakes the transaction thread, which wakes the cleaner):
/// otherwise it starts on its own only at the next commit interval (30 s by default).
pub fn wait_cleaner(fd: impl AsFd, id: Option<u64>) -> Result<(), Errno> {
    let fd = fd.as_fd();
    poke_cleaner(fd)?;
    let mut a = SubvolWait {
        subvolid: id.unwrap_or(0),
        mode: if id.is_some() {
            SYNC_WAIT_FOR_ONE
        } else {
            SYNC_WAIT_FOR_QUEUED
        },
        count: 0,
    };
    match call::<SUBVOL_SYNC_WAIT, _>(fd, &mut a) {
        // Already cleaned (or nothing was queued).
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_structs_have_the_kernels_sizes() {
        assert_eq!(std::mem::size_of::<InoLookup>(), 4096);
        assert_eq!(std::mem::size_of::<InoLookupUser>(), 4096);
        assert_eq!(std::mem::size_of::<RootRefs>(), 4096);
        assert_eq!(std::mem::size_of::<VolArgs>(), 4096);
        assert_eq!(std::mem::size_of::<VolArgsV2>(), 4096);
        assert_eq!(std::mem::size_of::<SubvolWait>(), 16);
        // The numbers btrfs-progs uses (linux/btrfs.h).
        assert_eq!(SNAP_DESTROY_V2, 0x5000_943f);
        assert_eq!(SNAP_DESTROY, 0x5000_940f);
        assert_eq!(INO_LOOKUP, 0xd000_9412);
    }
}
