//! The parallel removal engine: removes directory trees with dirfd-relative syscalls only
//! (`openat(O_NOFOLLOW|O_DIRECTORY)`, `getdents64`, `unlinkat`), across a pool of workers.
//! A directory is removed by the worker that finishes its last child. It never follows a
//! symlink, never leaves the tree's mount unless told to, and never builds a path for a syscall.
//!
//! fds stay bounded for any depth: at most `fd_budget` directory fds are held; the shallowest
//! are dropped first and reopened on demand, either through `..` of a held child or downward
//! from the nearest held ancestor, verifying device and inode at every step.

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rustix::fs::{unlinkat, AtFlags, FileType};
use rustix::io::Errno;

use crate::dirfd::{self, DirBuf, Ident};
use crate::error::{Failure, Reason};
use crate::fdcache::FdCache;
use crate::pool::{Queue, Slots};

/// Order in which the entries of a large directory are unlinked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Order {
    /// As `getdents64` returns them (hash order on ext4), dispatched while reading.
    Readdir,
    /// Read the whole directory, then unlink in inode-number order (as GNU fts does above
    /// 10,000 entries). Measured faster on cold caches: see bench/RESULTS.md.
    #[default]
    Inode,
}

/// How the engine works.
#[derive(Clone, Debug)]
pub struct Options {
    /// Workers. More than the CPU count pays on cold caches: a worker waiting for a directory
    /// or inode-table read costs no CPU while the others go on.
    pub threads: usize,
    /// Workers allowed at once inside one large directory's unlink batches. Those contend on
    /// the directory's lock, so more than the CPU count only burns CPU.
    pub batch_threads: usize,
    pub cross_mounts: bool,
    pub dry_run: bool,
    /// Directory fds held at most (a few more may be in use for a moment).
    pub fd_budget: usize,
    pub order: Order,
    /// Names per unlink batch handed to another worker inside one large directory.
    pub batch: usize,
    /// `statx` each non-directory before unlinking it, to count the bytes freed (always on in
    /// a dry run). Off by default: it costs a syscall per file (see bench/RESULTS.md).
    pub stat_files: bool,
    /// Unlink rate limit, steered by the tree pacer and capped by `--iops`; `None` = none.
    pub throttle: Option<std::sync::Arc<crate::pace::throttle::Throttle>>,
    /// Who frees the large regular files met in small directories (the shrinker, paced);
    /// `None`: everything is unlinked.
    pub large_files: Option<Arc<dyn LargeFiles>>,
}

/// Directories with at most this many non-directory entries have each entry `lstat`ed, so
/// that large files in them (a backup directory with a few big dumps) go to `large_files`
/// instead of being unlinked at once. Bigger directories (the million small files) are not
/// stated: a stat per file cost up to 2.2x (bench/RESULTS.md).
pub const LARGE_FILE_DIR_MAX: usize = 64;

/// Frees one large regular file found in a tree, in place of its unlink.
pub trait LargeFiles: Send + Sync + std::fmt::Debug {
    /// Removes `name` in `dir` (`facts` from its `lstat`; `path` for messages).
    fn remove(
        &self,
        dir: &OwnedFd,
        name: &CStr,
        facts: &dirfd::Facts,
        path: &std::path::Path,
    ) -> Result<(), Reason>;
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: 2 * cpus(),
            batch_threads: cpus(),
            cross_mounts: false,
            dry_run: false,
            fd_budget: 256,
            order: Order::Inode,
            batch: 1024,
            stat_files: false,
            throttle: None,
            large_files: None,
        }
    }
}

/// The measured best worker count for trees on the file system of `dir` (bench/RESULTS.md):
/// ext2/3/4 gain from a second worker per CPU (it overlaps cold directory and inode-table
/// reads); xfs loses (its per-allocation-group locks contend), as do others not measured.
pub fn threads_for(dir: impl std::os::fd::AsFd) -> usize {
    const EXT4_SUPER_MAGIC: u64 = 0xEF53;
    match rustix::fs::fstatfs(dir) {
        Ok(st) if st.f_type as u64 == EXT4_SUPER_MAGIC => 2 * cpus(),
        _ => cpus(),
    }
}

/// CPUs this process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Running totals, readable while the engine works (for a progress line).
#[derive(Debug, Default)]
pub struct Counters {
    pub files: AtomicU64,
    pub dirs: AtomicU64,
    pub bytes: AtomicU64,
    pub errors: AtomicU64,
}

/// What happened to each entry, for `-v` and for the final report.
pub trait Sink: Sync {
    /// Whether `removed` wants to be called (building paths costs time on the hot path).
    fn wants_removed(&self) -> bool {
        false
    }
    /// A non-directory (`dir == false`) or directory was removed (or would be, in a dry run).
    fn removed(&self, _path: &std::path::Path, _dir: bool) {}
    /// A path failed; called once per failure, as it happens.
    fn failed(&self, _failure: &Failure) {}
}

/// A sink that wants nothing (the caller reports from the counters and the outcome).
pub struct Quiet;
impl Sink for Quiet {}

/// Allocated bytes and files of the tree `name` in `base` (a dry run of the engine, which
/// stats everything): what removing it would free. Removes nothing.
pub fn measure(base: &Arc<OwnedFd>, name: &CStr, display: &std::path::Path) -> (u64, u64) {
    let Ok(f) = dirfd::lstat_at(&**base, name) else {
        return (0, 0);
    };
    let counters = Counters::default();
    let opts = Options {
        dry_run: true,
        ..Options::default()
    };
    let target = DirTarget {
        base: base.clone(),
        name: name.to_owned(),
        display: display.to_path_buf(),
        ident: f.ident,
    };
    remove_trees(vec![target], &opts, &counters, &Quiet);
    (
        counters.bytes.load(Ordering::Relaxed),
        counters.files.load(Ordering::Relaxed),
    )
}

/// A directory to remove, resolved and checked by the caller: `name` inside the open
/// directory `base`, expected to be the directory `ident`.
pub struct DirTarget {
    pub base: Arc<OwnedFd>,
    pub name: CString,
    pub display: PathBuf,
    pub ident: Ident,
}

/// What the engine did that the caller must report.
#[derive(Debug, Default)]
pub struct Outcome {
    pub failures: Vec<Failure>,
    pub skipped_mounts: Vec<PathBuf>,
}

/// Removes every target tree, in parallel, and returns the failures.
pub fn remove_trees(
    targets: Vec<DirTarget>,
    opts: &Options,
    counters: &Counters,
    sink: &dyn Sink,
) -> Outcome {
    let engine = Engine {
        opts: opts.clone(),
        counters,
        sink,
        queue: Queue::default(),
        fds: FdCache::new(opts.fd_budget.max(2)),
        outcome: Mutex::new(Outcome::default()),
        seq: AtomicU64::new(0),
        batch_slots: Slots::new(opts.batch_threads.min(opts.threads)),
    };
    for t in targets {
        let tree = Arc::new(Tree {
            base: t.base,
            display: t.display,
            expect: t.ident,
            mnt_id: OnceLock::new(),
        });
        let node = engine.new_node(Parent::Base(tree.clone()), tree, t.name, 0);
        engine.queue.push(Task::Dir(node));
    }
    std::thread::scope(|s| {
        for _ in 0..opts.threads.max(1) {
            s.spawn(|| engine.work());
        }
    });
    engine.outcome.into_inner().expect("outcome lock")
}

/// One tree being removed (one command-line argument).
struct Tree {
    base: Arc<OwnedFd>,
    display: PathBuf,
    expect: Ident,
    mnt_id: OnceLock<u64>,
}

enum Parent {
    Base(Arc<Tree>),
    Node(Arc<Node>),
}

/// A directory being removed.
struct Node {
    parent: Parent,
    tree: Arc<Tree>,
    name: CString,
    depth: u32,
    seq: u64,
    ident: OnceLock<Ident>,
    allocated: AtomicU64,
    fd: Mutex<Option<Arc<OwnedFd>>>,
    /// Children not yet finished (subdirectories, unlink batches) plus one while listing.
    pending: AtomicUsize,
    /// Something below could not be removed: do not try (and fail) to remove this one.
    keep: AtomicBool,
}

impl Node {
    /// The path for messages: the argument as given joined with the names below it.
    fn path(&self) -> PathBuf {
        let mut names: Vec<&CStr> = vec![&self.name];
        let mut node = self;
        let tree = loop {
            match &node.parent {
                Parent::Base(tree) => break tree,
                Parent::Node(p) => {
                    names.push(&p.name);
                    node = p;
                }
            }
        };
        let mut path = tree.display.clone();
        // The top node's name is the argument's last component, already in `display`.
        names.pop();
        for name in names.iter().rev() {
            path.push(std::ffi::OsStr::from_bytes(name.to_bytes()));
        }
        path
    }

    fn child_path(&self, name: &CStr) -> PathBuf {
        let mut p = self.path();
        p.push(std::ffi::OsStr::from_bytes(name.to_bytes()));
        p
    }

    fn held_fd(&self) -> Option<Arc<OwnedFd>> {
        self.fd.lock().expect("fd lock").clone()
    }
}

enum Task {
    /// Open, list and remove this directory.
    Dir(Arc<Node>),
    /// Unlink these names inside this directory.
    Unlink(Arc<Node>, Batch),
}

/// Names packed in one buffer, each NUL-terminated.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    ends: Vec<u32>,
}

impl Batch {
    fn push(&mut self, name: &CStr) {
        self.push_bytes(name.to_bytes_with_nul());
    }

    fn push_bytes(&mut self, name_with_nul: &[u8]) {
        self.bytes.extend_from_slice(name_with_nul);
        self.ends.push(self.bytes.len() as u32);
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn names(&self) -> impl Iterator<Item = &CStr> {
        let mut start = 0usize;
        self.ends.iter().map(move |&end| {
            let name = CStr::from_bytes_with_nul(&self.bytes[start..end as usize])
                .expect("batch holds NUL-terminated names");
            start = end as usize;
            name
        })
    }
}

/// Directories with at least this many entries are unlinked in inode order (as GNU fts does):
/// neighbouring inodes share inode-table blocks, so a cold cache reads each block once.
const SORT_MIN: usize = 10_000;

/// Every non-directory name of one directory with its inode number, in one arena.
#[derive(Default)]
struct Listing {
    bytes: Vec<u8>,
    entries: Vec<(u64, usize, usize)>,
}

impl Listing {
    fn push(&mut self, ino: u64, name: &CStr) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name.to_bytes_with_nul());
        self.entries.push((ino, start, self.bytes.len()));
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn sort_by_inode(&mut self) {
        self.entries.sort_unstable_by_key(|e| e.0);
    }

    fn into_batches(self, size: usize) -> Vec<Batch> {
        self.entries
            .chunks(size.max(1))
            .map(|chunk| {
                let mut b = Batch::default();
                for &(_, start, end) in chunk {
                    b.push_bytes(&self.bytes[start..end]);
                }
                b
            })
            .collect()
    }
}

struct Engine<'a> {
    opts: Options,
    counters: &'a Counters,
    sink: &'a dyn Sink,
    queue: Queue<Task>,
    fds: FdCache<Node>,
    outcome: Mutex<Outcome>,
    seq: AtomicU64,
    batch_slots: Slots,
}

impl Engine<'_> {
    fn new_node(&self, parent: Parent, tree: Arc<Tree>, name: CString, depth: u32) -> Arc<Node> {
        Arc::new(Node {
            parent,
            tree,
            name,
            depth,
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            ident: OnceLock::new(),
            allocated: AtomicU64::new(0),
            fd: Mutex::new(None),
            pending: AtomicUsize::new(1),
            keep: AtomicBool::new(false),
        })
    }

    fn work(&self) {
        let mut buf = DirBuf::new(256 * 1024);
        while let Some(task) = self.queue.pop() {
            // Stopped by a signal: drain the queue without doing the work (keeping every
            // directory whose children were not all removed).
            if crate::interrupt::stopping() {
                match task {
                    Task::Dir(node) => self.finish_kept(node),
                    Task::Unlink(node, _) => {
                        node.keep.store(true, Ordering::Relaxed);
                        self.child_done(node);
                    }
                }
                self.queue.done();
                continue;
            }
            match task {
                Task::Dir(node) => self.remove_dir(node, &mut buf),
                Task::Unlink(node, batch) => {
                    let permit = self.batch_slots.acquire();
                    match self.fd_of(&node) {
                        Ok(fd) => self.unlink_batch(&node, &fd, &batch),
                        Err(reason) => self.fail(node.path(), reason, Some(&node)),
                    }
                    drop(permit);
                    self.child_done(node);
                }
            }
            self.queue.done();
        }
    }

    fn fail(&self, path: PathBuf, reason: Reason, keep: Option<&Node>) {
        if let Some(n) = keep {
            n.keep.store(true, Ordering::Relaxed);
        }
        let failure = Failure { path, reason };
        self.counters.errors.fetch_add(1, Ordering::Relaxed);
        self.sink.failed(&failure);
        let mut out = self.outcome.lock().expect("outcome lock");
        if failure.reason == Reason::MountPoint {
            out.skipped_mounts.push(failure.path.clone());
        }
        out.failures.push(failure);
    }

    /// The parent's fd for operations on `node`'s name.
    fn parent_fd(&self, node: &Arc<Node>) -> Result<Arc<OwnedFd>, Reason> {
        match &node.parent {
            Parent::Base(tree) => Ok(tree.base.clone()),
            Parent::Node(p) => self.fd_of(p),
        }
    }

    /// `node`'s own fd, reopened (and verified) if it was evicted.
    fn fd_of(&self, node: &Arc<Node>) -> Result<Arc<OwnedFd>, Reason> {
        if let Some(fd) = node.held_fd() {
            return Ok(fd);
        }
        // Walk up to the nearest ancestor that holds an fd (or the base), then open down.
        let mut chain = vec![node.clone()];
        let mut fd = loop {
            let last = chain.last().expect("chain is never empty");
            match &last.parent {
                Parent::Base(tree) => break tree.base.clone(),
                Parent::Node(p) => match p.held_fd() {
                    Some(fd) => break fd,
                    None => chain.push(p.clone()),
                },
            }
        };
        while let Some(n) = chain.pop() {
            let opened = dirfd::open_dir_at(&*fd, &n.name).map_err(Reason::Os)?;
            let facts = dirfd::fstat(&opened).map_err(Reason::Os)?;
            if n.ident.get() != Some(&facts.ident) {
                return Err(Reason::Changed);
            }
            fd = Arc::new(opened);
            self.fds.install(&n, fd.clone());
        }
        Ok(fd)
    }

    /// Opens, checks, lists and empties one directory; its removal happens in `child_done`
    /// once the last child is finished.
    fn remove_dir(&self, node: Arc<Node>, buf: &mut DirBuf) {
        let parent = match self.parent_fd(&node) {
            Ok(fd) => fd,
            Err(reason) => {
                self.fail(node.path(), reason, parent_node(&node));
                return self.finish_kept(node);
            }
        };
        let opened = self.open_checked(&node, &parent);
        // Hold no fd of the parent past this point: the ascent below may remove it, and a
        // removed directory that is still open keeps its dentry (and a chain of them) alive,
        // making every later rmdir walk it (quadratic on deep trees).
        drop(parent);
        let fd = match opened {
            Ok(Some(fd)) => Arc::new(fd),
            Ok(None) => return self.finish_gone(node),
            Err(reason) => {
                self.fail(node.path(), reason, parent_node(&node));
                return self.finish_kept(node);
            }
        };
        self.fds.install(&node, fd.clone());

        let large = self.opts.batch;
        let mut batch = Batch::default();
        let mut all = Listing::default();
        let mut subdirs: Vec<CString> = Vec::new();
        let mut dispatched_any = false;
        let listed = dirfd::for_each_entry(&fd, buf, |name, ftype, ino| {
            if ftype == FileType::Directory {
                subdirs.push(name.to_owned());
            } else if self.opts.order == Order::Inode {
                all.push(ino, name);
            } else {
                batch.push(name);
                if batch.len() >= large {
                    dispatched_any = true;
                    self.dispatch(&node, std::mem::take(&mut batch));
                }
            }
        });
        match listed {
            // Removed by someone else while we read it: nothing left to do here.
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => self.fail(node.path(), Reason::Os(e), Some(&node)),
        }
        // Subdirectories go to the queue first so other workers can start on them.
        for name in subdirs {
            self.push_subdir(&node, name);
        }
        // Nothing was dispatched while reading (Readdir order dispatches full batches).
        let mut batches_were_one = !dispatched_any;
        if self.opts.order == Order::Inode {
            batches_were_one = all.len() <= large;
            if all.len() >= SORT_MIN {
                all.sort_by_inode();
            }
            // Ascending inode order, as GNU rm: ext4 reads inode tables ahead forwards. The
            // queue is LIFO, so push the highest first and keep the lowest for this worker.
            let mut batches = all.into_batches(large);
            batches.reverse();
            batch = batches.pop().unwrap_or_default();
            for b in batches {
                self.dispatch(&node, b);
            }
        }
        if batch.len() > 0 {
            let few = batches_were_one && batch.len() <= LARGE_FILE_DIR_MAX;
            self.unlink_batch_checked(&node, &fd, &batch, few);
        }
        drop(fd);
        self.child_done(node);
    }

    /// Hands a batch of names to whichever worker is free.
    fn dispatch(&self, node: &Arc<Node>, batch: Batch) {
        node.pending.fetch_add(1, Ordering::SeqCst);
        self.queue.push(Task::Unlink(node.clone(), batch));
    }

    fn push_subdir(&self, node: &Arc<Node>, name: CString) {
        node.pending.fetch_add(1, Ordering::SeqCst);
        let child = self.new_node(
            Parent::Node(node.clone()),
            node.tree.clone(),
            name,
            node.depth + 1,
        );
        self.queue.push(Task::Dir(child));
    }

    /// Opens `node` under `parent` without following symlinks and checks it stays on the tree's
    /// mount. `Ok(None)`: the name is gone or was not a directory and has been unlinked.
    fn open_checked(&self, node: &Arc<Node>, parent: &OwnedFd) -> Result<Option<OwnedFd>, Reason> {
        for _attempt in 0..8 {
            match dirfd::open_dir_at(parent, &node.name) {
                Ok(fd) => {
                    let facts = dirfd::fstat(&fd).map_err(Reason::Os)?;
                    let tree = &node.tree;
                    match &node.parent {
                        Parent::Base(_) => {
                            if facts.ident != tree.expect {
                                return Err(Reason::Changed);
                            }
                            let _ = tree.mnt_id.set(facts.mnt_id);
                        }
                        Parent::Node(_) => {
                            let same_mount = tree.mnt_id.get() == Some(&facts.mnt_id)
                                && facts.ident.dev == tree.expect.dev;
                            if !same_mount && !self.opts.cross_mounts {
                                return Err(Reason::MountPoint);
                            }
                        }
                    }
                    let _ = node.ident.set(facts.ident);
                    node.allocated.store(facts.allocated, Ordering::Relaxed);
                    return Ok(Some(fd));
                }
                Err(Errno::NOENT) => return Ok(None),
                // Replaced by a symlink or a file: remove that entry itself, never follow it.
                Err(Errno::LOOP) | Err(Errno::NOTDIR) => {
                    match self.unlink_one(parent, &node.name, || node.path()) {
                        UnlinkResult::Done => return Ok(None),
                        UnlinkResult::IsDir => continue,
                        UnlinkResult::Failed(e) => return Err(Reason::Os(e)),
                        UnlinkResult::Refused(r) => return Err(r),
                    }
                }
                // Out of fds (a low limit, or many trees at once): drop the shallowest, retry.
                Err(Errno::MFILE) | Err(Errno::NFILE) if self.fds.shrink() => continue,
                Err(e) => return Err(Reason::Os(e)),
            }
        }
        Err(Reason::Changed)
    }

    /// Unlinks (or, in a dry run, counts) every name of `batch` inside `dir`.
    fn unlink_batch(&self, node: &Arc<Node>, dir: &OwnedFd, batch: &Batch) {
        self.unlink_batch_checked(node, dir, batch, false);
    }

    /// As `unlink_batch`; with `few` (the whole directory is this small batch), large regular
    /// files go to `large_files` instead.
    fn unlink_batch_checked(&self, node: &Arc<Node>, dir: &OwnedFd, batch: &Batch, few: bool) {
        for name in batch.names() {
            let result = match (&self.opts.large_files, few && !self.opts.dry_run) {
                (Some(large), true) => self.remove_maybe_large(&**large, dir, name, node),
                _ => self.unlink_one(dir, name, || node.child_path(name)),
            };
            match result {
                UnlinkResult::Done => {}
                // A directory after all (DT_UNKNOWN, or swapped in): remove it as one.
                UnlinkResult::IsDir => self.push_subdir(node, name.to_owned()),
                UnlinkResult::Failed(e) => {
                    self.fail(node.child_path(name), Reason::Os(e), Some(node))
                }
                UnlinkResult::Refused(reason) => {
                    self.fail(node.child_path(name), reason, Some(node))
                }
            }
        }
    }

    /// `lstat`s `name`: a large regular file with one link goes to `large`, anything else is
    /// unlinked as usual.
    fn remove_maybe_large(
        &self,
        large: &dyn LargeFiles,
        dir: &OwnedFd,
        name: &CStr,
        node: &Arc<Node>,
    ) -> UnlinkResult {
        let facts = match dirfd::lstat_at(dir, name) {
            Ok(f) => f,
            Err(Errno::NOENT) => return UnlinkResult::Done,
            Err(_) => return self.unlink_one(dir, name, || node.child_path(name)),
        };
        if facts.file_type != FileType::RegularFile
            || facts.nlink != 1
            || facts.allocated < crate::shrink::GENTLE_MIN_BYTES
        {
            return self.unlink_one(dir, name, || node.child_path(name));
        }
        let path = node.child_path(name);
        match large.remove(dir, name, &facts, &path) {
            Ok(()) | Err(Reason::Os(Errno::NOENT)) => {
                self.counters.files.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .bytes
                    .fetch_add(facts.allocated, Ordering::Relaxed);
                if self.sink.wants_removed() {
                    self.sink.removed(&path, false);
                }
                UnlinkResult::Done
            }
            Err(reason) => UnlinkResult::Refused(reason),
        }
    }

    fn unlink_one(
        &self,
        dir: &OwnedFd,
        name: &CStr,
        path: impl FnOnce() -> PathBuf,
    ) -> UnlinkResult {
        let facts = if self.opts.stat_files || self.opts.dry_run {
            match dirfd::lstat_at(dir, name) {
                Ok(f) => Some(f),
                Err(Errno::NOENT) => return UnlinkResult::Done,
                Err(_) => None,
            }
        } else {
            None
        };
        if let Some(f) = facts {
            if f.file_type == FileType::Directory {
                return UnlinkResult::IsDir;
            }
        }
        if !self.opts.dry_run {
            if let Some(t) = &self.opts.throttle {
                t.acquire();
            }
            match unlinkat(dir, name, AtFlags::empty()) {
                Ok(()) => {}
                Err(Errno::NOENT) => return UnlinkResult::Done,
                Err(Errno::ISDIR) => return UnlinkResult::IsDir,
                Err(e) => return UnlinkResult::Failed(e),
            }
        }
        self.counters.files.fetch_add(1, Ordering::Relaxed);
        if let Some(f) = facts.filter(|f| f.nlink <= 1) {
            self.counters
                .bytes
                .fetch_add(f.allocated, Ordering::Relaxed);
        }
        if self.sink.wants_removed() {
            self.sink.removed(&path(), false);
        }
        UnlinkResult::Done
    }

    /// The node vanished or turned out to be a non-directory that was unlinked.
    fn finish_gone(&self, node: Arc<Node>) {
        self.release_and_ascend(node, false);
    }

    /// The node could not be opened: leave it, and keep its ancestors.
    fn finish_kept(&self, node: Arc<Node>) {
        node.keep.store(true, Ordering::Relaxed);
        self.release_and_ascend(node, false);
    }

    /// One child (or the listing itself) of `node` is finished; remove it if it was the last.
    fn child_done(&self, node: Arc<Node>) {
        if node.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.release_and_ascend(node, true);
        }
    }

    /// Removes finished directories bottom-up, iteratively (no recursion, whatever the depth).
    fn release_and_ascend(&self, mut node: Arc<Node>, mut rmdir: bool) {
        loop {
            if node.keep.load(Ordering::Relaxed) {
                if let Some(p) = parent_node(&node) {
                    p.keep.store(true, Ordering::Relaxed);
                }
            } else if rmdir {
                self.rmdir(&node);
            }
            self.fds.release(&node);
            let parent = match &node.parent {
                Parent::Base(_) => return,
                Parent::Node(p) => p.clone(),
            };
            // Drop this node while holding the parent, so freeing a deep chain never recurses.
            drop(node);
            if parent.pending.fetch_sub(1, Ordering::SeqCst) != 1 {
                return;
            }
            node = parent;
            rmdir = true;
        }
    }

    fn rmdir(&self, node: &Arc<Node>) {
        // Going up: if the parent's fd was evicted, reach it through our own `..` (one open,
        // verified), so climbing a deep chain stays linear.
        if let (Parent::Node(p), Some(own)) = (&node.parent, node.held_fd()) {
            if p.held_fd().is_none() {
                if let (Ok(up), Some(expect)) = (dirfd::open_dir_at(&*own, c".."), p.ident.get()) {
                    if dirfd::fstat(&up).map(|f| f.ident).ok() == Some(*expect) {
                        self.fds.install(p, Arc::new(up));
                    }
                }
            }
        }
        self.fds.release(node);
        let parent = match self.parent_fd(node) {
            Ok(fd) => fd,
            Err(reason) => return self.fail(node.path(), reason, parent_node(node)),
        };
        if !self.opts.dry_run {
            match unlinkat(&*parent, &node.name, AtFlags::REMOVEDIR) {
                Ok(()) => {}
                Err(Errno::NOENT) => return,
                Err(e) => return self.fail(node.path(), Reason::Os(e), parent_node(node)),
            }
        }
        self.counters.dirs.fetch_add(1, Ordering::Relaxed);
        self.counters
            .bytes
            .fetch_add(node.allocated.load(Ordering::Relaxed), Ordering::Relaxed);
        if self.sink.wants_removed() {
            self.sink.removed(&node.path(), true);
        }
    }
}

fn parent_node(node: &Node) -> Option<&Node> {
    match &node.parent {
        Parent::Node(p) => Some(p),
        Parent::Base(_) => None,
    }
}

enum UnlinkResult {
    Done,
    IsDir,
    Failed(Errno),
    /// The large-file path failed (it says why).
    Refused(Reason),
}

impl crate::fdcache::HoldsFd for Node {
    fn key(&self) -> (u32, u64) {
        (self.depth, self.seq)
    }

    fn slot(&self) -> &Mutex<Option<Arc<OwnedFd>>> {
        &self.fd
    }
}
