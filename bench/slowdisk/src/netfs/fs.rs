//! `NetFs`: one mount (one emulated NFS client) of a passthrough file system.
//!
//! Every request that would be an RPC on NFS is turned into a job on the mount's
//! `Pool` together with its `Reply*` object: a worker does the real backing call,
//! waits out the RTT and answers. The FUSE session thread only decodes and queues,
//! so the waits of concurrent callers overlap. Free requests (flush, release,
//! releasedir, forget, rename with flags) are answered at once on the session thread.
//!
//! The backing tree is served as root; permission checks are the kernel's
//! (`default_permissions`), and whatever a caller creates is given the caller's
//! uid/gid afterwards (like NFS with `no_root_squash` and AUTH_SYS).

use std::collections::HashMap;
use std::ffi::{CStr, OsStr};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite,
    Request, TimeOrNow, WriteFlags,
};

use super::inodes::{self, Handle, Handles, Inodes};
use super::pool::{Done, Pool};
use super::stats::{Op, Stats};
use super::sys::{self, DirEnt, DirStream, Res};

/// Largest read/write request we ask the kernel for.
pub const MAX_IO: u32 = 1 << 20;

/// The server: backing tree, inode and handle tables, counters. Shared by all mounts.
pub struct Shared {
    pub inodes: Inodes,
    pub handles: Handles,
    /// `/proc/self/fd`, to reopen `O_PATH` fds with real access modes.
    proc_fd: OwnedFd,
    pub stats: Arc<Stats>,
    /// How listings behave when entries are removed while a directory is read.
    pub listing: Listing,
    /// Removals so far per directory (node id): `Listing::Reorder` orders by them.
    removals: Mutex<HashMap<u64, u64>>,
    /// Entries whose names start with this are never listed (they are there for lookups,
    /// unlink and rmdir's emptiness check), as SMB's access-based enumeration hides what the
    /// user may not read.
    pub hide: Option<Vec<u8>>,
}

/// What the server's directory cookies do when entries are removed during a listing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Listing {
    /// Offsets that survive removals (the backing file system's own): nothing is skipped.
    #[default]
    Stable,
    /// A cookie is a position in the directory as it is now: once entries already read are
    /// removed, the rest move down, and a reader that removes what it read skips as many
    /// entries as it removed (servers whose cookies are indexes into the listing).
    Index,
    /// Positions as with `Index`, in an order that changes with every removal from the
    /// directory (a hash order seeded by the removal count): entries are skipped and others
    /// come twice.
    Reorder,
}

impl std::str::FromStr for Listing {
    type Err = String;
    fn from_str(s: &str) -> Result<Listing, String> {
        match s {
            "stable" => Ok(Listing::Stable),
            "index" => Ok(Listing::Index),
            "reorder" => Ok(Listing::Reorder),
            _ => Err(format!(
                "unknown listing mode {s:?} (stable, index, reorder)"
            )),
        }
    }
}

/// Per-mount options.
#[derive(Clone, Debug)]
pub struct MountOpts {
    /// Attribute and entry TTL (also for negative entries).
    pub ttl: Duration,
    /// Answer READDIRPLUS (entries with attributes) instead of READDIR.
    pub readdirplus: bool,
    /// FUSE `max_background` / `congestion_threshold` (at least the slots).
    pub max_background: u16,
}

pub struct NetFs {
    sh: Arc<Shared>,
    pool: Arc<Pool>,
    opts: MountOpts,
    wcc: Arc<Wcc>,
}

/// Post-op attributes ("wcc data"). An NFS reply to REMOVE, CREATE, MKDIR, RENAME,
/// LINK or WRITE carries the changed directory's (or file's) new attributes, so the
/// client needs no GETATTR afterwards. The FUSE kernel module instead invalidates the
/// parent's attributes after every change, and with `default_permissions` the next
/// permission check in that directory fetches them again: one more round trip per
/// unlink or create than on NFS (more when several callers wait on the directory's
/// lock). So a GETATTR of an inode that this mount's own RPC changed within the
/// attribute TTL is answered at once: the NFS client would still hold those
/// attributes in its cache.
pub struct Wcc {
    ttl: Duration,
    changed: Mutex<HashMap<u64, Instant>>,
}

impl Wcc {
    pub fn new(ttl: Duration) -> Wcc {
        Wcc {
            ttl,
            changed: Mutex::new(HashMap::new()),
        }
    }

    /// This mount changed `ino` (its reply carried the new attributes).
    pub fn note(&self, ino: u64) {
        if self.ttl.is_zero() {
            return;
        }
        let mut m = self.changed.lock().unwrap();
        if m.len() >= 1 << 16 {
            let ttl = self.ttl;
            m.retain(|_, t| t.elapsed() < ttl);
        }
        m.insert(ino, Instant::now());
    }

    /// Whether a GETATTR of `ino` can be answered from post-op attributes.
    pub fn fresh(&self, ino: u64) -> bool {
        let mut m = self.changed.lock().unwrap();
        match m.get(&ino) {
            Some(t) if t.elapsed() < self.ttl => true,
            Some(_) => {
                m.remove(&ino);
                false
            }
            None => false,
        }
    }
}

impl Shared {
    pub fn new(backing: &Path, stats: Arc<Stats>) -> std::io::Result<Shared> {
        let c = std::ffi::CString::new(backing.as_os_str().as_bytes())?;
        let root =
            sys::openat(libc::AT_FDCWD, &c, libc::O_PATH | libc::O_DIRECTORY, 0).map_err(io_err)?;
        let proc_fd = sys::openat(
            libc::AT_FDCWD,
            c"/proc/self/fd",
            libc::O_PATH | libc::O_DIRECTORY,
            0,
        )
        .map_err(io_err)?;
        let closer = inodes::closer();
        Ok(Shared {
            inodes: Inodes::new(root, closer.clone()).map_err(io_err)?,
            handles: Handles::new(closer),
            proc_fd,
            stats,
            listing: Listing::Stable,
            removals: Mutex::new(HashMap::new()),
            hide: None,
        })
    }

    fn proc(&self) -> RawFd {
        self.proc_fd.as_raw_fd()
    }

    /// lstat `dir/name`, count the kernel's lookup, return the attributes.
    fn lookup_at(&self, dir: RawFd, name: &CStr) -> Res<Ent> {
        let fd = sys::open_path(dir, name)?;
        let st = sys::fstat(fd.as_raw_fd())?;
        let (id, generation) = self.inodes.register(fd, &st)?;
        Ok((sys::attr(&st, id), generation))
    }

    fn lookup(&self, parent: u64, name: &CStr) -> Res<Ent> {
        let dir = self.inodes.get(parent)?;
        self.lookup_at(dir.as_raw_fd(), name)
    }

    /// Give a new object (fd: `O_PATH` or open) the creator's ids. In a set-group-ID
    /// directory the group stays the directory's, as the backing file system set it.
    fn own(&self, fd: RawFd, parent: RawFd, who: Caller) -> Res<libc::stat> {
        let st = sys::fstat(fd)?;
        let pst = sys::fstat(parent)?;
        let gid = if pst.st_mode & libc::S_ISGID != 0 {
            st.st_gid
        } else {
            who.gid
        };
        if st.st_uid == who.uid && st.st_gid == gid {
            return Ok(st);
        }
        sys::chown_fd(fd, who.uid, gid)?;
        let kind = st.st_mode & libc::S_IFMT;
        let setid = st.st_mode & (libc::S_ISUID | libc::S_ISGID);
        if setid != 0 && kind != libc::S_IFDIR && kind != libc::S_IFLNK {
            // chown clears set-ID bits of files; the creator asked for them.
            sys::chmod_fd(self.proc(), fd, st.st_mode & 0o7777)?;
        }
        sys::fstat(fd)
    }

    /// After mkdir/mknod/symlink of `dir/name`: open it, own it, count the lookup.
    fn finish_new(&self, dir: RawFd, name: &CStr, who: Caller) -> Res<Ent> {
        let fd = sys::open_path(dir, name)?;
        let st = self.own(fd.as_raw_fd(), dir, who)?;
        let (id, generation) = self.inodes.register(fd, &st)?;
        Ok((sys::attr(&st, id), generation))
    }

    fn create(
        &self,
        parent: u64,
        name: &CStr,
        mode: u32,
        flags: i32,
        who: Caller,
    ) -> Res<(Ent, u64)> {
        let dir = self.inodes.get(parent)?;
        let flags = (flags | libc::O_CREAT) & !libc::O_NOCTTY;
        let file = sys::openat(dir.as_raw_fd(), name, flags, mode & 0o7777)?;
        let path = sys::reopen(self.proc(), file.as_raw_fd(), libc::O_PATH)?;
        let st = self.own(path.as_raw_fd(), dir.as_raw_fd(), who)?;
        let (id, generation) = self.inodes.register(path, &st)?;
        let fh = self
            .handles
            .insert(Handle::File(Arc::new(File::from(file))));
        Ok(((sys::attr(&st, id), generation), fh))
    }

    fn open(&self, ino: u64, flags: i32) -> Res<u64> {
        let fd = self.inodes.get(ino)?;
        let flags = flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY);
        let file = sys::reopen(self.proc(), fd.as_raw_fd(), flags)?;
        Ok(self
            .handles
            .insert(Handle::File(Arc::new(File::from(file)))))
    }

    fn opendir(&self, ino: u64) -> Res<u64> {
        let fd = self.inodes.get(ino)?;
        let dir = sys::reopen(
            self.proc(),
            fd.as_raw_fd(),
            libc::O_RDONLY | libc::O_DIRECTORY,
        )?;
        let ds = DirStream::new(dir)?;
        Ok(self.handles.insert(Handle::Dir(Arc::new(Mutex::new(ds)))))
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &self,
        ino: u64,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        fh: Option<FileHandle>,
    ) -> Res<FileAttr> {
        // An open file is reached through its handle: it may be unlinked already.
        let file = fh.and_then(|fh| self.handles.file(fh.0).ok());
        let path_fd;
        let raw = match &file {
            Some(f) => f.as_raw_fd(),
            None => {
                path_fd = self.inodes.get(ino)?;
                path_fd.as_raw_fd()
            }
        };
        if uid.is_some() || gid.is_some() {
            sys::chown_fd(raw, uid.unwrap_or(u32::MAX), gid.unwrap_or(u32::MAX))?;
        }
        if let Some(mode) = mode {
            sys::chmod_fd(self.proc(), raw, mode & 0o7777)?;
        }
        if let Some(size) = size {
            match &file {
                Some(f) => sys::ftruncate(f.as_raw_fd(), size)?,
                None => {
                    let w = sys::reopen(self.proc(), raw, libc::O_WRONLY)?;
                    sys::ftruncate(w.as_raw_fd(), size)?;
                }
            }
        }
        if atime.is_some() || mtime.is_some() {
            sys::utimens_fd(raw, &[timespec(atime), timespec(mtime)])?;
        }
        let st = sys::fstat(raw)?;
        Ok(sys::attr(&st, ino))
    }

    fn link(&self, ino: u64, newparent: u64, newname: &CStr) -> Res<Ent> {
        let fd = self.inodes.get(ino)?;
        let dir = self.inodes.get(newparent)?;
        sys::link_fd(fd.as_raw_fd(), dir.as_raw_fd(), newname)?;
        self.lookup_at(dir.as_raw_fd(), newname)
    }

    fn read(&self, fh: u64, offset: u64, size: u32) -> Res<Vec<u8>> {
        let f = self.handles.file(fh)?;
        let mut buf = vec![0u8; size as usize];
        let mut done = 0;
        while done < buf.len() {
            match f.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(errno(&e)),
            }
        }
        buf.truncate(done);
        Ok(buf)
    }

    /// An entry was removed from directory `dir` (the listing modes that shift need it).
    fn removed_from(&self, dir: u64) {
        if self.listing != Listing::Stable {
            *self.removals.lock().unwrap().entry(dir).or_default() += 1;
        }
    }

    /// Where a listing of directory `ino` (open as `d`) goes on from `offset`.
    fn cursor<'a>(&self, ino: u64, d: &'a mut DirStream, offset: u64) -> Res<Cursor<'a>> {
        let hide = self.hide.clone();
        if self.listing == Listing::Stable {
            d.seek(offset as i64);
            return Ok(Cursor {
                d,
                list: None,
                hide,
            });
        }
        // Cookies are positions in the directory as it is now: read it all again.
        d.seek(0);
        let mut all = Vec::new();
        while let Some(e) = d.next_entry()? {
            all.push(e);
        }
        let dots = all
            .iter()
            .take_while(|e| matches!(e.name.as_bytes(), b"." | b".."))
            .count();
        if self.listing == Listing::Reorder {
            let seed = self
                .removals
                .lock()
                .unwrap()
                .get(&ino)
                .copied()
                .unwrap_or(0);
            all[dots..].sort_by_key(|e| (mix(seed, e.name.as_bytes()), e.ino));
        }
        for (i, e) in all.iter_mut().enumerate() {
            e.off = i as i64 + 1;
        }
        let list: Vec<DirEnt> = all.into_iter().skip(offset as usize).collect();
        Ok(Cursor {
            d,
            list: Some(list.into_iter()),
            hide,
        })
    }

    /// Fill a READDIR reply from `offset`; returns the number of entries.
    fn readdir(&self, ino: u64, fh: u64, offset: u64, reply: &mut ReplyDirectory) -> Res<u64> {
        let d = self.handles.dir(fh)?;
        let mut d = d.lock().unwrap();
        let mut cur = self.cursor(ino, &mut d, offset)?;
        let mut n = 0;
        loop {
            let before = cur.pos();
            let Some(e) = cur.next()? else { break };
            let kind = match e.kind {
                Some(k) => k,
                None => match sys::statat(cur.fd(), &e.name) {
                    Ok(st) => sys::file_type(st.st_mode),
                    Err(_) => continue,
                },
            };
            let id = if e.name.as_bytes() == b"." {
                ino
            } else {
                self.inodes.nodeid(e.ino)
            };
            let name = OsStr::from_bytes(e.name.as_bytes());
            if reply.add(INodeNo(id), e.off as u64, kind, name) {
                cur.unread(before);
                break;
            }
            n += 1;
        }
        Ok(n)
    }

    /// Fill a READDIRPLUS reply: every entry but `.` and `..` counts as a lookup.
    fn readdirplus(
        &self,
        ino: u64,
        fh: u64,
        offset: u64,
        ttl: Duration,
        reply: &mut ReplyDirectoryPlus,
    ) -> Res<u64> {
        let d = self.handles.dir(fh)?;
        let mut d = d.lock().unwrap();
        let mut cur = self.cursor(ino, &mut d, offset)?;
        let mut n = 0;
        loop {
            let before = cur.pos();
            let Some(e) = cur.next()? else { break };
            let name = OsStr::from_bytes(e.name.as_bytes());
            let dots = matches!(e.name.as_bytes(), b"." | b"..");
            let (attr, generation) = if dots {
                // The kernel links neither; only the name and number are used.
                let mut a = sys::negative_attr();
                a.kind = FileType::Directory;
                a.ino = INodeNo(if e.name.as_bytes() == b"." {
                    ino
                } else {
                    self.inodes.nodeid(e.ino)
                });
                (a, 0)
            } else {
                match self.lookup_at(cur.fd(), &e.name) {
                    Ok(a) => a,
                    // Gone since the listing (or on another file system): skip it.
                    Err(_) => continue,
                }
            };
            if reply.add(
                attr.ino,
                e.off as u64,
                name,
                &ttl,
                &attr,
                Generation(generation),
            ) {
                if !dots {
                    self.inodes.forget(attr.ino.0, 1);
                }
                cur.unread(before);
                break;
            }
            n += 1;
        }
        Ok(n)
    }
}

/// A listing in progress: the directory stream itself (stable offsets), or the entries from
/// the asked position on of a listing read whole (positional cookies).
struct Cursor<'a> {
    d: &'a mut DirStream,
    list: Option<std::vec::IntoIter<DirEnt>>,
    /// Names with this prefix are skipped (`Shared::hide`).
    hide: Option<Vec<u8>>,
}

impl Cursor<'_> {
    fn next(&mut self) -> Res<Option<DirEnt>> {
        loop {
            let e = match &mut self.list {
                Some(l) => l.next(),
                None => self.d.next_entry()?,
            };
            match (&e, &self.hide) {
                (Some(e), Some(h)) if e.name.as_bytes().starts_with(h) => continue,
                _ => return Ok(e),
            }
        }
    }

    fn pos(&self) -> i64 {
        self.d.pos
    }

    /// The last entry did not fit the reply: the next request asks for it again (a
    /// positional listing is read afresh every time: nothing to undo).
    fn unread(&mut self, before: i64) {
        if self.list.is_none() {
            self.d.seek(before);
        }
    }

    fn fd(&self) -> RawFd {
        self.d.fd()
    }
}

/// A hash of `name` under `seed` (the order of a `Listing::Reorder` directory).
fn mix(seed: u64, name: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for b in name {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
    }
    h ^ (h >> 31)
}

/// Who asked (from the FUSE request header).
#[derive(Clone, Copy, Debug)]
struct Caller {
    uid: u32,
    gid: u32,
}

impl Caller {
    fn of(req: &Request) -> Caller {
        Caller {
            uid: req.uid(),
            gid: req.gid(),
        }
    }
}

fn io_err(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.code())
}

fn errno(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn timespec(t: Option<TimeOrNow>) -> libc::timespec {
    let (tv_sec, tv_nsec) = match t {
        None => (0, libc::UTIME_OMIT),
        Some(TimeOrNow::Now) => (0, libc::UTIME_NOW),
        Some(TimeOrNow::SpecificTime(t)) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => (d.as_secs() as i64, d.subsec_nanos() as i64),
            Err(e) => {
                let d = e.duration();
                let (s, ns) = (d.as_secs() as i64, d.subsec_nanos() as i64);
                if ns == 0 {
                    (-s, 0)
                } else {
                    (-s - 1, 1_000_000_000 - ns)
                }
            }
        },
    };
    libc::timespec { tv_sec, tv_nsec }
}

/// Attributes and FUSE generation of a looked-up inode.
type Ent = (FileAttr, u64);

fn entry(reply: ReplyEntry, ttl: Duration, r: Res<Ent>) -> Done {
    Box::new(move || match r {
        Ok((a, generation)) => {
            reply.entry(&ttl, &a, Generation(generation));
            true
        }
        Err(e) => {
            reply.error(e);
            false
        }
    })
}

fn empty(reply: ReplyEmpty, r: Res<()>) -> Done {
    Box::new(move || match r {
        Ok(()) => {
            reply.ok();
            true
        }
        Err(e) => {
            reply.error(e);
            false
        }
    })
}

fn attr(reply: ReplyAttr, ttl: Duration, r: Res<FileAttr>) -> Done {
    Box::new(move || match r {
        Ok(a) => {
            reply.attr(&ttl, &a);
            true
        }
        Err(e) => {
            reply.error(e);
            false
        }
    })
}

fn opened(reply: ReplyOpen, r: Res<u64>) -> Done {
    Box::new(move || match r {
        Ok(fh) => {
            reply.opened(FileHandle(fh), FopenFlags::empty());
            true
        }
        Err(e) => {
            reply.error(e);
            false
        }
    })
}

/// Names from the kernel never hold NUL; if one did, the operation fails with EINVAL.
fn name_of(name: &OsStr) -> Res<std::ffi::CString> {
    sys::cstr(name)
}

impl NetFs {
    pub fn new(sh: Arc<Shared>, pool: Arc<Pool>, opts: MountOpts) -> NetFs {
        let wcc = Arc::new(Wcc::new(opts.ttl));
        NetFs {
            sh,
            pool,
            opts,
            wcc,
        }
    }

    /// Queue `f` as one RPC: it runs on a worker, its reply goes out after the RTT.
    fn rpc(&self, op: Op, f: impl FnOnce(&Shared) -> Done + Send + 'static) {
        let sh = self.sh.clone();
        self.pool.submit(op, Box::new(move || f(&sh)));
    }

    fn ttl(&self) -> Duration {
        self.opts.ttl
    }
}

impl Filesystem for NetFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        if let Err(nearest) = config.set_max_write(MAX_IO) {
            let _ = config.set_max_write(nearest);
        }
        if let Err(nearest) = config.set_max_readahead(MAX_IO) {
            let _ = config.set_max_readahead(nearest);
        }
        // Background requests (readahead, async reads) must not be capped below the slots.
        let bg = self.opts.max_background.max(16);
        let _ = config.set_max_background(bg);
        let _ = config.set_congestion_threshold(bg);
        // Lookups and readdirs in one directory in parallel, as on NFS (without this the
        // FUSE kernel module serialises them per directory).
        let mut want = InitFlags::FUSE_PARALLEL_DIROPS | InitFlags::FUSE_AUTO_INVAL_DATA;
        if self.opts.readdirplus {
            want |= InitFlags::FUSE_DO_READDIRPLUS;
        }
        if let Err(missing) = config.add_capabilities(want) {
            eprintln!("netfs: kernel lacks FUSE capabilities {missing:?}");
            let _ = config.add_capabilities(want & !missing);
            if missing.contains(InitFlags::FUSE_DO_READDIRPLUS) {
                self.opts.readdirplus = false;
            }
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let ttl = self.ttl();
        let name = name_of(name);
        self.rpc(Op::Lookup, move |sh| {
            let r = name.and_then(|n| sh.lookup(parent.0, &n));
            match r {
                // Cache the absence for the TTL, as the NFS client caches negative lookups.
                Err(Errno::ENOENT) => {
                    let neg = sys::negative_attr();
                    Box::new(move || {
                        reply.entry(&ttl, &neg, Generation(0));
                        false
                    })
                }
                r => entry(reply, ttl, r),
            }
        });
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.sh.inodes.forget(ino.0, nlookup);
        self.sh.stats.record_free(Op::Forget, true);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let ttl = self.ttl();
        let stat = move |sh: &Shared| {
            // fstat of an open (maybe unlinked) file goes through its handle.
            match fh.and_then(|fh| sh.handles.file(fh.0).ok()) {
                Some(f) => sys::fstat(f.as_raw_fd()),
                None => sh
                    .inodes
                    .get(ino.0)
                    .and_then(|fd| sys::fstat(fd.as_raw_fd())),
            }
            .map(|st| sys::attr(&st, ino.0))
        };
        if self.wcc.fresh(ino.0) {
            let ok = attr(reply, ttl, stat(&self.sh))();
            self.sh.stats.record_free(Op::GetattrWcc, ok);
            return;
        }
        self.rpc(Op::Getattr, move |sh| attr(reply, ttl, stat(sh)));
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let ttl = self.ttl();
        self.rpc(Op::Setattr, move |sh| {
            let r = sh.setattr(ino.0, mode, uid, gid, size, atime, mtime, fh);
            attr(reply, ttl, r)
        });
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        self.rpc(Op::Readlink, move |sh| {
            let r = sh
                .inodes
                .get(ino.0)
                .and_then(|fd| sys::readlink_fd(fd.as_raw_fd()));
            Box::new(move || match r {
                Ok(t) => {
                    reply.data(&t);
                    true
                }
                Err(e) => {
                    reply.error(e);
                    false
                }
            })
        });
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let (ttl, who, name) = (self.ttl(), Caller::of(req), name_of(name));
        let wcc = self.wcc.clone();
        self.rpc(Op::Mknod, move |sh| {
            let r = name.and_then(|n| {
                let dir = sh.inodes.get(parent.0)?;
                sys::mknodat(dir.as_raw_fd(), &n, mode, rdev)?;
                sh.finish_new(dir.as_raw_fd(), &n, who)
            });
            if r.is_ok() {
                wcc.note(parent.0);
            }
            entry(reply, ttl, r)
        });
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let (ttl, who, name) = (self.ttl(), Caller::of(req), name_of(name));
        let wcc = self.wcc.clone();
        self.rpc(Op::Mkdir, move |sh| {
            let r = name.and_then(|n| {
                let dir = sh.inodes.get(parent.0)?;
                sys::mkdirat(dir.as_raw_fd(), &n, mode & 0o7777)?;
                sh.finish_new(dir.as_raw_fd(), &n, who)
            });
            if r.is_ok() {
                wcc.note(parent.0);
            }
            entry(reply, ttl, r)
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let name = name_of(name);
        let wcc = self.wcc.clone();
        self.rpc(Op::Unlink, move |sh| {
            let r = name.and_then(|n| {
                let dir = sh.inodes.get(parent.0)?;
                sys::unlinkat(dir.as_raw_fd(), &n, 0)
            });
            if r.is_ok() {
                wcc.note(parent.0);
                sh.removed_from(parent.0);
            }
            empty(reply, r)
        });
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let name = name_of(name);
        let wcc = self.wcc.clone();
        self.rpc(Op::Rmdir, move |sh| {
            let r = name.and_then(|n| {
                let dir = sh.inodes.get(parent.0)?;
                sys::unlinkat(dir.as_raw_fd(), &n, libc::AT_REMOVEDIR)
            });
            if r.is_ok() {
                wcc.note(parent.0);
                sh.removed_from(parent.0);
            }
            empty(reply, r)
        });
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let (ttl, who, name) = (self.ttl(), Caller::of(req), name_of(link_name));
        let target = name_of(target.as_os_str());
        let wcc = self.wcc.clone();
        self.rpc(Op::Symlink, move |sh| {
            let r = name.and_then(|n| {
                let t = target?;
                let dir = sh.inodes.get(parent.0)?;
                sys::symlinkat(&t, dir.as_raw_fd(), &n)?;
                sh.finish_new(dir.as_raw_fd(), &n, who)
            });
            if r.is_ok() {
                wcc.note(parent.0);
            }
            entry(reply, ttl, r)
        });
    }

    /// Like the Linux NFS client: any flag (NOREPLACE, EXCHANGE, WHITEOUT) is EINVAL
    /// without a round trip; a plain rename is an RPC.
    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if !flags.is_empty() {
            self.sh.stats.record_free(Op::RenameFlags, false);
            return reply.error(Errno::EINVAL);
        }
        let (name, newname) = (name_of(name), name_of(newname));
        let wcc = self.wcc.clone();
        self.rpc(Op::Rename, move |sh| {
            let r = (|| {
                let (n, nn) = (name?, newname?);
                let d = sh.inodes.get(parent.0)?;
                let nd = sh.inodes.get(newparent.0)?;
                sys::renameat(d.as_raw_fd(), &n, nd.as_raw_fd(), &nn)
            })();
            if r.is_ok() {
                wcc.note(parent.0);
                wcc.note(newparent.0);
                sh.removed_from(parent.0);
            }
            empty(reply, r)
        });
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let (ttl, name) = (self.ttl(), name_of(newname));
        let wcc = self.wcc.clone();
        self.rpc(Op::Link, move |sh| {
            let r = name.and_then(|n| sh.link(ino.0, newparent.0, &n));
            if r.is_ok() {
                wcc.note(newparent.0);
                wcc.note(ino.0);
            }
            entry(reply, ttl, r)
        });
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.rpc(Op::Open, move |sh| opened(reply, sh.open(ino.0, flags.0)));
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.rpc(Op::Read, move |sh| {
            let r = sh.read(fh.0, offset, size);
            Box::new(move || match r {
                Ok(buf) => {
                    reply.data(&buf);
                    true
                }
                Err(e) => {
                    reply.error(e);
                    false
                }
            })
        });
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let data = data.to_vec();
        let wcc = self.wcc.clone();
        self.rpc(Op::Write, move |sh| {
            let r = sh
                .handles
                .file(fh.0)
                .and_then(|f| f.write_all_at(&data, offset).map_err(|e| errno(&e)));
            if r.is_ok() {
                wcc.note(ino.0);
            }
            let n = data.len() as u32;
            Box::new(move || match r {
                Ok(()) => {
                    reply.written(n);
                    true
                }
                Err(e) => {
                    reply.error(e);
                    false
                }
            })
        });
    }

    /// close(2): free (an NFS client flushes dirty pages here; writes are write-through).
    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        self.sh.stats.record_free(Op::Flush, true);
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.sh.handles.remove(fh.0);
        self.sh.stats.record_free(Op::Release, true);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.rpc(Op::Fsync, move |sh| {
            let r = sh
                .handles
                .file(fh.0)
                .and_then(|f| sys::fsync(f.as_raw_fd(), datasync));
            empty(reply, r)
        });
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.rpc(Op::Opendir, move |sh| opened(reply, sh.opendir(ino.0)));
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        self.rpc(Op::Readdir, move |sh| {
            let r = sh.readdir(ino.0, fh.0, offset, &mut reply);
            if let Ok(n) = r {
                sh.stats.add_items(Op::Readdir, n);
            }
            Box::new(move || match r {
                Ok(_) => {
                    reply.ok();
                    true
                }
                Err(e) => {
                    reply.error(e);
                    false
                }
            })
        });
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let ttl = self.ttl();
        self.rpc(Op::Readdirplus, move |sh| {
            let r = sh.readdirplus(ino.0, fh.0, offset, ttl, &mut reply);
            if let Ok(n) = r {
                sh.stats.add_items(Op::Readdirplus, n);
            }
            Box::new(move || match r {
                Ok(_) => {
                    reply.ok();
                    true
                }
                Err(e) => {
                    reply.error(e);
                    false
                }
            })
        });
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.sh.handles.remove(fh.0);
        self.sh.stats.record_free(Op::Releasedir, true);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.rpc(Op::Fsyncdir, move |sh| {
            let r = sh
                .handles
                .dir(fh.0)
                .and_then(|d| sys::fsync(d.lock().unwrap().fd(), datasync));
            empty(reply, r)
        });
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        self.rpc(Op::Statfs, move |sh| {
            let r = sys::fstatvfs(sh.inodes.root_fd());
            Box::new(move || match r {
                Ok(s) => {
                    reply.statfs(
                        s.f_blocks,
                        s.f_bfree,
                        s.f_bavail,
                        s.f_files,
                        s.f_ffree,
                        s.f_bsize as u32,
                        s.f_namemax as u32,
                        s.f_frsize as u32,
                    );
                    true
                }
                Err(e) => {
                    reply.error(e);
                    false
                }
            })
        });
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let (ttl, who, name) = (self.ttl(), Caller::of(req), name_of(name));
        let wcc = self.wcc.clone();
        self.rpc(Op::Create, move |sh| {
            let r = name.and_then(|n| sh.create(parent.0, &n, mode, flags, who));
            if r.is_ok() {
                wcc.note(parent.0);
            }
            Box::new(move || match r {
                Ok(((a, generation), fh)) => {
                    let g = Generation(generation);
                    reply.created(&ttl, &a, g, FileHandle(fh), FopenFlags::empty());
                    true
                }
                Err(e) => {
                    reply.error(e);
                    false
                }
            })
        });
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        self.rpc(Op::Fallocate, move |sh| {
            let r = sh
                .handles
                .file(fh.0)
                .and_then(|f| sys::fallocate(f.as_raw_fd(), mode, offset, length));
            empty(reply, r)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wcc_answers_getattrs_within_the_ttl_of_a_change() {
        let w = Wcc::new(Duration::from_millis(50));
        assert!(!w.fresh(7));
        w.note(7);
        assert!(w.fresh(7));
        assert!(w.fresh(7), "every GETATTR until the TTL runs out");
        w.note(8);
        std::thread::sleep(Duration::from_millis(60));
        assert!(!w.fresh(8), "expired with the TTL");
        assert!(!w.fresh(7));
        let off = Wcc::new(Duration::ZERO);
        off.note(9);
        assert!(!off.fresh(9), "attr TTL 0: every GETATTR is a round trip");
    }
}
