//! The parallel removal engine: the work `reclaim rm -r` does on the shared dirfd walk
//! (`walk.rs`): every non-directory is `unlinkat`ed on its parent's fd (large regular files in
//! small directories go to the shrinker), and a directory is removed by the worker that
//! finishes its last child. It never follows a symlink (a directory swapped for one is
//! unlinked as the link it is), never leaves the tree's mount unless told to, and never builds
//! a path for a syscall.

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{unlinkat, AtFlags, FileType};
use rustix::io::Errno;

use crate::engine::shrink::Found;
use crate::engine::walk::{self, Lost, Names, Next, Node, NotOpened, Root, Visitor, Walk};
use crate::sys::dirfd::{self, Ident};
use crate::sys::error::{Failure, Reason};

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
    /// Names per unlink batch handed to another worker inside one large directory.
    pub batch: usize,
    /// `statx` each non-directory before unlinking it, to count the bytes freed (always on in
    /// a dry run). Off by default: it costs a syscall per file (see bench/RESULTS.md).
    pub stat_files: bool,
    /// Unlink rate limit, steered by the tree pacer and capped by `--iops`; `None` = none.
    pub throttle: Option<std::sync::Arc<crate::engine::pace::throttle::Throttle>>,
    /// Who frees the large regular files met in small directories (the shrinker, paced);
    /// `None`: everything is unlinked.
    pub large_files: Option<Arc<crate::engine::shrink::TreeFiles>>,
    /// `lstat` the entries of small directories to meet large files (off where a stat is a
    /// round trip: network file systems).
    pub stat_small_dirs: bool,
    /// Look names of a large directory up ahead of their unlinks, from a few threads (a
    /// network file system: an unlink looks its name up under the directory's lock, one
    /// round trip more each, when the client's cached entry has expired; lookups of their
    /// own run in parallel, outside that lock).
    pub look_ahead: bool,
    /// Active workers, steered by the governor while the walk runs.
    pub gate: Option<Arc<crate::engine::walk::Gate>>,
    /// An entry already gone when it is unlinked is a failure (ENOENT), as GNU rm reports it
    /// (rm mode; its `-f` drops them), rather than done.
    pub report_vanished: bool,
    /// A btrfs subvolume (the target, or met in the tree) is deleted whole by the file system
    /// (`subvolume.rs`) where the caller may; otherwise, and in a dry run, walked like any
    /// directory. (rm mode walks it, as GNU rm does.)
    pub destroy_subvolumes: bool,
}

/// Directories with at most this many non-directory entries have each entry `lstat`ed, so
/// that large files in them (a backup directory with a few big dumps) go to `large_files`
/// instead of being unlinked at once. Bigger directories (the million small files) are not
/// stated: a stat per file cost up to 2.2x (bench/RESULTS.md).
pub const LARGE_FILE_DIR_MAX: usize = 64;

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: 2 * crate::engine::profile::cpus(),
            batch_threads: crate::engine::profile::cpus(),
            cross_mounts: false,
            dry_run: false,
            fd_budget: 256,
            batch: 1024,
            stat_files: false,
            throttle: None,
            large_files: None,
            stat_small_dirs: true,
            look_ahead: false,
            gate: None,
            report_vanished: false,
            destroy_subvolumes: true,
        }
    }
}

/// The best worker count for trees on the file system of `dir`, as its profile says.
pub fn threads_for(dir: impl std::os::fd::AsFd) -> usize {
    crate::engine::profile::Profile::detect(dir).workers
}

impl Options {
    /// Workers, workers per directory and stats as `profile` says (unless `threads_given`).
    pub fn apply(&mut self, profile: &crate::engine::profile::Profile, threads_given: bool) {
        if !threads_given {
            self.threads = profile.workers;
        }
        self.batch_threads = profile.batch_threads.min(self.threads).max(1);
        self.stat_small_dirs = profile.stat_small_dirs;
        self.look_ahead = profile.class == crate::engine::profile::Class::Network;
    }
}

/// Threads looking names up ahead of the unlinks of one batch (`Options::look_ahead`).
const LOOK_AHEAD_THREADS: usize = 8;

/// Running totals, readable while the engine works (for a progress line).
#[derive(Debug, Default)]
pub struct Counters {
    pub files: AtomicU64,
    pub dirs: AtomicU64,
    pub bytes: AtomicU64,
    pub errors: AtomicU64,
}

impl Counters {
    /// Files and directories removed so far.
    pub fn entries(&self) -> u64 {
        self.files.load(Ordering::Relaxed) + self.dirs.load(Ordering::Relaxed)
    }
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
    /// Something the removal went on without that the user should hear of (under MPI: a
    /// message of another rank that could not be read).
    fn warning(&self, _what: &dyn std::fmt::Display) {}
    /// A subvolume is removed file by file instead of by the file system's deletion; `why`.
    fn subvolume_walked(&self, _path: &std::path::Path, _why: &str) {}
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
    /// Subvolumes met (targets or inside trees), and how each was removed.
    pub subvolumes: Vec<Subvolume>,
    /// A directory on each file system where subvolumes were deleted (its cleaner is woken
    /// once the walk is over).
    cleaners: Vec<(u64, OwnedFd)>,
}

impl Outcome {
    /// Wakes the cleaner of each file system where subvolumes were deleted: their space
    /// comes back now instead of at the next commit interval.
    fn poke_cleaners(&mut self) {
        for (_, fd) in self.cleaners.drain(..) {
            let _ = crate::sys::btrfs::poke_cleaner(&fd);
        }
    }
}

/// A subvolume the engine met, and how it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subvolume {
    pub path: PathBuf,
    /// Deleted whole by the file system (its blocks freed by btrfs's cleaner afterwards), or
    /// `Err(why not)`: removed file by file with the rest of the tree.
    pub deleted: Result<crate::engine::subvolume::Deleted, String>,
}

/// Removes every target tree, in parallel, and returns the failures.
pub fn remove_trees(
    targets: Vec<DirTarget>,
    opts: &Options,
    counters: &Counters,
    sink: &dyn Sink,
) -> Outcome {
    let remover = Remover::new(opts, counters, sink);
    let roots = targets
        .into_iter()
        .enumerate()
        .map(|(i, t)| Root::new(i, t.base, t.name, t.display, t.ident))
        .collect();
    walk::run(&remover, roots, &walk_options(opts));
    let mut out = remover.outcome.into_inner().expect("outcome lock");
    out.poke_cleaners();
    out
}

/// Removes the trees together with other processes (the ranks of `spread`): as
/// `remove_trees`, with `drive` running the exchange on the calling thread. `start`: this
/// process begins with the trees (rank 0); the others receive work. Returns this process's
/// failures and what `drive` returned.
pub fn remove_trees_shared<R>(
    targets: Vec<DirTarget>,
    opts: &Options,
    counters: &Counters,
    sink: &dyn Sink,
    start: bool,
    drive: impl FnOnce(&dyn walk::Shared, &std::sync::mpsc::Receiver<walk::Event>) -> R,
) -> (Outcome, R) {
    let remover = Remover::new(opts, counters, sink);
    let roots = targets
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let root = Root::new(i, t.base, t.name, t.display, t.ident);
            // Work below a root this process never opens is checked against its mount.
            if let Ok(f) = dirfd::lstat_at(&*root.base, &root.name) {
                root.set_mnt_id(f.mnt_id);
            }
            root
        })
        .collect();
    let walk_opts = walk_options(opts);
    // Batches of one big directory go to other ranks too: they are other clients, each with
    // its own lock on the directory, where threads of one client would contend on one.
    let (_, r) = walk::run_shared(&remover, roots, &walk_opts, start, true, drive);
    let mut out = remover.outcome.into_inner().expect("outcome lock");
    out.poke_cleaners();
    (out, r)
}

fn walk_options(opts: &Options) -> walk::Options {
    walk::Options {
        threads: opts.threads.max(1),
        batch_threads: opts.batch_threads,
        batch: opts.batch,
        sort_min: walk::BIG_DIR,
        fd_budget: opts.fd_budget.max(2),
        cross_mounts: opts.cross_mounts,
        subvolumes: true,
        gate: opts.gate.clone(),
    }
}

/// The removal's work on the walk.
struct Remover<'a> {
    opts: Options,
    counters: &'a Counters,
    sink: &'a dyn Sink,
    outcome: Mutex<Outcome>,
}

/// Per directory: its allocated bytes (from the `statx` done when it was opened).
#[derive(Default)]
struct DirData {
    allocated: AtomicU64,
}

type RNode = Node<DirData>;

impl<'a> Remover<'a> {
    fn new(opts: &Options, counters: &'a Counters, sink: &'a dyn Sink) -> Self {
        Remover {
            opts: opts.clone(),
            counters,
            sink,
            outcome: Mutex::new(Outcome::default()),
        }
    }

    fn fail(&self, path: PathBuf, reason: Reason, keep: Option<&RNode>) {
        if let Some(n) = keep {
            n.keep();
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

    /// `lstat`s `name`: a large regular file with one link goes to `large`, anything else is
    /// unlinked as usual.
    fn remove_maybe_large(
        &self,
        large: &crate::engine::shrink::TreeFiles,
        dir: &OwnedFd,
        name: &CStr,
        node: &RNode,
    ) -> UnlinkResult {
        // As cached: the shrinker opens and checks the file itself before any step.
        let facts = match dirfd::lstat_at_cached(dir, name) {
            Ok(f) => f,
            Err(Errno::NOENT) => return UnlinkResult::Done,
            Err(_) => return self.unlink_one(dir, name, || node.child_path(name)),
        };
        if !crate::engine::shrink::candidate(&facts, Found::InTree) {
            return self.unlink_one(dir, name, || node.child_path(name));
        }
        let path = node.child_path(name);
        match large.remove(dir, name, &facts, &path) {
            r @ (Ok(_) | Err(Reason::Os(Errno::NOENT))) => {
                // Only what was given back (extents shared with a reflink are not).
                let freed = r.unwrap_or(0);
                self.counters.files.fetch_add(1, Ordering::Relaxed);
                self.counters.bytes.fetch_add(freed, Ordering::Relaxed);
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
                Err(Errno::NOENT) if !self.opts.report_vanished => return UnlinkResult::Done,
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
}

impl Visitor for Remover<'_> {
    type Dir = DirData;
    type Worker = ();

    fn worker(&self) {}

    fn dir_data(&self) -> DirData {
        DirData::default()
    }

    fn opened(&self, _: &mut (), node: &Arc<RNode>, facts: &dirfd::Facts) {
        node.data
            .allocated
            .store(facts.allocated, Ordering::Relaxed);
    }

    fn not_opened(&self, _: &mut (), parent: &OwnedFd, node: &Arc<RNode>, why: NotOpened) -> Next {
        let parent_node = node.parent().map(|p| &**p);
        match why {
            // Replaced by a symlink or a file: remove that entry itself, never follow it.
            NotOpened::NotDir => match self.unlink_one(parent, node.name(), || node.path()) {
                UnlinkResult::Done => Next::Done,
                UnlinkResult::IsDir => Next::Retry,
                UnlinkResult::Failed(e) => {
                    self.fail(node.path(), Reason::Os(e), parent_node);
                    Next::Keep
                }
                UnlinkResult::Refused(r) => {
                    self.fail(node.path(), r, parent_node);
                    Next::Keep
                }
            },
            NotOpened::OtherMount => {
                self.fail(node.path(), Reason::MountPoint, parent_node);
                Next::Keep
            }
            NotOpened::Changed => {
                self.fail(node.path(), Reason::Changed, parent_node);
                Next::Keep
            }
            // A directory that cannot be read may still be empty: rmdir needs only the
            // parent (as GNU rm does for `mkdir -m0 d; rm -rf d`). If it is not empty, the
            // reason to say is why it could not be read.
            NotOpened::Os(e @ (Errno::ACCESS | Errno::PERM)) if !self.opts.dry_run => {
                match unlinkat(parent, node.name(), AtFlags::REMOVEDIR) {
                    Ok(()) | Err(Errno::NOENT) => {
                        self.counters.dirs.fetch_add(1, Ordering::Relaxed);
                        if self.sink.wants_removed() {
                            self.sink.removed(&node.path(), true);
                        }
                        Next::Done
                    }
                    Err(r) => {
                        let shown = match r {
                            Errno::NOTEMPTY | Errno::ISDIR | Errno::NOTDIR | Errno::EXIST => e,
                            r => r,
                        };
                        self.fail(node.path(), Reason::Os(shown), parent_node);
                        Next::Keep
                    }
                }
            }
            NotOpened::Os(e) => {
                self.fail(node.path(), Reason::Os(e), parent_node);
                Next::Keep
            }
        }
    }

    fn subvolume(
        &self,
        _: &mut (),
        parent: &OwnedFd,
        node: &Arc<RNode>,
        fd: &OwnedFd,
        facts: &dirfd::Facts,
    ) -> bool {
        if !self.opts.destroy_subvolumes
            || self.opts.dry_run
            || !crate::sys::btrfs::is_subvolume_root(fd, facts.ident.ino)
        {
            return false;
        }
        let path = node.path();
        let deleted = crate::engine::subvolume::delete(parent, node.name(), fd);
        match &deleted {
            Ok(_) if self.sink.wants_removed() => self.sink.removed(&path, true),
            Ok(_) => {}
            Err(why) => self.sink.subvolume_walked(&path, why),
        }
        let done = deleted.is_ok();
        let mut out = self.outcome.lock().expect("outcome lock");
        if done && !out.cleaners.iter().any(|(dev, _)| *dev == facts.ident.dev) {
            if let Ok(fd) = rustix::io::dup(parent) {
                out.cleaners.push((facts.ident.dev, fd));
            }
        }
        out.subvolumes.push(Subvolume { path, deleted });
        done
    }

    fn list_failed(&self, node: &Arc<RNode>, e: Errno) {
        self.fail(node.path(), Reason::Os(e), Some(node));
    }

    fn lost(&self, path: PathBuf, why: Lost, node: &Arc<RNode>) {
        let reason = match why {
            Lost::Os(e) => Reason::Os(e),
            Lost::Changed => Reason::Changed,
        };
        self.fail(path, reason, Some(node));
    }

    fn entries(
        &self,
        _: &mut (),
        node: &Arc<RNode>,
        fd: &OwnedFd,
        names: Names<'_>,
        few: bool,
        _walk: &Walk<'_, Self>,
    ) -> Vec<CString> {
        // Directories with few entries have each one `lstat`ed, so that large files in them
        // (a backup directory with a few big dumps) are freed gently.
        let few = few
            && names.len() <= LARGE_FILE_DIR_MAX
            && !self.opts.dry_run
            && self.opts.stat_small_dirs;
        if self.opts.look_ahead && !few && !self.opts.dry_run && names.len() > LARGE_FILE_DIR_MAX {
            return self.entries_looked_ahead(node, fd, names);
        }
        let mut dirs = Vec::new();
        for name in names.iter() {
            let result = match (&self.opts.large_files, few) {
                (Some(large), true) => self.remove_maybe_large(large, fd, name, node),
                _ => self.unlink_one(fd, name, || node.child_path(name)),
            };
            match result {
                UnlinkResult::Done => {}
                // A directory after all (DT_UNKNOWN, or swapped in): remove it as one.
                UnlinkResult::IsDir => dirs.push(name.to_owned()),
                UnlinkResult::Failed(e) => {
                    self.fail(node.child_path(name), Reason::Os(e), Some(node))
                }
                UnlinkResult::Refused(reason) => {
                    self.fail(node.child_path(name), reason, Some(node))
                }
            }
        }
        dirs
    }

    fn finished(&self, _: &mut (), node: &Arc<RNode>, walk: &Walk<'_, Self>) {
        if node.kept() {
            return;
        }
        walk.prefetch_parent(node);
        walk.release(node);
        let parent = match walk.parent_fd(node) {
            Ok(fd) => fd,
            Err(lost) => {
                let reason = match lost {
                    Lost::Os(e) => Reason::Os(e),
                    Lost::Changed => Reason::Changed,
                };
                return self.fail(node.path(), reason, node.parent().map(|p| &**p));
            }
        };
        if !self.opts.dry_run {
            match unlinkat(&*parent, node.name(), AtFlags::REMOVEDIR) {
                Ok(()) => {}
                Err(Errno::NOENT) if !self.opts.report_vanished => return,
                Err(e) => {
                    return self.fail(node.path(), Reason::Os(e), node.parent().map(|p| &**p))
                }
            }
        }
        self.counters.dirs.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes.fetch_add(
            node.data.allocated.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        if self.sink.wants_removed() {
            self.sink.removed(&node.path(), true);
        }
    }
}

impl Remover<'_> {
    /// Unlinks `names` in order while a few threads `lstat` the names ahead of the unlinks
    /// (never one already unlinked): each unlink then finds its name freshly looked up. The
    /// lookups only read; what happens to each name is decided by its unlink alone.
    fn entries_looked_ahead(&self, node: &RNode, fd: &OwnedFd, names: Names<'_>) -> Vec<CString> {
        use std::sync::atomic::AtomicUsize;
        let list: Vec<&CStr> = names.iter().collect();
        let next = AtomicUsize::new(0);
        let unlinked = AtomicUsize::new(0);
        let mut dirs = Vec::new();
        std::thread::scope(|s| {
            for _ in 0..LOOK_AHEAD_THREADS {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= list.len() || crate::sys::interrupt::stopping() {
                        break;
                    }
                    // Names the unlinks already passed are left alone.
                    if i >= unlinked.load(Ordering::Relaxed) {
                        let _ = dirfd::lstat_at(fd, list[i]);
                    }
                });
            }
            for (i, name) in list.iter().enumerate() {
                let result = self.unlink_one(fd, name, || node.child_path(name));
                unlinked.store(i + 1, Ordering::Relaxed);
                match result {
                    UnlinkResult::Done => {}
                    UnlinkResult::IsDir => dirs.push((*name).to_owned()),
                    UnlinkResult::Failed(e) => {
                        self.fail(node.child_path(name), Reason::Os(e), Some(node))
                    }
                    UnlinkResult::Refused(reason) => {
                        self.fail(node.child_path(name), reason, Some(node))
                    }
                }
            }
            // The lookers stop at the end of the list.
            next.store(list.len(), Ordering::Relaxed);
        });
        dirs
    }
}

enum UnlinkResult {
    Done,
    IsDir,
    Failed(Errno),
    /// The large-file path failed (it says why).
    Refused(Reason),
}
