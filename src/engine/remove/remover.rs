//! The removal's work on the shared walk (`Visitor`): every non-directory is `unlinkat`ed on
//! its parent's fd (large regular files in small directories go to the shrinker; names of a
//! large directory on a network file system are looked up ahead), a directory that cannot be
//! opened is removed as what it is, and a directory is removed by the worker that finishes its
//! last child. A selection's decisions are in `selected.rs`. It never follows a symlink and
//! never builds a path for a syscall.

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::FileType;
use rustix::io::Errno;

use super::unlink::{unlink, Entry, Paced};
use super::{
    ahead, Counters, Kept, Outcome, Settings, Sink, Subvolume, LARGE_FILE_DIR_MAX, RELISTS,
};
use crate::engine::shrink::Found;
use crate::engine::walk::{Lost, Names, Next, Node, NotOpened, Visitor, Walk};
use crate::sys::dirfd;
use crate::sys::error::{Failure, Reason};

/// Fewest threads looking names up ahead of one batch's unlinks (`Settings::look_ahead`;
/// more as the measured concurrency allows, up to `LOOKERS_MAX`).
const LOOKERS_MIN: usize = 2;
/// Most threads looking names up ahead of one batch's unlinks.
const LOOKERS_MAX: usize = 16;

/// The removal's work on the walk.
pub(super) struct Remover<'a> {
    /// The options it started with ...
    pub(super) first: Settings,
    /// ... and those of its big phase, once it proved big (`start.rs`).
    pub(super) big: std::sync::OnceLock<Settings>,
    /// Whether small directories' entries may be stated for free (`stats_are_free`).
    stats_free: std::sync::OnceLock<bool>,
    pub(super) counters: &'a Counters,
    pub(super) sink: &'a dyn Sink,
    pub(super) outcome: Mutex<Outcome>,
}

/// Per directory: its allocated bytes (from the `statx` done when it was opened).
#[derive(Default)]
pub(super) struct DirData {
    pub(super) allocated: AtomicU64,
    /// A selection: whether its entries are carried (it is chosen, or inside a chosen one).
    pub(super) carried: std::sync::OnceLock<bool>,
    /// A selection removed (or, in a dry run, would remove) something from it.
    pub(super) changed: std::sync::atomic::AtomicBool,
    /// A selection: its own facts as the walk found it, before any entry went.
    pub(super) found: std::sync::OnceLock<crate::engine::select::Stat>,
    /// A selection by creation time: a named directory whose file system records none
    /// (nothing in it is searched).
    pub(super) unrecorded: std::sync::OnceLock<bool>,
    /// A selection by creation time: its entries that had none to judge (they stay).
    pub(super) untimed: AtomicU64,
    /// A selection: one of reclaim's trashes, never searched.
    pub(super) trash: std::sync::OnceLock<bool>,
}

pub(super) type RNode = Node<DirData>;

impl Entry {
    /// How the emptied directory `node` is removed: a root by the name its caller gave (GNU
    /// mode's operand as typed, relative to the current directory), any other by its one name
    /// in its directory.
    fn dir_of(node: &RNode) -> Entry {
        if node.parent().is_none() {
            Entry::Operand { dir: true }
        } else {
            Entry::EmptyDir
        }
    }
}

impl DirData {
    /// Whether a selection searches it: not a named directory whose file system records no
    /// creation times (`--time btime`), not one of reclaim's trashes.
    pub(super) fn searched(&self) -> bool {
        self.unrecorded.get() != Some(&true) && self.trash.get() != Some(&true)
    }
}

impl<'a> Remover<'a> {
    pub(super) fn new(opts: &Settings, counters: &'a Counters, sink: &'a dyn Sink) -> Self {
        Remover {
            first: opts.clone(),
            big: std::sync::OnceLock::new(),
            stats_free: std::sync::OnceLock::new(),
            counters,
            sink,
            outcome: Mutex::new(Outcome::default()),
        }
    }

    /// The options in force: the big phase's once there is one.
    pub(super) fn opts(&self) -> &Settings {
        self.big.get().unwrap_or(&self.first)
    }

    /// Whether stating a small directory's entries costs nothing its unlinks do not pay
    /// anyway, found at the first one (`dir`) and kept: on a local file system always; on a
    /// network or FUSE one only where the client keeps the names it looked up (else each
    /// stat is a lookup more: the unlink asks again). Before the removal proves big there is
    /// no profile, so this is asked here, with two lookups at most.
    pub(super) fn stats_are_free(&self, dir: &OwnedFd) -> bool {
        *self.stats_free.get_or_init(|| {
            let remote = rustix::fs::fstatfs(dir)
                .is_ok_and(|s| crate::engine::profile::remote_magic(s.f_type as u64));
            !remote || crate::engine::pace::concurrency::names_kept(dir)
        })
    }

    /// One metadata operation that started at `t0` is done (for the concurrency controller).
    pub(super) fn timed(&self, t0: std::time::Instant) {
        if let Some(c) = &self.opts().concurrency {
            c.meter().record(t0.elapsed());
        }
    }

    pub(super) fn fail(&self, path: PathBuf, reason: Reason, keep: Option<&RNode>) {
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
    pub(super) fn remove_maybe_large(
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
        let facts = if self.opts().stat_files || self.opts().dry_run {
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
        if let (Some(keep), false) = (&self.opts().keep, self.opts().dry_run) {
            if let Some(t) = &self.opts().throttle {
                t.acquire();
            }
            let path = path();
            match keep.unlink(dir, name, &path) {
                Kept::Gone => {}
                Kept::IsDir => return UnlinkResult::IsDir,
                Kept::Stays(reason) => return UnlinkResult::Refused(reason),
            }
            self.counters.files.fetch_add(1, Ordering::Relaxed);
            if self.sink.wants_removed() {
                self.sink.removed(&path, false);
            }
            return UnlinkResult::Done;
        }
        if !self.opts().dry_run {
            match unlink(dir, name, Entry::NonDir, Paced::by(self.opts())) {
                Ok(()) => {}
                Err(Errno::NOENT) if !self.opts().report_vanished => return UnlinkResult::Done,
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
        if self.opts().select.is_some() && matches!(why, NotOpened::NotDir | NotOpened::Os(_)) {
            // A selection decides on what it met: a directory replaced since is left alone.
            let reason = match why {
                NotOpened::Os(e) => Reason::Os(e),
                _ => Reason::Changed,
            };
            self.fail(node.path(), reason, parent_node);
            return Next::Keep;
        }
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
            NotOpened::Os(e @ (Errno::ACCESS | Errno::PERM))
                if !self.opts().dry_run && self.opts().keep.is_none() =>
            {
                match unlink(parent, node.name(), Entry::dir_of(node), Paced::NONE) {
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

    fn opened_fd(&self, _: &mut (), node: &Arc<RNode>, fd: &OwnedFd) {
        if let Some(sel) = &self.opts().select {
            self.opened_selected(sel, node, fd);
        }
    }

    fn skip_subdir(&self, _: &mut (), node: &Arc<RNode>, name: &CStr) -> bool {
        let Some(sel) = &self.opts().select else {
            return false;
        };
        if !node.data.searched() {
            node.keep();
            return true;
        }
        let skip = sel
            .descend(&self.here(sel, node), name.to_bytes())
            .is_none();
        if skip {
            // Left out: it stays, and so does the directory holding it.
            node.keep();
        }
        skip
    }

    fn subvolume(
        &self,
        _: &mut (),
        parent: &OwnedFd,
        node: &Arc<RNode>,
        fd: &OwnedFd,
        facts: &dirfd::Facts,
    ) -> bool {
        // A selection or a pack's proof removes only some entries below: never a whole
        // subvolume.
        if !self.opts().destroy_subvolumes
            || self.opts().dry_run
            || self.opts().select.is_some()
            || self.opts().keep.is_some()
            || !crate::sys::btrfs::is_subvolume_root(fd, facts.ident.ino)
        {
            return false;
        }
        let path = node.path();
        // Its record keeps why not as text: it travels to rank 0 under MPI.
        let deleted =
            crate::engine::subvolume::delete(parent, node.name(), fd).map_err(|e| e.to_string());
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
        if let Some(sel) = &self.opts().select {
            return self.entries_selected(sel, node, fd, names, few);
        }
        // Directories with few entries have each one `lstat`ed, so that large files in them
        // (a backup directory with a few big dumps) are freed gently.
        let few = few
            && names.len() <= LARGE_FILE_DIR_MAX
            && !self.opts().dry_run
            && self.opts().stat_small_dirs
            && self.stats_are_free(fd);
        if self.opts().look_ahead
            && !few
            && !self.opts().dry_run
            && names.len() > LARGE_FILE_DIR_MAX
        {
            return self.entries_looked_ahead(node, fd, names);
        }
        let mut dirs = Vec::new();
        for name in names.iter() {
            let result = match (&self.opts().large_files, few) {
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
        if self.opts().select.is_some() {
            self.say_untimed(node);
        }
        if node.kept() {
            return;
        }
        // A selection searches the named directories: they stay (`--from`'s go whole).
        if self.opts().select.as_ref().is_some_and(|s| !s.roots_too) && node.parent().is_none() {
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
        let selected = match &self.opts().select {
            Some(sel) => match self.dir_selected(sel, node, &parent) {
                Some(s) => Some(s),
                None => return,
            },
            None => None,
        };
        if let Some(keep) = &self.opts().keep {
            match keep.rmdir(node.ident(), &node.path()) {
                Ok(true) => {}
                Ok(false) => {
                    node.parent().inspect(|p| p.keep());
                    return;
                }
                Err(reason) => return self.fail(node.path(), reason, node.parent().map(|p| &**p)),
            }
        }
        if !self.opts().dry_run {
            let removed = unlink(
                &*parent,
                node.name(),
                Entry::dir_of(node),
                Paced::measured(self.opts()),
            );
            match removed {
                Ok(()) => {}
                Err(Errno::NOENT) if !self.opts().report_vanished => return,
                // Pruned only if still empty: someone added to it.
                Err(Errno::NOTEMPTY | Errno::EXIST) if selected.is_some_and(|s| s.pruned) => {
                    return node.parent().expect("not a root").keep();
                }
                // Not empty after all its entries were done: a listing that shifted under the
                // removals skipped some (some NFS servers' cookies), or some were added. It is
                // listed again, a few times at most, then reported.
                Err(Errno::NOTEMPTY | Errno::EXIST) if walk.relist(node, RELISTS) => return,
                Err(e) => {
                    return self.fail(node.path(), Reason::Os(e), node.parent().map(|p| &**p))
                }
            }
        }
        if let Some(s) = &selected {
            self.dir_removed(node, s);
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
    /// Unlinks `names` in order while threads look the names up a chunk ahead of the unlinks
    /// (`ahead.rs`; never one already unlinked): each unlink then finds its name freshly
    /// looked up. The lookups only read; what happens to each name is decided by its unlink
    /// alone.
    fn entries_looked_ahead(&self, node: &RNode, fd: &OwnedFd, names: Names<'_>) -> Vec<CString> {
        let list: Vec<&CStr> = names.iter().collect();
        let lookers = self.lookers();
        let order = ahead::Ahead::new(list.len(), lookers);
        let mut dirs = Vec::new();
        std::thread::scope(|s| {
            for _ in 0..lookers {
                s.spawn(|| {
                    order.look(crate::sys::interrupt::stopping, |i| {
                        // The lookup the unlink needs, without asking fresh attributes.
                        let _ = dirfd::lstat_at_cached(fd, list[i]);
                    })
                });
            }
            for (i, name) in list.iter().enumerate() {
                order.before(i);
                let result = self.unlink_one(fd, name, || node.child_path(name));
                order.unlinked(i + 1);
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
            order.end();
        });
        dirs
    }

    /// Threads looking names up ahead of one batch's unlinks: the workers allowed now (the
    /// measured concurrency, under the governor) but the unlinker's own, within bounds.
    fn lookers(&self) -> usize {
        let allowed = self
            .opts()
            .active_gate()
            .map_or(self.opts().threads, |g| g.allowed());
        allowed.saturating_sub(1).clamp(LOOKERS_MIN, LOOKERS_MAX)
    }
}

pub(super) enum UnlinkResult {
    Done,
    IsDir,
    Failed(Errno),
    /// The large-file path failed (it says why).
    Refused(Reason),
}
