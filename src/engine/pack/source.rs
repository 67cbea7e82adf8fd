//! Reading the tree to pack: the walk that lists it (directories in order, names sorted) and
//! the readers that open, stat and read its entries in parallel (the profile's concurrency:
//! tens on a network file system). Every open is `openat2` beneath the packed directory's
//! fd with `RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV`: nothing is read through a symlink, and
//! nothing from another file system. Reads only (with `O_NOATIME` where allowed: packing
//! does not make a cold tree look used); never writes or removes anything.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::io::Read as _;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use rustix::fs::{statx, AtFlags, FileType, OFlags, StatxFlags};
use rustix::io::Errno;

use super::manifest::{Kind, Time};

/// Files up to this size are read whole by the readers (in parallel); larger ones are
/// streamed by the writer when their turn comes.
pub const SMALL: u64 = 1 << 20;

/// One entry the walk found.
#[derive(Debug)]
pub struct Item {
    /// Relative to the packed directory; empty for the directory itself.
    pub rel: Vec<u8>,
    pub dtype: FileType,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Listing {
    pub items: Vec<Item>,
    /// Entries squashfs cannot hold (sockets): path and why.
    pub refused: Vec<(Vec<u8>, String)>,
}

/// Why the walk stopped.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("{}: {}", crate::sys::quote::quote(std::ffi::OsStr::from_bytes(.0)), crate::sys::error::errno_text(*.1))]
    Os(Vec<u8>, Errno),
    #[error("{}: a mount point of another file system inside the tree (pack stays on one file system; pack each separately)", crate::sys::quote::quote(std::ffi::OsStr::from_bytes(.0)))]
    Mount(Vec<u8>),
    #[error("interrupted")]
    Interrupted,
}

use std::os::unix::ffi::OsStrExt;

/// Opens `rel` beneath `root`, never through a symlink nor into another mount
/// (`safeopen::open_beneath`).
pub fn open_beneath(root: &OwnedFd, rel: &[u8], flags: OFlags) -> Result<OwnedFd, Errno> {
    crate::sys::safeopen::open_beneath(root, rel, flags)
}

/// Lists the tree below `root` (depth first, names in byte order, each directory before its
/// entries).
pub fn walk(root: &OwnedFd) -> Result<Listing, WalkError> {
    let mut out = Listing::default();
    let mut buf = crate::sys::dirfd::DirBuf::new(256 << 10);
    // Directories still to list, the next one last.
    let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
    out.items.push(Item {
        rel: Vec::new(),
        dtype: FileType::Directory,
    });
    while let Some(dir) = stack.pop() {
        if crate::sys::interrupt::stopping() {
            return Err(WalkError::Interrupted);
        }
        let fd = match open_beneath(root, &dir, OFlags::RDONLY | OFlags::DIRECTORY) {
            Ok(fd) => fd,
            Err(Errno::XDEV) => return Err(WalkError::Mount(dir)),
            Err(e) => return Err(WalkError::Os(dir, e)),
        };
        let mut names: Vec<(Vec<u8>, FileType)> = Vec::new();
        crate::sys::dirfd::for_each_entry(&fd, &mut buf, |name, t, _| {
            names.push((name.to_bytes().to_vec(), t))
        })
        .map_err(|e| WalkError::Os(dir.clone(), e))?;
        names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut subdirs = Vec::new();
        for (name, t) in names {
            let rel = join(&dir, &name);
            let t = if t == FileType::Unknown {
                match statx(
                    &fd,
                    name.as_slice(),
                    AtFlags::SYMLINK_NOFOLLOW,
                    StatxFlags::TYPE,
                ) {
                    Ok(s) => FileType::from_raw_mode(s.stx_mode.into()),
                    Err(Errno::NOENT) => continue,
                    Err(e) => return Err(WalkError::Os(rel, e)),
                }
            } else {
                t
            };
            match t {
                FileType::Socket => {
                    out.refused
                        .push((rel, "a socket: squashfs through tar cannot hold one".into()));
                    continue;
                }
                FileType::Directory => subdirs.push(rel.clone()),
                _ => {}
            }
            out.items.push(Item { rel, dtype: t });
        }
        stack.extend(subdirs.into_iter().rev());
    }
    // Depth first, each directory's entries right after it, as squashfs lists them (the
    // read-back then meets them in the same order).
    out.items.sort_by(|a, b| cmp_paths(&a.rel, &b.rel));
    Ok(out)
}

/// Orders paths component by component (a directory's entries right after it, depth first).
pub fn cmp_paths(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.split(|&c| c == b'/').cmp(b.split(|&c| c == b'/'))
}

pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir.is_empty() {
        name.to_vec()
    } else {
        let mut v = Vec::with_capacity(dir.len() + 1 + name.len());
        v.extend_from_slice(dir);
        v.push(b'/');
        v.extend_from_slice(name);
        v
    }
}

/// The facts of an entry when it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub kind: Kind,
    pub dev: u64,
    pub ino: u64,
    pub nlink: u32,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub mtime: Time,
    pub ctime: Time,
    pub atime: Time,
    pub rdev: u64,
    pub mnt_id: u64,
}

const STAT_MASK: StatxFlags = StatxFlags::BASIC_STATS.union(StatxFlags::MNT_ID);

impl Stat {
    pub fn of(fd: impl AsFd, name: &CStr, flags: AtFlags) -> Result<Option<Stat>, Errno> {
        let s = statx(fd, name, flags | AtFlags::SYMLINK_NOFOLLOW, STAT_MASK)?;
        let mode = u32::from(s.stx_mode);
        let t = |t: rustix::fs::StatxTimestamp| Time(t.tv_sec, t.tv_nsec);
        Ok(Kind::of_mode(mode).map(|kind| Stat {
            kind,
            dev: rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor),
            ino: s.stx_ino,
            nlink: s.stx_nlink,
            mode: mode & 0o7777,
            uid: s.stx_uid,
            gid: s.stx_gid,
            size: s.stx_size,
            mtime: t(s.stx_mtime),
            ctime: t(s.stx_ctime),
            atime: t(s.stx_atime),
            rdev: rustix::fs::makedev(s.stx_rdev_major, s.stx_rdev_minor),
            mnt_id: s.stx_mnt_id,
        }))
    }

    /// `fstat` of an open fd.
    pub fn of_fd(fd: impl AsFd) -> Result<Option<Stat>, Errno> {
        Stat::of(fd, c"", AtFlags::EMPTY_PATH)
    }
}

/// The content read.
#[derive(Debug)]
pub enum Content {
    None,
    /// Small file, read whole, with its hash.
    Bytes(Vec<u8>, blake3::Hash),
    /// Large file, open, for the writer to stream.
    Open(OwnedFd),
}

/// An entry as read.
#[derive(Debug)]
pub struct Read {
    pub rel: Vec<u8>,
    pub stat: Stat,
    pub xattrs: Vec<(String, Vec<u8>)>,
    pub target: Option<Vec<u8>>,
    pub content: Content,
    /// It changed while it was read (its facts after the read differ).
    pub changed: bool,
}

/// What reading one item gave.
#[derive(Debug)]
pub enum Got {
    Read(Box<Read>),
    /// Gone since the walk listed it (nothing to pack, nothing to remove).
    Gone,
    /// Cannot go into the archive: why.
    Refused(String),
    Failed(Errno),
}

/// Reads one item.
pub fn read_item(root: &OwnedFd, item: &Item, noatime: &std::sync::atomic::AtomicBool) -> Got {
    match read_inner(root, item, noatime) {
        Ok(g) => g,
        Err(Errno::NOENT) => Got::Gone,
        Err(e) => Got::Failed(e),
    }
}

fn read_inner(
    root: &OwnedFd,
    item: &Item,
    noatime: &std::sync::atomic::AtomicBool,
) -> Result<Got, Errno> {
    let readable = matches!(
        item.dtype,
        FileType::RegularFile | FileType::Directory | FileType::Unknown
    );
    let fd = if readable {
        let mut flags = OFlags::RDONLY | OFlags::NONBLOCK;
        if noatime.load(Ordering::Relaxed) {
            flags |= OFlags::NOATIME;
        }
        match open_beneath(root, &item.rel, flags) {
            Ok(fd) => fd,
            // Not the owner: O_NOATIME is refused; from now on, open without it.
            Err(Errno::PERM) if flags.contains(OFlags::NOATIME) => {
                noatime.store(false, Ordering::Relaxed);
                open_beneath(root, &item.rel, OFlags::RDONLY | OFlags::NONBLOCK)?
            }
            // A symlink now (swapped in since the walk): take it as what it is.
            Err(Errno::LOOP) => open_beneath(root, &item.rel, OFlags::PATH)?,
            Err(e) => return Err(e),
        }
    } else {
        open_beneath(root, &item.rel, OFlags::PATH)?
    };
    let Some(stat) = Stat::of_fd(&fd)? else {
        return Ok(Got::Refused(
            "a socket: squashfs through tar cannot hold one".into(),
        ));
    };
    let path_only = rustix::fs::fcntl_getfl(&fd)?.contains(OFlags::PATH);
    if stat.kind == Kind::Dir && !item.rel.is_empty() && item.dtype != FileType::Directory {
        return Ok(Got::Refused(
            "became a directory while the tree was read".into(),
        ));
    }
    let xattrs = xattrs(&fd, path_only)?;
    let mut read = Read {
        rel: item.rel.clone(),
        stat,
        xattrs,
        target: None,
        content: Content::None,
        changed: false,
    };
    match stat.kind {
        Kind::Symlink => {
            read.target = Some(rustix::fs::readlinkat(&fd, c"", Vec::new())?.into_bytes());
        }
        Kind::File if path_only => {
            // Swapped from something else into a regular file: read it through a real open.
            return Ok(Got::Refused(
                "became a regular file while the tree was read".into(),
            ));
        }
        Kind::File if stat.size <= SMALL => {
            let mut data = Vec::with_capacity(stat.size as usize);
            std::fs::File::from(
                fd.try_clone()
                    .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?,
            )
            .take(SMALL + 1)
            .read_to_end(&mut data)
            .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
            let hash = blake3::hash(&data);
            let after = Stat::of_fd(&fd)?;
            read.changed = after != Some(stat) || data.len() as u64 != stat.size;
            read.content = Content::Bytes(data, hash);
        }
        Kind::File => read.content = Content::Open(fd),
        _ => {}
    }
    Ok(Got::Read(Box::new(read)))
}

/// The extended attributes of an open entry (for an `O_PATH` fd through its /proc link, which
/// names the inode itself).
fn xattrs(fd: &OwnedFd, path_only: bool) -> Result<Vec<(String, Vec<u8>)>, Errno> {
    use std::os::fd::AsRawFd;
    let proc = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let mut names = vec![0u8; 4096];
    let n = loop {
        let r = if path_only {
            rustix::fs::listxattr(proc.as_str(), &mut names[..])
        } else {
            rustix::fs::flistxattr(fd, &mut names[..])
        };
        match r {
            Ok(n) => break n,
            Err(Errno::RANGE) => names.resize(names.len() * 4, 0),
            Err(Errno::NOTSUP | Errno::BADF | Errno::NOENT) => return Ok(vec![]),
            Err(e) => return Err(e),
        }
    };
    let mut out = Vec::new();
    for name in names[..n].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        let mut value = vec![0u8; 256];
        loop {
            let r = if path_only {
                rustix::fs::getxattr(proc.as_str(), name, &mut value[..])
            } else {
                rustix::fs::fgetxattr(fd, name, &mut value[..])
            };
            match r {
                Ok(n) => {
                    value.truncate(n);
                    break;
                }
                Err(Errno::RANGE) => value.resize(value.len().max(64 << 10) * 2, 0),
                Err(Errno::NODATA) => break,
                Err(e) => return Err(e),
            }
        }
        out.push((name.to_string(), value));
    }
    out.sort();
    Ok(out)
}

/// Reads `items` with `threads` readers, handing each result to `take` in the items' order;
/// at most `window` results wait at once. Stops early (returning what `take` returned) when
/// `take` fails or a stop is asked for.
pub fn read_in_order<E>(
    root: &OwnedFd,
    items: &[Item],
    threads: usize,
    window: usize,
    mut take: impl FnMut(usize, Got) -> Result<(), E>,
) -> Result<(), E> {
    struct Shared {
        ready: BTreeMap<usize, Got>,
        taken: usize,
        stop: bool,
    }
    let shared = Mutex::new(Shared {
        ready: BTreeMap::new(),
        taken: 0,
        stop: false,
    });
    let cv = Condvar::new();
    let next = AtomicUsize::new(0);
    let noatime = std::sync::atomic::AtomicBool::new(true);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() {
                    return;
                }
                {
                    let mut g = shared.lock().expect("reader lock");
                    while !g.stop && i >= g.taken + window {
                        g = cv.wait(g).expect("reader lock");
                    }
                    if g.stop {
                        return;
                    }
                }
                let got = read_item(root, &items[i], &noatime);
                let mut g = shared.lock().expect("reader lock");
                g.ready.insert(i, got);
                cv.notify_all();
            });
        }
        let mut result = Ok(());
        for i in 0..items.len() {
            let got = {
                let mut g = shared.lock().expect("reader lock");
                loop {
                    if let Some(got) = g.ready.remove(&i) {
                        break got;
                    }
                    g = cv.wait(g).expect("reader lock");
                }
            };
            let r = if crate::sys::interrupt::stopping() {
                Ok(())
            } else {
                take(i, got)
            };
            let mut g = shared.lock().expect("reader lock");
            g.taken = i + 1;
            if r.is_err() || crate::sys::interrupt::stopping() {
                g.stop = true;
                cv.notify_all();
                result = r;
                break;
            }
            cv.notify_all();
        }
        let mut g = shared.lock().expect("reader lock");
        g.stop = true;
        cv.notify_all();
        drop(g);
        result
    })
}
