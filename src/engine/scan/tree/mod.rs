//! `reclaim browse`'s model of a scanned tree: every entry the scan's walk met (or an import
//! read), 56 bytes each in fixed chunks, names in one byte arena, linked parent → first child →
//! next sibling by `u32` index: nothing is allocated per entry and nothing is moved as the tree
//! grows. Each directory's totals fill in while the walk goes, so a view can show them before
//! the scan ends. Entries taken out of the view (`hide`) and put back (`unhide`) keep every
//! total right, also while the walk still adds below them.
//!
//! It never touches the file system: the scan's walk (`walk.rs`) and `import.rs` feed it, the
//! view reads it, and `chain` gives what a caller needs to reach an entry again and prove it
//! is the one that was scanned (device and inode of every directory on the way).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::sys::dirfd::Facts;

/// The chunked arena the tree is kept in.
mod store;
use store::Store;

/// No entry (the root's parent, the end of a list of siblings).
pub const NONE: u32 = u32::MAX;

/// The root of every tree: the PATH scanned (or the import's top directory).
pub const ROOT: u32 = 0;

/// Levels a batch's sums climb at once. Above that they wait at the directory reached and go
/// on when it is finished, so a batch costs bounded work whatever the depth (a 100,000-level
/// tree is linear, not quadratic); the view of the levels above shows them a little later.
const CLIMB: usize = 32;

/// Entries per chunk (chunks never grow or move: no copy of the tree as it grows, and no
/// moment with two copies in memory).
const CHUNK_BITS: u32 = 16;
const CHUNK: usize = 1 << CHUNK_BITS;

/// Bytes per chunk of the name arena.
const NAME_CHUNK_BITS: u32 = 20;
const NAME_CHUNK: usize = 1 << NAME_CHUNK_BITS;

/// The longest name kept (Linux's NAME_MAX); an import's longer names are refused by it.
pub const NAME_MAX: usize = 255;

/// What an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

impl Kind {
    pub fn of(t: rustix::fs::FileType) -> Kind {
        match t {
            rustix::fs::FileType::RegularFile => Kind::File,
            rustix::fs::FileType::Directory => Kind::Dir,
            rustix::fs::FileType::Symlink => Kind::Symlink,
            _ => Kind::Other,
        }
    }
}

/// What an entry is besides its kind (bits of `Info::flags`).
pub mod flag {
    /// A directory whose walk is finished: its totals are complete.
    pub const DONE: u16 = 1 << 0;
    /// Taken out of the view (deleted from it); its totals left its ancestors'.
    pub const HIDDEN: u16 = 1 << 1;
    /// A non-directory with more than one link.
    pub const HARDLINK: u16 = 1 << 2;
    /// Not in its ancestors' sizes: a further link of an inode counted under another name,
    /// or a mount point not entered.
    pub const UNCOUNTED: u16 = 1 << 3;
    /// The mount point of another file system (or a bind mount), not entered.
    pub const MOUNT: u16 = 1 << 4;
    /// A btrfs subvolume (same mount, another device), not entered.
    pub const SUBVOLUME: u16 = 1 << 5;
    /// A directory that could not be opened (counted as the entry it is).
    pub const UNREADABLE: u16 = 1 << 6;
    /// A directory read only in part.
    pub const ERROR: u16 = 1 << 7;
    /// Something below could not be read.
    pub const ERROR_BELOW: u16 = 1 << 8;
    /// A pack candidate (scan's rule: many small files, none modified for a while).
    pub const CANDIDATE: u16 = 1 << 9;
    /// Left out by the scan that wrote an import (`excluded`).
    pub const EXCLUDED: u16 = 1 << 10;

    /// The mark of a directory not entered because it is on another device: a subvolume
    /// when it is on the same mount (`same_mount`), else another file system.
    pub fn other_device(same_mount: bool) -> u16 {
        if same_mount {
            SUBVOLUME
        } else {
            MOUNT
        }
    }
}

/// Sizes of a subtree: allocated and apparent bytes, entries below, the newest mtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sums {
    pub disk: u64,
    pub apparent: u64,
    pub items: u64,
    pub newest: i64,
}

impl Default for Sums {
    fn default() -> Self {
        Sums {
            disk: 0,
            apparent: 0,
            items: 0,
            newest: i64::MIN,
        }
    }
}

impl Sums {
    fn add(&mut self, o: Sums) {
        self.disk = self.disk.saturating_add(o.disk);
        self.apparent = self.apparent.saturating_add(o.apparent);
        self.items = self.items.saturating_add(o.items);
        self.newest = self.newest.max(o.newest);
    }
}

/// One entry: 56 bytes.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Allocated bytes: its own (a non-directory), or its subtree's so far (a directory).
    disk: u64,
    apparent: u64,
    ino: u64,
    /// Its own mtime, or the newest of its subtree (a directory).
    mtime: i64,
    /// Entries below (a directory).
    items: u32,
    parent: u32,
    next: u32,
    first: u32,
    /// Where its name starts in the arena.
    name: u32,
    name_len: u8,
    kind: Kind,
    flags: u16,
}

impl Entry {
    fn sums(&self) -> Sums {
        Sums {
            disk: self.disk,
            apparent: self.apparent,
            items: u64::from(self.items),
            newest: self.mtime,
        }
    }

    fn add(&mut self, s: Sums) {
        self.disk = self.disk.saturating_add(s.disk);
        self.apparent = self.apparent.saturating_add(s.apparent);
        self.items =
            u32::try_from(u64::from(self.items).saturating_add(s.items)).unwrap_or(u32::MAX);
        self.mtime = self.mtime.max(s.newest);
    }

    fn sub(&mut self, s: Sums) {
        self.disk = self.disk.saturating_sub(s.disk);
        self.apparent = self.apparent.saturating_sub(s.apparent);
        self.items = u32::try_from(u64::from(self.items).saturating_sub(s.items)).unwrap_or(0);
    }

    /// What it adds to its ancestors: its sizes unless uncounted, and itself as an item.
    fn share(&self) -> Sums {
        let mut s = if self.flags & flag::UNCOUNTED != 0 {
            Sums {
                items: u64::from(self.items),
                newest: self.mtime,
                ..Sums::default()
            }
        } else {
            self.sums()
        };
        s.items += 1;
        s
    }
}

/// Non-directory entries of one directory (or directories not entered), gathered by one
/// worker and added under one lock.
#[derive(Default)]
pub struct Batch {
    names: Vec<u8>,
    items: Vec<Item>,
}

struct Item {
    name_end: usize,
    kind: Kind,
    flags: u16,
    disk: u64,
    apparent: u64,
    ino: u64,
    mtime: i64,
    dev: u64,
}

impl Batch {
    /// Adds entry `name` with `facts`; `counted`: its bytes count (not a further link of an
    /// inode already counted); `flags`: what else it is. Names longer than NAME_MAX are not
    /// kept (none exists on Linux; an import may hold one).
    pub fn push(&mut self, name: &[u8], facts: &Facts, counted: bool, flags: u16) {
        if name.len() > NAME_MAX {
            return;
        }
        let mut flags = flags;
        if !counted {
            flags |= flag::UNCOUNTED;
        }
        if facts.nlink > 1 && facts.file_type != rustix::fs::FileType::Directory {
            flags |= flag::HARDLINK;
        }
        self.names.extend_from_slice(name);
        self.items.push(Item {
            name_end: self.names.len(),
            kind: Kind::of(facts.file_type),
            flags,
            disk: facts.allocated,
            apparent: facts.size,
            ino: facts.ident.ino,
            mtime: facts.mtime,
            dev: facts.ident.dev,
        });
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// An entry as the view sees it (a copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    pub index: u32,
    pub name: Vec<u8>,
    pub kind: Kind,
    pub flags: u16,
    /// Allocated bytes (of the subtree, for a directory).
    pub disk: u64,
    pub apparent: u64,
    /// Entries below (a directory).
    pub items: u64,
    /// Its mtime (the newest of its subtree, for a directory); `i64::MIN`: none known.
    pub mtime: i64,
    pub ino: u64,
    pub parent: u32,
}

impl Info {
    pub fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }
}

/// One directory (or the target itself) on the way from the root to an entry: what must be
/// found there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub name: Vec<u8>,
    pub dev: u64,
    pub ino: u64,
    pub kind: Kind,
}

/// How a view orders a directory's entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    Disk,
    Apparent,
    Items,
    Modified,
    Name,
}

/// Which entries of a directory a view shows, in which order.
#[derive(Clone, Debug)]
pub struct Query {
    pub sort: SortBy,
    /// Largest (newest, last by name) first.
    pub descending: bool,
    /// Only names holding these bytes (ASCII letters compared without case).
    pub name: Option<Vec<u8>>,
    /// Only entries (whole subtrees) with nothing modified after this (seconds since the
    /// epoch).
    pub older_than: Option<i64>,
}

impl Default for Query {
    fn default() -> Self {
        Query {
            sort: SortBy::Disk,
            descending: true,
            name: None,
            older_than: None,
        }
    }
}

/// A scanned tree, shared by the walk's workers that fill it and the view that reads it.
pub struct Tree {
    store: Mutex<Store>,
    /// Changes so far (a view re-reads when it moved).
    generation: AtomicU64,
    /// The PATH as given (the root's name).
    root_path: PathBuf,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tree({} entries)", self.len())
    }
}

impl Tree {
    /// A tree whose root is the directory `root_path`, with `facts` (None: an import, whose
    /// root's sizes come with it).
    pub fn new(root_path: &Path, facts: Option<&Facts>) -> Tree {
        let mut store = Store {
            chunks: Vec::new(),
            len: 0,
            names: Vec::new(),
            deferred: HashMap::new(),
            devs: HashMap::new(),
            dropped: 0,
        };
        let e = entry(Kind::Dir, 0, facts);
        store.push(b"", e).expect("an empty tree has room");
        if let Some(f) = facts {
            store.devs.insert(ROOT, f.ident.dev);
        }
        Tree {
            store: Mutex::new(store),
            generation: AtomicU64::new(0),
            root_path: root_path.to_path_buf(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// Entries held (hidden ones too).
    pub fn len(&self) -> u64 {
        u64::from(self.lock().len)
    }

    /// Entries not kept because the tree was full.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// Changes so far: a view whose copy is of an older generation reads again.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Adds the directory `name` (just opened, with `facts`) under `parent`; its index.
    pub fn dir(&self, parent: u32, name: &[u8], facts: &Facts) -> u32 {
        if parent == NONE {
            return NONE;
        }
        let mut s = self.lock();
        let Some(i) = s.push(name, entry(Kind::Dir, 0, Some(facts))) else {
            return NONE;
        };
        s.link(parent, i);
        s.devs.insert(i, facts.ident.dev);
        let share = s.at(i).share();
        s.climb(parent, share);
        drop(s);
        self.changed();
        i
    }

    /// Adds `batch` under `parent`.
    pub fn add(&self, parent: u32, batch: &Batch) {
        if batch.is_empty() || parent == NONE {
            return;
        }
        let mut s = self.lock();
        let mut sums = Sums::default();
        let mut start = 0;
        let mut unreadable = false;
        for it in &batch.items {
            let name = &batch.names[start..it.name_end];
            start = it.name_end;
            let mut e = entry(it.kind, it.flags, None);
            (e.disk, e.apparent, e.ino, e.mtime) = (it.disk, it.apparent, it.ino, it.mtime);
            if it.kind == Kind::Dir {
                // Not entered (a mount point, an unreadable directory): nothing more below.
                e.flags |= flag::DONE;
            }
            let Some(i) = s.push(name, e) else { break };
            s.link(parent, i);
            if it.kind == Kind::Dir {
                s.devs.insert(i, it.dev);
            }
            unreadable |= it.flags & flag::UNREADABLE != 0;
            sums.add(s.at(i).share());
        }
        s.climb(parent, sums);
        if unreadable {
            s.error_above(parent);
        }
        drop(s);
        self.changed();
    }

    /// The walk of directory `dir` is finished (`candidate`: it is a pack candidate).
    pub fn finished(&self, dir: u32, candidate: bool) {
        if dir == NONE {
            return;
        }
        let mut s = self.lock();
        let e = s.at_mut(dir);
        e.flags |= flag::DONE;
        if candidate {
            e.flags |= flag::CANDIDATE;
        }
        let (parent, hidden) = (e.parent, e.flags & flag::HIDDEN != 0);
        if let Some(waiting) = s.deferred.remove(&dir) {
            if !hidden {
                s.climb(parent, waiting);
            }
        }
        drop(s);
        self.changed();
    }

    /// Marks `i` with `f`; a read error is also marked on every directory above.
    pub fn mark(&self, i: u32, f: u16) {
        if i == NONE {
            return;
        }
        let mut s = self.lock();
        s.at_mut(i).flags |= f;
        if f & (flag::ERROR | flag::UNREADABLE) != 0 {
            let up = s.at(i).parent;
            s.error_above(up);
        }
        drop(s);
        self.changed();
    }

    /// The walk is over: every total is made exact, the root (and every directory the walk
    /// left, stopped early) marked finished.
    pub fn walked(&self, top: u32) {
        let mut s = self.lock();
        s.settle();
        s.at_mut(top).flags |= flag::DONE;
        drop(s);
        self.changed();
    }

    /// Sets the sizes of the root (an import gives them with the root's record).
    pub fn set_root(&self, disk: u64, apparent: u64, ino: u64, dev: Option<u64>) {
        let mut s = self.lock();
        let e = s.at_mut(ROOT);
        e.disk = e.disk.saturating_add(disk);
        e.apparent = e.apparent.saturating_add(apparent);
        e.ino = ino;
        if let Some(d) = dev {
            s.devs.insert(ROOT, d);
        }
    }

    /// Takes entries out of the view (they were deleted), their sizes out of their
    /// ancestors'. Hidden ones stay hidden.
    pub fn hide(&self, entries: &[u32]) {
        let mut s = self.lock();
        s.settle();
        for &i in entries {
            let e = s.at(i);
            if i == ROOT || e.flags & flag::HIDDEN != 0 {
                continue;
            }
            let (share, parent) = (e.share(), e.parent);
            s.carry(parent, share, false);
            s.at_mut(i).flags |= flag::HIDDEN;
            // Its directory was just modified (an entry left it).
            let now = crate::sys::format::now_unix() as i64;
            if parent != NONE {
                let touched = Sums {
                    newest: now,
                    ..Sums::default()
                };
                s.carry(parent, touched, true);
            }
        }
        drop(s);
        self.changed();
    }

    /// Puts hidden entries back (their deletion was undone), their sizes as they are now.
    pub fn unhide(&self, entries: &[u32]) {
        let mut s = self.lock();
        s.settle();
        for &i in entries {
            let e = s.at(i);
            if e.flags & flag::HIDDEN == 0 {
                continue;
            }
            let parent = e.parent;
            s.at_mut(i).flags &= !flag::HIDDEN;
            let share = s.at(i).share();
            s.carry(parent, share, true);
        }
        drop(s);
        self.changed();
    }

    /// Forgets every entry below `dir` (it is scanned again): their sizes leave `dir` and its
    /// ancestors, and `dir` is unfinished again. Their room is not reused.
    pub fn forget_below(&self, dir: u32) {
        let mut s = self.lock();
        s.settle();
        let kids: Vec<u32> = s.children(dir).collect();
        for i in kids {
            let e = s.at(i);
            if e.flags & flag::HIDDEN == 0 {
                let share = e.share();
                s.carry(dir, share, false);
                s.at_mut(i).flags |= flag::HIDDEN;
            }
        }
        let e = s.at_mut(dir);
        e.first = NONE;
        e.flags &= !(flag::DONE | flag::ERROR | flag::ERROR_BELOW | flag::CANDIDATE);
        drop(s);
        self.changed();
    }

    /// A copy of entry `i`.
    pub fn info(&self, i: u32) -> Info {
        self.lock().info(i)
    }

    /// Copies of entries `list` (hidden ones left out).
    pub fn infos(&self, list: &[u32]) -> Vec<Info> {
        let s = self.lock();
        list.iter()
            .filter(|&&i| s.at(i).flags & flag::HIDDEN == 0)
            .map(|&i| s.info(i))
            .collect()
    }

    /// The visible entries of `dir` that `q` lets through, in its order.
    pub fn list(&self, dir: u32, q: &Query) -> Vec<u32> {
        let needle: Option<Vec<u8>> = q
            .name
            .as_ref()
            .filter(|n| !n.is_empty())
            .map(|n| n.to_ascii_lowercase());
        let s = self.lock();
        let keep = |e: &Entry| {
            e.flags & flag::HIDDEN == 0
                && q.older_than.is_none_or(|t| e.mtime < t)
                && needle
                    .as_ref()
                    .is_none_or(|n| contains_folded(s.name(e), n))
        };
        if q.sort == SortBy::Name {
            let mut v: Vec<u32> = s.children(dir).filter(|&i| keep(s.at(i))).collect();
            v.sort_unstable_by(|&a, &b| s.name(s.at(a)).cmp(s.name(s.at(b))));
            if q.descending {
                v.reverse();
            }
            return v;
        }
        // 16 bytes a key while sorting (a directory of a million entries costs 16 MB then).
        let size = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let key = |e: &Entry| -> i64 {
            match q.sort {
                SortBy::Disk => size(e.disk),
                SortBy::Apparent => size(e.apparent),
                SortBy::Items => i64::from(e.items),
                SortBy::Modified => e.mtime,
                SortBy::Name => 0,
            }
        };
        let mut v: Vec<(i64, u32)> = s
            .children(dir)
            .filter_map(|i| {
                let e = s.at(i);
                keep(e).then(|| (key(e), i))
            })
            .collect();
        // Ties by name, whatever the direction (a stable screen).
        v.sort_unstable_by(|a, b| {
            let by = if q.descending {
                b.0.cmp(&a.0)
            } else {
                a.0.cmp(&b.0)
            };
            by.then_with(|| s.name(s.at(a.1)).cmp(s.name(s.at(b.1))))
        });
        v.into_iter().map(|(_, i)| i).collect()
    }

    /// The largest allocated and apparent sizes among the visible entries of `dir` (what a
    /// view's bars are drawn against).
    pub fn largest(&self, dir: u32) -> (u64, u64) {
        let s = self.lock();
        s.children(dir)
            .map(|i| s.at(i))
            .filter(|e| e.flags & flag::HIDDEN == 0)
            .fold((0, 0), |(d, a), e| (d.max(e.disk), a.max(e.apparent)))
    }

    /// The allocated bytes and the count of the visible entries of `dir` (what emptying it
    /// takes away).
    pub fn below(&self, dir: u32) -> (u64, u64) {
        let s = self.lock();
        s.children(dir)
            .map(|i| s.at(i))
            .filter(|e| e.flags & flag::HIDDEN == 0)
            .fold((0, 0), |(d, n), e| (d + e.share().disk, n + 1))
    }

    /// Counts the entry `i` (a mount point not entered, about to be scanned) in its
    /// ancestors' sizes from now on.
    pub fn count_in(&self, i: u32) {
        let mut s = self.lock();
        let e = s.at(i);
        if e.flags & flag::UNCOUNTED == 0 || e.flags & flag::HIDDEN != 0 {
            return;
        }
        let own = Sums {
            disk: e.disk,
            apparent: e.apparent,
            items: 0,
            newest: e.mtime,
        };
        let parent = e.parent;
        s.at_mut(i).flags &= !flag::UNCOUNTED;
        s.carry(parent, own, true);
        drop(s);
        self.changed();
    }

    /// The way from the root to entry `i`: one step per directory below the root, the entry
    /// last. The root's own step first (name empty).
    pub fn chain(&self, i: u32) -> Vec<Step> {
        let s = self.lock();
        let mut out = Vec::new();
        let mut at = i;
        while at != NONE {
            let e = s.at(at);
            out.push(Step {
                name: s.name(e).to_vec(),
                dev: s.dev(at),
                ino: e.ino,
                kind: e.kind,
            });
            at = e.parent;
        }
        out.reverse();
        out
    }

    /// The path of entry `i` for messages: the root's PATH joined with the names below it.
    pub fn path(&self, i: u32) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        let mut p = self.root_path.clone();
        for step in self.chain(i).iter().skip(1) {
            p.push(std::ffi::OsStr::from_bytes(&step.name));
        }
        p
    }

    /// Whether `a` is `b` or lies below it.
    pub fn within(&self, a: u32, b: u32) -> bool {
        let s = self.lock();
        let mut at = a;
        while at != NONE {
            if at == b {
                return true;
            }
            at = s.at(at).parent;
        }
        false
    }
}

/// A fresh entry of `kind`, with `facts`' own sizes when given.
fn entry(kind: Kind, flags: u16, facts: Option<&Facts>) -> Entry {
    Entry {
        disk: facts.map_or(0, |f| f.allocated),
        apparent: facts.map_or(0, |f| f.size),
        ino: facts.map_or(0, |f| f.ident.ino),
        mtime: facts.map_or(i64::MIN, |f| f.mtime),
        items: 0,
        parent: NONE,
        next: NONE,
        first: NONE,
        name: 0,
        name_len: 0,
        kind,
        flags,
    }
}

/// Whether `hay` holds `needle` (already lowercase), ASCII letters compared without case.
fn contains_folded(hay: &[u8], needle: &[u8]) -> bool {
    needle.len() <= hay.len()
        && hay.windows(needle.len()).any(|w| {
            w.iter()
                .zip(needle)
                .all(|(a, b)| a.to_ascii_lowercase() == *b)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::dirfd::Ident;
    use rustix::fs::FileType;

    fn facts(t: FileType, ino: u64, allocated: u64, size: u64, mtime: i64) -> Facts {
        Facts {
            ident: Ident { dev: 7, ino },
            mnt_id: 1,
            file_type: t,
            nlink: 1,
            allocated,
            size,
            mtime,
            atime: mtime,
        }
    }

    fn file(ino: u64, allocated: u64) -> Facts {
        facts(
            FileType::RegularFile,
            ino,
            allocated,
            allocated / 2,
            100 + ino as i64,
        )
    }

    fn dirf(ino: u64) -> Facts {
        facts(FileType::Directory, ino, 4096, 4096, 50)
    }

    fn tree() -> Tree {
        Tree::new(Path::new("/t"), Some(&dirf(1)))
    }

    #[test]
    fn an_entry_is_56_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 56);
    }

    #[test]
    fn totals_fill_in_as_entries_arrive() {
        let t = tree();
        let a = t.dir(ROOT, b"a", &dirf(2));
        let mut b = Batch::default();
        b.push(b"x", &file(3, 8192), true, 0);
        b.push(b"y", &file(4, 4096), true, 0);
        t.add(a, &b);
        let root = t.info(ROOT);
        assert_eq!((root.disk, root.items), (4096 + 4096 + 8192 + 4096, 3));
        let ai = t.info(a);
        assert_eq!((ai.disk, ai.items, ai.mtime), (4096 + 12288, 2, 104));
        assert!(!ai.has(flag::DONE));
        t.finished(a, false);
        assert!(t.info(a).has(flag::DONE));
    }

    #[test]
    fn a_further_link_counts_once() {
        let t = tree();
        let mut b = Batch::default();
        let mut f = file(3, 8192);
        f.nlink = 2;
        b.push(b"one", &f, true, 0);
        b.push(b"two", &f, false, 0);
        t.add(ROOT, &b);
        assert_eq!(t.info(ROOT).disk, 4096 + 8192);
        let two = t.list(ROOT, &Query::default());
        let infos = t.infos(&two);
        assert!(infos.iter().all(|i| i.has(flag::HARDLINK)));
        assert_eq!(infos.iter().filter(|i| i.has(flag::UNCOUNTED)).count(), 1);
    }

    #[test]
    fn deep_trees_settle_exactly_and_in_linear_work() {
        // 100,000 levels: each level's sums climb at most CLIMB levels at once.
        let t = tree();
        let mut at = ROOT;
        let mut path = Vec::new();
        for d in 0..100_000u64 {
            at = t.dir(at, b"d", &dirf(10 + d));
            path.push(at);
            let mut b = Batch::default();
            b.push(b"f", &file(1_000_000 + d, 4096), true, 0);
            t.add(at, &b);
        }
        for &d in path.iter().rev() {
            t.finished(d, false);
        }
        t.walked(ROOT);
        let root = t.info(ROOT);
        assert_eq!(root.items, 200_000);
        assert_eq!(root.disk, 4096 + 100_000 * 8192);
        let mid = t.info(path[50_000]);
        assert_eq!(mid.items, 2 * (100_000 - 50_000) - 1);
    }

    #[test]
    fn hide_and_unhide_keep_totals_also_while_the_walk_adds_below() {
        let t = tree();
        let a = t.dir(ROOT, b"a", &dirf(2));
        let b = t.dir(a, b"b", &dirf(3));
        let mut batch = Batch::default();
        batch.push(b"x", &file(4, 8192), true, 0);
        t.add(b, &batch);
        let before = t.info(ROOT);
        t.hide(&[a]);
        assert_eq!(t.info(ROOT).disk, 4096);
        assert_eq!(t.info(ROOT).items, 0);
        assert!(t.list(ROOT, &Query::default()).is_empty());
        // The walk goes on below the hidden directory.
        let mut more = Batch::default();
        more.push(b"y", &file(5, 4096), true, 0);
        t.add(b, &more);
        t.finished(b, false);
        t.finished(a, false);
        assert_eq!(t.info(ROOT).disk, 4096);
        t.unhide(&[a]);
        let after = t.info(ROOT);
        assert_eq!(after.disk, before.disk + 4096);
        assert_eq!(after.items, before.items + 1);
    }

    #[test]
    fn forgetting_below_a_directory_empties_it_for_a_rescan() {
        let t = tree();
        let a = t.dir(ROOT, b"a", &dirf(2));
        let mut batch = Batch::default();
        batch.push(b"x", &file(4, 8192), true, 0);
        t.add(a, &batch);
        t.finished(a, true);
        t.forget_below(a);
        let ai = t.info(a);
        assert_eq!((ai.disk, ai.items), (4096, 0));
        assert!(!ai.has(flag::DONE) && !ai.has(flag::CANDIDATE));
        assert_eq!(t.info(ROOT).disk, 8192);
        assert!(t.list(a, &Query::default()).is_empty());
    }

    #[test]
    fn lists_sort_filter_and_break_ties_by_name() {
        let t = tree();
        let mut b = Batch::default();
        b.push(b"beta", &file(3, 4096), true, 0);
        b.push(b"Alpha", &file(4, 4096), true, 0);
        b.push(b"gamma", &file(5, 16384), true, 0);
        t.add(ROOT, &b);
        let names = |q: &Query| -> Vec<String> {
            t.infos(&t.list(ROOT, q))
                .into_iter()
                .map(|i| String::from_utf8(i.name).unwrap())
                .collect()
        };
        assert_eq!(names(&Query::default()), ["gamma", "Alpha", "beta"]);
        let by_name = Query {
            sort: SortBy::Name,
            descending: false,
            ..Query::default()
        };
        assert_eq!(names(&by_name), ["Alpha", "beta", "gamma"]);
        let filtered = Query {
            name: Some(b"ALP".to_vec()),
            ..Query::default()
        };
        assert_eq!(names(&filtered), ["Alpha"]);
        // mtimes are 100 + ino: only beta (103) is older than 104.
        let old = Query {
            older_than: Some(104),
            ..Query::default()
        };
        assert_eq!(names(&old), ["beta"]);
    }

    #[test]
    fn the_chain_names_each_directory_with_its_device_and_inode() {
        let t = tree();
        let a = t.dir(ROOT, b"a", &dirf(2));
        let mut other = dirf(3);
        other.ident.dev = 9;
        let b = t.dir(a, b"b", &other);
        let mut batch = Batch::default();
        batch.push(b"f", &file(4, 0), true, 0);
        t.add(b, &batch);
        let f = t.list(b, &Query::default())[0];
        let chain = t.chain(f);
        let got: Vec<(Vec<u8>, u64, u64)> = chain
            .iter()
            .map(|s| (s.name.clone(), s.dev, s.ino))
            .collect();
        assert_eq!(
            got,
            vec![
                (b"".to_vec(), 7, 1),
                (b"a".to_vec(), 7, 2),
                (b"b".to_vec(), 9, 3),
                (b"f".to_vec(), 9, 4)
            ]
        );
        assert_eq!(t.path(f), Path::new("/t/a/b/f"));
        assert!(t.within(f, a) && !t.within(a, f));
    }
}
