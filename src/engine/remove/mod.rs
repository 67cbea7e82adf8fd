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
use std::sync::Arc;

use crate::engine::walk::{self, Root};
use crate::sys::dirfd::{self, Ident};
use crate::sys::error::{Failure, Reason};

/// Names looked up a chunk ahead of their unlinks (network file systems).
mod ahead;
/// `--from`'s listed names, unlinked in batches.
pub mod listed;
/// The removal's work on the walk: what happens to each entry and directory.
mod remover;
/// A selection applied on the walk (`select/` decides what goes).
mod selected;
/// When a removal grows from the calling thread to the measured pool, and what starts then.
pub mod start;
/// The one unlink of a name.
pub mod unlink;
pub use start::{Big, Start};

/// How the engine works.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Workers (0: as the file system's profile says, two per CPU where none is taken). More
    /// than the CPU count pays on cold caches: a worker waiting for a directory or
    /// inode-table read costs no CPU while the others go on.
    pub threads: usize,
    /// Workers allowed at once inside one large directory's unlink batches (0: as the profile
    /// says, one per CPU where none is taken). Those contend on the directory's lock, so more
    /// than the CPU count only burns CPU.
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
    /// Look names of a large directory up a chunk ahead of their unlinks, from as many
    /// threads as the workers allowed (a network file system: an unlink looks its name up
    /// under the directory's lock, one round trip more each, when the client has no fresh
    /// entry for it; lookups of their own run together; `remove/ahead.rs`).
    pub look_ahead: bool,
    /// Active workers, steered by the governor while the walk runs.
    pub gate: Option<Arc<crate::engine::walk::Gate>>,
    /// Under MPI, where rank 0's governor verdicts arrive for this rank's governor (a
    /// governed removal: one judgement for the job).
    pub verdicts: Option<Arc<dyn crate::engine::pace::tree::Joint>>,
    /// An entry already gone when it is unlinked is a failure (ENOENT), as GNU rm reports it
    /// (rm mode; its `-f` drops them), rather than done.
    pub report_vanished: bool,
    /// Remove only what this selection chooses below the roots (which stay): `rm -r --name`,
    /// `--older-than`, ... (`select/`).
    pub select: Option<Arc<crate::engine::select::Selection>>,
    /// Which entries may go, asked just before each unlink and rmdir (`reclaim pack` removes
    /// only what it proved packed); `None`: everything.
    pub keep: Option<Arc<dyn Keep>>,
    /// How many workers are in flight, measured while the removal runs (`None`: `threads`,
    /// fixed). Its gate and stream replace `gate` and `stream` when those are not set.
    pub concurrency: Option<Arc<crate::engine::pace::concurrency::Concurrency>>,
    /// A btrfs subvolume (the target, or met in the tree) is deleted whole by the file system
    /// (`subvolume.rs`) where the caller may; otherwise, and in a dry run, walked like any
    /// directory. (rm mode walks it, as GNU rm does.)
    pub destroy_subvolumes: bool,
    /// Start on the calling thread alone and grow into the measured pool once the removal
    /// proves big (`start.rs`); `None`: these options as they are, the pool from the first.
    pub start: Option<Arc<Start>>,
}

/// The condition of a selective removal: asked for every entry just before it would go. What
/// it keeps stays, and so do the directories above it.
pub trait Keep: Send + Sync + std::fmt::Debug {
    /// Unlinks the non-directory `name` in `dir` if it may go (the condition does the unlink
    /// itself, so that it can check and unlink as one step); `path` for messages.
    fn unlink(&self, dir: &OwnedFd, name: &CStr, path: &std::path::Path) -> Kept;
    /// Whether the directory `path` (`ident`, as opened), emptied, may be removed: `Ok(false)`
    /// keeps it quietly, `Err` keeps it and reports why.
    fn rmdir(&self, ident: Option<Ident>, path: &std::path::Path) -> Result<bool, Reason>;
}

/// What `Keep::unlink` did.
#[derive(Debug)]
pub enum Kept {
    /// Unlinked (or already gone).
    Gone,
    /// A directory: walk it.
    IsDir,
    /// Left in place, for this reason (reported as a failure of its path).
    Stays(Reason),
}

/// Times a directory is listed again when its `rmdir` finds it not empty (a listing that
/// shifted under the removals skipped entries, or entries were added meanwhile), before its
/// failure is reported.
pub const RELISTS: u32 = 3;

/// Directories with at most this many non-directory entries have each entry `lstat`ed, so
/// that large files in them (a backup directory with a few big dumps) go to `large_files`
/// instead of being unlinked at once. Bigger directories (the million small files) are not
/// stated: a stat per file cost up to 2.2x (bench/RESULTS.md).
pub const LARGE_FILE_DIR_MAX: usize = 64;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threads: 0,
            batch_threads: 0,
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
            verdicts: None,
            report_vanished: false,
            select: None,
            keep: None,
            concurrency: None,
            destroy_subvolumes: true,
            start: None,
        }
    }
}

/// The best worker count for trees on the file system of `dir`, as its profile says.
pub fn threads_for(dir: impl std::os::fd::AsFd) -> usize {
    crate::engine::profile::Profile::detect(dir).workers
}

impl Settings {
    /// Workers: `threads`, or two per CPU when not set.
    pub fn workers(&self) -> usize {
        match self.threads {
            0 => 2 * crate::engine::profile::cpus(),
            n => n,
        }
    }

    /// Workers per directory: `batch_threads`, or one per CPU when not set.
    fn per_dir(&self) -> usize {
        match self.batch_threads {
            0 => crate::engine::profile::cpus(),
            n => n,
        }
    }

    /// Workers, workers per directory and stats as `profile` says: the workers measured from
    /// the profile's start (pinned where `threads` is set: `--threads`).
    pub fn apply(&mut self, profile: &crate::engine::profile::Profile) {
        use crate::engine::pace::concurrency::Concurrency;
        let network = profile.class == crate::engine::profile::Class::Network;
        let round_trip = profile
            .round_trip_ms
            .map(|ms| std::time::Duration::from_secs_f64(ms / 1e3));
        let c = if self.threads != 0 {
            Concurrency::pinned(self.threads, network, round_trip)
        } else {
            // On a network file system a worker waiting for its round trip costs nothing, and
            // one fewer is one request fewer in flight: a trial of fewer that "lost nothing"
            // in two noisy windows let ranks of an MPI job sharing one server drift to one or
            // two workers each, and 8 ranks kept the server 0.64-0.72 busy against 0.82 with
            // every rank pinned at the network profile's start (bench/RESULTS.md, 2026-11-26,
            // "MPI, 8 ranks at the server's cap by default"). There the start is also the floor.
            Concurrency::measured(
                profile.start,
                if network { profile.start } else { 1 },
                profile.max_workers,
                &profile.start_reason(),
                network,
                round_trip,
            )
        };
        self.threads = c.threads();
        self.batch_threads = profile.batch_threads.min(self.threads).max(1);
        // Inside one directory: measured from one, up to the profile's (`pace::unlinkers`).
        self.concurrency = Some(Arc::new(c.with_unlinkers(self.batch_threads)));
        self.stat_small_dirs = profile.stat_small_dirs;
        // Only where the unlink finds the name that was looked up for it: on a client that
        // keeps no names, each lookup ahead was a request more per file and no sooner done
        // (bench/RESULTS.md, 2026-11-29).
        self.look_ahead = network && profile.names_cached;
    }

    /// The gate the workers pass: the one set, else the measured concurrency's (`None`:
    /// `threads`, fixed).
    pub fn active_gate(&self) -> Option<Arc<walk::Gate>> {
        self.gate
            .clone()
            .or_else(|| self.concurrency.as_ref().map(|c| c.gate()))
    }

    /// The gate the latency governor steers: the measured concurrency's (or one of its own),
    /// capped at one worker to start with on a `rotational` disk, which earns more after good
    /// windows (the four that ext4's profile allows hurt a busy HDD before the first miss was
    /// seen: bench/RESULTS.md, 2026-11-23).
    pub fn governed_gate(&self, rotational: bool) -> Arc<walk::Gate> {
        let gate = self
            .active_gate()
            .unwrap_or_else(|| Arc::new(walk::Gate::new(self.threads)));
        if rotational {
            crate::engine::pace::workers::Steer::of(&gate).start_with_one();
        }
        gate
    }

    /// On a `network` file system, the latency probe's writes spaced by the removal's own
    /// operations (its concurrency meter's, and under MPI the other ranks' removals as they
    /// report them: the job has one probe); elsewhere none.
    pub fn network_budget(&self, network: bool) -> Option<crate::engine::pace::probe::Budget> {
        let c = self.concurrency.clone().filter(|_| network)?;
        let gate = self.active_gate();
        let job = self.verdicts.clone();
        let alone = job.is_none();
        Some(crate::engine::pace::probe::Budget {
            ops: Arc::new(move || {
                c.meter().read().0 + job.as_ref().map_or(0, |v| v.removed_by_others())
            }),
            per_probe: crate::engine::pace::tree::NETWORK_OPS_PER_PROBE,
            // The governor acts by holding workers back (by default: without `--max-latency`
            // it holds no rate): with one at work (one directory, whose unlinks the client
            // serializes) there is nothing to hold back, and each probe write was two
            // requests for nothing (bench/RESULTS.md, 2026-11-29). A job's judge probes for
            // all its ranks.
            actionable: Arc::new(move || !alone || gate.as_ref().is_none_or(|g| g.working() > 1)),
        })
    }
}

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
    /// The removal proved big (`Settings::start`): `counters` move until `done` is set (a
    /// progress line). Called on a thread of its own, which it may keep until then.
    fn watch(&self, _counters: &Counters, _done: &std::sync::atomic::AtomicBool) {}
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
    let opts = Settings {
        dry_run: true,
        ..Settings::default()
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
#[derive(Clone)]
pub struct DirTarget {
    pub base: Arc<OwnedFd>,
    pub name: CString,
    pub display: PathBuf,
    pub ident: Ident,
}

impl DirTarget {
    /// Where the tree's file system is asked about and probed: its parent, whose listing the
    /// removal never reads (where a file system has no `O_TMPFILE` the latency probe's file
    /// is made by name for a moment, and inside the tree the walk could meet it, remove it
    /// and count it as the user's), or the tree itself where it is a mount point (its own file
    /// system, not its parent's; opened without following a symlink, checked to be the one
    /// resolved).
    pub fn fs_dir(&self) -> Arc<OwnedFd> {
        let parent = dirfd::fstat(&*self.base).ok().map(|f| f.mnt_id);
        match dirfd::open_dir_at(&*self.base, &self.name) {
            Ok(fd) => match dirfd::fstat(&fd) {
                Ok(f) if f.ident == self.ident && Some(f.mnt_id) != parent => Arc::new(fd),
                _ => self.base.clone(),
            },
            Err(_) => self.base.clone(),
        }
    }
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
    /// What the removal ran with once it proved big (`Settings::start`); `None`: it stayed
    /// small (or started with the pool).
    pub big: Option<Big>,
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

/// Removes every target tree and returns the failures: with `opts.start`, on the calling
/// thread until the removal proves big, then in parallel as its plan says (`start.rs`; the
/// profile, governor and concurrency it ran with are in `Outcome::big`); without, in parallel
/// with `opts` from the first.
pub fn remove_trees(
    targets: Vec<DirTarget>,
    opts: &Settings,
    counters: &Counters,
    sink: &dyn Sink,
) -> Outcome {
    let first = targets.first().cloned();
    let roots = targets
        .into_iter()
        .enumerate()
        .map(|(i, t)| Root::new(i, t.base, t.name, t.display, t.ident))
        .collect();
    let pool = |opts: &Settings, roots: Vec<Root>| {
        let remover = remover::Remover::new(opts, counters, sink);
        let walk_opts = walk_options(opts, opts.workers(), opts.per_dir());
        measured(opts, || walk::run(&remover, roots, &walk_opts));
        remover.outcome.into_inner().expect("outcome lock")
    };
    // The big phase asks the first tree's own file system (`DirTarget::fs_dir`).
    let mut out = match (&opts.start, first) {
        (Some(start), Some(first)) if start.at_once => {
            let own = first.fs_dir();
            let (mut out, big) = start.run_big(&own, opts, counters, sink, |e| pool(e, roots));
            out.big = Some(big);
            out
        }
        (Some(start), Some(first)) => grow(start, &first, roots, opts, counters, sink),
        _ => pool(opts, roots),
    };
    out.poke_cleaners();
    out
}

/// `remove_trees` with `start`: on the calling thread until the removal proves big, then its
/// big phase (`Start::run_big`) from where the walk is.
fn grow(
    start: &Start,
    first: &DirTarget,
    roots: Vec<Root>,
    opts: &Settings,
    counters: &Counters,
    sink: &dyn Sink,
) -> Outcome {
    let small = start.small(opts);
    let remover = remover::Remover::new(&small, counters, sink);
    // One worker (this thread), no gate, nothing streamed: what it does is decided entry by
    // entry by the remover's first options.
    let walk_first = walk::WalkOptions {
        batch: opts.batch.min(start::INLINE_BATCH),
        gate: None,
        stream: None,
        ..walk_options(&small, 1, 1)
    };
    let mut big = None;
    walk::run_growing(
        &remover,
        roots,
        &walk_first,
        &Start::proved,
        &mut |grown, go| {
            start.read(grown.reads);
            let own = first.fs_dir();
            let ((), b) = start.run_big(&own, &small, counters, sink, |engine| {
                let engine = remover.big.get_or_init(|| engine.clone());
                let pool = walk_options(engine, engine.workers(), engine.per_dir());
                measured(engine, || go(&pool));
            });
            big = Some(b);
        },
    );
    let mut out = remover.outcome.into_inner().expect("outcome lock");
    out.big = big;
    out
}

/// Runs `f` (the walk) while the concurrency controller, if any, measures and steers it.
fn measured<R>(opts: &Settings, f: impl FnOnce() -> R) -> R {
    let Some(c) = opts.concurrency.as_ref().filter(|_| !opts.dry_run) else {
        return f();
    };
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let runner = s.spawn(|| c.run(&done));
        let r = f();
        done.store(true, Ordering::Relaxed);
        runner.thread().unpark();
        r
    })
}

/// Removes the trees together with other processes (the ranks of `spread`): as
/// `remove_trees`, with `drive` running the exchange on the calling thread. `start`: this
/// process begins with the trees (rank 0); the others receive work. Returns this process's
/// failures and what `drive` returned.
pub fn remove_trees_shared<R>(
    targets: Vec<DirTarget>,
    opts: &Settings,
    counters: &Counters,
    sink: &dyn Sink,
    start: bool,
    drive: impl FnOnce(&dyn walk::Shared, &std::sync::mpsc::Receiver<walk::Event>) -> R,
) -> (Outcome, R) {
    let remover = remover::Remover::new(opts, counters, sink);
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
    let walk_opts = walk_options(opts, opts.workers(), opts.per_dir());
    // Batches of one big directory go to other ranks too: they are other clients, each with
    // its own lock on the directory, where threads of one client would contend on one.
    let (_, r) = measured(opts, || {
        walk::run_shared(&remover, roots, &walk_opts, start, true, drive)
    });
    let mut out = remover.outcome.into_inner().expect("outcome lock");
    out.poke_cleaners();
    (out, r)
}

/// The walk's options for `opts`, with `threads` workers, `per_dir` of them in one directory.
fn walk_options(opts: &Settings, threads: usize, per_dir: usize) -> walk::WalkOptions {
    walk::WalkOptions {
        threads,
        batch_threads: per_dir,
        batch: opts.batch,
        sort_min: walk::BIG_DIR,
        listing_most: walk::LISTING_MOST,
        fd_budget: opts.fd_budget.max(2),
        cross_mounts: opts.cross_mounts,
        // A selection by access time must not change what it measures.
        noatime: opts
            .select
            .as_ref()
            .is_some_and(|s| s.time_field() == crate::engine::select::TimeField::Atime),
        gate: opts.active_gate(),
        stream: opts.concurrency.as_ref().and_then(|c| c.stream()),
        per_dir: opts
            .concurrency
            .as_ref()
            .filter(|_| !opts.dry_run)
            .map(|c| c.unlinkers().per_dir()),
        subvolumes: true,
    }
}
