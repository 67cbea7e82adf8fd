//! A selection applied on the removal's walk (`rm -r --name`, `--older-than`, `prune`'s
//! plans): `select/` decides what goes; this places each entry, states it only if a test needs
//! it, unlinks what passes, keeps what does not (and every directory above it), and keeps the
//! audit list and the totals. It never searches reclaim's own trashes.

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rustix::fs::FileType;
use rustix::io::Errno;

use super::remover::{RNode, Remover, UnlinkResult};
use super::unlink::{unlink, Entry, Paced};
use crate::engine::walk::Names;
use crate::sys::error::Reason;

/// What a selection's tests say of one non-directory entry before its unlink.
enum Verdict {
    /// It stays (not chosen, excluded, a test failed, `--keep-free`'s first walk): so does
    /// its directory.
    Kept,
    /// Gone meanwhile, or its stat failed (said): nothing to do.
    Skip,
    /// A directory after all (by its stat): to enter.
    Enter,
    /// Its file system gave no time for the age tests (`--time btime`): it stays, counted.
    Untimed,
    /// It goes; its stat, if one was taken.
    Remove(Option<crate::engine::select::Stat>),
}

/// What a selection decided about a directory about to be removed.
#[derive(Clone, Copy)]
pub(super) struct DirSelected {
    /// Removed only because the run left it empty (`--prune-empty`).
    pub(super) pruned: bool,
    pub(super) stat: Option<crate::engine::select::Stat>,
}

/// The selection's side of the engine (`select/` decides; this applies it on the walk).
impl Remover<'_> {
    /// A directory of the walk, just opened as `fd`: its own facts as found (its tests read
    /// them after its entries went), whether a named one can be searched by creation time,
    /// and whether it is one of reclaim's trashes (never searched).
    pub(super) fn opened_selected(
        &self,
        sel: &crate::engine::select::Selection,
        node: &Arc<RNode>,
        fd: &OwnedFd,
    ) {
        if node.parent().is_some() && sel.needs_stat(crate::engine::select::Place::Chosen) {
            if let Ok(st) = sel.stat(fd, c"") {
                let _ = node.data.found.set(st);
            }
        }
        // By creation time on a file system that records none, nothing below a named
        // directory can be judged: it is not searched, and that is said once when it is
        // finished.
        if node.parent().is_none() && !sel.roots_too {
            let _ = node.data.unrecorded.set(!sel.records_time(fd));
        }
        // reclaim's own trashes: what waits there (restorable within its grace window)
        // and the reaper's records are the reaper's to free, never a selection's. Said,
        // so that a purge's report shows what it did not search.
        if node.parent().is_some() && crate::trash::is_trash_name(node.name().to_bytes()) {
            let trash = rustix::fs::fstat(fd).is_ok_and(|st| {
                crate::trash::is_trash_dir(node.name().to_bytes(), st.st_uid, st.st_mode)
            });
            if trash && node.data.trash.set(true).is_ok() {
                self.sink.warning(&format_args!(
                    "not searched: {}: reclaim's trash (what waits there is the reaper's to free; reclaim status lists it)",
                    crate::sys::quote::quote(node.path())
                ));
            }
        }
    }

    /// What the selection needs to know about the directory `node` to place its entries.
    pub(super) fn here(
        &self,
        sel: &crate::engine::select::Selection,
        node: &Arc<RNode>,
    ) -> crate::engine::select::Here {
        crate::engine::select::Here {
            depth: node.depth + 1,
            carried: self.carried(sel, node),
            rel: sel.needs_path().then(|| rel_path(node)),
        }
    }

    /// Whether the entries of `node` are carried (it is chosen, or inside a chosen directory),
    /// remembered per directory; directories above that are not known yet (work handed over
    /// by another rank) are worked out top-down, without recursion.
    fn carried(&self, sel: &crate::engine::select::Selection, node: &Arc<RNode>) -> bool {
        if let Some(c) = node.data.carried.get() {
            return *c;
        }
        let mut chain = vec![node.clone()];
        while let Some(p) = chain.last().and_then(|n| n.parent()) {
            if p.data.carried.get().is_some() {
                break;
            }
            chain.push(p.clone());
        }
        while let Some(n) = chain.pop() {
            let c = match n.parent() {
                // `--from`'s listed directories go whole.
                None => sel.roots_too,
                Some(p) => {
                    let here = crate::engine::select::Here {
                        depth: p.depth + 1,
                        carried: *p.data.carried.get().unwrap_or(&false),
                        rel: sel.needs_path().then(|| rel_path(p)),
                    };
                    sel.carries(&here, n.name().to_bytes())
                }
            };
            let _ = n.data.carried.set(c);
        }
        *node.data.carried.get().expect("set above")
    }

    /// The non-directory entries of `node` under a selection: each is placed (name, path,
    /// depth, `d_type`), stated only if its tests need it, and unlinked (in a dry run,
    /// counted) if they pass. Returns the names that turned out to be directories to enter.
    pub(super) fn entries_selected(
        &self,
        sel: &crate::engine::select::Selection,
        node: &Arc<RNode>,
        fd: &OwnedFd,
        names: Names<'_>,
        few: bool,
    ) -> Vec<CString> {
        if !node.data.searched() {
            node.keep();
            return Vec::new();
        }
        let here = self.here(sel, node);
        let gentle =
            few && !self.opts().dry_run && self.opts().stat_small_dirs && self.stats_are_free(fd);
        let mut dirs = Vec::new();
        let mut kept = false;
        let mut changed = false;
        let mut records = Vec::new();
        let mut tally = crate::engine::select::tally::Batch::default();
        let dir_path = (sel.list.is_some() || self.sink.wants_removed()).then(|| node.path());
        let top = sel.tally.as_ref().map(|_| top_of(node, None));
        let dev = sel.own_list.and(node.ident()).map(|i| i.dev);
        for (name, dtype, ino) in names.iter_full() {
            if sel.stopped() {
                kept = true;
                break;
            }
            // `--list`'s own file, if it is here: the audit trail stays, whatever matches.
            if sel.is_own_list(dev, ino) {
                kept = true;
                continue;
            }
            let st = match self.verdict(sel, &here, node, fd, name, dtype) {
                Verdict::Kept => {
                    kept = true;
                    continue;
                }
                Verdict::Skip => continue,
                Verdict::Untimed => {
                    kept = true;
                    node.data.untimed.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Verdict::Enter => {
                    dirs.push(name.to_owned());
                    continue;
                }
                Verdict::Remove(st) => st,
            };
            // The large-file path says `removed` itself. A file the selection's stat already
            // showed small is not stated again for it.
            let small = st.as_ref().is_some_and(|s| s.small());
            let (result, said) = match (&self.opts().large_files, gentle && !small) {
                (Some(large), true) => (self.remove_maybe_large(large, fd, name, node), true),
                _ => (self.unlink_selected(fd, name, st.as_ref()), false),
            };
            match result {
                UnlinkResult::Done => {
                    changed = true;
                    if let Some(p) = &dir_path {
                        let path = p.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
                        if let Some(list) = &sel.list {
                            list.record(&mut records, &path);
                        }
                        if self.sink.wants_removed() && !said {
                            self.sink.removed(&path, false);
                        }
                    }
                    if let (Some(top), Some(st)) = (&top, &st) {
                        let bytes = if st.nlink <= 1 { st.allocated } else { 0 };
                        tally.count(top, st.uid, false, bytes);
                    }
                }
                // Gone meanwhile: nothing to do, nothing to count.
                UnlinkResult::Failed(Errno::NOENT) => {}
                UnlinkResult::IsDir => match sel.descend(&here, name.to_bytes()) {
                    Some(_) => dirs.push(name.to_owned()),
                    None => kept = true,
                },
                UnlinkResult::Failed(e) => {
                    self.fail(node.child_path(name), Reason::Os(e), Some(node))
                }
                UnlinkResult::Refused(reason) => {
                    self.fail(node.child_path(name), reason, Some(node))
                }
            }
        }
        if kept {
            node.keep();
        }
        if changed {
            node.data.changed.store(true, Ordering::Relaxed);
        }
        if let Some(list) = &sel.list {
            list.write(&records);
        }
        if let Some(t) = &sel.tally {
            t.add(tally);
        }
        dirs
    }

    /// What the selection's tests say of the non-directory entry `name` of `node` (as
    /// `d_type` says; `here`: where `node`'s entries are), before its unlink: placed, stated
    /// only if a test needs it, tested. A stat that fails is said here.
    fn verdict(
        &self,
        sel: &crate::engine::select::Selection,
        here: &crate::engine::select::Here,
        node: &Arc<RNode>,
        fd: &OwnedFd,
        name: &CStr,
        dtype: FileType,
    ) -> Verdict {
        use crate::engine::select::Place;
        let place = sel.place(here, name.to_bytes(), dtype);
        if !place.candidate() {
            return Verdict::Kept;
        }
        if !sel.needs_stat(place) {
            return Verdict::Remove(None);
        }
        // A stat is one of the selection's round trips (cold, the inode's read): the
        // concurrency rule counts it with the unlinks (two thirds of an age purge's entries
        // are only stated).
        let t0 = std::time::Instant::now();
        let stated = sel.stat(fd, name);
        self.timed(t0);
        let st = match stated {
            Ok(st) => st,
            Err(Errno::NOENT) => return Verdict::Skip,
            Err(e) => {
                self.fail(node.child_path(name), Reason::Os(e), Some(node));
                return Verdict::Skip;
            }
        };
        if st.kind == FileType::Directory {
            return match sel.descend(here, name.to_bytes()) {
                Some(_) => Verdict::Enter,
                None => Verdict::Kept,
            };
        }
        if sel.untimed(&st) {
            return Verdict::Untimed;
        }
        if !sel.attributes(&st, place == Place::Carried) {
            return Verdict::Kept;
        }
        if let (Some(h), Some(t)) = (&sel.histogram, st.time) {
            // `--keep-free`'s first walk: what it would free, by age; nothing goes.
            if st.nlink <= 1 {
                h.add(t, st.allocated);
            }
            return Verdict::Kept;
        }
        Verdict::Remove(Some(st))
    }

    /// A selection by creation time: says (as a failure of `node`) that its file system
    /// records none, or how many of its entries stayed for want of one.
    pub(super) fn say_untimed(&self, node: &Arc<RNode>) {
        let kept = if node.data.unrecorded.get() == Some(&true) {
            0
        } else {
            match node.data.untimed.load(Ordering::Relaxed) {
                0 => return,
                n => n,
            }
        };
        self.fail(node.path(), Reason::NoBirthTime(kept), None);
    }

    /// Unlinks one selected non-directory (a dry run only counts it); `st`: its stat, if the
    /// selection took one (the bytes it frees are counted from it).
    fn unlink_selected(
        &self,
        dir: &OwnedFd,
        name: &CStr,
        st: Option<&crate::engine::select::Stat>,
    ) -> UnlinkResult {
        if !self.opts().dry_run {
            match unlink(dir, name, Entry::NonDir, Paced::by(self.opts())) {
                Ok(()) => {}
                Err(Errno::NOENT) => return UnlinkResult::Failed(Errno::NOENT),
                Err(Errno::ISDIR) => return UnlinkResult::IsDir,
                Err(e) => return UnlinkResult::Failed(e),
            }
        }
        self.counters.files.fetch_add(1, Ordering::Relaxed);
        if let Some(st) = st.filter(|s| s.nlink <= 1) {
            self.counters
                .bytes
                .fetch_add(st.allocated, Ordering::Relaxed);
        }
        UnlinkResult::Done
    }

    /// Whether the finished directory `node` (not a root) goes, by the selection: chosen and
    /// passing its tests right before its rmdir (read through `parent`), or emptied by this run
    /// with `--prune-empty`. `None`: it stays (and so does its parent).
    pub(super) fn dir_selected(
        &self,
        sel: &crate::engine::select::Selection,
        node: &Arc<RNode>,
        parent: &OwnedFd,
    ) -> Option<DirSelected> {
        let Some(parent_node) = node.parent() else {
            // A root goes only as a listed directory of `--from` (whole).
            let stat = sel
                .counting
                .then(|| sel.stat(parent, node.name()).ok())
                .flatten();
            return (sel.roots_too && !sel.stopped()).then_some(DirSelected {
                pruned: false,
                stat,
            });
        };
        let changed = node.data.changed.load(Ordering::Relaxed);
        let stay = || {
            parent_node.keep();
            None
        };
        if sel.stopped() || sel.histogram.is_some() {
            return stay();
        }
        let here = self.here(sel, parent_node);
        let chosen = sel.dir_chosen(&here, node.name().to_bytes());
        let prune = sel.prune_empty && changed;
        if !chosen && !prune {
            return stay();
        }
        // Its own tests read it as the walk found it, before its entries went (as find
        // -depth does): removing entries does not make it new.
        let stat = if sel.needs_stat(crate::engine::select::Place::Chosen) {
            match node.data.found.get() {
                Some(st) => Some(*st),
                None => match sel.stat(parent, node.name()) {
                    Ok(st) => Some(st),
                    Err(_) => return stay(),
                },
            }
        } else {
            None
        };
        let passes = stat
            .is_none_or(|st| st.kind == FileType::Directory && sel.attributes(&st, here.carried));
        if chosen && passes {
            Some(DirSelected {
                pruned: false,
                stat,
            })
        } else if prune {
            Some(DirSelected { pruned: true, stat })
        } else {
            stay()
        }
    }

    /// Bookkeeping after a selected directory was removed: its parent changed, the audit list
    /// and the totals have it.
    pub(super) fn dir_removed(&self, node: &Arc<RNode>, s: &DirSelected) {
        let Some(sel) = &self.opts().select else {
            return;
        };
        if let Some(p) = node.parent() {
            p.data.changed.store(true, Ordering::Relaxed);
        }
        if let Some(list) = &sel.list {
            let mut rec = Vec::new();
            list.record(&mut rec, &node.path());
            list.write(&rec);
        }
        if let (Some(t), Some(st)) = (&sel.tally, &s.stat) {
            let mut b = crate::engine::select::tally::Batch::default();
            let top = match node.parent() {
                Some(p) => top_of(p, Some(node.name())),
                None => node.root.display.clone(),
            };
            b.count(
                &top,
                st.uid,
                true,
                node.data.allocated.load(Ordering::Relaxed),
            );
            t.add(b);
        }
    }
}

/// The path of `node` relative to its root ("" for the root), as bytes.
fn rel_path(node: &RNode) -> Vec<u8> {
    let mut names: Vec<&CStr> = Vec::new();
    let mut n = node;
    while let Some(p) = n.parent() {
        names.push(n.name());
        n = p;
    }
    let mut out = Vec::new();
    for (i, name) in names.iter().rev().enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(name.to_bytes());
    }
    out
}

/// The top-level directory (below its argument) an entry of `node` counts in: the argument's
/// child on the way to it, or, for a non-directory directly in the argument, the argument
/// itself; `dir`: the entry is the directory of that name.
fn top_of(node: &RNode, dir: Option<&CStr>) -> PathBuf {
    let mut n = node;
    let mut first: Option<&CStr> = dir;
    while let Some(p) = n.parent() {
        first = Some(n.name());
        n = p;
    }
    let mut path = node.root.display.clone();
    if let Some(f) = first {
        path.push(std::ffi::OsStr::from_bytes(f.to_bytes()));
    }
    path
}
