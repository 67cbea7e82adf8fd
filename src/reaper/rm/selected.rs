//! A removal's selection (issue 22; docs/ARCHITECTURE.md): what was asked (`Asked`: the tests and `--from`,
//! `--list`, `--keep-free`), the combinations refused, and the phases beside the argument
//! phase of `rm.rs`:
//! the `--from` list (grouped and unlinked here, its directories handed to the engine whole),
//! `--keep-free`'s first walk (the age histogram that fixes the cutoff) and the watch that
//! stops the removal at the target, and the selection's part of the account. The tests
//! themselves run in the engine's workers (`engine::select`, `engine::remove`); the command
//! checks and starts the selection (`cmd::rm`), `ui::select` shows its part of the summary.
//! Never prints: failures go to the run's `Events`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::io::Errno;

use super::Run;
use crate::engine::prune::policy::FreeTarget;
use crate::engine::remove::{self, Counters, DirTarget};
use crate::engine::select::list::List;
use crate::engine::select::tally::Tally;
use crate::engine::select::{from, keepfree, Selection, Spec, SpecError};
use crate::sys::error::Reason;
use crate::sys::quote::quote;

/// What `reclaim rm` was asked to select: the tests and what goes with them.
#[derive(Clone, Debug, Default)]
pub struct Asked {
    pub spec: Spec,
    /// `--from FILE` (`-`: stdin): the listed paths instead of PATH operands.
    pub from: Option<std::path::PathBuf>,
    /// `-0`: `--from` and `--list` records are NUL-separated.
    pub null: bool,
    /// `--list FILE` (`-`: stdout).
    pub list: Option<std::path::PathBuf>,
    /// `--keep-free`.
    pub keep_free: Option<FreeTarget>,
}

/// What else `reclaim rm` was asked, for `Asked::check`.
pub struct Context {
    pub recursive: bool,
    pub operands: usize,
    /// `--background` or `--wait`.
    pub hiding: bool,
    /// `-i`: one question per entry.
    pub prompt_each: bool,
    /// Under MPI.
    pub mpi: bool,
}

/// A selection asked together with what it cannot work with (a usage error, one line each).
#[derive(Debug, thiserror::Error)]
pub enum Unworkable {
    #[error("--background and --wait hide whole paths with one rename; a selection would need one rename per matching entry into the trash, which costs as much as removing it: run the selection without them")]
    Hiding,
    #[error("-i asks about each entry in GNU rm's order; it does not combine with a selection")]
    PromptEach,
    #[error("--from {} lists the paths to remove; give no PATH operands with it", quote(.0))]
    FromWithOperands(std::path::PathBuf),
    #[error("--from removes exactly the listed paths; choose them with find (or reclaim's tests on PATH operands), not both")]
    FromWithTests,
    #[error("--from is not shared by MPI ranks yet: run it as one process")]
    FromUnderMpi,
    #[error("the selection options choose what to remove inside directories: they need -r")]
    NotRecursive,
    #[error("--list and --keep-free are not shared by MPI ranks yet: run them as one process")]
    ListUnderMpi,
    #[error("--keep-free removes the oldest first; --newer-than would have it remove the newest")]
    KeepFreeNewer,
}

impl Asked {
    /// Combinations that cannot work.
    pub fn check(&self, c: &Context) -> Result<(), Unworkable> {
        let tests = self.spec.is_active();
        if c.hiding {
            return Err(Unworkable::Hiding);
        }
        if c.prompt_each {
            return Err(Unworkable::PromptEach);
        }
        if let Some(from) = &self.from {
            if c.operands > 0 {
                return Err(Unworkable::FromWithOperands(from.clone()));
            }
            if tests || self.keep_free.is_some() {
                return Err(Unworkable::FromWithTests);
            }
            if c.mpi {
                return Err(Unworkable::FromUnderMpi);
            }
            return Ok(());
        }
        if !c.recursive {
            return Err(Unworkable::NotRecursive);
        }
        if c.mpi && (self.list.is_some() || self.keep_free.is_some()) {
            return Err(Unworkable::ListUnderMpi);
        }
        if self.keep_free.is_some() && self.spec.newer_than.is_some() {
            return Err(Unworkable::KeepFreeNewer);
        }
        Ok(())
    }

    /// The selection to run: compiled, with its report and audit list set up. `report`: keep
    /// totals per directory and owner (a dry run, JSON). `list`: where `--list` writes (the
    /// command opened it).
    pub fn start(
        &self,
        dry_run: bool,
        report: bool,
        list: Option<(
            Box<dyn std::io::Write + Send>,
            Option<crate::sys::dirfd::Ident>,
        )>,
    ) -> Result<Selection, SpecError> {
        let mut sel = Selection::new(&self.spec, std::time::SystemTime::now())?;
        sel.counting = dry_run || report;
        if sel.counting {
            sel.tally = Some(Tally::default());
        }
        sel.roots_too = self.from.is_some();
        if let Some((w, own)) = list {
            sel.list = Some(List::new(w, self.null));
            sel.own_list = own;
        }
        Ok(sel)
    }
}

/// What the selection's phases leave for the report.
#[derive(Default)]
pub(super) struct State {
    duplicates: Option<u64>,
    keep_free: Option<keepfree::KeepFreeOutcome>,
    /// `--keep-free`'s watch on the free space, while the removal runs.
    watch: Option<(Arc<AtomicBool>, std::thread::JoinHandle<bool>)>,
    /// `--from`: the profile the listed names were unlinked by, and their workers.
    pub(super) listed: Option<(
        crate::engine::profile::Profile,
        Option<crate::engine::pace::concurrency::Report>,
    )>,
}

impl Run<'_> {
    /// `--from LIST`: reads the list, opens each parent once (never through a symlink),
    /// unlinks the listed non-directories and returns the listed directories (removed whole by
    /// the engine, with `-r`).
    pub(super) fn remove_listed(&mut self, list: &Path) -> Vec<DirTarget> {
        let req = self.req;
        let Some(sel) = req.engine.select.clone() else {
            return Vec::new();
        };
        let null = req.select.as_ref().is_some_and(|s| s.null);
        let records = if list.as_os_str() == "-" {
            from::read_list(std::io::stdin().lock(), null)
        } else {
            // A file or a pipe is a list (`--from <(find ...)`: a link in /dev/fd, root's),
            // a device never is; never through another user's link, never their file where
            // others may change the directory (`safeopen::file::open_input`).
            use crate::sys::safeopen::file::{open_input, Bad};
            match open_input(list) {
                Ok((fd, _)) => from::read_list(std::fs::File::from(fd), null),
                Err(Bad::NotRegular("character device" | "block device")) => {
                    self.fail(list.to_path_buf(), Reason::ListIsDevice);
                    return Vec::new();
                }
                Err(Bad::Os(e)) => Err(e.into()),
                Err(Bad::Missing) => Err(Errno::NOENT.into()),
                Err(e) => {
                    let why = format!("the list of paths is not read: it {e}");
                    self.fail(list.to_path_buf(), Reason::Kept(why));
                    return Vec::new();
                }
            }
        };
        let records = match records {
            Ok(r) => r,
            Err(e) => {
                let errno = Errno::from_io_error(&e).unwrap_or(Errno::IO);
                self.fail(list.to_path_buf(), Reason::ListUnreadable(errno));
                return Vec::new();
            }
        };
        let groups = from::group(&records);
        self.selected.duplicates = Some(groups.duplicates);
        for f in groups.failures {
            self.fail(f.path, f.reason);
        }
        if !req.force {
            for m in groups.missing {
                self.fail(m, Reason::Os(Errno::NOENT));
            }
        }
        // The listed names' file system decides the workers, as a tree's does (`--iops`
        // caps the unlinks from the first).
        let start = req.start();
        let mut engine = start.small(&req.engine);
        let first = groups
            .groups
            .first()
            .and_then(|g| from::Dirs::new(1).get(&g.dir).ok());
        if let Some(dir) = first {
            let profile = crate::engine::profile::Profile::asked(req.profile, &*dir);
            engine = start.tuned(&profile, &engine);
            self.selected.listed = Some((profile, None));
        }
        let done = AtomicBool::new(false);
        let (counters, events) = (&self.counters, self.events);
        let removed = std::thread::scope(|s| {
            s.spawn(|| events.watch(counters, &done));
            let r = remove::listed::remove(
                &groups.groups,
                &engine,
                req.recursive,
                req.force,
                &sel,
                counters,
                events,
            );
            done.store(true, Ordering::Relaxed);
            r
        });
        if let Some((_, report)) = self.selected.listed.as_mut() {
            *report = engine
                .concurrency
                .as_ref()
                .filter(|_| !req.engine.dry_run)
                .map(|c| c.report());
        }
        // Each failure was said as it happened (the engine's Sink).
        self.failures.extend(removed.failures);
        if req.durable && !req.engine.dry_run {
            // Each directory fsynced once, one open at a time (no fd held per directory).
            let dirs = from::Dirs::new(1);
            for g in &groups.groups {
                let synced = dirs
                    .get(&g.dir)
                    .and_then(|d| crate::sys::safeopen::reopen_dir(&*d).map_err(Reason::Os))
                    .and_then(|d| rustix::fs::fsync(&d).map_err(Reason::Os));
                if let (Err(reason), Some(n)) = (synced, g.names.first()) {
                    let dir = n.shown.parent().unwrap_or(Path::new(".")).to_path_buf();
                    self.fail(dir, reason);
                }
            }
        }
        removed.trees
    }

    /// `--keep-free`: how much must be freed on the trees' file system (counting what its
    /// trashes still hold as free), and, from a first walk's age histogram of the matching
    /// files, the cutoff that frees it oldest first. Starts the watch that stops the removal
    /// once the target is reached. Returns the trees to remove (none if nothing is needed).
    pub(super) fn keep_free(&mut self, trees: Vec<DirTarget>) -> Vec<DirTarget> {
        let req = self.req;
        let (Some(target), Some(sel)) = (
            req.select.as_ref().and_then(|s| s.keep_free),
            req.engine.select.clone(),
        ) else {
            return trees;
        };
        let Some(first) = trees.first().cloned() else {
            return trees;
        };
        let dev = crate::sys::dirfd::fstat(&*first.base)
            .map(|f| f.ident.dev)
            .ok();
        let (trees, others): (Vec<_>, Vec<_>) = trees
            .into_iter()
            .partition(|t| crate::sys::dirfd::fstat(&*t.base).map(|f| f.ident.dev).ok() == dev);
        for t in others {
            self.fail(
                t.display,
                Reason::Job(
                    "--keep-free frees one file system at a time; this one is on another".into(),
                ),
            );
        }
        let Ok(vfs) = rustix::fs::fstatvfs(&*first.base) else {
            return trees;
        };
        let total = vfs.f_blocks * vfs.f_frsize;
        let free_before = vfs.f_bavail * vfs.f_frsize;
        let want = match target {
            FreeTarget::Bytes(b) => b,
            FreeTarget::Percent(p) => (total as f64 * p / 100.0).ceil() as u64,
            FreeTarget::More(b) => free_before.saturating_add(b),
        };
        let events = self.events;
        let pending = dev
            .map(|d| {
                crate::reaper::status::pending_by_dev(true, &[d], &mut |l| events.warning(&l))
                    .get(&d)
                    .copied()
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        let need = want.saturating_sub(free_before.saturating_add(pending));
        let mut outcome = keepfree::KeepFreeOutcome {
            target_free: want,
            free_before,
            pending,
            need,
            ..Default::default()
        };
        if need == 0 {
            self.selected.keep_free = Some(outcome);
            return Vec::new();
        }
        // The first walk: a dry run that only fills the histogram.
        let asked = req.select.as_ref().expect("--keep-free is a selection");
        let now = sel.now();
        let at = std::time::UNIX_EPOCH + Duration::new(now.0.max(0) as u64, now.1);
        let Ok(mut first_sel) = Selection::new(&asked.spec, at) else {
            return trees;
        };
        first_sel.counting = true;
        first_sel.histogram = Some(keepfree::Histogram::new(now));
        let first_sel = Arc::new(first_sel);
        let mut engine = req.engine.clone();
        engine.dry_run = true;
        engine.select = Some(first_sel.clone());
        let engine = req.start().tuned(
            &crate::engine::profile::Profile::detect(&*first.base),
            &engine,
        );
        // What it cannot read, the second walk meets and reports again: said once, there.
        remove::remove_trees(trees.clone(), &engine, &Counters::default(), &remove::Quiet);
        let h = first_sel.histogram.as_ref().expect("set above");
        outcome.candidates = h.files();
        outcome.candidate_bytes = h.total();
        outcome.cutoff = h.cutoff(need);
        if let Some(c) = &outcome.cutoff {
            sel.set_cutoff(c.at);
        }
        self.selected.keep_free = Some(outcome);
        if !req.engine.dry_run {
            self.selected.watch = Some(watch_free(first.base.clone(), want, pending, sel));
        }
        trees
    }

    /// Ends `--keep-free`'s watch; notes whether it stopped the removal at the target.
    pub(super) fn keep_free_done(&mut self) {
        if let Some((stop, watch)) = self.selected.watch.take() {
            stop.store(true, Ordering::Relaxed);
            let reached = watch.join().unwrap_or(false);
            if let Some(k) = &mut self.selected.keep_free {
                k.reached = reached;
            }
        }
    }

    /// The selection's part of the summary; a failed `--list` is a failure of the run.
    pub(super) fn selection_report(&mut self) -> Option<crate::engine::select::Report> {
        let sel = self.req.engine.select.clone()?;
        let asked = self.req.select.as_ref()?;
        if let Some(list) = &sel.list {
            if let Err(e) = list.finish() {
                let path = asked.list.clone().unwrap_or_default();
                self.fail(
                    path,
                    Reason::Os(Errno::from_io_error(&e).unwrap_or(Errno::IO)),
                );
            }
        }
        Some(crate::engine::select::Report {
            totals: sel.tally.as_ref().map(|t| t.report()),
            duplicates: self.selected.duplicates,
            list: asked
                .list
                .as_ref()
                .filter(|p| p.as_os_str() != "-")
                .map(|p| {
                    crate::sys::quote::PathField::new(OsStr::from_bytes(p.as_os_str().as_bytes()))
                }),
            keep_free: self.selected.keep_free.take(),
        })
    }
}

/// `--keep-free`'s watch: every 20 ms, whether the file system of `base` has `want` bytes free
/// (counting `pending` as free); then it stops the selection. Its flag ends it early; it
/// returns whether it stopped the selection.
fn watch_free(
    base: Arc<std::os::fd::OwnedFd>,
    want: u64,
    pending: u64,
    sel: Arc<Selection>,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<bool>) {
    let stop = Arc::new(AtomicBool::new(false));
    let done = stop.clone();
    let watch = std::thread::spawn(move || loop {
        if done.load(Ordering::Relaxed) {
            return false;
        }
        if let Ok(v) = rustix::fs::fstatvfs(&*base) {
            if (v.f_bavail * v.f_frsize).saturating_add(pending) >= want {
                sel.stop();
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    });
    (stop, watch)
}
