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
use crate::sys::dirfd::{self, DirBuf, Facts, Ident};

mod fdcache;
mod gate;
mod pool;
mod share;
pub use gate::{Gate, PerDir};
pub use share::{run_shared, Event, Handoff, Shared, Work};

/// Directories with this many entries or more are big (the one home of the number): the
/// engine unlinks their names in inode order (`Options::sort_min`; neighbouring inodes share
/// inode-table blocks, so a cold cache reads each block once, and hash order was 1.4-2x slower
/// on ext4: bench/RESULTS.md), scan's estimate counts their names apart (removal there is
/// bound by the directory's lock), and GNU's fts, which `rm` mode follows, sorts a directory of
/// more than this many by inode.
pub const BIG_DIR: usize = 10_000;

/// How a walk works.
#[derive(Clone, Debug)]
pub struct Options {
    pub threads: usize,
    /// Workers allowed at once in the batches of one directory (they contend on its lock) ...
    pub batch_threads: usize,
    /// ... or as many as this says, changed while the walk runs (measured).
    pub per_dir: Option<Arc<PerDir>>,
    /// Names per batch.
    pub batch: usize,
    /// Directories with at least this many non-directory entries are handled in inode order.
    pub sort_min: usize,
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
/// read (`Options::stream`): set from the measured round trip, so that a piece is done
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
    /// `Options::subvolumes`). Returns whether the visitor dealt with it whole: the walk then
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
    pub opts: Options,
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
pub fn run<V: Visitor>(visitor: &V, roots: Vec<Root>, opts: &Options) -> Vec<V::Worker> {
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
}

/// The rest of a walk that proved big: called with the options it runs with (`run_growing`).
pub type GoOn<'a> = &'a mut dyn FnMut(&Options);

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
    opts: &Options,
    big: &(dyn Fn(&Grown) -> bool + Sync),
    grow: &mut dyn FnMut(GoOn<'_>),
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
    grow(&mut |pool: &Options| {
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
        opts: &Options,
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
            proof: None,
        }
    }

    /// Whether a walk on the calling thread alone has proved big (`run_growing`; never
    /// while a stop signal drains the queue).
    fn proved(&self) -> bool {
        self.proof.is_some_and(|p| {
            !crate::sys::interrupt::stopping()
                && (p.big)(&Grown {
                    listed: self.listed.load(Ordering::Relaxed),
                    elapsed: p.since.elapsed(),
                })
        })
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
    fn grow(&mut self, pool: &Options) {
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

impl<'a, V: Visitor> Walk<'a, V> {
    fn new_node(
        &self,
        parent: Option<Arc<Node<V::Dir>>>,
        root: Arc<Root>,
        name: CString,
    ) -> Arc<Node<V::Dir>> {
        self.node(parent, root, name, share::Role::Local)
    }

    fn node(
        &self,
        parent: Option<Arc<Node<V::Dir>>>,
        root: Arc<Root>,
        name: CString,
        share: share::Role,
    ) -> Arc<Node<V::Dir>> {
        Arc::new(Node {
            depth: parent.as_ref().map_or(0, |p| p.depth + 1),
            name: if parent.is_none() {
                root.name.clone()
            } else {
                name
            },
            parent,
            root,
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            ident: OnceLock::new(),
            fd: Mutex::new(None),
            pending: AtomicUsize::new(1),
            keep: AtomicBool::new(false),
            relists: AtomicU32::new(0),
            requeued: AtomicBool::new(false),
            unlinkers: AtomicUsize::new(0),
            share,
            data: self.visitor.dir_data(),
        })
    }

    fn work(&self) -> V::Worker {
        let mut w = self.visitor.worker();
        let mut buf = DirBuf::new(256 * 1024);
        self.work_on(&mut w, &mut buf, &|| false);
        w
    }

    /// Takes and does tasks until the queue is done (true), or until `enough` says so after
    /// a task that left others queued (false: the walk goes on later, from the queue as it
    /// is).
    fn work_on(&self, w: &mut V::Worker, buf: &mut DirBuf, enough: &dyn Fn() -> bool) -> bool {
        loop {
            // Enter before taking a task: a worker the gate holds back holds no work, so what
            // it may not do yet stays queued (another process of a shared walk may take it).
            if let Some(g) = &self.opts.gate {
                g.enter();
            }
            let Some(task) = self.next_task() else {
                if let Some(g) = &self.opts.gate {
                    g.leave(false);
                }
                return true;
            };
            if let Some(g) = &self.opts.gate {
                g.begin();
            }
            // Stopped by a signal: drain the queue without doing the work, keeping every
            // directory whose children were not all done.
            if crate::sys::interrupt::stopping() {
                match task {
                    Task::Dir(node) => {
                        node.keep();
                        self.finish(w, node, false);
                    }
                    Task::Batch(node, ..) | Task::Rest(node, ..) => {
                        node.keep();
                        self.child_done(w, node);
                    }
                    Task::Returned(r) => self.returned(w, r),
                }
            } else {
                match task {
                    Task::Dir(node) => self.visit_dir(w, node, buf),
                    Task::Batch(node, listing, from, to) => {
                        // Counted in `node.unlinkers` when it was taken (`next_task`).
                        match self.fd_of(&node) {
                            Ok(fd) => self.batch(w, &node, &fd, &listing, (from, to), false),
                            Err(lost) => self.visitor.lost(node.path(), lost, &node),
                        }
                        self.unlinked(&node);
                        self.child_done(w, node);
                    }
                    Task::Returned(r) => self.returned(w, r),
                    Task::Rest(node, fd, read) => match self.streams(&node) {
                        Some(stream) => self.visit_streamed(w, node, fd, buf, &stream, read),
                        None => self.list(w, node, fd, buf, read),
                    },
                }
            }
            if let Some(g) = &self.opts.gate {
                g.leave(true);
            }
            self.queue.done();
            // Only with work left to grow for: the last task of a small walk ends it here.
            if self.queue.len() > 0 && enough() {
                return false;
            }
        }
    }

    /// The next task for this worker: the newest, but not a batch of a directory where as
    /// many as `PerDir` allows unlink already (that batch waits for one of them; this worker
    /// takes other work, or waits for it). A batch taken counts as one more unlinker of its
    /// directory (`unlinked` when done).
    fn next_task(&self) -> Option<Task<V::Dir>> {
        self.queue.pop_if(|t| match t {
            Task::Batch(node, ..) => {
                // Under the queue's lock: no other worker takes a batch meanwhile.
                let admitted = self.per_dir.admits(node.unlinkers.load(Ordering::SeqCst));
                if admitted {
                    node.unlinkers.fetch_add(1, Ordering::SeqCst);
                }
                admitted
            }
            _ => true,
        })
    }

    /// A worker is done unlinking in `node`: one waiting for its batches may take one.
    fn unlinked(&self, node: &Node<V::Dir>) {
        node.unlinkers.fetch_sub(1, Ordering::SeqCst);
        self.queue.wake();
    }

    /// The fd of the directory holding `node` (the root's base for a root).
    pub fn parent_fd(&self, node: &Arc<Node<V::Dir>>) -> Result<Arc<OwnedFd>, Lost> {
        match &node.parent {
            None => Ok(node.root.base.clone()),
            Some(p) => self.fd_of(p),
        }
    }

    /// `node`'s own fd, reopened (and verified) if it was dropped.
    pub fn fd_of(&self, node: &Arc<Node<V::Dir>>) -> Result<Arc<OwnedFd>, Lost> {
        if let Some(fd) = node.held_fd() {
            return Ok(fd);
        }
        // Walk up to the nearest ancestor that holds an fd (or the root's base), then down.
        let mut chain = vec![node.clone()];
        let mut fd = loop {
            let last = chain.last().expect("chain is never empty");
            match &last.parent {
                None => break last.root.base.clone(),
                Some(p) => match p.held_fd() {
                    Some(fd) => break fd,
                    None => chain.push(p.clone()),
                },
            }
        };
        while let Some(n) = chain.pop() {
            let opened = self.open_at(&fd, &n.name).map_err(Lost::Os)?;
            let facts = dirfd::fstat(&opened).map_err(Lost::Os)?;
            if n.ident.get() != Some(&facts.ident) {
                return Err(Lost::Changed);
            }
            fd = Arc::new(opened);
            if n.pending.load(Ordering::SeqCst) > 0 {
                self.fds.install(&n, fd.clone());
            }
        }
        Ok(fd)
    }

    /// Before removing `node` itself: if its parent's fd was dropped, reach the parent through
    /// `..` of `node`'s held fd (one open, verified), so climbing a deep chain stays linear.
    pub fn prefetch_parent(&self, node: &Arc<Node<V::Dir>>) {
        if let (Some(p), Some(own)) = (&node.parent, node.held_fd()) {
            if p.held_fd().is_none() {
                if let (Ok(up), Some(expect)) = (dirfd::open_dir_at(&*own, c".."), p.ident.get()) {
                    if dirfd::fstat(&up).map(|f| f.ident).ok() == Some(*expect) {
                        self.fds.install(p, Arc::new(up));
                    }
                }
            }
        }
    }

    /// Lets go of `node`'s fd (it is about to be removed, or is finished).
    pub fn release(&self, node: &Node<V::Dir>) {
        self.fds.release(node);
    }

    /// From `Visitor::finished`: lists `node` again (whole, before any of it is handed out)
    /// and finishes it once more after that, unless it was listed again `max` times already
    /// (false then). For a directory that is not empty when it should be: entries were
    /// skipped by a listing that shifted under the removals (some network file systems'
    /// directory cookies), or were added meanwhile.
    pub fn relist(&self, node: &Arc<Node<V::Dir>>, max: u32) -> bool {
        if node.relists.fetch_add(1, Ordering::SeqCst) >= max {
            return false;
        }
        // Nothing of it is pending (it is being finished): the new listing is its one child.
        node.pending.store(1, Ordering::SeqCst);
        node.requeued.store(true, Ordering::SeqCst);
        self.queue.push(Task::Dir(node.clone()));
        true
    }

    /// Whether `node` was queued to be listed again (once; clears it).
    fn take_requeued(&self, node: &Node<V::Dir>) -> bool {
        node.requeued.swap(false, Ordering::SeqCst)
    }

    /// `openat(O_NOFOLLOW|O_DIRECTORY)`, dropping held fds and retrying when out of them.
    fn open_at(&self, parent: &OwnedFd, name: &CStr) -> Result<OwnedFd, Errno> {
        loop {
            let opened = if self.opts.noatime {
                dirfd::open_dir_at_noatime(parent, name)
            } else {
                dirfd::open_dir_at(parent, name)
            };
            match opened {
                Err(Errno::MFILE) | Err(Errno::NFILE) if self.fds.shrink() => continue,
                other => return other,
            }
        }
    }

    /// Adds a subdirectory `name` of `node` to the walk.
    pub fn push_subdir(&self, node: &Arc<Node<V::Dir>>, name: CString) {
        node.pending.fetch_add(1, Ordering::SeqCst);
        let child = self.new_node(Some(node.clone()), node.root.clone(), name);
        self.queue.push(Task::Dir(child));
    }

    /// Opens, checks, lists and hands out one directory; it is finished in `child_done` once
    /// its last child is.
    fn visit_dir(&self, w: &mut V::Worker, node: Arc<Node<V::Dir>>, buf: &mut DirBuf) {
        let parent = match self.parent_fd(&node) {
            Ok(fd) => fd,
            Err(lost) => {
                let path = node.path();
                self.visitor.lost(path, lost, &node);
                node.keep();
                return self.finish(w, node, false);
            }
        };
        let opened = self.open_checked(w, &node, &parent);
        // Hold no fd of the parent past this point: the ascent may remove it, and a removed
        // directory that is still open keeps its dentry (and a chain of them) alive, making
        // every later rmdir walk it (quadratic on deep trees).
        drop(parent);
        let fd = match opened {
            Ok(fd) => Arc::new(fd),
            Err(Next::Done | Next::Retry) => return self.finish(w, node, false),
            Err(Next::Keep) => {
                node.keep();
                return self.finish(w, node, false);
            }
        };
        self.fds.install(&node, fd.clone());
        match self.streams(&node) {
            Some(stream) => self.visit_streamed(w, node, fd, buf, &stream, Listing::default()),
            None => self.list(w, node, fd, buf, Listing::default()),
        }
    }

    /// How `node` is listed: streamed (`Options::stream`) unless shared (other processes take
    /// whole batches) or listed again (a listing that shifted under the removals is read
    /// whole this time).
    fn streams(&self, node: &Node<V::Dir>) -> Option<Arc<Streaming>> {
        self.opts
            .stream
            .clone()
            .filter(|_| self.sharing.is_none() && node.relists.load(Ordering::SeqCst) == 0)
    }

    /// Reads `node` (open as `fd`) whole, after `all` (what was read of it before), and hands
    /// its entries out. On the calling thread alone (`run_growing`) it reads a piece at a
    /// time and, once the walk proved big, stops and queues the rest as a task of its own
    /// (read by the pool, streamed where the pool streams).
    fn list(
        &self,
        w: &mut V::Worker,
        node: Arc<Node<V::Dir>>,
        fd: Arc<OwnedFd>,
        buf: &mut DirBuf,
        mut all: Listing,
    ) {
        let before = all.entries.len();
        let mut subdirs: Vec<CString> = Vec::new();
        let mut take = |name: &CStr, ftype: FileType, ino: u64| {
            if ftype == FileType::Directory {
                subdirs.push(name.to_owned());
            } else {
                all.push(ino, name, ftype);
            }
        };
        let mut rest = false;
        let listed = match self.proof {
            None => dirfd::for_each_entry(&fd, buf, &mut take).map(|()| 0),
            Some(_) => loop {
                let mut read = 0u64;
                match dirfd::read_piece(&fd, buf, usize::MAX, |n, t, i| {
                    read += 1;
                    take(n, t, i)
                }) {
                    Ok(true) => {
                        self.listed.fetch_add(read, Ordering::Relaxed);
                        if self.proved() {
                            rest = true;
                            break Ok(1);
                        }
                    }
                    Ok(false) => break Ok(1),
                    Err(e) => break Err(e),
                }
            },
        };
        // Counted piece by piece above, else here.
        if listed == Ok(0) {
            let read = all.entries.len() - before + subdirs.len();
            self.listed.fetch_add(read as u64, Ordering::Relaxed);
        }
        match listed {
            // Removed by someone else while we read it: nothing left to do here.
            Ok(_) | Err(Errno::NOENT) => {}
            Err(e) => {
                node.keep();
                self.visitor.list_failed(&node, e);
            }
        }
        // Subdirectories go to the queue first so other workers can start on them.
        for name in subdirs {
            if !self.visitor.skip_subdir(w, &node, &name) {
                self.push_subdir(&node, name);
            }
        }
        if rest {
            // The listing goes on in a task of its own (it holds the listing's place in
            // `pending`).
            self.queue.push(Task::Rest(node, fd, all));
            return;
        }
        let n = all.entries.len();
        self.visitor.listed(w, &node, n);
        if n >= self.opts.sort_min {
            // Ascending inode order, as GNU rm: neighbouring inodes share inode-table blocks.
            let mut both: Vec<_> = all.entries.drain(..).zip(all.types.drain(..)).collect();
            both.sort_unstable_by_key(|e| e.0 .0);
            (all.entries, all.types) = both.into_iter().unzip();
        }
        let size = self.opts.batch.max(1);
        let listing = Arc::new(all);
        // The queue is LIFO: push the highest batches first, keep the lowest for this worker,
        // which unlinks in it first (counted before any other can take a batch).
        let batches = n.div_ceil(size);
        let shared = batches > 1;
        if shared {
            node.unlinkers.fetch_add(1, Ordering::SeqCst);
        }
        for b in (1..batches).rev() {
            node.pending.fetch_add(1, Ordering::SeqCst);
            let range = (b * size, ((b + 1) * size).min(n));
            self.queue
                .push(Task::Batch(node.clone(), listing.clone(), range.0, range.1));
        }
        if n > 0 {
            let few = batches == 1;
            self.batch(w, &node, &fd, &listing, (0, size.min(n)), few);
        }
        if shared {
            self.unlinked(&node);
        }
        drop(fd);
        self.child_done(w, node);
    }

    /// `visit_dir` for `Options::stream`: the directory is read one `getdents` at a time and
    /// this worker does each piece's entries as soon as it is read, so a name's entry from
    /// the listing is still cached when it is unlinked. A directory that fits in the first
    /// piece is done as one batch, as `visit_dir` does it (its entries are then "few").
    fn visit_streamed(
        &self,
        w: &mut V::Worker,
        node: Arc<Node<V::Dir>>,
        fd: Arc<OwnedFd>,
        buf: &mut DirBuf,
        stream: &Streaming,
        read: Listing,
    ) {
        // What was read before (a walk that grew) is the first piece.
        let mut piece = read;
        let mut pieces = 0usize;
        let mut total = 0usize;
        loop {
            let mut subdirs: Vec<CString> = Vec::new();
            let mut next = Listing::default();
            let read = dirfd::read_piece(&fd, buf, stream.bytes(), |name, ftype, ino| {
                if ftype == FileType::Directory {
                    subdirs.push(name.to_owned());
                } else {
                    next.push(ino, name, ftype);
                }
            });
            self.listed.fetch_add(
                (next.entries.len() + subdirs.len()) as u64,
                Ordering::Relaxed,
            );
            for name in subdirs {
                if !self.visitor.skip_subdir(w, &node, &name) {
                    self.push_subdir(&node, name);
                }
            }
            let more = match read {
                Ok(more) => more,
                // Removed by someone else while we read it: nothing left to do here.
                Err(Errno::NOENT) => false,
                Err(e) => {
                    node.keep();
                    self.visitor.list_failed(&node, e);
                    false
                }
            };
            if !more || crate::sys::interrupt::stopping() {
                break;
            }
            // The piece before this one is done now: every piece but the last is done one
            // read later (so a directory that fits in one piece is done whole, as "few").
            if !piece.entries.is_empty() {
                pieces += 1;
                total += piece.entries.len();
                let n = piece.entries.len();
                self.batch(w, &node, &fd, &piece, (0, n), false);
            }
            piece = next;
        }
        let n = piece.entries.len();
        if crate::sys::interrupt::stopping() {
            // What was not read or done stays (and so does the directory).
            node.keep();
        } else if n > 0 {
            let few = pieces == 0 && n <= self.opts.batch.max(1);
            total += n;
            self.visitor.listed(w, &node, total);
            self.batch(w, &node, &fd, &piece, (0, n), few);
        } else {
            self.visitor.listed(w, &node, total);
        }
        drop(fd);
        self.child_done(w, node);
    }

    /// The visitor's work on a batch; names that turn out to be directories join the walk.
    fn batch(
        &self,
        w: &mut V::Worker,
        node: &Arc<Node<V::Dir>>,
        fd: &OwnedFd,
        listing: &Listing,
        range: (usize, usize),
        few: bool,
    ) {
        let names = Names { listing, range };
        for d in self.visitor.entries(w, node, fd, names, few, self) {
            self.push_subdir(node, d);
        }
    }

    /// Opens `node` under `parent` without following symlinks and checks it is the expected
    /// root or on the root's mount; otherwise asks the visitor what to do.
    fn open_checked(
        &self,
        w: &mut V::Worker,
        node: &Arc<Node<V::Dir>>,
        parent: &OwnedFd,
    ) -> Result<OwnedFd, Next> {
        for _attempt in 0..8 {
            let why = match self.open_at(parent, &node.name) {
                Ok(fd) => {
                    let facts = match dirfd::fstat(&fd) {
                        Ok(f) => f,
                        Err(e) => {
                            return Err(self.visitor.not_opened(w, parent, node, NotOpened::Os(e)))
                        }
                    };
                    let root = &node.root;
                    let why = if node.parent.is_none() {
                        if facts.ident != root.expect {
                            Some(NotOpened::Changed)
                        } else {
                            let _ = root.mnt_id.set(facts.mnt_id);
                            None
                        }
                    } else if node.ident.get().is_some_and(|id| *id != facts.ident) {
                        // Listed again, and no longer the directory it was.
                        Some(NotOpened::Changed)
                    } else {
                        let same_mount = self.same_mount(root, &facts);
                        (!same_mount && !self.opts.cross_mounts).then_some(NotOpened::OtherMount)
                    };
                    match why {
                        None => {
                            let _ = node.ident.set(facts.ident);
                            if self.is_subvolume(node, parent, &facts)
                                && self.visitor.subvolume(w, parent, node, &fd, &facts)
                            {
                                return Err(Next::Done);
                            }
                            self.visitor.opened(w, node, &facts);
                            self.visitor.opened_fd(w, node, &fd);
                            return Ok(fd);
                        }
                        Some(why) => why,
                    }
                }
                Err(Errno::NOENT) => return Err(Next::Done),
                // Replaced by a symlink or a file: never followed.
                Err(Errno::LOOP) | Err(Errno::NOTDIR) => NotOpened::NotDir,
                Err(e) => NotOpened::Os(e),
            };
            match self.visitor.not_opened(w, parent, node, why) {
                Next::Retry => continue,
                other => return Err(other),
            }
        }
        Err(Next::Keep)
    }

    /// Whether a directory with `facts` belongs to `root`'s mount: by mount id (where the
    /// kernel tells it) and, unless `Options::subvolumes`, also by device.
    fn same_mount(&self, root: &Root, facts: &Facts) -> bool {
        let same_mnt = root.mnt_id.get() == Some(&facts.mnt_id);
        if self.opts.subvolumes && facts.mnt_id != 0 {
            same_mnt
        } else {
            same_mnt && facts.ident.dev == root.expect.dev
        }
    }

    /// Whether `node` (just opened, with `facts`) is on another device than its parent
    /// `parent` but on the same mount: the root of a subvolume of that file system.
    fn is_subvolume(&self, node: &Arc<Node<V::Dir>>, parent: &OwnedFd, facts: &Facts) -> bool {
        if !self.opts.subvolumes || facts.mnt_id == 0 {
            return false;
        }
        let (parent_dev, parent_mnt) = match node.parent.as_ref().and_then(|p| p.ident()) {
            Some(p) => (p.dev, node.root.mnt_id()),
            // A root: its base's own facts (once per root).
            None => match dirfd::fstat(parent) {
                Ok(p) => (p.ident.dev, Some(p.mnt_id)),
                Err(_) => return false,
            },
        };
        parent_dev != facts.ident.dev && parent_mnt == Some(facts.mnt_id)
    }

    /// One child (or the listing itself) of `node` is finished; finish it if it was the last.
    fn child_done(&self, w: &mut V::Worker, node: Arc<Node<V::Dir>>) {
        if node.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.finish(w, node, true);
        }
    }

    /// Finishes directories bottom-up, iteratively (no recursion, whatever the depth): the
    /// visitor's `finished` for those that were walked (`walked`), then their parents' count.
    fn finish(&self, w: &mut V::Worker, mut node: Arc<Node<V::Dir>>, mut walked: bool) {
        loop {
            if node.kept() {
                if let Some(p) = &node.parent {
                    p.keep();
                }
            }
            if let share::Role::Imported(from) = &node.share {
                // Work of another walk: finished here, reported there (its parent is theirs).
                return self.finish_imported(w, &node, from, walked);
            }
            if walked {
                self.visitor.finished(w, &node, self);
                if self.take_requeued(&node) {
                    // Listed again: it is finished (and its parent told) after that.
                    return;
                }
            }
            self.fds.release(&node);
            let Some(parent) = node.parent.clone() else {
                self.root_done(&node);
                return;
            };
            drop(node);
            if parent.pending.fetch_sub(1, Ordering::SeqCst) != 1 {
                return;
            }
            node = parent;
            walked = true;
        }
    }
}

/// The limit of unlinkers per directory: the one `opts` shares (measured), or its own of
/// `batch_threads` (at most one per worker).
fn per_dir(opts: &Options) -> Arc<PerDir> {
    opts.per_dir
        .clone()
        .unwrap_or_else(|| Arc::new(PerDir::new(opts.batch_threads.min(opts.threads))))
}
