//! The parallel dirfd walk that `reclaim rm -r` (`remove.rs`) and `reclaim scan`
//! (`scan/walk.rs`) both run on; only the per-entry work differs (a `Visitor`). Every
//! directory is opened relative to its parent's fd with `O_NOFOLLOW|O_DIRECTORY` and verified
//! (device and inode), read with `getdents64` into one arena per directory, its subdirectories
//! queued for any worker (LIFO), its other entries handed out in batches (in inode order from
//! `sort_min` entries on). A directory is finished when its last child is, by whichever worker
//! finishes that child; finishing climbs the parent chain iteratively, so no depth recurses.
//!
//! fds stay bounded for any depth: at most `fd_budget` directory fds are held; the shallowest
//! are dropped first and reopened on demand, downward from the nearest held ancestor (or
//! through `..` of a held child), verifying device and inode at every step. The walk never
//! follows a symlink, never builds a path for a syscall (paths are for messages only), and
//! stops at a consistent point when a stop signal arrives. How many workers may be at work at
//! once can be changed while it runs (`Gate`), so a governor can steer concurrency.
//!
//! A walk can also be shared with walks in other processes (`share.rs`: ranks under MPI):
//! queued directories are handed over by name chain and inode, and come back finished.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::fs::FileType;
use rustix::io::Errno;

use crate::engine::walk::fdcache::FdCache;
use crate::engine::walk::pool::Queue;
use crate::sys::dirfd::{DirBuf, Facts, Ident};

mod fdcache;
mod gate;
mod pool;
mod share;
/// What a walk's workers do with each task.
mod work;
pub use gate::{Gate, PerDir};
pub use share::{run_shared, Event, Handoff, Shared, Work};

/// Directories with this many entries or more are big (the one home of the number): the
/// engine unlinks their names in inode order (`WalkOptions::sort_min`; neighbouring inodes share
/// inode-table blocks, so a cold cache reads each block once, and hash order was 1.4-2x slower
/// on ext4: bench/RESULTS.md), scan's estimate counts their names apart (removal there is
/// bound by the directory's lock), and GNU's fts, which `rm` mode follows, sorts a directory of
/// more than this many by inode.
pub const BIG_DIR: usize = 10_000;

/// Why work handed over by another walk cannot be queued here (`Shared::import`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("work under root {root} of {roots}")]
pub struct NoSuchRoot {
    /// The root the work named ...
    pub root: usize,
    /// ... and how many this walk has.
    pub roots: usize,
}

/// Entries of one directory a removal lists before it removes them (`WalkOptions::listing_most`).
/// Inode order within a part keeps the inode-table blocks in order; hash order between parts
/// (ext4's listing order) keeps the directory blocks one part dirties few: sorted whole, a
/// directory of 1,000,000 names had its unlinks hop over all of its blocks from the first to
/// the last, and its journal and system time grew (bench/RESULTS.md, 2026-11-29).
pub const LISTING_MOST: usize = 100_000;

/// Entries of one directory a removal lists at a time where the listing comes in inode order
/// already, but for a few (`InodeOrder`: xfs, btrfs, an ext4 directory without an index,
/// whose blocks were filled as their inodes were made): sorting such a part hops over no
/// blocks, and a part's end splits what one pass over the inode metadata does at once (xfs,
/// one directory of 1,000,000: 370-383 MB written to the disk in parts of 100,000, 327-329
/// MB read on so: bench/RESULTS.md, 2026-11-30). At most this many, about 30 MB of names.
pub const LISTING_MOST_ORDERED: usize = 1_000_000;

/// Whether a listing's names, in the order read, come in ascending inode order: counted as
/// they are read (`Cell`s: the listing's reader holds the listing itself).
#[derive(Default)]
pub(super) struct InodeOrder {
    names: std::cell::Cell<u64>,
    last: std::cell::Cell<u64>,
    descents: std::cell::Cell<u64>,
}

impl InodeOrder {
    /// The next name's inode.
    pub(super) fn saw(&self, ino: u64) {
        if self.names.get() > 0 && ino < self.last.get() {
            self.descents.set(self.descents.get() + 1);
        }
        self.names.set(self.names.get() + 1);
        self.last.set(ino);
    }

    /// Nine in ten neighbours ascending (a hashed listing, ext4's, has about half; xfs's of
    /// 300,000 names made in order had 612 descents).
    pub(super) fn ordered(&self) -> bool {
        let pairs = self.names.get().saturating_sub(1);
        pairs > 0 && self.descents.get() * 10 <= pairs
    }
}

/// How a walk works.
#[derive(Clone, Debug)]
pub struct WalkOptions {
    pub threads: usize,
    /// Workers allowed at once in the batches of one directory (they contend on its lock) ...
    pub batch_threads: usize,
    /// ... or as many as this says, changed while the walk runs (measured).
    pub per_dir: Option<Arc<PerDir>>,
    /// Names per batch.
    pub batch: usize,
    /// Directories with at least this many non-directory entries are handled in inode order.
    pub sort_min: usize,
    /// A directory is listed at most this many entries at a time: each part is handed out (in
    /// inode order) before the next is read, as GNU fts reads 100,000 at a time
    /// (`LISTING_MOST`); a listing that comes in inode order reads on to
    /// `LISTING_MOST_ORDERED`. `usize::MAX`: whole.
    pub listing_most: usize,
    /// Directory fds held at most (a few more, one per worker, may be in use for a moment).
    pub fd_budget: usize,
    /// Enter directories on other mounts instead of handing them to `Visitor::not_opened`.
    pub cross_mounts: bool,
    /// Tell mounts apart by mount id alone: a directory on another device than its parent
    /// but on the same mount (a btrfs subvolume) is part of the tree, offered first to
    /// `Visitor::subvolume`. Otherwise any other device counts as another file system
    /// (`st_dev`, as `du -x` and GNU's `--one-file-system`).
    pub subvolumes: bool,
    /// How many workers may be at work at once (a governor may change it while it runs).
    pub gate: Option<Arc<Gate>>,
    /// Open directories with `O_NOATIME` where allowed (a selection by access time).
    pub noatime: bool,
    /// Hand out a large directory's entries one `getdents` at a time, as they are read,
    /// instead of listing it whole first (a network file system: a name is unlinked while
    /// the entry its listing brought is still cached, so it is looked up once). `None`:
    /// whole listings first.
    pub stream: Option<Arc<Streaming>>,
}

/// How much of a directory one `getdents` reads when entries are handed out as they are
/// read (`WalkOptions::stream`): set from the measured round trip, so that a piece is done
/// while its names are fresh and the listing costs few round trips.
#[derive(Debug)]
pub struct Streaming {
    bytes: AtomicUsize,
}

impl Streaming {
    /// The smallest piece (one page: what a FUSE READDIR asks at least).
    pub const MIN_BYTES: usize = 4096;
    /// The largest piece (the walk's buffer).
    pub const MAX_BYTES: usize = 256 * 1024;

    pub fn new(bytes: usize) -> Self {
        let s = Streaming {
            bytes: AtomicUsize::new(0),
        };
        s.set(bytes);
        s
    }

    pub fn set(&self, bytes: usize) {
        self.bytes.store(
            bytes.clamp(Self::MIN_BYTES, Self::MAX_BYTES),
            Ordering::Relaxed,
        );
    }

    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }
}

/// One tree to walk: directory `name` inside the open directory `base`, expected to be
/// `expect` (the caller checked it); `display` is how messages name it.
pub struct Root {
    pub index: usize,
    pub base: Arc<OwnedFd>,
    pub name: CString,
    pub display: PathBuf,
    pub expect: Ident,
    mnt_id: OnceLock<u64>,
}

impl Root {
    /// The root's mount id, once it was opened.
    pub fn mnt_id(&self) -> Option<u64> {
        self.mnt_id.get().copied()
    }

    /// Records the root's mount id (a walk that receives work below a root it never opened).
    pub fn set_mnt_id(&self, mnt_id: u64) {
        let _ = self.mnt_id.set(mnt_id);
    }

    pub fn new(
        index: usize,
        base: Arc<OwnedFd>,
        name: CString,
        display: PathBuf,
        expect: Ident,
    ) -> Self {
        Root {
            index,
            base,
            name,
            display,
            expect,
            mnt_id: OnceLock::new(),
        }
    }
}

/// A directory of a walk, with the visitor's data `D`.
pub struct Node<D> {
    /// None for a root.
    parent: Option<Arc<Node<D>>>,
    pub root: Arc<Root>,
    name: CString,
    pub depth: u32,
    seq: u64,
    ident: OnceLock<Ident>,
    fd: Mutex<Option<Arc<OwnedFd>>>,
    /// Children not yet finished (subdirectories, batches) plus one while listing.
    pending: AtomicUsize,
    /// Something below could not be done: the visitor should leave this one too.
    keep: AtomicBool,
    /// Times it was listed again after its removal found it not empty (`Walk::relist`).
    relists: AtomicU32,
    /// Queued to be listed again: the finishing in progress stops there.
    requeued: AtomicBool,
    /// Workers unlinking its entries right now (its batches: `PerDir`).
    unlinkers: AtomicUsize,
    /// Whether it belongs to this walk or stands for (or is) work of another one.
    share: share::Role,
    pub data: D,
}

impl<D> Node<D> {
    pub fn name(&self) -> &CStr {
        &self.name
    }

    pub fn parent(&self) -> Option<&Arc<Node<D>>> {
        self.parent.as_ref()
    }

    /// Device and inode, once opened.
    pub fn ident(&self) -> Option<Ident> {
        self.ident.get().copied()
    }

    pub fn kept(&self) -> bool {
        self.keep.load(Ordering::Relaxed)
    }

    /// Marks this directory (and so its ancestors, as they finish) as not to be removed.
    pub fn keep(&self) {
        self.keep.store(true, Ordering::Relaxed);
    }

    /// The path for messages: the root as shown joined with the names below it.
    pub fn path(&self) -> PathBuf {
        let mut names: Vec<&CStr> = Vec::new();
        let mut n = self;
        while let Some(p) = &n.parent {
            names.push(&n.name);
            n = p;
        }
        let mut path = self.root.display.clone();
        for name in names.iter().rev() {
            path.push(OsStr::from_bytes(name.to_bytes()));
        }
        path
    }

    pub fn child_path(&self, name: &CStr) -> PathBuf {
        let mut p = self.path();
        p.push(OsStr::from_bytes(name.to_bytes()));
        p
    }

    fn held_fd(&self) -> Option<Arc<OwnedFd>> {
        self.fd.lock().expect("fd lock").clone()
    }
}

impl<D> Drop for Node<D> {
    /// Frees a chain of parents iteratively: a 100,000-level tree must not recurse.
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(p) = next {
            next = Arc::into_inner(p).and_then(|mut n| n.parent.take());
        }
    }
}

impl<D> crate::engine::walk::fdcache::HoldsFd for Node<D> {
    fn key(&self) -> (u32, u64) {
        (self.depth, self.seq)
    }

    fn slot(&self) -> &Mutex<Option<Arc<OwnedFd>>> {
        &self.fd
    }
}

/// Why a directory of the tree was not opened.
#[derive(Clone, Copy, Debug)]
pub enum NotOpened {
    /// No longer a directory (a symlink or a file in its place: `ELOOP`/`ENOTDIR`).
    NotDir,
    /// A directory of another mount (or a bind mount), with its facts.
    OtherMount,
    /// The root is no longer the directory the caller checked (device/inode).
    Changed,
    /// Open failed otherwise (`EACCES`, ...).
    Os(Errno),
}

/// What the walk does with a directory that was not opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Nothing is left of it to do (gone, or dealt with by the visitor).
    Done,
    /// Leave it, and so its ancestors (something could not be done).
    Keep,
    /// Try to open it again (the visitor removed what was in its place and found a directory).
    Retry,
}

/// Why a directory could not be reached again after its fd was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lost {
    Os(Errno),
    /// Device/inode no longer match: it was replaced.
    Changed,
}

/// The work done on what a walk meets.
pub trait Visitor: Sync + Sized {
    /// Per-directory data.
    type Dir: Send + Sync;
    /// Per-worker state (sums), handed back at the end.
    type Worker: Send;

    fn worker(&self) -> Self::Worker;
    fn dir_data(&self) -> Self::Dir;
    /// Directory `node` was opened (and checked); `facts` are its own.
    fn opened(&self, w: &mut Self::Worker, node: &Arc<Node<Self::Dir>>, facts: &Facts);
    /// Directory `node` was opened as `fd`, before any of its entries is dealt with (a
    /// selection reads the directory's own facts here, as find does).
    fn opened_fd(&self, _w: &mut Self::Worker, _node: &Arc<Node<Self::Dir>>, _fd: &OwnedFd) {}
    /// Directory `node` was not opened; `parent` is the fd of the directory holding it.
    fn not_opened(
        &self,
        w: &mut Self::Worker,
        parent: &OwnedFd,
        node: &Arc<Node<Self::Dir>>,
        why: NotOpened,
    ) -> Next;
    /// Directory `node`, open as `fd` and checked, is on another device than the directory
    /// `parent` that holds it but on the same mount (a btrfs subvolume; only with
    /// `WalkOptions::subvolumes`). Returns whether the visitor dealt with it whole: the walk then
    /// leaves it (it is gone); otherwise the walk goes on into it as into any directory.
    fn subvolume(
        &self,
        _w: &mut Self::Worker,
        _parent: &OwnedFd,
        _node: &Arc<Node<Self::Dir>>,
        _fd: &OwnedFd,
        _facts: &Facts,
    ) -> bool {
        false
    }
    /// Listing `node` failed part way.
    fn list_failed(&self, node: &Arc<Node<Self::Dir>>, e: Errno);
    /// Whether to leave the subdirectory `name` of `node` out of the walk entirely (scan's
    /// `--exclude`): it is then neither opened nor handed to the visitor again.
    fn skip_subdir(
        &self,
        _w: &mut Self::Worker,
        _node: &Arc<Node<Self::Dir>>,
        _name: &CStr,
    ) -> bool {
        false
    }
    /// `node` was listed: it holds `names` non-directory entries (before any batch is done).
    fn listed(&self, _w: &mut Self::Worker, _node: &Arc<Node<Self::Dir>>, _names: usize) {}
    /// `node` (or its parent, to reach it) could not be reopened.
    fn lost(&self, path: PathBuf, why: Lost, node: &Arc<Node<Self::Dir>>);
    /// The non-directory entries `names` of `node` (open as `fd`); `few`: they are all of them
    /// and at most `few` many. Returns the names that were directories after all.
    fn entries(
        &self,
        w: &mut Self::Worker,
        node: &Arc<Node<Self::Dir>>,
        fd: &OwnedFd,
        names: Names<'_>,
        few: bool,
        walk: &Walk<'_, Self>,
    ) -> Vec<CString>;
    /// Every child of `node` is finished (remove: rmdir it unless kept; scan: rank it).
    fn finished(&self, w: &mut Self::Worker, node: &Arc<Node<Self::Dir>>, walk: &Walk<'_, Self>);
    /// A shared walk: what `node`, finished here for another walk, adds to its parent there
    /// (scan: the subtree's sums).
    fn summary(&self, _node: &Arc<Node<Self::Dir>>) -> Vec<u8> {
        Vec::new()
    }
    /// A shared walk: `node` was finished by another walk, which says `summary` about it.
    fn absorb(&self, _w: &mut Self::Worker, _node: &Arc<Node<Self::Dir>>, _summary: &[u8]) {}
}

/// Non-directory entries of one directory, in one arena.
#[derive(Default)]
pub struct Listing {
    bytes: Vec<u8>,
    entries: Vec<(u64, u32, u32)>,
    /// Per entry: its `d_type` (the file type bits of a mode, shifted down; 0: unknown).
    types: Vec<u8>,
    /// The directory's listing went on from an earlier part (`WalkOptions::listing_most`):
    /// these are not all of its entries.
    continued: bool,
}

impl Listing {
    fn push(&mut self, ino: u64, name: &CStr, ftype: FileType) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(name.to_bytes_with_nul());
        self.entries.push((ino, start, self.bytes.len() as u32));
        self.types.push((ftype.as_raw_mode() >> 12) as u8);
    }

    fn file_type(&self, i: usize) -> FileType {
        FileType::from_raw_mode(rustix::fs::RawMode::from(self.types[i]) << 12)
    }

    fn name(&self, i: usize) -> &CStr {
        let (_, start, end) = self.entries[i];
        CStr::from_bytes_with_nul(&self.bytes[start as usize..end as usize])
            .expect("listing holds NUL-terminated names")
    }
}

/// A batch of names of a listing.
#[derive(Clone, Copy)]
pub struct Names<'a> {
    listing: &'a Listing,
    range: (usize, usize),
}

impl<'a> Names<'a> {
    pub fn len(&self) -> usize {
        self.range.1 - self.range.0
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a CStr> + 'a {
        let listing = self.listing;
        (self.range.0..self.range.1).map(move |i| listing.name(i))
    }

    /// Names with their `d_type` (`Unknown` where the file system did not say) and `d_ino`
    /// (0 where not known: a listing handed over by another process of a shared walk).
    pub fn iter_full(&self) -> impl Iterator<Item = (&'a CStr, FileType, u64)> + 'a {
        let listing = self.listing;
        (self.range.0..self.range.1)
            .map(move |i| (listing.name(i), listing.file_type(i), listing.entries[i].0))
    }
}

enum Task<D> {
    /// Open, check and list this directory.
    Dir(Arc<Node<D>>),
    /// Work on these entries of a directory.
    Batch(Arc<Node<D>>, Arc<Listing>, usize, usize),
    /// Work handed to another walk came back finished.
    Returned(share::Returned<D>),
    /// Read the rest of this directory, open as this fd, after what was read of it before (a
    /// walk on the calling thread stopped there, proved big: `run_growing`).
    Rest(Arc<Node<D>>, Arc<OwnedFd>, Listing),
}

/// A walk in progress.
pub struct Walk<'a, V: Visitor> {
    pub visitor: &'a V,
    pub opts: WalkOptions,
    queue: Queue<Task<V::Dir>>,
    fds: FdCache<Node<V::Dir>>,
    seq: AtomicU64,
    /// Workers allowed at once in one directory's batches.
    per_dir: Arc<PerDir>,
    /// The roots, by index (work from another walk names its root by index).
    roots: Vec<Arc<Root>>,
    /// Set when the walk is shared with others.
    sharing: Option<share::Sharing<V::Dir>>,
    /// Names read from directories so far (what `run_growing` judges the walk's size by).
    listed: AtomicU64,
    /// While on the calling thread alone: directories read for the first time, and the
    /// nanoseconds their first reads took (`FirstReads`).
    first_reads: AtomicU64,
    first_read_ns: AtomicU64,
    /// While a walk runs on the calling thread alone (`run_growing`): whether it proved big,
    /// and since when it runs. Also asked between the pieces of one directory's listing.
    proof: Option<Proof<'a>>,
}

/// `run_growing`'s test of a walk's size, and its start.
#[derive(Clone, Copy)]
struct Proof<'a> {
    big: &'a (dyn Fn(&Grown) -> bool + Sync),
    since: Instant,
}

/// Walks every root with `opts.threads` workers; returns each worker's state.
pub fn run<V: Visitor>(visitor: &V, roots: Vec<Root>, opts: &WalkOptions) -> Vec<V::Worker> {
    let walk = Walk::new(visitor, roots, opts, None);
    walk.push_roots();
    walk.workers(None)
}

/// How far a walk started on the calling thread alone has come (`run_growing`).
#[derive(Clone, Copy, Debug)]
pub struct Grown {
    /// Names read from directories (files and subdirectories).
    pub listed: u64,
    /// Time since the walk started.
    pub elapsed: Duration,
    /// How the directories' first reads went.
    pub reads: FirstReads,
}

/// The first read (`getdents`) of each directory a walk on the calling thread alone listed,
/// and the time those reads took: how the disk answers a read the walk asks for anyway, with
/// nothing written (`remove::Start` tells a disk that only says it spins by it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FirstReads {
    pub count: u64,
    pub time: Duration,
}

impl FirstReads {
    /// What a timed first read asks: one page, about one directory block, so that it times
    /// the disk's answer and not the directory's size. A 256 KB first read of a big directory
    /// waits for up to 64 blocks (xfs, 200,000 names, cold: 10-27 ms against 0.14-0.22 ms for
    /// 4 KB; ext4, 1,000,000 names: 8-16 ms against 0.35-0.65 ms); a directory that fits in
    /// it costs no extra read.
    pub const BYTES: usize = 4096;

    /// Their mean; `None` without any.
    pub fn mean(&self) -> Option<Duration> {
        u32::try_from(self.count)
            .ok()
            .filter(|&n| n > 0)
            .map(|n| self.time / n)
    }
}

/// The rest of a walk that proved big: called with the options it runs with (`run_growing`).
pub type GoOn<'a> = &'a mut dyn FnMut(&WalkOptions);

/// Walks every root on the calling thread alone, one task at a time, while `big` says the
/// walk has not proved big (asked after each task, with how far it has come); small work ends
/// there, with no thread started. Once `big` says it has, `grow` is called (once, on the
/// calling thread, with no task in hand) and must call the continuation it is given with the
/// options the rest runs with (of those, its workers: `threads`, `batch`, `batch_threads`,
/// `fd_budget`, `gate`, `stream`; the rest stay as the walk started): the walk goes on from
/// where it is (nothing is listed twice), the calling thread one of the workers, and the
/// continuation returns when the walk is done.
/// `grow` starts whatever runs beside the pool around that call (a governor, a progress
/// line). Returns each worker's state.
pub fn run_growing<V: Visitor>(
    visitor: &V,
    roots: Vec<Root>,
    opts: &WalkOptions,
    big: &(dyn Fn(&Grown) -> bool + Sync),
    grow: &mut dyn FnMut(&Grown, GoOn<'_>),
) -> Vec<V::Worker> {
    let mut walk = Walk::new(visitor, roots, opts, None);
    walk.proof = Some(Proof {
        big,
        since: Instant::now(),
    });
    walk.push_roots();
    let mut w = visitor.worker();
    let mut buf = DirBuf::new(256 * 1024);
    if walk.work_on(&mut w, &mut buf, &|| walk.proved()) {
        return vec![w];
    }
    let mut first = Some((w, buf));
    let mut states = Vec::new();
    let grown = walk.grown();
    grow(&grown, &mut |pool: &WalkOptions| {
        if let Some((w, buf)) = first.take() {
            walk.grow(pool);
            states = walk.workers(Some((w, buf)));
        }
    });
    // A `grow` that did not go on: the rest with the options as they are.
    if let Some(rest) = first.take() {
        states = walk.workers(Some(rest));
    }
    states
}

impl<'a, V: Visitor> Walk<'a, V> {
    fn new(
        visitor: &'a V,
        roots: Vec<Root>,
        opts: &WalkOptions,
        sharing: Option<share::Sharing<V::Dir>>,
    ) -> Self {
        Walk {
            visitor,
            opts: opts.clone(),
            queue: Queue::default(),
            fds: FdCache::new(opts.fd_budget.max(2)),
            seq: AtomicU64::new(0),
            per_dir: per_dir(opts),
            roots: roots.into_iter().map(Arc::new).collect(),
            sharing,
            listed: AtomicU64::new(0),
            first_reads: AtomicU64::new(0),
            first_read_ns: AtomicU64::new(0),
            proof: None,
        }
    }

    /// Whether a walk on the calling thread alone has proved big (`run_growing`; never
    /// while a stop signal drains the queue).
    fn proved(&self) -> bool {
        self.proof
            .is_some_and(|p| !crate::sys::interrupt::stopping() && (p.big)(&self.grown()))
    }

    /// How far a walk on the calling thread alone has come.
    fn grown(&self) -> Grown {
        Grown {
            listed: self.listed.load(Ordering::Relaxed),
            elapsed: self.proof.map_or(Duration::ZERO, |p| p.since.elapsed()),
            reads: FirstReads {
                count: self.first_reads.load(Ordering::Relaxed),
                time: Duration::from_nanos(self.first_read_ns.load(Ordering::Relaxed)),
            },
        }
    }

    /// A directory's first read took `took` (counted on the calling thread alone).
    fn first_read(&self, took: Duration) {
        self.first_reads.fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.first_read_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Queues every root.
    fn push_roots(&self) {
        for r in &self.roots {
            let node = self.new_node(None, r.clone(), CString::default());
            self.queue.push(Task::Dir(node));
        }
    }

    /// Runs the workers until the queue is done; returns each one's state. `first`: the
    /// calling thread is one of them, with this state and buffer (a walk that grew).
    fn workers(&self, first: Option<(V::Worker, DirBuf)>) -> Vec<V::Worker> {
        let spawned = self.opts.threads.max(1) - usize::from(first.is_some());
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..spawned).map(|_| s.spawn(|| self.work())).collect();
            let mut states: Vec<V::Worker> = Vec::with_capacity(spawned + 1);
            if let Some((mut w, mut buf)) = first {
                self.work_on(&mut w, &mut buf, &|| false);
                states.push(w);
            }
            states.extend(
                workers
                    .into_iter()
                    .map(|w| w.join().expect("walk worker panicked")),
            );
            states
        })
    }

    /// The walk proved big: the rest runs with the workers of `pool` (no worker is at work,
    /// no task in hand, no batch slot taken).
    fn grow(&mut self, pool: &WalkOptions) {
        self.proof = None;
        self.opts.threads = pool.threads.max(1);
        self.opts.batch = pool.batch;
        self.opts.batch_threads = pool.batch_threads;
        self.opts.fd_budget = pool.fd_budget.max(2);
        self.opts.gate = pool.gate.clone();
        self.opts.stream = pool.stream.clone();
        self.opts.per_dir = pool.per_dir.clone();
        self.per_dir = per_dir(&self.opts);
        self.fds.set_budget(self.opts.fd_budget);
    }
}

/// The limit of unlinkers per directory: the one `opts` shares (measured), or its own of
/// `batch_threads` (at most one per worker).
fn per_dir(opts: &WalkOptions) -> Arc<PerDir> {
    opts.per_dir
        .clone()
        .unwrap_or_else(|| Arc::new(PerDir::new(opts.batch_threads.min(opts.threads))))
}

#[cfg(test)]
mod tests {
    use super::InodeOrder;

    fn order(inos: impl IntoIterator<Item = u64>) -> bool {
        let o = InodeOrder::default();
        inos.into_iter().for_each(|i| o.saw(i));
        o.ordered()
    }

    #[test]
    fn a_listing_is_in_inode_order_with_nine_in_ten_neighbours_ascending() {
        // As xfs lists names made in order: ascending, with a jump back now and then.
        let runs = (0..20u64).flat_map(|r| (0..50).map(move |i| (r % 4) * 10_000 + r * 50 + i));
        assert!(order(runs));
        assert!(order((1..1_000).map(|i| i * 3)));
        // Hash order (ext4): about half descend; made in order and listed newest first
        // (tmpfs): all of them.
        let hashed = (0..1_000u64).map(|i| i.wrapping_mul(2_654_435_761) % 1_000_003);
        assert!(!order(hashed));
        assert!(!order((1..1_000).rev()));
        // One in ten descending is the most.
        let tenth = (0..1_001u64).map(|i| if i % 10 == 5 { 0 } else { i });
        assert!(order(tenth));
        let ninth = (0..1_001u64).map(|i| if i % 9 == 5 { 0 } else { i });
        assert!(!order(ninth));
        // Nothing to tell by.
        assert!(!order([]));
        assert!(!order([7]));
    }
}
