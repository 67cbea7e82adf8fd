//! The server side's tables: FUSE inode numbers -> backing inodes (with the kernel's
//! lookup counts), and open file handles.
//!
//! A backing inode is kept as a file handle (`name_to_handle_at`), like an NFS file
//! handle, and opened (`open_by_handle_at`, `O_PATH`) for each operation: no fd is
//! held per cached inode (the fd limit would cap the tree size), and an inode that was
//! removed gives ESTALE, as on NFS. A backing file system that cannot export handles
//! falls back to one `O_PATH` fd per inode the kernel holds.
//!
//! Inode numbers are the backing `st_ino`, so `stat` through the mount shows distinct
//! numbers and hard links share one. Only the root is special: FUSE calls it 1, so
//! the backing root's number and 1 trade places (no backing inode under the root is
//! 1 on ext4, xfs, btrfs or tmpfs). Every backing inode must be on the backing root's
//! file system (numbers are unique only there); lookups that cross a mount point fail
//! with EXDEV.
//!
//! Dropping fds can be slow (closing the last reference to an unlinked file frees its
//! blocks), so released handles and forgotten fds are closed on a separate thread,
//! never on the FUSE session thread.

use std::any::Any;
use std::collections::HashMap;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use fuser::Errno;

use super::sys::{self, DirStream, Res};

const MAX_HANDLE_SZ: usize = 128;

/// `struct file_handle` with room for the largest handle.
#[repr(C)]
#[derive(Clone, PartialEq, Eq)]
pub struct FHandle {
    bytes: u32,
    kind: i32,
    data: [u8; MAX_HANDLE_SZ],
}

impl FHandle {
    /// The handle of the inode behind `fd`; Err if the file system cannot export one.
    pub fn of(fd: RawFd) -> Res<FHandle> {
        let mut h = FHandle {
            bytes: MAX_HANDLE_SZ as u32,
            kind: 0,
            data: [0; MAX_HANDLE_SZ],
        };
        let mut mount_id = 0;
        // SAFETY: h is a file_handle with handle_bytes = room after the header.
        let rc = unsafe {
            libc::name_to_handle_at(
                fd,
                sys::EMPTY.as_ptr(),
                (&mut h as *mut FHandle).cast(),
                &mut mount_id,
                libc::AT_EMPTY_PATH,
            )
        };
        if rc < 0 {
            return Err(sys::last());
        }
        Ok(h)
    }

    /// `O_PATH` fd of the inode; ESTALE once it is gone.
    pub fn open(&self, mount_fd: RawFd) -> Res<OwnedFd> {
        let mut h = self.clone();
        // SAFETY: a handle filled by name_to_handle_at; the fd returned is ours.
        let fd = unsafe {
            libc::open_by_handle_at(
                mount_fd,
                (&mut h as *mut FHandle).cast(),
                libc::O_PATH | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(sys::last());
        }
        // SAFETY: fresh descriptor.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn bytes(&self) -> &[u8] {
        &self.data[..(self.bytes as usize).min(MAX_HANDLE_SZ)]
    }

    /// A generation number for FUSE: a hash of the handle (which holds the backing
    /// file system's own generation), never 0. A reused inode number then comes with
    /// another generation and the kernel drops its stale inode instead of aliasing it.
    pub fn generation(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.kind.to_le_bytes().iter().chain(self.bytes()) {
            h = (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        h.max(1)
    }
}

/// Garbage for the closer thread.
type Junk = Box<dyn Any + Send>;

enum Obj {
    Handle(Box<FHandle>),
    Fd(Arc<OwnedFd>),
}

struct Entry {
    obj: Obj,
    nlookup: u64,
}

pub struct Inodes {
    root: Arc<OwnedFd>,
    /// A non-`O_PATH` fd of the root: `open_by_handle_at` refuses `O_PATH` ones.
    mount_fd: OwnedFd,
    root_ino: u64,
    root_dev: u64,
    map: Mutex<HashMap<u64, Entry>>,
    closer: Sender<Junk>,
}

pub enum Handle {
    File(Arc<File>),
    Dir(Arc<Mutex<DirStream>>),
}

pub struct Handles {
    next: AtomicU64,
    map: Mutex<HashMap<u64, Handle>>,
    closer: Sender<Junk>,
}

/// Start the closer thread; returns its sender.
pub fn closer() -> Sender<Junk> {
    let (tx, rx) = mpsc::channel::<Junk>();
    std::thread::Builder::new()
        .name("netfs-closer".into())
        .spawn(move || {
            for junk in rx {
                drop(junk);
            }
        })
        .expect("spawning the closer thread");
    tx
}

impl Inodes {
    /// `root`: an `O_PATH` fd of the backing directory.
    pub fn new(root: OwnedFd, closer: Sender<Junk>) -> Res<Inodes> {
        let st = sys::fstat(root.as_raw_fd())?;
        let mount_fd = sys::openat(
            root.as_raw_fd(),
            c".",
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
        )?;
        Ok(Inodes {
            mount_fd,
            root: Arc::new(root),
            root_ino: st.st_ino,
            root_dev: st.st_dev,
            map: Mutex::new(HashMap::new()),
            closer,
        })
    }

    pub fn root_fd(&self) -> RawFd {
        self.root.as_raw_fd()
    }

    /// FUSE inode number of a backing inode number.
    pub fn nodeid(&self, st_ino: u64) -> u64 {
        map_ino(st_ino, self.root_ino)
    }

    /// An `O_PATH` fd of the inode behind a FUSE inode number the kernel holds;
    /// ESTALE if the backing inode is gone (or the number was forgotten, which the
    /// kernel does not do while it still uses it).
    pub fn get(&self, nodeid: u64) -> Res<Arc<OwnedFd>> {
        if nodeid == fuser::INodeNo::ROOT.0 {
            return Ok(self.root.clone());
        }
        let h = match &self
            .map
            .lock()
            .unwrap()
            .get(&nodeid)
            .ok_or(Errno::ESTALE)?
            .obj
        {
            Obj::Fd(fd) => return Ok(fd.clone()),
            Obj::Handle(h) => h.clone(),
        };
        h.open(self.mount_fd.as_raw_fd()).map(Arc::new)
    }

    /// Count one kernel lookup of the inode behind `fd` (whose lstat is `st`); returns
    /// its FUSE inode number and generation.
    ///
    /// Lookup counts are kept per number, summed over every kernel inode that had it:
    /// when a backing inode number is reused, the kernel drops its stale inode (other
    /// generation) and later forgets it under the same number, which then subtracts
    /// only that inode's lookups.
    pub fn register(&self, fd: OwnedFd, st: &libc::stat) -> Res<(u64, u64)> {
        if st.st_dev != self.root_dev {
            return Err(Errno::EXDEV);
        }
        let nodeid = self.nodeid(st.st_ino);
        if nodeid == fuser::INodeNo::ROOT.0 {
            return Ok((nodeid, 0));
        }
        let (obj, generation) = match FHandle::of(fd.as_raw_fd()) {
            Ok(h) => {
                let g = h.generation();
                (Obj::Handle(Box::new(h)), g)
            }
            Err(_) => (Obj::Fd(Arc::new(fd)), 0),
        };
        let mut map = self.map.lock().unwrap();
        match map.get_mut(&nodeid) {
            Some(e) => {
                e.nlookup += 1;
                // Same number, other handle: the old inode is gone and its number was
                // reused; serve the new one.
                if let (Obj::Handle(old), Obj::Handle(new)) = (&e.obj, &obj) {
                    if old.bytes() != new.bytes() || old.kind != new.kind {
                        e.obj = obj;
                    }
                }
            }
            None => {
                map.insert(nodeid, Entry { obj, nlookup: 1 });
            }
        }
        Ok((nodeid, generation))
    }

    /// The kernel dropped `n` lookups of `nodeid`.
    pub fn forget(&self, nodeid: u64, n: u64) {
        let mut map = self.map.lock().unwrap();
        if let Some(e) = map.get_mut(&nodeid) {
            e.nlookup = e.nlookup.saturating_sub(n);
            if e.nlookup == 0 {
                let e = map.remove(&nodeid).expect("present");
                drop(map);
                if let Obj::Fd(fd) = e.obj {
                    let _ = self.closer.send(Box::new(fd));
                }
            }
        }
    }

    /// Whether inodes are kept as file handles (else as fds).
    pub fn uses_handles(&self) -> bool {
        FHandle::of(self.root_fd()).is_ok()
    }

    /// Inodes the kernel currently holds (excluding the root).
    pub fn len(&self) -> usize {
        self.map.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Backing inode number -> FUSE inode number: identity, except that the backing
/// root and 1 trade places.
pub fn map_ino(st_ino: u64, root_ino: u64) -> u64 {
    if st_ino == root_ino {
        1
    } else if st_ino == 1 {
        root_ino
    } else {
        st_ino
    }
}

impl Handles {
    pub fn new(closer: Sender<Junk>) -> Handles {
        Handles {
            next: AtomicU64::new(1),
            map: Mutex::new(HashMap::new()),
            closer,
        }
    }

    pub fn insert(&self, h: Handle) -> u64 {
        let fh = self.next.fetch_add(1, Ordering::Relaxed);
        self.map.lock().unwrap().insert(fh, h);
        fh
    }

    pub fn file(&self, fh: u64) -> Res<Arc<File>> {
        match self.map.lock().unwrap().get(&fh) {
            Some(Handle::File(f)) => Ok(f.clone()),
            _ => Err(Errno::EBADF),
        }
    }

    pub fn dir(&self, fh: u64) -> Res<Arc<Mutex<DirStream>>> {
        match self.map.lock().unwrap().get(&fh) {
            Some(Handle::Dir(d)) => Ok(d.clone()),
            _ => Err(Errno::EBADF),
        }
    }

    /// Forget a handle; its fd is closed on the closer thread.
    pub fn remove(&self, fh: u64) {
        let h = self.map.lock().unwrap().remove(&fh);
        match h {
            Some(Handle::File(f)) => {
                let _ = self.closer.send(Box::new(f));
            }
            Some(Handle::Dir(d)) => {
                let _ = self.closer.send(Box::new(d));
            }
            None => {}
        }
    }

    pub fn len(&self) -> usize {
        self.map.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    #[test]
    fn root_and_one_trade_places() {
        assert_eq!(map_ino(500, 500), 1);
        assert_eq!(map_ino(1, 500), 500);
        assert_eq!(map_ino(77, 500), 77);
        assert_eq!(map_ino(2, 2), 1);
    }

    fn scratch() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "netfs-inodes-test.{}.{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        d
    }

    /// Lookup counts: two lookups of one inode (e.g. two hard links) share an entry,
    /// which goes away when both are forgotten.
    #[test]
    fn lookups_are_counted_per_inode() {
        let d = scratch();
        std::fs::write(d.join("a"), b"x").unwrap();
        std::fs::hard_link(d.join("a"), d.join("b")).unwrap();
        let root =
            sys::open_path(libc::AT_FDCWD, &CString::new(d.to_str().unwrap()).unwrap()).unwrap();
        let ino = Inodes::new(root, closer()).unwrap();
        let mut ids = vec![];
        for name in [c"a", c"b"] {
            let fd = sys::open_path(ino.root_fd(), name).unwrap();
            let st = sys::fstat(fd.as_raw_fd()).unwrap();
            ids.push(ino.register(fd, &st).unwrap().0);
        }
        assert_eq!(ids[0], ids[1], "hard links share an inode number");
        assert_eq!(ino.len(), 1);
        ino.forget(ids[0], 1);
        assert!(ino.get(ids[0]).is_ok());
        ino.forget(ids[0], 1);
        assert_eq!(ino.get(ids[0]).err(), Some(Errno::ESTALE));
        assert!(ino.is_empty());
        assert!(ino.get(1).is_ok(), "the root is always there");
        // A removed inode is stale, as an NFS file handle is.
        let fd = sys::open_path(ino.root_fd(), c"a").unwrap();
        let st = sys::fstat(fd.as_raw_fd()).unwrap();
        let (id, generation) = ino.register(fd, &st).unwrap();
        assert!(!ino.uses_handles() || generation != 0);
        std::fs::remove_file(d.join("a")).unwrap();
        assert!(ino.get(id).is_ok(), "still linked as b");
        std::fs::remove_file(d.join("b")).unwrap();
        if ino.uses_handles() {
            assert_eq!(ino.get(id).err(), Some(Errno::ESTALE));
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn handles_are_typed() {
        let d = scratch();
        let h = Handles::new(closer());
        let f = File::create(d.join("f")).unwrap();
        let fh = h.insert(Handle::File(Arc::new(f)));
        assert!(h.file(fh).is_ok());
        assert_eq!(h.dir(fh).err(), Some(Errno::EBADF));
        h.remove(fh);
        assert_eq!(h.file(fh).err(), Some(Errno::EBADF));
        assert!(h.is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
