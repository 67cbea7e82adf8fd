//! A removal request run end to end (`reclaim rm`'s library half; `prune` removes through it
//! too): each argument resolved, then hidden into its trash (`--background`, `--wait`) or
//! removed here (single entries at once, large files gently), the trees with the parallel
//! engine, `--durable`'s fsyncs, the hand-over to a reaper. Tells its caller what happens as it
//! happens (`Events`) and returns the account (`Removal`); never prints, never picks an exit
//! code.

use std::collections::HashSet;
use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rustix::io::Errno;

use crate::engine::profile::Profile;
use crate::engine::remove::{self, Big, Counters, DirTarget, Settings, Start};
use crate::engine::shrink::{self, Gentle};
use crate::engine::target::{Rejection, Resolver, Target};
use crate::reaper::background::{Hide, Hider};
use crate::sys::dirfd::Facts;
use crate::sys::error::{ErrorEntry, Failure, Reason};
use crate::sys::quote::quote;
use crate::trash::hide::{Hidden, HideOptions};

mod events;
mod gentle;
mod grouped;
mod request;
mod selected;
pub use events::{Events, Left, Removal, Shrinking, SubvolumeEntry, Summary};
use gentle::{gentle_candidate, left_of_file, remove_gently};
pub use request::{Mode, Request};
pub use selected::{Asked, Context};

/// Runs one removal, telling `events` as it goes; returns its account.
pub fn run(req: &Request, events: &dyn Events) -> Removal {
    let mut run = Run::new(req, events);
    let trees = match req.select.as_ref().and_then(|s| s.from.as_deref()) {
        Some(list) => run.remove_listed(list),
        None => run.arguments(),
    };
    let trees = run.keep_free(trees);
    let trees = run.remove_trees(trees);
    run.keep_free_done();
    run.sync_directories();
    if crate::sys::interrupt::stopping() {
        if let Some(shown) = &trees.shown {
            run.left.push(Left::Trees(shown.clone()));
        }
    }
    run.hand_over();
    run.report(trees)
}

/// One run of `reclaim rm`, phase by phase: the arguments one at a time (hidden, or removed if
/// single entries), then the trees with the engine, the fsyncs of `--durable`, the hand-over
/// to a reaper (`--background`, `--wait`) and the report. What every phase adds to lives here.
struct Run<'r> {
    req: &'r Request,
    events: &'r dyn Events,
    started: Instant,
    counters: Counters,
    resolver: Resolver,
    hider: Hider,
    /// Arguments hidden into a trash (`--background`, `--wait`).
    hidden: Vec<Hidden>,
    /// Arguments that could not be hidden, removed in the foreground instead.
    fallback: Vec<String>,
    /// The same, by why, to be said once per reason.
    fell_back: grouped::ByReason,
    /// Arguments that could not be hidden and stay (a grace window was asked for), by why.
    refused: grouped::ByReason,
    /// Directories whose entries were removed here: fsynced once each at the end (--durable).
    touched: Vec<Arc<OwnedFd>>,
    failures: Vec<Failure>,
    gentle: Vec<Gentle>,
    /// What a stop signal left (said at the end).
    left: Vec<Left>,
    /// Arguments a stop signal came before.
    not_started: usize,
    /// The directory entries of the arguments so far (see `entry_key`).
    seen: HashSet<EntryKey>,
    /// What a selection's phases leave for the report.
    selected: selected::State,
}

/// What the tree phase leaves for the report.
struct Trees {
    /// The trees, quoted and joined (for the line after a stop signal); `None`: there were none.
    shown: Option<String>,
    skipped_mounts: Vec<PathBuf>,
    subvolumes: Vec<remove::Subvolume>,
    pace: Option<crate::engine::pace::PaceReport>,
    profile: Option<Profile>,
    /// The workers they were removed with, and why.
    concurrency: Option<crate::engine::pace::concurrency::Report>,
    /// Under MPI: what each rank did.
    ranks: Vec<crate::engine::spread::Rank>,
}

impl<'r> Run<'r> {
    fn new(req: &'r Request, events: &'r dyn Events) -> Self {
        let started = Instant::now();
        let mut resolver = Resolver::new(req.recursive, req.dir);
        resolver.preserve_all_root = req.preserve_all_root;
        resolver.count_space = req.count_bytes;
        Run {
            req,
            events,
            started,
            counters: Counters::default(),
            resolver,
            hider: Hider::new(
                HideOptions {
                    grace: req.grace,
                    known: None,
                    durable: req.durable,
                    pacing: req.pace.clone(),
                },
                req.floor,
            ),
            hidden: Vec::new(),
            fallback: Vec::new(),
            fell_back: Default::default(),
            refused: Default::default(),
            touched: Vec::new(),
            failures: Vec::new(),
            gentle: Vec::new(),
            left: Vec::new(),
            not_started: 0,
            seen: HashSet::new(),
            selected: selected::State::default(),
        }
    }

    /// The arguments in order, until a stop signal: each is resolved, then hidden
    /// (`--background`, `--wait`), removed here if it is a single entry, or kept for the
    /// engine if it is a tree. Returns the trees.
    fn arguments(&mut self) -> Vec<DirTarget> {
        let req = self.req;
        let hiding = req.mode != Mode::Now && !req.engine.dry_run;
        let mut trees = Vec::new();
        // `batch`: the arguments to hide, hidden together after the loop.
        let mut pending = Vec::new();
        // Arguments no trash took, to remove here after the loop.
        let mut fell_back = Vec::new();
        for (i, path) in req.paths.iter().enumerate() {
            if crate::sys::interrupt::stopping() {
                self.not_started = req.paths.len() - i;
                break;
            }
            let resolved = self.resolver.resolve(path);
            // Under MPI, rank 0 removes the single entries and reports the arguments; the
            // other ranks take part in the trees only.
            if !crate::engine::spread::leads() {
                if let Ok(t @ Target::Tree(_)) = resolved {
                    if self.seen.insert(entry_key(&t)) {
                        if let Target::Tree(tree) = t {
                            trees.push(tree);
                        }
                    }
                }
                continue;
            }
            // The same directory entry named twice (`rm -r t t`): gone by the second time, as
            // for GNU rm.
            if let Ok(t) = &resolved {
                if !self.seen.insert(entry_key(t)) {
                    if !req.force {
                        self.fail(path.clone(), Reason::Os(Errno::NOENT));
                    }
                    continue;
                }
            }
            if hiding && req.batch {
                if let Ok(t) = resolved {
                    pending.push((path.clone(), t));
                    continue;
                }
            } else if let (true, Ok(t)) = (hiding, &resolved) {
                if !self.hide(path, t) {
                    // Removed here, once the reason it was not hidden is said.
                    fell_back.push((path.clone(), resolved));
                }
                continue;
            }
            self.foreground(path, resolved, &mut trees);
        }
        fell_back.extend(self.hide_batches(pending));
        self.say_not_hidden();
        for (path, resolved) in fell_back {
            self.foreground(&path, resolved, &mut trees);
        }
        trees
    }

    /// What could not go to a trash, once per reason (see `grouped`).
    fn say_not_hidden(&mut self) {
        for (why, paths) in self.fell_back.take() {
            self.events.fallback(&paths, &why);
        }
        for (why, paths) in self.refused.take() {
            self.events.refused(&paths, &why);
        }
    }

    /// An argument no trash took: removed here instead (said with the others of its reason).
    fn fell_back(&mut self, display: &Path, why: String) {
        self.fallback.push(display.to_string_lossy().into_owned());
        self.fell_back.add(why, display.to_path_buf());
    }

    /// An argument no trash took that stays (a grace window was asked for): a failure, said
    /// with the others of its reason.
    fn refuse(&mut self, display: PathBuf, why: String) {
        self.refused.add(why.clone(), display.clone());
        self.failures.push(Failure {
            path: display,
            reason: Reason::GraceRefused(why),
        });
    }

    /// An argument removed here: a tree is kept for the engine, a single entry removed at
    /// once; a rejection said.
    fn foreground(
        &mut self,
        path: &Path,
        resolved: Result<Target, Rejection>,
        trees: &mut Vec<DirTarget>,
    ) {
        let req = self.req;
        if req.durable {
            match &resolved {
                Ok(Target::Tree(d)) => touch(&mut self.touched, &d.base),
                Ok(Target::Entry { base, .. }) => touch(&mut self.touched, base),
                Err(_) => {}
            }
        }
        match resolved {
            Ok(Target::Tree(tree)) => trees.push(tree),
            // A selection searches directories.
            Ok(Target::Entry { display, .. }) if req.engine.select.is_some() => {
                self.fail(display, Reason::Os(Errno::NOTDIR))
            }
            Ok(Target::Entry {
                base,
                name,
                display,
                is_dir,
                allocated,
                facts,
            }) => self.remove_entry(&base, &name, display, is_dir, allocated, &facts),
            Err(Rejection::Missing) => self.missing(path),
            // `-f` says nothing about what cannot exist (GNU: ENOTDIR for `file/x` too).
            Err(Rejection::Refused(Reason::Os(Errno::NOTDIR | Errno::INVAL | Errno::ILSEQ)))
                if req.force => {}
            Err(Rejection::Refused(reason)) => self.fail(path.to_path_buf(), reason),
        }
    }

    /// `Request::batch`: the arguments to hide, hidden together, one entry per directory they
    /// are in (`Hider::hide_batch`); those no trash could take are returned, to be removed
    /// here.
    fn hide_batches(
        &mut self,
        pending: Vec<(PathBuf, Target)>,
    ) -> Vec<(PathBuf, Result<Target, Rejection>)> {
        let mut fell_back = Vec::new();
        // By directory (its device and inode), in the order first met.
        let mut groups: Vec<(DirKey, Vec<(PathBuf, Target)>)> = Vec::new();
        for (path, t) in pending {
            let base = match &t {
                Target::Tree(d) => &d.base,
                Target::Entry { base, .. } => base,
            };
            let key = match crate::sys::dirfd::fstat(&**base) {
                Ok(f) => (f.ident.dev, f.ident.ino),
                Err(e) => {
                    self.fail(path, Reason::Os(e));
                    continue;
                }
            };
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, g)) => g.push((path, t)),
                None => groups.push((key, vec![(path, t)])),
            }
        }
        for (_, group) in groups {
            let base = match &group[0].1 {
                Target::Tree(d) => d.base.clone(),
                Target::Entry { base, .. } => base.clone(),
            };
            let mut items = Vec::new();
            let mut targets = Vec::new();
            for (path, t) in group {
                let (name, display) = match &t {
                    Target::Tree(d) => (d.name.clone(), d.display.clone()),
                    Target::Entry { name, display, .. } => (name.clone(), display.clone()),
                };
                let facts = match crate::sys::dirfd::lstat_at(&*base, &name) {
                    Ok(f) => f,
                    Err(Errno::NOENT) if self.req.force => continue,
                    Err(e) => {
                        self.fail(display, Reason::Os(e));
                        continue;
                    }
                };
                items.push(crate::trash::hide::Item {
                    name,
                    facts,
                    known: self.req.known_sizes.get(&path).copied(),
                });
                targets.push((path, display, t));
            }
            let outcomes = self.hider.hide_batch(&base, items);
            for ((path, display, t), o) in targets.into_iter().zip(outcomes) {
                match o {
                    Hide::Hidden(h) => {
                        let passed = self.hider.take_passed_over();
                        self.events.hidden(&display, &h.id, &passed);
                        self.hidden.push(h);
                    }
                    Hide::Fallback(why) => {
                        self.fell_back(&display, why);
                        fell_back.push((path, Ok(t)));
                    }
                    Hide::Refused(why) => self.refuse(display, why),
                    Hide::Failed(Reason::Os(Errno::NOENT)) if self.req.force => {}
                    Hide::Failed(reason) => self.fail(display, reason),
                    Hide::NotTried => self.not_started += 1,
                }
            }
        }
        fell_back
    }

    /// Hides one resolved argument into its trash. False if it is to be removed here instead
    /// (no trash could take it, and no grace window was asked for).
    fn hide(&mut self, path: &Path, target: &Target) -> bool {
        let (base, name, display) = match target {
            Target::Tree(d) => (&d.base, &d.name, &d.display),
            Target::Entry {
                base,
                name,
                display,
                ..
            } => (base, name, display),
        };
        match self
            .hider
            .hide(base, name, self.req.known_sizes.get(path).copied())
        {
            Hide::Hidden(h) => {
                let passed = self.hider.take_passed_over();
                self.events.hidden(display, &h.id, &passed);
                self.hidden.push(h);
                true
            }
            Hide::Fallback(why) => {
                self.fell_back(&display.clone(), why);
                false
            }
            Hide::Refused(why) => {
                self.refuse(display.clone(), why);
                true
            }
            Hide::Failed(Reason::Os(Errno::NOENT)) if self.req.force => true,
            Hide::Failed(reason) => {
                self.fail(display.clone(), reason);
                true
            }
            Hide::NotTried => {
                self.not_started += 1;
                true
            }
        }
    }

    /// Removes one single entry (a file, a symlink, an empty directory with `-d`) at once; a
    /// large file gently.
    fn remove_entry(
        &mut self,
        base: &Arc<OwnedFd>,
        name: &CStr,
        display: PathBuf,
        is_dir: bool,
        allocated: u64,
        facts: &Facts,
    ) {
        let req = self.req;
        // What the file system gets back (a link's or an open file's blocks stay in use),
        // counted before it goes; `--dry-run` counts what is allocated.
        let mut returned = if is_dir || req.engine.dry_run || !req.count_bytes {
            allocated
        } else {
            crate::sys::freed::by_removal(base, name, facts)
        };
        let result = if req.engine.dry_run {
            Ok(())
        } else if is_dir {
            crate::sys::safeopen::rmdir_at(&**base, name).map_err(Reason::Os)
        } else if gentle_candidate(req, facts) {
            remove_gently(req, &self.hider, base, name, &display, facts, self.events).map(|g| {
                if let Some(l) = &g.outcome.left {
                    self.left.push(left_of_file(req, &g, l));
                }
                // Only what was given back: extents shared with reflinks are not.
                returned = returned.min(g.outcome.freed());
                self.gentle.push(g);
            })
        } else {
            crate::sys::safeopen::unlink_at(&**base, name).map_err(Reason::Os)
        };
        match result {
            Ok(()) => {
                let counter = if is_dir {
                    &self.counters.dirs
                } else {
                    &self.counters.files
                };
                counter.fetch_add(1, Ordering::Relaxed);
                self.counters.bytes.fetch_add(returned, Ordering::Relaxed);
                if req.verbose {
                    self.events.removed(&display, is_dir);
                }
            }
            Err(Reason::Os(Errno::NOENT)) if req.force => {}
            Err(reason) => self.fail(display, reason),
        }
    }

    /// An argument gone from its path: maybe a removal of it was interrupted (kill -9 during
    /// its shrink) and waits in the trash; finish that instead of saying "No such file".
    fn missing(&mut self, path: &Path) {
        match resume_interrupted(self.req, path, self.events) {
            Some(Ok(g)) => self.gentle.push(g),
            Some(Err(reason)) => self.fail(path.to_path_buf(), reason),
            None if self.req.force => {}
            None => self.fail(path.to_path_buf(), Reason::Os(Errno::NOENT)),
        }
    }

    /// Removes the trees with the engine: on this thread until they prove big, then with the
    /// file system's profile, the measured pool and the governor when asked or governed
    /// (`remove::Start`; under MPI all of it from the start: the ranks agree on the trees
    /// first); large files in them are shrunk like named ones.
    fn remove_trees(&mut self, trees: Vec<DirTarget>) -> Trees {
        let req = self.req;
        let shown = (!trees.is_empty()).then(|| {
            trees
                .iter()
                .map(|t| quote(&t.display))
                .collect::<Vec<_>>()
                .join(", ")
        });
        let start = Arc::new(req.start());
        let mut engine = req.engine.clone();
        // Large files inside the trees are shrunk like named ones (when pacing is on).
        let tree_files = (!req.pace.fast && !req.engine.dry_run)
            .then(|| Arc::new(shrink::TreeFiles::new(req.pacing(), false)));
        engine.large_files = tree_files.clone();
        let (counters, events) = (&self.counters, self.events);
        let (outcome, ranks, big) = if let Some(job) = crate::engine::spread::job() {
            // Every rank, also without trees, all of it from the start: the ranks agree on
            // the trees first.
            // The first tree's own file system (a mount point named as a tree is its own).
            let base = trees.first().map(DirTarget::fs_dir);
            let run =
                |e: &Settings| crate::engine::spread::remove_trees(job, trees, e, counters, events);
            match base {
                Some(base) => {
                    let ((outcome, ranks), big) =
                        start.run_big(&base, &engine, counters, events, run);
                    (outcome, ranks, Some(big))
                }
                None => {
                    let done = AtomicBool::new(false);
                    let (outcome, ranks) = std::thread::scope(|s| {
                        s.spawn(|| events.watch(counters, &done));
                        let r = run(&engine);
                        done.store(true, Ordering::Relaxed);
                        r
                    });
                    (outcome, ranks, None)
                }
            }
        } else {
            let small = !trees.is_empty() && !req.start_pool;
            engine.start = Some(start);
            let mut all = remove::Outcome::default();
            // -v: one argument after the other, so that it lists them in the order given.
            let each: Vec<Vec<DirTarget>> = if req.verbose {
                trees.into_iter().map(|t| vec![t]).collect()
            } else {
                vec![trees]
            };
            for ts in each.into_iter().filter(|ts| !ts.is_empty()) {
                let o = remove::remove_trees(ts, &engine, counters, events);
                all.failures.extend(o.failures);
                all.skipped_mounts.extend(o.skipped_mounts);
                all.subvolumes.extend(o.subvolumes);
                all.big = o.big.or(all.big);
            }
            // Trees that stayed small say so (one worker, nothing measured).
            let big = all.big.take().or_else(|| {
                (small && !req.engine.dry_run).then(|| Big {
                    concurrency: Some(Start::small_report()),
                    ..Big::default()
                })
            });
            (all, Vec::new(), big)
        };
        self.failures.extend(outcome.failures);
        for (path, outcome, took) in tree_files.map(|tf| tf.take()).unwrap_or_default() {
            self.gentle.push(Gentle {
                path: crate::sys::quote::PathField::new(path),
                elapsed_s: took.as_secs_f64(),
                outcome,
            });
        }
        let big = big.unwrap_or_default();
        Trees {
            shown,
            skipped_mounts: outcome.skipped_mounts,
            subvolumes: outcome.subvolumes,
            pace: big.pace,
            profile: big.profile,
            concurrency: big.concurrency,
            ranks,
        }
    }

    /// `--durable`: one fsync per directory entries were removed from here.
    fn sync_directories(&mut self) {
        if !self.req.durable || self.req.engine.dry_run {
            return;
        }
        for dir in std::mem::take(&mut self.touched) {
            if let Err(e) = rustix::fs::fsync(&*dir) {
                let shown = crate::sys::mounts::fd_path(&*dir).unwrap_or_default();
                self.fail(shown, Reason::Os(e));
            }
        }
    }

    /// What was hidden goes on: a detached reaper frees it (`--background`), or it is freed
    /// here before returning (`--wait`).
    fn hand_over(&mut self) {
        match self.req.mode {
            Mode::Background => {
                self.hider.start_reapers(&self.req.reaper_args());
                if crate::sys::interrupt::stopping() && self.not_started > 0 {
                    self.left.push(Left::Hid {
                        hidden: self.hidden.len(),
                        of: self.req.paths.len(),
                        untouched: self.not_started,
                    });
                    self.not_started = 0;
                }
            }
            Mode::Wait if !self.hider.used.is_empty() => self.wait(),
            _ => {}
        }
    }

    /// `--wait`: frees the entries hidden by this run here, with their progress on the
    /// terminal.
    fn wait(&mut self) {
        let req = self.req;
        self.events.waiting(true);
        let engine = req.engine.clone();
        let events = self.events;
        let reaped = self
            .hider
            .wait(&engine, &req.reaper_args(), &|p| events.reaping(p));
        self.events.waiting(false);
        if reaped.interrupted || (crate::sys::interrupt::stopping() && reaped.remaining > 0) {
            self.left.push(Left::InTrash(reaped.remaining));
        }
        self.counters
            .files
            .fetch_add(reaped.files, Ordering::Relaxed);
        self.counters.dirs.fetch_add(reaped.dirs, Ordering::Relaxed);
        self.counters
            .bytes
            .fetch_add(reaped.bytes_freed, Ordering::Relaxed);
        self.gentle.extend(reaped.gentle);
        for e in reaped.errors {
            self.fail(e.path.exact(), Reason::Freeing(e.error));
        }
        self.wait_cleaners();
    }

    /// `--wait` on btrfs: subvolumes deleted whole are freed by the file system's cleaner
    /// afterwards; wait for what it has queued now (root, kernel 6.8+; otherwise say so).
    fn wait_cleaners(&mut self) {
        if crate::sys::interrupt::stopping() {
            return;
        }
        let mut seen = HashSet::new();
        for (t, _) in &self.hider.used {
            if !crate::sys::btrfs::is_btrfs(&t.dir) || !seen.insert(t.ident.dev) {
                continue;
            }
            if let Err(e) = crate::sys::btrfs::wait_cleaner(&t.dir, None) {
                self.events.warning(&format_args!(
                    "not waiting for btrfs's cleaner on {} ({}): subvolumes deleted there may \
                     still be freed in the background",
                    quote(&t.mount),
                    crate::sys::error::errno_text(e)
                ));
            }
        }
    }

    /// The account: the summary, the failures and what a stop signal left.
    fn report(mut self, trees: Trees) -> Removal {
        let req = self.req;
        let selection = self.selection_report();
        // `--from`: the profile and workers of the listed names, where no tree phase had any.
        let (listed_profile, listed_workers) = self.selected.listed.take().unzip();
        // Counting bytes per file costs a stat each; otherwise ask the file systems what they
        // got back; it is never less than what reclaim knows exactly (directories' st_blocks,
        // from the statx it does anyway, and the single entries it resolved).
        let known = self.counters.bytes.load(Ordering::Relaxed);
        let bytes_freed = if req.engine.dry_run || req.engine.stat_files || !req.count_bytes {
            known
        } else {
            known.max(
                self.resolver
                    .space_before
                    .freed_since(&self.resolver.space_now()),
            )
        };
        let files = self.counters.files.load(Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64();
        let summary = Summary {
            files,
            dirs: self.counters.dirs.load(Ordering::Relaxed),
            bytes_freed,
            elapsed_s: secs,
            files_per_s: if secs > 0.0 { files as f64 / secs } else { 0.0 },
            errors: self
                .failures
                .iter()
                .map(|f| ErrorEntry::new(&f.path, f.reason.to_string()))
                .collect(),
            skipped_mounts: trees
                .skipped_mounts
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
            dry_run: req.engine.dry_run,
            gentle: std::mem::take(&mut self.gentle),
            pace: trees.pace,
            hidden: std::mem::take(&mut self.hidden),
            fallback: std::mem::take(&mut self.fallback),
            interrupted: crate::sys::interrupt::requested(),
            profile: trees.profile.or(listed_profile),
            concurrency: trees.concurrency.or(listed_workers.flatten()),
            ranks: trees.ranks,
            selection,
            subvolumes: trees.subvolumes.iter().map(SubvolumeEntry::of).collect(),
        };
        Removal {
            summary,
            failures: self.failures,
            left: self.left,
            not_started: self.not_started,
        }
    }

    fn fail(&mut self, path: PathBuf, reason: Reason) {
        let f = Failure { path, reason };
        self.events.failed(&f);
        self.failures.push(f);
    }
}

/// A directory by its device and inode.
type DirKey = (u64, u64);

/// For a path that is gone: the newest entry of this user's trashes recorded from it that a
/// reaper claimed and nobody holds (a removal interrupted by `kill -9`), finished here, paced
/// as it was asked. `None` if there is none.
fn resume_interrupted(
    req: &Request,
    path: &Path,
    events: &dyn Events,
) -> Option<Result<Gentle, Reason>> {
    if req.engine.dry_run {
        return None;
    }
    let wanted = crate::trash::restore::absolute(path)?;
    let me = crate::trash::uid();
    // Only the trashes of the file system the path was on (its nearest ancestor's that is
    // there): `rm -f` of a path that is not there costs a stat or two, not a look at every
    // mounted file system (an unanswering one took up to 1.5 s).
    let mnt_id = wanted
        .ancestors()
        .skip(1)
        .find_map(|a| crate::sys::dirfd::stat_path(a).ok())?
        .mnt_id;
    let found = crate::trash::discover_on(me, mnt_id).trashes;
    // Opened one at a time.
    let (t, id) = found.iter().filter_map(|f| f.open().ok()).find_map(|t| {
        let id = t.entries().into_iter().rev().find_map(|name| {
            let entry = crate::sys::dirfd::open_dir_at(&t.dir, &name).ok()?;
            let m = crate::trash::meta::Meta::read(&entry, t.uid).ok()??;
            let claimed = crate::sys::dirfd::lstat_at(&entry, crate::trash::REAPING).is_ok();
            let free = crate::sys::locks::try_exclusive(&entry).ok()?;
            (claimed && free && m.uid == me && !m.is_batch() && m.original_path() == wanted)
                .then(|| name.to_string_lossy().into_owned())
        })?;
        Some((t, id))
    })?;
    events.resuming(path, &id, &t.path);
    let started = Instant::now();
    let opts = crate::reaper::ReapOptions {
        until: crate::reaper::Until::Empty,
        locked: crate::reaper::Locked::Skip,
        pacing: None,
        engine: req.engine.clone(),
        only: Some(vec![id]),
        log: crate::sys::logging::Sink::quiet(),
        retry_failed: true,
        now: false,
        floor: req.floor,
        relieve: true,
        early: None,
    };
    let sum = crate::reaper::run(std::slice::from_ref(&t), &opts, &|p| events.reaping(p));
    if let Some(e) = sum.errors.first() {
        return Some(Err(Reason::Freeing(e.to_string())));
    }
    let mut outcome = sum
        .gentle
        .into_iter()
        .next()
        .map(|g| g.outcome)
        .unwrap_or_default();
    outcome.resumed = true;
    outcome.allocated = outcome.allocated.max(sum.bytes_freed);
    Some(Ok(Gentle {
        path: crate::sys::quote::PathField::new(path),
        elapsed_s: started.elapsed().as_secs_f64(),
        outcome,
    }))
}

/// A directory entry: its parent directory's identity and its name.
type EntryKey = (Option<crate::sys::dirfd::Ident>, std::ffi::CString);

/// What identifies a resolved argument's directory entry: its parent directory and name.
fn entry_key(t: &Target) -> EntryKey {
    let (base, name) = match t {
        Target::Tree(d) => (&d.base, &d.name),
        Target::Entry { base, name, .. } => (base, name),
    };
    (
        crate::sys::dirfd::fstat(&**base).ok().map(|f| f.ident),
        name.clone(),
    )
}

/// Remembers a directory to fsync at the end (once, however many entries left it).
fn touch(dirs: &mut Vec<Arc<OwnedFd>>, dir: &Arc<OwnedFd>) {
    if !dirs.iter().any(|d| Arc::ptr_eq(d, dir)) {
        dirs.push(dir.clone());
    }
}
