//! What `reclaim browse` does to the entries its view shows. Each entry is reached again from
//! the scanned directory's fd, one name at a time (`O_NOFOLLOW|O_DIRECTORY`), and every
//! directory on the way and the entry itself must still be the device and inode the scan
//! found: a directory swapped for a symlink or another directory since the scan stops the
//! action for that entry, nothing is followed. Then it goes as `reclaim rm -r --background
//! --grace` sends it (`background::Hider`: into its file system's trash, restorable for the
//! grace window, freed by a detached reaper), comes back (`undo`), is emptied (`empty`: its
//! entries hidden in batches, the directory stays), removed for good (`remove`: only what no
//! trash could take, and only when the user said so after being told why), or packed
//! (`engine::pack`). The tree is updated to match. Never prints.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustix::io::Errno;

use crate::engine::scan::tree::{self, Kind, Tree};
use crate::reaper::background::{Hide, Hider};
use crate::sys::dirfd::{self, Facts};
use crate::sys::error::errno_text;
use crate::trash::hide::{Hidden, HideOptions, Item};
use crate::trash::meta::EntryPacing;
use crate::trash::Trash;

/// Entries hidden per batch when a directory is emptied: the progress is told between them,
/// and a stop signal is heeded.
const EMPTY_CHUNK: usize = 10_000;

/// Why an entry was not acted on (for the user, with its path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreached {
    #[error("it is no longer what was scanned (replaced or moved since)")]
    Changed,
    #[error("it is another file system's mount point (unmount it first)")]
    Mount,
    #[error("it is reclaim's trash, or in it (what waits there is the reaper's: reclaim status, reclaim restore)")]
    Trash,
    #[error("{}", errno_text(*.0))]
    Os(Errno),
}

/// Why a hidden entry did not come back (`undo`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRestored {
    #[error("its trash is no longer there")]
    TrashGone,
    #[error(transparent)]
    Restore(#[from] crate::trash::restore::RestoreError),
    /// Its entry came back without this path.
    #[error("not restored")]
    Missing,
}

/// Why a directory was not packed (`pack`).
#[derive(Debug, thiserror::Error)]
pub enum NotPacked {
    #[error(transparent)]
    Unreached(#[from] Unreached),
    #[error(transparent)]
    Pack(#[from] crate::engine::pack::PackError),
}

/// Why a removal for good did not remove an entry whole (`remove`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRemoved {
    #[error("{}", errno_text(*.0))]
    Os(Errno),
    /// This many other file systems mounted inside stay (with what holds them).
    #[error("{0} other file system(s) mounted inside stay")]
    MountsInside(usize),
    /// The first failure of this many.
    #[error("{first} ({count} failure(s) in all)")]
    Failed {
        first: crate::sys::error::Failure,
        count: usize,
    },
}

/// What became of the entries of one action.
#[derive(Debug, Default)]
pub struct Report {
    /// Hidden into a trash, restorable by `undo` while the grace window lasts.
    pub hidden: Vec<(u32, Hidden)>,
    /// No trash can take them (why): removing them cannot be undone, so it is asked first.
    pub no_trash: Vec<(u32, String)>,
    /// Removed for good (`remove`).
    pub removed: Vec<u32>,
    /// Not done, and why (each entry is where it was).
    pub failed: Vec<(u32, String)>,
    /// A stop signal came first: these were not tried.
    pub not_tried: Vec<u32>,
}

impl Report {
    fn merge(&mut self, o: Report) {
        self.hidden.extend(o.hidden);
        self.no_trash.extend(o.no_trash);
        self.removed.extend(o.removed);
        self.failed.extend(o.failed);
        self.not_tried.extend(o.not_tried);
    }
}

/// A deletion that `undo` can take back.
#[derive(Debug, Clone)]
pub struct Deletion {
    pub hidden: Vec<(u32, Hidden)>,
}

impl Deletion {
    /// When its grace window ends (the earliest of its entries'), if it has one.
    pub fn until(&self) -> Option<f64> {
        self.hidden
            .iter()
            .filter_map(|(_, h)| h.restorable_until_unix)
            .reduce(f64::min)
    }
}

/// How far an action is (for the view's status line).
#[derive(Debug, Default)]
pub struct Progress {
    /// Entries done so far, of `total`.
    pub done: std::sync::atomic::AtomicU64,
    pub total: std::sync::atomic::AtomicU64,
    /// A removal for good: what the engine removed so far.
    pub removal: crate::engine::remove::Counters,
}

/// What waits in the trashes this view hid into, and the file system's free space.
#[derive(Debug, Clone, Default)]
pub struct Space {
    /// Free and total bytes of the scanned directory's file system (`statvfs`).
    pub free: u64,
    pub total: u64,
    /// Entries hid by this view and still in their trash, their allocated bytes as scanned,
    /// and how many of them are restorable now.
    pub pending_entries: u64,
    pub pending_bytes: u64,
    pub restorable: u64,
    /// The reaper working on one of those trashes: its state ("freeing", "waiting", ...) and
    /// rate (bytes per second), if one is alive.
    pub reaper: Option<(String, f64)>,
}

/// An entry this view hid: its trash, its ID, its bytes as scanned, restorable until.
type Pending = (Arc<Trash>, String, u64, Option<f64>);

/// Entries reached in one directory: the entry, its name, its facts now.
type Members = Vec<(u32, CString, Facts)>;

/// The actions on one scanned tree.
pub struct Actor {
    /// The scanned directory, as opened for the scan.
    root: Arc<OwnedFd>,
    tree: Arc<Tree>,
    hider: Mutex<Hider>,
    pace: EntryPacing,
    /// The free space deletions leave the others (no grace window under it; the reapers'
    /// floor).
    floor: crate::sys::space::Floor,
    /// Every entry hidden by this view (its size as scanned), for `space`.
    hidden: Mutex<Vec<Pending>>,
}

impl Actor {
    /// Actions on `tree`, whose root is the directory `root`; entries are hidden with a grace
    /// window of `grace` (none where the file system is under `floor`) and freed at `pace`.
    pub fn new(
        root: OwnedFd,
        tree: Arc<Tree>,
        grace: std::time::Duration,
        floor: crate::sys::space::Floor,
        pace: EntryPacing,
    ) -> Actor {
        let opts = HideOptions {
            grace: Some(grace),
            known: None,
            durable: false,
            pacing: pace.clone(),
        };
        Actor {
            root: Arc::new(root),
            tree,
            hider: Mutex::new(Hider::new(opts, floor)),
            pace,
            floor,
            hidden: Mutex::new(Vec::new()),
        }
    }

    fn hider(&self) -> std::sync::MutexGuard<'_, Hider> {
        self.hider.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens directory `node` again (checked to be the one scanned), for a rescan.
    pub fn open_dir(&self, node: u32) -> Result<(OwnedFd, Facts), Unreached> {
        if node == tree::ROOT {
            let fd = rustix::io::dup(&*self.root).map_err(Unreached::Os)?;
            let facts = dirfd::fstat(&fd).map_err(Unreached::Os)?;
            return Ok((fd, facts));
        }
        let (parent, name, facts) = self.reach(node)?;
        if facts.file_type != rustix::fs::FileType::Directory {
            return Err(Unreached::Changed);
        }
        let fd = dirfd::open_dir_at(&parent, &name).map_err(Unreached::Os)?;
        let now = dirfd::fstat(&fd).map_err(Unreached::Os)?;
        if now.ident != facts.ident {
            return Err(Unreached::Changed);
        }
        Ok((fd, now))
    }

    /// Reaches entry `node` again to change it (`reach`): never a mount point of another file
    /// system (a deletion there would empty that file system) nor a trash or anything in one.
    fn reach_to_change(&self, node: u32) -> Result<(OwnedFd, CString, Facts), Unreached> {
        let (fd, name, facts) = self.reach(node)?;
        if self
            .tree
            .chain(node)
            .iter()
            .any(|step| crate::trash::is_trash_name(&step.name))
        {
            return Err(Unreached::Trash);
        }
        if dirfd::fstat(&fd).map_err(Unreached::Os)?.mnt_id != facts.mnt_id {
            return Err(Unreached::Mount);
        }
        Ok((fd, name, facts))
    }

    /// Reaches entry `node` again: its directory's fd, its name and its facts now, every step
    /// checked against the scan.
    pub fn reach(&self, node: u32) -> Result<(OwnedFd, CString, Facts), Unreached> {
        let chain = self.tree.chain(node);
        let (top, rest) = chain.split_first().ok_or(Unreached::Changed)?;
        let (last, dirs) = rest.split_last().ok_or(Unreached::Changed)?;
        let root = dirfd::fstat(&*self.root).map_err(Unreached::Os)?;
        if root.ident.ino != top.ino || root.ident.dev != top.dev {
            return Err(Unreached::Changed);
        }
        let mut fd = rustix::io::dup(&*self.root).map_err(Unreached::Os)?;
        for step in dirs {
            let name = CString::new(step.name.clone()).map_err(|_| Unreached::Changed)?;
            let next = match dirfd::open_dir_at(&fd, &name) {
                Ok(f) => f,
                // A symlink or a file in its place: never followed.
                Err(Errno::LOOP | Errno::NOTDIR) => return Err(Unreached::Changed),
                Err(e) => return Err(Unreached::Os(e)),
            };
            let f = dirfd::fstat(&next).map_err(Unreached::Os)?;
            if f.ident.ino != step.ino || f.ident.dev != step.dev {
                return Err(Unreached::Changed);
            }
            fd = next;
        }
        let name = CString::new(last.name.clone()).map_err(|_| Unreached::Changed)?;
        let facts = dirfd::lstat_at(&fd, &name).map_err(Unreached::Os)?;
        if facts.ident.ino != last.ino || Kind::of(facts.file_type) != last.kind {
            return Err(Unreached::Changed);
        }
        if last.kind == Kind::Dir && facts.ident.dev != last.dev {
            return Err(Unreached::Changed);
        }
        Ok((fd, name, facts))
    }

    /// Hides `nodes` into their trashes (`d`): those of one directory as one batch entry,
    /// a single one as an entry of its own. The hidden leave the tree's view.
    pub fn delete(&self, nodes: &[u32], progress: &Progress) -> Report {
        progress
            .total
            .store(nodes.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let mut report = Report::default();
        // Reached, grouped by directory (device, inode), in the order given.
        let mut groups: Vec<((u64, u64), Arc<OwnedFd>, Members)> = Vec::new();
        for &n in nodes {
            if crate::sys::interrupt::stopping() {
                report.not_tried.push(n);
                continue;
            }
            match self.reach_to_change(n) {
                Ok((fd, name, facts)) => {
                    let key = dirfd::fstat(&fd).map_or((0, 0), |f| (f.ident.dev, f.ident.ino));
                    match groups.iter_mut().find(|g| g.0 == key) {
                        Some(g) => g.2.push((n, name, facts)),
                        None => groups.push((key, Arc::new(fd), vec![(n, name, facts)])),
                    }
                }
                Err(e) => report.failed.push((n, e.to_string())),
            }
        }
        for (_, fd, members) in groups {
            report.merge(self.hide_in(&fd, members, progress));
        }
        self.hand_over(&report);
        report
    }

    /// Hides the entries of directory `node` (`e`): they go, it stays.
    pub fn empty(&self, node: u32, progress: &Progress) -> Report {
        let mut report = Report::default();
        if node != tree::ROOT {
            if let Err(e) = self.reach_to_change(node) {
                report.failed.push((node, e.to_string()));
                return report;
            }
        }
        let fd = match self.open_dir(node) {
            Ok((fd, _)) => Arc::new(fd),
            Err(e) => {
                report.failed.push((node, e.to_string()));
                return report;
            }
        };
        let kids = self.tree.list(node, &tree::Query::default());
        progress
            .total
            .store(kids.len() as u64, std::sync::atomic::Ordering::Relaxed);
        for chunk in kids.chunks(EMPTY_CHUNK) {
            if crate::sys::interrupt::stopping() {
                report.not_tried.extend_from_slice(chunk);
                continue;
            }
            let mut members = Vec::new();
            for info in self.tree.infos(chunk) {
                let Ok(name) = CString::new(info.name.clone()) else {
                    report
                        .failed
                        .push((info.index, Unreached::Changed.to_string()));
                    continue;
                };
                match dirfd::lstat_at(&*fd, &name) {
                    Ok(f) if f.ident.ino == info.ino && Kind::of(f.file_type) == info.kind => {
                        members.push((info.index, name, f))
                    }
                    Ok(_) => report
                        .failed
                        .push((info.index, Unreached::Changed.to_string())),
                    Err(e) => report.failed.push((info.index, errno_text(e))),
                }
            }
            report.merge(self.hide_in(&fd, members, progress));
        }
        self.hand_over(&report);
        report
    }

    /// Hides `members` of the directory `fd`: one entry for one, a batch for more.
    fn hide_in(&self, fd: &Arc<OwnedFd>, members: Members, progress: &Progress) -> Report {
        let mut report = Report::default();
        let known = |n: u32| {
            let i = self.tree.info(n);
            (i.disk, i.items + 1)
        };
        let outcomes: Vec<(u32, Hide)> = if members.len() == 1 {
            let (n, name, _) = &members[0];
            let h = self.hider().hide(fd, name, Some(known(*n)));
            vec![(*n, h)]
        } else {
            let nodes: Vec<u32> = members.iter().map(|m| m.0).collect();
            let items = members
                .into_iter()
                .map(|(n, name, facts)| Item {
                    name,
                    facts,
                    known: Some(known(n)),
                })
                .collect();
            let out = self.hider().hide_batch(fd, items);
            nodes.into_iter().zip(out).collect()
        };
        for (n, o) in outcomes {
            progress
                .done
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match o {
                Hide::Hidden(h) => report.hidden.push((n, h)),
                Hide::Fallback(why) | Hide::Refused(why) => report.no_trash.push((n, why)),
                Hide::Failed(r) => report.failed.push((n, r.to_string())),
                Hide::NotTried => report.not_tried.push(n),
            }
        }
        let gone: Vec<u32> = report.hidden.iter().map(|h| h.0).collect();
        self.tree.hide(&gone);
        report
    }

    /// Remembers what was hidden and starts a reaper for each trash used that has none.
    fn hand_over(&self, report: &Report) {
        if report.hidden.is_empty() {
            return;
        }
        let hider = self.hider();
        let mut mine = self.hidden.lock().unwrap_or_else(|e| e.into_inner());
        for (n, h) in &report.hidden {
            if let Some((t, _)) = hider.used.iter().find(|(_, ids)| ids.contains(&h.id)) {
                let bytes = self.tree.info(*n).disk;
                mine.push((t.clone(), h.id.clone(), bytes, h.restorable_until_unix));
            }
        }
        let mut args = crate::reaper::spawn::pace_args(&self.pace);
        args.push(format!("--min-free={}", self.floor.arg()).into());
        hider.start_reapers(&args);
    }

    /// Puts back what `d` hid, while its grace window lasts: each entry by its trash ID (a
    /// batch: every path it holds). The entries back return to the tree's view.
    pub fn undo(&self, d: &Deletion) -> Vec<(u32, Result<(), NotRestored>)> {
        let me = crate::trash::uid();
        let mut out = Vec::new();
        let mut ids: Vec<&str> = d.hidden.iter().map(|(_, h)| h.id.as_str()).collect();
        ids.dedup();
        for id in ids {
            let members: Vec<&(u32, Hidden)> =
                d.hidden.iter().filter(|(_, h)| h.id == id).collect();
            let found = {
                let hider = self.hider();
                hider
                    .used
                    .iter()
                    .find(|(_, list)| list.iter().any(|i| i == id))
                    .and_then(|(t, _)| crate::trash::Found::of(t).ok())
            };
            let Some(found) = found else {
                for (n, _) in &members {
                    out.push((*n, Err(NotRestored::TrashGone)));
                }
                continue;
            };
            let results = crate::trash::restore::restore(
                std::slice::from_ref(&found),
                OsStr::new(id),
                me,
                None,
            );
            for (n, h) in members {
                let path = h.path.exact();
                let r = results.iter().find_map(|r| match r {
                    Ok(ok) if ok.path.exact() == path => Some(Ok(())),
                    Err((Some(p), _, e)) if *p == path => Some(Err(e.clone().into())),
                    _ => None,
                });
                // One failure for the whole entry (not found, being freed): each path's.
                let r = r.unwrap_or_else(|| match results.first() {
                    Some(Err((_, _, e))) => Err(e.clone().into()),
                    _ => Err(NotRestored::Missing),
                });
                if r.is_ok() {
                    self.tree.unhide(&[*n]);
                    self.forget_hidden(id);
                }
                out.push((*n, r));
            }
        }
        out
    }

    fn forget_hidden(&self, id: &str) {
        self.hidden
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|h| h.1 != id);
    }

    /// Removes `nodes` for good, here and now (what no trash could take, after the user said
    /// so): a directory with the removal engine, anything else with one unlink.
    pub fn remove(&self, nodes: &[u32], progress: &Progress) -> Report {
        let mut report = Report::default();
        for &n in nodes {
            if crate::sys::interrupt::stopping() {
                report.not_tried.push(n);
                continue;
            }
            let (fd, name, facts) = match self.reach_to_change(n) {
                Ok(r) => r,
                Err(e) => {
                    report.failed.push((n, e.to_string()));
                    continue;
                }
            };
            let display = self.tree.path(n);
            let done = if facts.file_type == rustix::fs::FileType::Directory {
                remove_tree(Arc::new(fd), name, display, facts, progress)
            } else {
                crate::sys::safeopen::unlink_at(&fd, &name).map_err(NotRemoved::Os)
            };
            match done {
                Ok(()) => {
                    self.tree.hide(&[n]);
                    report.removed.push(n);
                }
                Err(why) => report.failed.push((n, why.to_string())),
            }
        }
        report
    }

    /// Packs directory `node` with `reclaim pack`'s engine (`on` hears its progress); on
    /// success the directory leaves the view and its archive joins it.
    pub fn pack(
        &self,
        node: u32,
        on: &(dyn Fn(crate::engine::pack::Event) + Sync),
    ) -> Result<(crate::engine::pack::PackOutcome, PathBuf), NotPacked> {
        let (parent, name, facts) = self.reach_to_change(node)?;
        if facts.file_type != rustix::fs::FileType::Directory {
            return Err(Unreached::Changed.into());
        }
        // The pack names the directory through the fd reached and checked here, so nothing
        // can be swapped into the way between the check and the pack.
        let via = PathBuf::from(format!("/proc/self/fd/{}", parent.as_raw_fd()))
            .join(OsStr::from_bytes(name.as_bytes()));
        let opts = crate::engine::pack::PackOptions {
            dir: via,
            ..crate::engine::pack::PackOptions::default()
        };
        let out = crate::engine::pack::pack(&opts, on)?;
        let mut archive_name = name.as_bytes().to_vec();
        archive_name.extend_from_slice(b".sqfs");
        let shown = self
            .tree
            .path(node)
            .with_file_name(OsStr::from_bytes(&archive_name));
        if dirfd::lstat_at(&parent, &name).is_err() {
            self.tree.hide(&[node]);
        }
        let parent_node = self.tree.info(node).parent;
        if let Ok(cname) = CString::new(archive_name.clone()) {
            if let Ok(f) = dirfd::lstat_at(&parent, &cname) {
                let mut batch = tree::Batch::default();
                batch.push(&archive_name, &f, true, 0);
                self.tree.add(parent_node, &batch);
            }
        }
        Ok((out, shown))
    }

    /// Free space of the scanned file system, and what this view's deletions leave in the
    /// trashes (checked now: entries a reaper freed are gone).
    pub fn space(&self) -> Space {
        let mut s = Space::default();
        if let Ok(v) = rustix::fs::fstatvfs(&*self.root) {
            s.free = v.f_bavail.saturating_mul(v.f_frsize);
            s.total = v.f_blocks.saturating_mul(v.f_frsize);
        }
        let now = crate::sys::format::now_unix();
        let mut mine = self.hidden.lock().unwrap_or_else(|e| e.into_inner());
        mine.retain(|(t, id, _, _)| {
            CString::new(id.as_bytes()).is_ok_and(|c| dirfd::lstat_at(&t.dir, &c).is_ok())
        });
        let mut trashes: Vec<&Arc<Trash>> = Vec::new();
        for (t, _, bytes, until) in mine.iter() {
            s.pending_entries += 1;
            s.pending_bytes += bytes;
            if until.is_some_and(|u| u > now) {
                s.restorable += 1;
            }
            if !trashes.iter().any(|x| x.ident == t.ident) {
                trashes.push(t);
            }
        }
        s.reaper = trashes.iter().find_map(|t| {
            crate::reaper::state::read(&t.dir, t.uid)
                .filter(|r| r.alive())
                .map(|r| (r.state, r.rate_bps))
        });
        s
    }

    /// What this view hid and is still in a trash: (entry ID, restorable until), for the
    /// line said when the view closes.
    pub fn pending(&self) -> Vec<(String, Option<f64>)> {
        let _ = self.space();
        self.hidden
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, id, _, until)| (id.clone(), *until))
            .collect()
    }
}

/// Removes the directory `name` in `base` (checked to be `facts`) with the engine.
fn remove_tree(
    base: Arc<OwnedFd>,
    name: CString,
    display: PathBuf,
    facts: Facts,
    progress: &Progress,
) -> Result<(), NotRemoved> {
    let opts = crate::engine::remove::Settings {
        threads: crate::engine::remove::threads_for(&*base),
        ..crate::engine::remove::Settings::default()
    };
    let target = crate::engine::remove::DirTarget {
        base,
        name,
        display,
        ident: facts.ident,
    };
    let out = crate::engine::remove::remove_trees(
        vec![target],
        &opts,
        &progress.removal,
        &crate::engine::remove::Quiet,
    );
    match out.failures.first() {
        None if out.skipped_mounts.is_empty() => Ok(()),
        None => Err(NotRemoved::MountsInside(out.skipped_mounts.len())),
        Some(f) => Err(NotRemoved::Failed {
            first: f.clone(),
            count: out.failures.len(),
        }),
    }
}
