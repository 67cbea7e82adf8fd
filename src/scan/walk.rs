//! The parallel walk of `reclaim scan`: reads trees with dirfd-relative syscalls only
//! (`openat(O_NOFOLLOW|O_DIRECTORY)` relative to the parent's fd, `getdents64`, one `statx` per
//! non-directory), across a pool of workers, and adds up what it meets. It never follows a
//! symlink, never leaves a PATH's mount unless told to, never writes, and never builds a path
//! for a syscall (paths are only for messages).
//!
//! fds stay bounded for any depth: a directory's fd is kept only while some of its
//! subdirectories are still to be opened or its entries still to be `statx`ed, at most
//! `fd_budget` of them at once (the shallowest are closed first); a closed one is reopened
//! downward from the nearest held ancestor, checking device and inode at every step.

use std::collections::HashSet;
use std::ffi::{CStr, CString, OsStr};
use std::ops::Range;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{statx, AtFlags, FileType, StatxFlags};
use rustix::io::Errno;

use super::histogram::Histogram;
use super::tally::{Counts, TopN};
use crate::dirfd::{self, DirBuf};
use crate::fdcache::FdCache;
use crate::pool::Queue;

/// Directories with at least this many entries count as big for the removal estimate (the
/// engine unlinks those in inode order, bound by the directory's lock).
pub const BIG_DIR: usize = 10_000;

/// Entries of one directory handed to one worker for `statx`; bigger directories are split so
/// that other workers share the work (a million files in one directory).
const BATCH: usize = 1024;

/// Entries are `statx`ed in inode order from this many on: neighbouring inodes share
/// inode-table blocks, so a cold cache reads each block once, in ascending order.
const SORT_MIN: usize = 256;

/// What kind of inode an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

/// What `statx` says about an inode that a scan needs.
#[derive(Clone, Copy, Debug)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub mnt_id: u64,
    pub kind: Kind,
    pub nlink: u32,
    /// `st_size`.
    pub size: u64,
    /// `st_blocks * 512`.
    pub allocated: u64,
}

const MASK: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::INO)
    .union(StatxFlags::NLINK)
    .union(StatxFlags::SIZE)
    .union(StatxFlags::BLOCKS)
    .union(StatxFlags::MNT_ID);

impl Stat {
    fn from_statx(s: &rustix::fs::Statx) -> Stat {
        let kind = match FileType::from_raw_mode(s.stx_mode.into()) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            _ => Kind::Other,
        };
        Stat {
            dev: rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor),
            ino: s.stx_ino,
            mnt_id: s.stx_mnt_id,
            kind,
            nlink: s.stx_nlink,
            size: s.stx_size,
            allocated: s.stx_blocks * 512,
        }
    }
}

/// `statx` of `name` in `dir`, not following a final symlink.
pub fn stat_at<Fd: AsFd>(dir: Fd, name: &CStr) -> Result<Stat, Errno> {
    statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, MASK).map(|s| Stat::from_statx(&s))
}

/// `statx` of an open fd.
pub fn stat_fd<Fd: AsFd>(fd: Fd) -> Result<Stat, Errno> {
    statx(fd, c"", AtFlags::EMPTY_PATH, MASK).map(|s| Stat::from_statx(&s))
}

/// How the walk works.
#[derive(Clone, Debug)]
pub struct Options {
    pub threads: usize,
    pub cross_mounts: bool,
    /// Regular files below this many bytes (`st_size`) are small.
    pub small: u64,
    /// Length of each top list.
    pub top: usize,
    /// Directory fds held at most (a few more, one per worker, may be in use for a moment).
    pub fd_budget: usize,
}

/// One PATH to scan, opened and checked by the caller.
pub enum Start {
    /// A directory: its fd (opened with `O_NOFOLLOW|O_DIRECTORY`) and `statx`.
    Dir {
        display: PathBuf,
        fd: OwnedFd,
        stat: Stat,
    },
    /// Anything else: counted as the one entry it is.
    Entry { display: PathBuf, stat: Stat },
}

/// Running totals for a progress line.
#[derive(Debug, Default)]
pub struct Live {
    pub names: AtomicU64,
    pub dirs: AtomicU64,
    pub allocated: AtomicU64,
    pub errors: AtomicU64,
}

/// A path the walk could not read, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanError {
    pub path: PathBuf,
    /// What was being done: "cannot open directory", "cannot read directory", "cannot stat".
    pub doing: &'static str,
    pub reason: String,
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.doing,
            crate::quote::quote(&self.path),
            self.reason
        )
    }
}

/// One directory of a top list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopDir {
    pub path: PathBuf,
    /// Regular files directly inside (names).
    pub files: u64,
    /// Of which smaller than `--small`.
    pub small_files: u64,
}

/// Everything a walk found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Counts per `Start`, in the order given.
    pub per_root: Vec<Counts>,
    /// Regular files by apparent size, each inode once.
    pub histogram: Histogram,
    pub top_files: Vec<TopDir>,
    pub top_small: Vec<TopDir>,
    pub errors: Vec<ScanError>,
    /// Mount points of other file systems (and bind mounts) that were not entered.
    pub skipped_mounts: Vec<PathBuf>,
}

/// Scans every start in parallel. `on_error` is called once per failure, as it happens.
pub fn scan(
    starts: Vec<Start>,
    opts: &Options,
    live: &Live,
    on_error: &(dyn Fn(&ScanError) + Sync),
) -> Outcome {
    let walker = Walker {
        opts: opts.clone(),
        live,
        on_error,
        queue: Queue::default(),
        fds: FdCache::new(opts.fd_budget.max(2)),
        seen: Mutex::new(HashSet::new()),
        seq: AtomicU64::new(0),
        errors: Mutex::new(Vec::new()),
        skipped: Mutex::new(Vec::new()),
    };
    let roots = starts.len();
    let mut first = Tally::new(roots, opts.top);
    for (index, start) in starts.into_iter().enumerate() {
        match start {
            Start::Dir { display, fd, stat } => {
                let root = Arc::new(Root {
                    index,
                    display,
                    fd: Arc::new(fd),
                    dev: stat.dev,
                    mnt_id: stat.mnt_id,
                });
                first.count_dir(index, &stat);
                live.dirs.fetch_add(1, Ordering::Relaxed);
                let dir = walker.new_dir(None, root, CString::default(), &stat);
                walker.queue.push(Task::Read(dir));
            }
            Start::Entry { stat, .. } => {
                walker.count_entry(&mut first, index, &stat);
                live.names.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..opts.threads.max(1))
            .map(|_| s.spawn(|| walker.work(Tally::new(roots, opts.top))))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("scan worker panicked"))
            .collect()
    });
    for t in tallies {
        first.merge(t);
    }
    // Highest count first; equal counts in inode order.
    let top = |list: TopN<Arc<Dir>>| -> Vec<TopDir> {
        list.into_sorted()
            .into_iter()
            .map(|(_, d)| TopDir {
                path: d.path(),
                files: d.files.load(Ordering::Relaxed),
                small_files: d.small.load(Ordering::Relaxed),
            })
            .collect()
    };
    let mut skipped_mounts = walker.skipped.into_inner().expect("skipped lock");
    skipped_mounts.sort();
    let mut errors = walker.errors.into_inner().expect("errors lock");
    errors.sort_by(|a, b| a.path.cmp(&b.path));
    Outcome {
        per_root: first.per_root,
        histogram: first.histogram,
        top_files: top(first.top_files),
        top_small: top(first.top_small),
        errors,
        skipped_mounts,
    }
}

/// One worker's private sums.
struct Tally {
    per_root: Vec<Counts>,
    histogram: Histogram,
    top_files: TopN<Arc<Dir>>,
    top_small: TopN<Arc<Dir>>,
}

impl Tally {
    fn new(roots: usize, top: usize) -> Self {
        Tally {
            per_root: vec![Counts::default(); roots],
            histogram: Histogram::default(),
            top_files: TopN::new(top),
            top_small: TopN::new(top),
        }
    }

    fn merge(&mut self, o: Tally) {
        for (a, b) in self.per_root.iter_mut().zip(&o.per_root) {
            a.merge(b);
        }
        self.histogram.merge(&o.histogram);
        self.top_files.merge(o.top_files);
        self.top_small.merge(o.top_small);
    }

    fn count_dir(&mut self, root: usize, st: &Stat) {
        let c = &mut self.per_root[root];
        c.dirs += 1;
        c.allocated_bytes += st.allocated;
        c.apparent_bytes += st.size;
    }
}

/// One PATH being scanned.
struct Root {
    index: usize,
    display: PathBuf,
    /// Held for the whole walk: every reopen can start here.
    fd: Arc<OwnedFd>,
    dev: u64,
    mnt_id: u64,
}

/// A directory that was opened.
struct Dir {
    /// None for the PATH itself.
    parent: Option<Arc<Dir>>,
    root: Arc<Root>,
    name: CString,
    depth: u32,
    seq: u64,
    dev: u64,
    ino: u64,
    fd: Mutex<Option<Arc<OwnedFd>>>,
    /// Subdirectories not yet opened, `statx` batches not yet done, plus one while reading.
    pending: AtomicUsize,
    /// Regular files directly inside (names), and of those the small ones.
    files: AtomicU64,
    small: AtomicU64,
}

impl Dir {
    /// The path for messages: the PATH as given joined with the names below it.
    fn path(&self) -> PathBuf {
        let mut names: Vec<&CStr> = Vec::new();
        let mut d = self;
        while let Some(p) = &d.parent {
            names.push(&d.name);
            d = p;
        }
        let mut path = self.root.display.clone();
        for name in names.iter().rev() {
            path.push(OsStr::from_bytes(name.to_bytes()));
        }
        path
    }

    fn child_path(&self, name: &CStr) -> PathBuf {
        let mut p = self.path();
        p.push(OsStr::from_bytes(name.to_bytes()));
        p
    }

    fn held_fd(&self) -> Option<Arc<OwnedFd>> {
        self.fd.lock().expect("fd lock").clone()
    }
}

impl Drop for Dir {
    /// Frees a chain of parents iteratively: a 100,000-level tree must not recurse.
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(p) = next {
            next = Arc::into_inner(p).and_then(|mut d| d.parent.take());
        }
    }
}

/// Names of one directory with their inode numbers, in one arena.
#[derive(Default)]
struct Listing {
    bytes: Vec<u8>,
    entries: Vec<(u64, u32, u32)>,
}

impl Listing {
    fn push(&mut self, ino: u64, name: &CStr) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(name.to_bytes_with_nul());
        self.entries.push((ino, start, self.bytes.len() as u32));
    }

    fn name(&self, i: usize) -> &CStr {
        let (_, start, end) = self.entries[i];
        CStr::from_bytes_with_nul(&self.bytes[start as usize..end as usize])
            .expect("listing holds NUL-terminated names")
    }
}

enum Task {
    /// Read a PATH's directory (its fd is the root's).
    Read(Arc<Dir>),
    /// Open, check and read subdirectory `name` of a directory.
    Open(Arc<Dir>, CString),
    /// `statx` these entries of a directory.
    Stat(Arc<Dir>, Arc<Listing>, Range<usize>),
}

/// Why a directory could not be reached again.
enum Lost {
    Os(Errno),
    Changed,
}

impl Lost {
    fn reason(&self) -> String {
        match self {
            Lost::Os(e) => crate::error::errno_text(*e),
            Lost::Changed => "changed during the scan (device/inode no longer match)".into(),
        }
    }
}

struct Walker<'a> {
    opts: Options,
    live: &'a Live,
    on_error: &'a (dyn Fn(&ScanError) + Sync),
    queue: Queue<Task>,
    fds: FdCache<Dir>,
    /// (dev, ino) of every non-directory with more than one link met so far.
    seen: Mutex<HashSet<(u64, u64)>>,
    seq: AtomicU64,
    errors: Mutex<Vec<ScanError>>,
    skipped: Mutex<Vec<PathBuf>>,
}

impl Walker<'_> {
    fn new_dir(
        &self,
        parent: Option<Arc<Dir>>,
        root: Arc<Root>,
        name: CString,
        st: &Stat,
    ) -> Arc<Dir> {
        Arc::new(Dir {
            depth: parent.as_ref().map_or(0, |p| p.depth + 1),
            parent,
            root,
            name,
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            dev: st.dev,
            ino: st.ino,
            fd: Mutex::new(None),
            pending: AtomicUsize::new(1),
            files: AtomicU64::new(0),
            small: AtomicU64::new(0),
        })
    }

    fn work(&self, mut tally: Tally) -> Tally {
        let mut buf = DirBuf::new(256 * 1024);
        while let Some(task) = self.queue.pop() {
            match task {
                Task::Read(dir) => {
                    let fd = dir.root.fd.clone();
                    self.read(dir, fd, &mut tally, &mut buf);
                }
                Task::Open(parent, name) => self.open_child(parent, name, &mut tally, &mut buf),
                Task::Stat(dir, listing, range) => {
                    match self.fd_of(&dir) {
                        Ok(fd) => self.stat_batch(&dir, &fd, &listing, range, &mut tally),
                        Err(lost) => {
                            self.fail(dir.path(), "cannot reopen directory", lost.reason())
                        }
                    }
                    self.done(&dir, &mut tally);
                }
            }
            self.queue.done();
        }
        tally
    }

    fn fail(&self, path: PathBuf, doing: &'static str, reason: String) {
        let e = ScanError {
            path,
            doing,
            reason,
        };
        self.live.errors.fetch_add(1, Ordering::Relaxed);
        (self.on_error)(&e);
        self.errors.lock().expect("errors lock").push(e);
    }

    fn skip_mount(&self, path: PathBuf) {
        self.skipped.lock().expect("skipped lock").push(path);
    }

    fn same_mount(&self, root: &Root, st: &Stat) -> bool {
        self.opts.cross_mounts || (st.mnt_id == root.mnt_id && st.dev == root.dev)
    }

    /// One piece of `dir` is finished; the last one closes its fd and ranks it.
    fn done(&self, dir: &Arc<Dir>, tally: &mut Tally) {
        if dir.pending.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        self.fds.release(dir);
        let files = dir.files.load(Ordering::Relaxed);
        let small = dir.small.load(Ordering::Relaxed);
        tally.top_files.offer(files, dir.ino, || dir.clone());
        tally.top_small.offer(small, dir.ino, || dir.clone());
    }

    /// `dir`'s fd: held, the root's, or reopened (and verified) down from the nearest held
    /// ancestor.
    fn fd_of(&self, dir: &Arc<Dir>) -> Result<Arc<OwnedFd>, Lost> {
        if dir.parent.is_none() {
            return Ok(dir.root.fd.clone());
        }
        if let Some(fd) = dir.held_fd() {
            return Ok(fd);
        }
        let mut chain = vec![dir.clone()];
        let mut fd = loop {
            let last = chain.last().expect("chain is never empty");
            let p = last.parent.as_ref().expect("only the root has no parent");
            if p.parent.is_none() {
                break p.root.fd.clone();
            }
            if let Some(fd) = p.held_fd() {
                break fd;
            }
            chain.push(p.clone());
        };
        while let Some(d) = chain.pop() {
            let opened = self.open_at(&fd, &d.name).map_err(Lost::Os)?;
            let st = stat_fd(&opened).map_err(Lost::Os)?;
            if (st.dev, st.ino) != (d.dev, d.ino) {
                return Err(Lost::Changed);
            }
            fd = Arc::new(opened);
            if d.pending.load(Ordering::SeqCst) > 0 {
                self.fds.install(&d, fd.clone());
            }
        }
        Ok(fd)
    }

    /// `openat(O_NOFOLLOW|O_DIRECTORY)`, closing held fds and retrying when out of them.
    fn open_at(&self, parent: &OwnedFd, name: &CStr) -> Result<OwnedFd, Errno> {
        loop {
            match dirfd::open_dir_at(parent, name) {
                Err(Errno::MFILE) | Err(Errno::NFILE) if self.fds.shrink() => continue,
                other => return other,
            }
        }
    }

    /// Opens subdirectory `name` of `parent`, checks its mount, counts it and reads it.
    fn open_child(&self, parent: Arc<Dir>, name: CString, tally: &mut Tally, buf: &mut DirBuf) {
        let pfd = match self.fd_of(&parent) {
            Ok(fd) => fd,
            Err(lost) => {
                self.fail(
                    parent.child_path(&name),
                    "cannot open directory",
                    lost.reason(),
                );
                return self.done(&parent, tally);
            }
        };
        let opened = self.open_at(&pfd, &name);
        let root = parent.root.clone();
        let index = root.index;
        let fd = match opened {
            Ok(fd) => fd,
            // Gone since it was listed: nothing to count.
            Err(Errno::NOENT) => return self.done(&parent, tally),
            // Replaced by a symlink or a file since it was listed: count what is there now,
            // never follow it.
            Err(Errno::NOTDIR) | Err(Errno::LOOP) => {
                match stat_at(&*pfd, &name) {
                    Ok(st) if st.kind != Kind::Dir => {
                        if self.same_mount(&root, &st) {
                            self.count_entry(tally, index, &st);
                            self.live.names.fetch_add(1, Ordering::Relaxed);
                        } else {
                            self.skip_mount(parent.child_path(&name));
                        }
                    }
                    Ok(_) | Err(Errno::NOENT) => {}
                    Err(e) => self.fail(parent.child_path(&name), "cannot stat", text(e)),
                }
                return self.done(&parent, tally);
            }
            // Unreadable (EACCES): the directory itself is still there and counted, as du
            // and find do.
            Err(e) => {
                match stat_at(&*pfd, &name) {
                    Ok(st) if !self.same_mount(&root, &st) => {
                        self.skip_mount(parent.child_path(&name))
                    }
                    Ok(st) => {
                        tally.count_dir(index, &st);
                        self.live.dirs.fetch_add(1, Ordering::Relaxed);
                        self.fail(parent.child_path(&name), "cannot open directory", text(e));
                    }
                    Err(Errno::NOENT) => {}
                    Err(_) => self.fail(parent.child_path(&name), "cannot open directory", text(e)),
                }
                return self.done(&parent, tally);
            }
        };
        drop(pfd);
        let st = match stat_fd(&fd) {
            Ok(st) => st,
            Err(e) => {
                self.fail(parent.child_path(&name), "cannot stat", text(e));
                return self.done(&parent, tally);
            }
        };
        if !self.same_mount(&root, &st) {
            self.skip_mount(parent.child_path(&name));
            return self.done(&parent, tally);
        }
        tally.count_dir(index, &st);
        self.live.dirs.fetch_add(1, Ordering::Relaxed);
        self.live
            .allocated
            .fetch_add(st.allocated, Ordering::Relaxed);
        let dir = self.new_dir(Some(parent.clone()), root, name, &st);
        // The parent is no longer needed for this child: let its fd go if it was the last.
        self.done(&parent, tally);
        drop(parent);
        self.read(dir, Arc::new(fd), tally, buf);
    }

    /// Lists `dir`, queues its subdirectories and `statx`es its other entries (in batches
    /// that other workers may take); `dir` is finished when the last of those is.
    fn read(&self, dir: Arc<Dir>, fd: Arc<OwnedFd>, tally: &mut Tally, buf: &mut DirBuf) {
        let mut listing = Listing::default();
        let mut subdirs: Vec<CString> = Vec::new();
        let listed = dirfd::for_each_entry(&fd, buf, |name, ftype, ino| {
            if ftype == FileType::Directory {
                subdirs.push(name.to_owned());
            } else {
                listing.push(ino, name);
            }
        });
        match listed {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => self.fail(dir.path(), "cannot read directory", text(e)),
        }
        let n = listing.entries.len();
        if n >= BIG_DIR {
            tally.per_root[dir.root.index].big_dir_names += n as u64;
        }
        if n >= SORT_MIN {
            listing.entries.sort_unstable_by_key(|e| e.0);
        }
        let batches = n.div_ceil(BATCH);
        let others = subdirs.len() + batches.saturating_sub(1);
        if others > 0 {
            dir.pending.fetch_add(others, Ordering::SeqCst);
            if dir.parent.is_some() {
                self.fds.install(&dir, fd.clone());
            }
        }
        // Subdirectories first, so idle workers start on them at once; the LIFO queue then
        // hands out the batches (ascending inode order) before them.
        for name in subdirs {
            self.queue.push(Task::Open(dir.clone(), name));
        }
        let listing = Arc::new(listing);
        for b in (1..batches).rev() {
            let range = b * BATCH..((b + 1) * BATCH).min(n);
            self.queue
                .push(Task::Stat(dir.clone(), listing.clone(), range));
        }
        if n > 0 {
            self.stat_batch(&dir, &fd, &listing, 0..BATCH.min(n), tally);
        }
        drop(fd);
        self.done(&dir, tally);
    }

    /// `statx`es entries `range` of `listing` inside `dir` (whose fd is `fd`) and counts them.
    fn stat_batch(
        &self,
        dir: &Arc<Dir>,
        fd: &OwnedFd,
        listing: &Listing,
        range: Range<usize>,
        tally: &mut Tally,
    ) {
        let root = &dir.root;
        let (mut files, mut small, mut names, mut allocated) = (0u64, 0u64, 0u64, 0u64);
        for i in range {
            let name = listing.name(i);
            match stat_at(fd, name) {
                // A directory after all (DT_UNKNOWN, or swapped in since listed).
                Ok(st) if st.kind == Kind::Dir => {
                    dir.pending.fetch_add(1, Ordering::SeqCst);
                    self.queue.push(Task::Open(dir.clone(), name.to_owned()));
                }
                // A file bind-mounted over a name of the tree.
                Ok(st) if !self.same_mount(root, &st) => self.skip_mount(dir.child_path(name)),
                Ok(st) => {
                    names += 1;
                    if st.kind == Kind::File {
                        files += 1;
                        if st.size < self.opts.small {
                            small += 1;
                        }
                    }
                    allocated += self.count_entry(tally, root.index, &st);
                }
                Err(Errno::NOENT) => {}
                Err(e) => self.fail(dir.child_path(name), "cannot stat", text(e)),
            }
        }
        dir.files.fetch_add(files, Ordering::Relaxed);
        dir.small.fetch_add(small, Ordering::Relaxed);
        self.live.names.fetch_add(names, Ordering::Relaxed);
        self.live.allocated.fetch_add(allocated, Ordering::Relaxed);
    }

    /// Counts one non-directory; returns the bytes it added (0 for a further hard link).
    fn count_entry(&self, tally: &mut Tally, root: usize, st: &Stat) -> u64 {
        let first_link = st.nlink <= 1
            || self
                .seen
                .lock()
                .expect("seen lock")
                .insert((st.dev, st.ino));
        let c = &mut tally.per_root[root];
        match st.kind {
            Kind::File => {
                c.files += 1;
                if st.size < self.opts.small {
                    c.small_files += 1;
                }
                if !first_link {
                    c.hard_links += 1;
                }
            }
            Kind::Symlink => c.symlinks += 1,
            Kind::Other | Kind::Dir => c.other += 1,
        }
        if !first_link {
            return 0;
        }
        c.allocated_bytes += st.allocated;
        c.apparent_bytes += st.size;
        if st.kind == Kind::File {
            tally.histogram.add(st.size, st.allocated);
        }
        st.allocated
    }
}

fn text(e: Errno) -> String {
    crate::error::errno_text(e)
}

impl crate::fdcache::HoldsFd for Dir {
    fn key(&self) -> (u32, u64) {
        (self.depth, self.seq)
    }

    fn slot(&self) -> &Mutex<Option<Arc<OwnedFd>>> {
        &self.fd
    }
}
