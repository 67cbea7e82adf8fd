//! The work `reclaim scan` does on the shared dirfd walk (`walk.rs`): one `statx` per
//! non-directory, and sums of what it meets (counts, histogram, top directories), leaving out
//! what `--exclude` names. It never follows a symlink, never leaves a PATH's mount unless told
//! to, never writes, and never builds a path for a syscall (paths are for messages and
//! `--exclude` globs only).

use std::collections::HashSet;
use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::FileType;
use rustix::io::Errno;

use super::export::{DirRecord, Export};
use super::histogram::Histogram;
use super::partial::{scan_shared, Link, Partial};
use super::tally::{Counts, TopFile, TopN};
use crate::engine::glob::exclude::Exclude;
use crate::engine::walk::{self, Lost, Names, Next, Node, NotOpened, Root, Visitor, Walk};
use crate::sys::dirfd::{self, Facts};

/// Entries of one directory handed to one worker for `statx`; bigger directories are split so
/// that other workers share the work (a million files in one directory).
const BATCH: usize = 1024;

/// Entries are `statx`ed in inode order from this many on: neighbouring inodes share
/// inode-table blocks, so a cold cache reads each block once, in ascending order.
const SORT_MIN: usize = 256;

/// How the walk works.
#[derive(Clone, Debug)]
pub struct ScanWalkOptions {
    pub threads: usize,
    pub cross_mounts: bool,
    /// Regular files below this many bytes (`st_size`) are small.
    pub small: u64,
    /// Length of each top list.
    pub top: usize,
    /// Entries left out (`--exclude`).
    pub exclude: Exclude,
    /// Directory fds held at most (a few more, one per worker, may be in use for a moment).
    pub fd_budget: usize,
    /// Which subtrees are pack candidates (`None`: none looked for).
    pub pack: Option<crate::engine::pack::candidates::Rule>,
    /// `reclaim browse`: the tree to fill as the walk goes (`None`: sums only).
    pub tree: Option<Feed>,
}

/// The tree a walk fills (`tree.rs`), and the entry there of each `Start`, in order.
#[derive(Clone, Debug)]
pub struct Feed {
    pub tree: Arc<super::tree::Tree>,
    pub roots: Vec<u32>,
}

/// One PATH to scan, opened and checked by the caller.
pub enum Start {
    /// A directory: its fd (opened with `O_NOFOLLOW|O_DIRECTORY`) and `statx`.
    Dir {
        display: PathBuf,
        fd: OwnedFd,
        stat: Facts,
    },
    /// Anything else: counted as the one entry it is.
    Entry { display: PathBuf, stat: Facts },
}

/// Running totals for a progress line.
#[derive(Debug, Default)]
pub struct Live {
    pub names: AtomicU64,
    pub dirs: AtomicU64,
    pub allocated: AtomicU64,
    pub errors: AtomicU64,
}

/// A path the walk could not read, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanError {
    pub path: PathBuf,
    /// What was being done: "cannot open directory", "cannot read directory", "cannot stat".
    pub doing: &'static str,
    pub reason: String,
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.doing,
            crate::sys::quote::quote(&self.path),
            self.reason
        )
    }
}

/// One directory of a top list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopDir {
    pub path: PathBuf,
    /// Regular files directly inside (names).
    pub files: u64,
    /// Of which smaller than `--small`.
    pub small_files: u64,
    /// Allocated bytes of the directory and everything below it that was counted (each inode
    /// once, as `du -x`).
    pub tree_allocated: u64,
    /// Regular files (names) at any depth below it.
    pub tree_files: u64,
}

/// Everything a walk found.
#[derive(Debug, Default)]
pub struct ScanWalkOutcome {
    /// Counts per `Start`, in the order given.
    pub per_root: Vec<Counts>,
    /// Regular files by apparent size, each inode once.
    pub histogram: Histogram,
    pub top_bytes: Vec<TopDir>,
    pub top_files: Vec<TopDir>,
    pub top_small: Vec<TopDir>,
    /// The largest regular files by allocated bytes, each inode once.
    pub largest: Vec<TopFile>,
    /// How many directories (or files) each list was chosen from: `top_bytes`, `top_files`,
    /// `top_small`, `largest` (those with a count).
    pub ranked: [u64; 4],
    pub errors: Vec<ScanError>,
    /// Mount points of other file systems (and bind mounts) that were not entered.
    pub skipped_mounts: Vec<PathBuf>,
    /// Under MPI, on rank 0: what each rank counted.
    pub ranks: Vec<crate::engine::spread::Rank>,
    /// Pack candidates (the largest subtrees first; none inside another). Under MPI: those
    /// of the directories this rank finished.
    pub pack_candidates: Vec<crate::engine::pack::candidates::Candidate>,
    /// How many there were before the list was cut at `top`.
    pub pack_candidates_total: usize,
}

/// Scans every start in parallel. `on_error` is called once per failure, as it happens;
/// `on_warning` for what a rank of an MPI job ignored.
pub fn scan(
    starts: Vec<Start>,
    opts: &ScanWalkOptions,
    live: &Live,
    on_error: &(dyn Fn(&ScanError) + Sync),
    on_warning: &(dyn Fn(&dyn std::fmt::Display) + Sync),
    job: Option<&dyn crate::engine::spread::Transport>,
    export: Option<&Export>,
) -> ScanWalkOutcome {
    // Under MPI, rank 0 counts the PATHs that are not directories and reports for all.
    let leads = job.is_none_or(|t| t.rank() == 0);
    let scanner = Scanner {
        opts: opts.clone(),
        live,
        on_error,
        seen: Mutex::new(HashSet::new()),
        errors: Mutex::new(Vec::new()),
        skipped: Mutex::new(Vec::new()),
        roots: starts.len(),
        shared: job.is_some(),
        root_devs: starts
            .iter()
            .map(|s| match s {
                Start::Dir { stat, .. } | Start::Entry { stat, .. } => stat.ident.dev,
            })
            .collect(),
        candidates: Mutex::new(Vec::new()),
        export,
    };
    let mut first = scanner.worker();
    let mut roots = Vec::new();
    for (index, start) in starts.into_iter().enumerate() {
        match start {
            Start::Dir { display, fd, stat } => {
                let ident = stat.ident;
                roots.push(Root::new(
                    index,
                    Arc::new(fd),
                    c".".to_owned(),
                    display,
                    ident,
                ));
            }
            Start::Entry { stat, .. } if leads => {
                scanner.count_entry(&mut first, index, &stat);
                live.names.fetch_add(1, Ordering::Relaxed);
            }
            Start::Entry { .. } => {}
        }
    }
    let walk_opts = walk::WalkOptions {
        threads: opts.threads.max(1),
        batch_threads: opts.threads.max(1),
        batch: BATCH,
        sort_min: SORT_MIN,
        // A scan removes nothing: each directory is listed whole.
        listing_most: usize::MAX,
        fd_budget: opts.fd_budget.max(2),
        cross_mounts: opts.cross_mounts,
        subvolumes: false,
        gate: None,
        noatime: false,
        stream: None,
        per_dir: None,
    };
    let Some(t) = job else {
        for w in walk::run(&scanner, roots, &walk_opts) {
            first.merge(w);
        }
        let (errors, skipped) = scanner.take_failures();
        let mut out = Partial::new(first, opts.top, errors, skipped).outcome(Vec::new());
        (out.pack_candidates, out.pack_candidates_total) = scanner.pack_candidates();
        return out;
    };
    let mut out = scan_shared(&scanner, first, roots, &walk_opts, t, leads, on_warning);
    (out.pack_candidates, out.pack_candidates_total) = scanner.pack_candidates();
    out
}

/// One worker's private sums.
pub struct Tally {
    pub(super) per_root: Vec<Counts>,
    /// Under MPI: inodes with several links this rank counted (another rank may have
    /// counted the same inode under another name).
    pub(super) links: Vec<Link>,
    pub(super) histogram: Histogram,
    pub(super) top_bytes: TopN<Arc<SNode>>,
    pub(super) top_files: TopN<Arc<SNode>>,
    pub(super) top_small: TopN<Arc<SNode>>,
    /// The largest files: their directory, name and size, by allocated bytes.
    pub(super) large: TopN<(Arc<SNode>, CString, u64)>,
}

impl Tally {
    pub(super) fn merge(&mut self, o: Tally) {
        self.links.extend(o.links);
        for (a, b) in self.per_root.iter_mut().zip(&o.per_root) {
            a.merge(b);
        }
        self.histogram.merge(&o.histogram);
        self.top_bytes.merge(o.top_bytes);
        self.top_files.merge(o.top_files);
        self.top_small.merge(o.top_small);
        self.large.merge(o.large);
    }

    fn count_dir(&mut self, root: usize, allocated: u64, size: u64) {
        let c = &mut self.per_root[root];
        c.dirs += 1;
        c.allocated_bytes += allocated;
        c.apparent_bytes += size;
    }
}

/// Per directory: regular files directly inside (names), and of those the small ones; its
/// subtree's allocated bytes and files (complete once it is finished: each child adds its own
/// when it finishes).
#[derive(Default)]
pub struct DirCounts {
    pub(super) files: AtomicU64,
    pub(super) small: AtomicU64,
    pub(super) tree_allocated: AtomicU64,
    pub(super) tree_files: AtomicU64,
    /// Sums for pack candidates over the subtree.
    pack: crate::engine::pack::candidates::Sums,
    /// Its record in `--export`'s tree (from when it is opened until it is finished).
    export: Mutex<Option<DirRecord>>,
    /// Its entry in `ScanWalkOptions::tree`, once opened.
    tree: std::sync::OnceLock<u32>,
}

impl DirCounts {
    fn tree_index(&self) -> u32 {
        self.tree.get().copied().unwrap_or(super::tree::NONE)
    }

    fn add_tree(&self, allocated: u64, files: u64) {
        self.tree_allocated.fetch_add(allocated, Ordering::Relaxed);
        self.tree_files.fetch_add(files, Ordering::Relaxed);
    }
}

pub(super) type SNode = Node<DirCounts>;

/// The scan's work on the walk.
pub(super) struct Scanner<'a> {
    pub(super) opts: ScanWalkOptions,
    pub(super) live: &'a Live,
    pub(super) on_error: &'a (dyn Fn(&ScanError) + Sync),
    /// (dev, ino) of every non-directory with more than one link met so far.
    seen: Mutex<HashSet<(u64, u64)>>,
    errors: Mutex<Vec<ScanError>>,
    skipped: Mutex<Vec<PathBuf>>,
    roots: usize,
    /// Under MPI: keep the `Link`s.
    shared: bool,
    /// The device of each PATH.
    root_devs: Vec<u64>,
    /// Directories found to be pack candidates.
    candidates: Mutex<Vec<Arc<SNode>>>,
    /// `--export`: the tree being written.
    export: Option<&'a Export>,
}

impl Scanner<'_> {
    /// The pack candidates found, once the walk is over: none inside another, the most files
    /// first, `top` of them; and how many there were.
    fn pack_candidates(&self) -> (Vec<crate::engine::pack::candidates::Candidate>, usize) {
        let nodes = std::mem::take(&mut *self.candidates.lock().expect("candidates lock"));
        let mut out: Vec<_> = nodes
            .iter()
            .filter(|n| {
                let mut p = n.parent();
                while let Some(up) = p {
                    if up.data.pack.taken.load(Ordering::Relaxed) {
                        return false;
                    }
                    p = up.parent();
                }
                true
            })
            .map(|n| crate::engine::pack::candidates::Candidate {
                path: n.path(),
                files: n.data.tree_files.load(Ordering::Relaxed),
                small_files: n.data.pack.small.load(Ordering::Relaxed),
                allocated: n.data.tree_allocated.load(Ordering::Relaxed),
                apparent: n.data.pack.apparent.load(Ordering::Relaxed),
                newest: n.data.pack.newest.load(Ordering::Relaxed),
            })
            .collect();
        out.sort_by(|a, b| b.files.cmp(&a.files).then_with(|| a.path.cmp(&b.path)));
        let total = out.len();
        out.truncate(self.opts.top);
        (out, total)
    }

    /// The errors and the mount points left alone, once the walk is over.
    pub(super) fn take_failures(&self) -> (Vec<ScanError>, Vec<PathBuf>) {
        (
            std::mem::take(&mut *self.errors.lock().expect("errors lock")),
            std::mem::take(&mut *self.skipped.lock().expect("skipped lock")),
        )
    }

    fn fail(&self, path: PathBuf, doing: &'static str, reason: String) {
        let e = ScanError {
            path,
            doing,
            reason,
        };
        self.live.errors.fetch_add(1, Ordering::Relaxed);
        (self.on_error)(&e);
        self.errors.lock().expect("errors lock").push(e);
    }

    fn skip_mount(&self, path: PathBuf) {
        self.skipped.lock().expect("skipped lock").push(path);
    }

    fn same_mount(&self, root: &Root, st: &Facts) -> bool {
        self.opts.cross_mounts
            || (Some(st.mnt_id) == root.mnt_id() && st.ident.dev == root.expect.dev)
    }

    /// Counts one non-directory; returns the bytes it added (`None` for a further hard link
    /// of an inode counted already).
    fn count_entry(&self, tally: &mut Tally, root: usize, st: &Facts) -> Option<u64> {
        let first_link = st.nlink <= 1
            || self
                .seen
                .lock()
                .expect("seen lock")
                .insert((st.ident.dev, st.ident.ino));
        let c = &mut tally.per_root[root];
        match st.file_type {
            FileType::RegularFile => {
                c.files += 1;
                if st.size < self.opts.small {
                    c.small_files += 1;
                }
                if !first_link {
                    c.hard_links += 1;
                }
            }
            FileType::Symlink => c.symlinks += 1,
            _ => c.other += 1,
        }
        if !first_link {
            return None;
        }
        if st.nlink > 1 && self.shared {
            let fs = self
                .root_devs
                .iter()
                .position(|d| *d == st.ident.dev)
                .map_or(st.ident.dev | 1 << 63, |i| i as u64);
            tally.links.push(Link {
                fs,
                ino: st.ident.ino,
                root: root as u32,
                file: st.file_type == FileType::RegularFile,
                allocated: st.allocated,
                size: st.size,
            });
        }
        c.allocated_bytes += st.allocated;
        c.apparent_bytes += st.size;
        if st.file_type == FileType::RegularFile {
            tally.histogram.add(st.size, st.allocated);
        }
        Some(st.allocated)
    }
}

impl Visitor for Scanner<'_> {
    type Dir = DirCounts;
    type Worker = Tally;

    fn worker(&self) -> Tally {
        Tally {
            per_root: vec![Counts::default(); self.roots],
            links: Vec::new(),
            histogram: Histogram::default(),
            top_bytes: TopN::new(self.opts.top),
            top_files: TopN::new(self.opts.top),
            top_small: TopN::new(self.opts.top),
            large: TopN::new(self.opts.top),
        }
    }

    fn dir_data(&self) -> DirCounts {
        DirCounts::default()
    }

    fn opened(&self, w: &mut Tally, node: &Arc<SNode>, facts: &Facts) {
        if self.export.is_some() {
            let rec = match node.parent() {
                Some(p) => super::export::dir_record(
                    node.name().to_bytes(),
                    facts,
                    p.ident().map(|i| i.dev),
                ),
                None => super::export::dir_record(
                    &super::export::root_name(&node.root.display),
                    facts,
                    None,
                ),
            };
            *node.data.export.lock().expect("export lock") = Some(rec);
        }
        if let Some(feed) = &self.opts.tree {
            let at = match node.parent() {
                Some(p) => feed
                    .tree
                    .dir(p.data.tree_index(), node.name().to_bytes(), facts),
                None => feed.roots[node.root.index],
            };
            let _ = node.data.tree.set(at);
        }
        w.count_dir(node.root.index, facts.allocated, facts.size);
        node.data.add_tree(facts.allocated, 0);
        self.live.dirs.fetch_add(1, Ordering::Relaxed);
        self.live
            .allocated
            .fetch_add(facts.allocated, Ordering::Relaxed);
    }

    fn not_opened(
        &self,
        w: &mut Tally,
        parent: &OwnedFd,
        node: &Arc<SNode>,
        why: NotOpened,
    ) -> Next {
        let root = &node.root;
        let path = node.path();
        match why {
            // Replaced by a symlink or a file since it was listed: count what is there now,
            // never follow it.
            NotOpened::NotDir => match dirfd::lstat_at(parent, node.name()) {
                Ok(st) if st.file_type != FileType::Directory => {
                    if self.same_mount(root, &st) {
                        let counted = self.count_entry(w, root.index, &st);
                        self.tree_entry(node.parent(), node.name(), &st, counted.is_some(), 0);
                        let allocated = counted.unwrap_or(0);
                        if let (Some(p), Some(_)) = (node.parent(), self.export) {
                            let mut buf = Vec::new();
                            let dev = p.ident().map_or(st.ident.dev, |i| i.dev);
                            super::export::entry(&mut buf, node.name(), &st, dev);
                            self.export_entries(p, &buf);
                        }
                        if let Some(p) = node.parent() {
                            p.data.add_tree(
                                allocated,
                                u64::from(st.file_type == FileType::RegularFile),
                            );
                        }
                        self.live.names.fetch_add(1, Ordering::Relaxed);
                    } else {
                        self.skip_mount(path);
                    }
                }
                Ok(_) | Err(Errno::NOENT) => {}
                Err(e) => self.fail(path, "cannot stat", text(e)),
            },
            NotOpened::OtherMount => {
                if self.opts.tree.is_some() {
                    if let Ok(st) = dirfd::lstat_at(parent, node.name()) {
                        // Same mount, another device: a btrfs subvolume.
                        let same = root.mnt_id() == Some(st.mnt_id) && st.mnt_id != 0;
                        let f = super::tree::flag::other_device(same);
                        self.tree_entry(node.parent(), node.name(), &st, false, f);
                    }
                }
                if let (Some(p), Some(_)) = (node.parent(), self.export) {
                    let mut buf = Vec::new();
                    super::export::excluded(&mut buf, node.name(), "othfs");
                    self.export_entries(p, &buf);
                }
                self.skip_mount(path)
            }
            NotOpened::Changed => self.fail(
                path,
                "cannot open directory",
                "changed during the scan (device/inode no longer match)".into(),
            ),
            // Unreadable (EACCES): the directory itself is still there and counted, as du and
            // find do.
            NotOpened::Os(e) => match dirfd::lstat_at(parent, node.name()) {
                Ok(st) if node.parent().is_some() && !self.same_mount(root, &st) => {
                    self.skip_mount(path)
                }
                Ok(st) => {
                    w.count_dir(root.index, st.allocated, st.size);
                    let unreadable = super::tree::flag::UNREADABLE;
                    self.tree_entry(node.parent(), node.name(), &st, true, unreadable);
                    if let Some(p) = node.parent() {
                        let dev = p.ident().map(|i| i.dev);
                        self.export_record(p, |rec| {
                            let mut child =
                                super::export::dir_record(node.name().to_bytes(), &st, dev);
                            child.set_read_error();
                            rec.add_child(child);
                        });
                    }
                    // Never finished (not walked): its bytes reach its parent's sum here.
                    if let Some(p) = node.parent() {
                        p.data.add_tree(st.allocated, 0);
                    }
                    self.live.dirs.fetch_add(1, Ordering::Relaxed);
                    self.fail(path, "cannot open directory", text(e));
                }
                Err(Errno::NOENT) => {}
                Err(_) => self.fail(path, "cannot open directory", text(e)),
            },
        }
        Next::Done
    }

    fn skip_subdir(&self, w: &mut Tally, node: &Arc<SNode>, name: &CStr) -> bool {
        let out = self.excluded(node, name, true);
        if out {
            w.per_root[node.root.index].excluded += 1;
            if self.export.is_some() {
                let mut buf = Vec::new();
                super::export::excluded(&mut buf, name, "pattern");
                self.export_entries(node, &buf);
            }
        }
        out
    }

    fn list_failed(&self, node: &Arc<SNode>, e: Errno) {
        self.tree_mark(node, super::tree::flag::ERROR);
        self.export_record(node, DirRecord::set_read_error);
        self.fail(node.path(), "cannot read directory", text(e));
    }

    fn listed(&self, w: &mut Tally, node: &Arc<SNode>, names: usize) {
        if names >= walk::BIG_DIR {
            w.per_root[node.root.index].big_dir_names += names as u64;
        }
    }

    fn lost(&self, path: PathBuf, why: Lost, node: &Arc<SNode>) {
        self.tree_mark(node, super::tree::flag::ERROR);
        self.export_record(node, DirRecord::set_read_error);
        let reason = match why {
            Lost::Os(e) => text(e),
            Lost::Changed => "changed during the scan (device/inode no longer match)".into(),
        };
        self.fail(path, "cannot reopen directory", reason);
    }

    /// `statx`es a batch of entries of `node` and counts them.
    fn entries(
        &self,
        w: &mut Tally,
        node: &Arc<SNode>,
        fd: &OwnedFd,
        names: Names<'_>,
        _few: bool,
        _walk: &Walk<'_, Self>,
    ) -> Vec<CString> {
        let root = &node.root;
        let (mut files, mut small, mut count, mut allocated) = (0u64, 0u64, 0u64, 0u64);
        let (mut excluded, mut dirs) = (0u64, Vec::new());
        let (mut apparent, mut newest) = (0u64, i64::MIN);
        let atime = self.opts.pack.is_some_and(|r| r.atime);
        let mut export = Vec::new();
        let mut batch = super::tree::Batch::default();
        let dir_dev = node.ident().map_or(0, |i| i.dev);
        for name in names.iter() {
            if self.excluded(node, name, false) {
                excluded += 1;
                if self.export.is_some() {
                    super::export::excluded(&mut export, name, "pattern");
                }
                continue;
            }
            match dirfd::lstat_at(fd, name) {
                // A directory after all (DT_UNKNOWN, or swapped in since listed).
                Ok(st) if st.file_type == FileType::Directory => {
                    if self.excluded(node, name, true) {
                        excluded += 1;
                        if self.export.is_some() {
                            super::export::excluded(&mut export, name, "pattern");
                        }
                    } else {
                        dirs.push(name.to_owned());
                    }
                }
                // A file bind-mounted over a name of the tree.
                Ok(st) if !self.same_mount(root, &st) => {
                    if self.export.is_some() {
                        super::export::excluded(&mut export, name, "othfs");
                    }
                    if self.opts.tree.is_some() {
                        batch.push(name.to_bytes(), &st, false, super::tree::flag::MOUNT);
                    }
                    self.skip_mount(node.child_path(name))
                }
                Ok(st) => {
                    if self.export.is_some() {
                        super::export::entry(&mut export, name, &st, dir_dev);
                    }
                    count += 1;
                    if st.file_type == FileType::RegularFile {
                        files += 1;
                        apparent += st.size;
                        if st.size < self.opts.small {
                            small += 1;
                        }
                    }
                    newest = newest.max(if atime { st.atime } else { st.mtime });
                    let counted = self.count_entry(w, root.index, &st);
                    if self.opts.tree.is_some() {
                        batch.push(name.to_bytes(), &st, counted.is_some(), 0);
                    }
                    let added = counted.unwrap_or(0);
                    allocated += added;
                    if st.file_type == FileType::RegularFile {
                        w.large.offer(added, st.ident.ino, || {
                            (node.clone(), name.to_owned(), st.size)
                        });
                    }
                }
                Err(Errno::NOENT) => {}
                Err(e) => self.fail(node.child_path(name), "cannot stat", text(e)),
            }
        }
        node.data.files.fetch_add(files, Ordering::Relaxed);
        node.data.small.fetch_add(small, Ordering::Relaxed);
        node.data.add_tree(allocated, files);
        node.data.pack.add(small, apparent, newest);
        self.export_entries(node, &export);
        if let Some(feed) = &self.opts.tree {
            feed.tree.add(node.data.tree_index(), &batch);
        }
        w.per_root[root.index].excluded += excluded;
        self.live.names.fetch_add(count, Ordering::Relaxed);
        self.live.allocated.fetch_add(allocated, Ordering::Relaxed);
        dirs
    }

    /// Ranks a finished directory in the top lists and adds its subtree to its parent's.
    fn finished(&self, w: &mut Tally, node: &Arc<SNode>, _walk: &Walk<'_, Self>) {
        let ino = node.ident().map_or(0, |i| i.ino);
        let files = node.data.files.load(Ordering::Relaxed);
        let small = node.data.small.load(Ordering::Relaxed);
        let tree_allocated = node.data.tree_allocated.load(Ordering::Relaxed);
        let tree_files = node.data.tree_files.load(Ordering::Relaxed);
        if let Some(p) = node.parent() {
            p.data.add_tree(tree_allocated, tree_files);
            node.data.pack.add_to(&p.data.pack);
        }
        if let Some(x) = self.export {
            if let Some(rec) = node.data.export.lock().expect("export lock").take() {
                match node.parent() {
                    Some(p) => self.export_record(p, |r| r.add_child(rec)),
                    None => x.set_root(rec),
                }
            }
        }
        let candidate = self
            .opts
            .pack
            .is_some_and(|r| r.takes(tree_files, &node.data.pack));
        if let Some(feed) = &self.opts.tree {
            feed.tree.finished(node.data.tree_index(), candidate);
        }
        if candidate {
            node.data.pack.taken.store(true, Ordering::Relaxed);
            self.candidates
                .lock()
                .expect("candidates lock")
                .push(node.clone());
        }
        w.top_bytes.offer(tree_allocated, ino, || node.clone());
        w.top_files.offer(files, ino, || node.clone());
        w.top_small.offer(small, ino, || node.clone());
    }

    /// Under MPI: a directory finished here for another rank adds its subtree's sums to its
    /// parent there.
    fn summary(&self, node: &Arc<SNode>) -> Vec<u8> {
        let mut w = crate::engine::spread::wire::Writer::default();
        w.u64(node.data.tree_allocated.load(Ordering::Relaxed))
            .u64(node.data.tree_files.load(Ordering::Relaxed));
        for v in node.data.pack.words() {
            w.u64(v);
        }
        w.0
    }

    fn absorb(&self, _w: &mut Tally, node: &Arc<SNode>, summary: &[u8]) {
        let mut r = crate::engine::spread::wire::Reader(summary);
        if let (Ok(allocated), Ok(files), Some(p)) = (r.u64(), r.u64(), node.parent()) {
            p.data.add_tree(allocated, files);
            if let (Ok(small), Ok(apparent), Ok(newest)) = (r.u64(), r.u64(), r.u64()) {
                p.data.pack.add(small, apparent, newest as i64);
            }
        }
    }
}

impl Scanner<'_> {
    /// `ScanWalkOptions::tree`: adds the entry `name` of `parent` (one not walked: a file, a mount
    /// point, an unreadable directory) with `flags`; `counted`: its bytes count.
    fn tree_entry(
        &self,
        parent: Option<&Arc<SNode>>,
        name: &CStr,
        st: &Facts,
        counted: bool,
        flags: u16,
    ) {
        if let (Some(feed), Some(p)) = (&self.opts.tree, parent) {
            let mut batch = super::tree::Batch::default();
            batch.push(name.to_bytes(), st, counted, flags);
            feed.tree.add(p.data.tree_index(), &batch);
        }
    }

    /// `ScanWalkOptions::tree`: marks `node`'s entry with `flags`.
    fn tree_mark(&self, node: &SNode, flags: u16) {
        if let Some(feed) = &self.opts.tree {
            feed.tree.mark(node.data.tree_index(), flags);
        }
    }

    /// `--export`: spills `bytes` (entries of `node`) and notes where they lie in its record.
    fn export_entries(&self, node: &SNode, bytes: &[u8]) {
        let Some(x) = self.export else { return };
        if let Some(piece) = x.spill(bytes) {
            if let Some(rec) = node.data.export.lock().expect("export lock").as_mut() {
                rec.add_piece(piece);
            }
        }
    }

    /// `--export`: changes the record of `node` (if it has one).
    fn export_record(&self, node: &SNode, f: impl FnOnce(&mut DirRecord)) {
        if self.export.is_some() {
            if let Some(rec) = node.data.export.lock().expect("export lock").as_mut() {
                f(rec);
            }
        }
    }

    /// Whether `--exclude` leaves out entry `name` of `node` (`is_dir`: known to be a
    /// directory).
    fn excluded(&self, node: &SNode, name: &CStr, is_dir: bool) -> bool {
        let ex = &self.opts.exclude;
        !ex.is_empty() && ex.excludes(name.to_bytes(), || relative(node, name), is_dir)
    }
}

/// The path of entry `name` of `node` relative to its PATH (`a/b/name`), for path globs.
fn relative(node: &SNode, name: &CStr) -> Vec<u8> {
    let mut names: Vec<&[u8]> = vec![name.to_bytes()];
    let mut n = node;
    while let Some(p) = n.parent() {
        names.push(n.name().to_bytes());
        n = p;
    }
    names.reverse();
    names.join(&b'/')
}

fn text(e: Errno) -> String {
    crate::sys::error::errno_text(e)
}
