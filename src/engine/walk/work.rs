//! What a walk's workers do: take tasks, open each directory relative to its parent's fd and
//! check it, list it (whole or streamed), hand its names out in batches and its subdirectories
//! to the queue, keep fds within the budget, and finish a directory when its last child is
//! done, climbing the parent chain without recursion.

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rustix::fs::FileType;
use rustix::io::Errno;

use super::{
    share, FirstReads, InodeOrder, Listing, Lost, Names, Next, Node, NotOpened, Root, Streaming,
    Task, Visitor, Walk, LISTING_MOST_ORDERED,
};
use crate::sys::dirfd::{self, DirBuf, Facts};

impl<'a, V: Visitor> Walk<'a, V> {
    pub(super) fn new_node(
        &self,
        parent: Option<Arc<Node<V::Dir>>>,
        root: Arc<Root>,
        name: CString,
    ) -> Arc<Node<V::Dir>> {
        self.node(parent, root, name, share::Role::Local)
    }

    pub(super) fn node(
        &self,
        parent: Option<Arc<Node<V::Dir>>>,
        root: Arc<Root>,
        name: CString,
        share: share::Role,
    ) -> Arc<Node<V::Dir>> {
        Arc::new(Node {
            depth: parent.as_ref().map_or(0, |p| p.depth + 1),
            name: if parent.is_none() {
                root.name.clone()
            } else {
                name
            },
            parent,
            root,
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            ident: OnceLock::new(),
            fd: Mutex::new(None),
            pending: AtomicUsize::new(1),
            keep: AtomicBool::new(false),
            relists: AtomicU32::new(0),
            requeued: AtomicBool::new(false),
            unlinkers: AtomicUsize::new(0),
            share,
            data: self.visitor.dir_data(),
        })
    }

    pub(super) fn work(&self) -> V::Worker {
        let mut w = self.visitor.worker();
        let mut buf = DirBuf::new(256 * 1024);
        self.work_on(&mut w, &mut buf, &|| false);
        w
    }

    /// Takes and does tasks until the queue is done (true), or until `enough` says so after
    /// a task that left others queued (false: the walk goes on later, from the queue as it
    /// is).
    pub(super) fn work_on(
        &self,
        w: &mut V::Worker,
        buf: &mut DirBuf,
        enough: &dyn Fn() -> bool,
    ) -> bool {
        loop {
            // Enter before taking a task: a worker the gate holds back holds no work, so what
            // it may not do yet stays queued (another process of a shared walk may take it).
            if let Some(g) = &self.opts.gate {
                g.enter();
            }
            let Some(task) = self.next_task() else {
                if let Some(g) = &self.opts.gate {
                    g.leave(false);
                }
                return true;
            };
            if let Some(g) = &self.opts.gate {
                g.begin();
            }
            // Stopped by a signal: drain the queue without doing the work, keeping every
            // directory whose children were not all done.
            if crate::sys::interrupt::stopping() {
                match task {
                    Task::Dir(node) => {
                        node.keep();
                        self.finish(w, node, false);
                    }
                    Task::Batch(node, ..) | Task::Rest(node, ..) => {
                        node.keep();
                        self.child_done(w, node);
                    }
                    Task::Returned(r) => self.returned(w, r),
                }
            } else {
                match task {
                    Task::Dir(node) => self.visit_dir(w, node, buf),
                    Task::Batch(node, listing, from, to) => {
                        // Counted in `node.unlinkers` when it was taken (`next_task`).
                        match self.fd_of(&node) {
                            Ok(fd) => self.batch(w, &node, &fd, &listing, (from, to), false),
                            Err(lost) => self.visitor.lost(node.path(), lost, &node),
                        }
                        self.unlinked(&node);
                        self.child_done(w, node);
                    }
                    Task::Returned(r) => self.returned(w, r),
                    Task::Rest(node, fd, read) => match self.streams(&node) {
                        Some(stream) => self.visit_streamed(w, node, fd, buf, &stream, read),
                        None => self.list(w, node, fd, buf, read),
                    },
                }
            }
            if let Some(g) = &self.opts.gate {
                g.leave(true);
            }
            self.queue.done();
            // Only with work left to grow for: the last task of a small walk ends it here.
            if self.queue.len() > 0 && enough() {
                return false;
            }
        }
    }

    /// The next task for this worker: the newest, but not a batch of a directory where as
    /// many as `PerDir` allows unlink already (that batch waits for one of them; this worker
    /// takes other work, or waits for it). A batch taken counts as one more unlinker of its
    /// directory (`unlinked` when done).
    pub(super) fn next_task(&self) -> Option<Task<V::Dir>> {
        self.queue.pop_if(
            |t| match t {
                Task::Batch(node, ..) => {
                    // Under the queue's lock: no other worker takes a batch meanwhile.
                    let admitted = self.per_dir.admits(node.unlinkers.load(Ordering::SeqCst));
                    if admitted {
                        node.unlinkers.fetch_add(1, Ordering::SeqCst);
                    }
                    admitted
                }
                _ => true,
            },
            || self.per_dir.waits(),
        )
    }

    /// A worker is done unlinking in `node`: one waiting for its batches may take one.
    pub(super) fn unlinked(&self, node: &Node<V::Dir>) {
        node.unlinkers.fetch_sub(1, Ordering::SeqCst);
        self.queue.wake();
    }

    /// The fd of the directory holding `node` (the root's base for a root).
    pub fn parent_fd(&self, node: &Arc<Node<V::Dir>>) -> Result<Arc<OwnedFd>, Lost> {
        match &node.parent {
            None => Ok(node.root.base.clone()),
            Some(p) => self.fd_of(p),
        }
    }

    /// `node`'s own fd, reopened (and verified) if it was dropped.
    pub fn fd_of(&self, node: &Arc<Node<V::Dir>>) -> Result<Arc<OwnedFd>, Lost> {
        if let Some(fd) = node.held_fd() {
            return Ok(fd);
        }
        // Walk up to the nearest ancestor that holds an fd (or the root's base), then down.
        let mut chain = vec![node.clone()];
        let mut fd = loop {
            let last = chain.last().expect("chain is never empty");
            match &last.parent {
                None => break last.root.base.clone(),
                Some(p) => match p.held_fd() {
                    Some(fd) => break fd,
                    None => chain.push(p.clone()),
                },
            }
        };
        while let Some(n) = chain.pop() {
            let opened = self.open_at(&fd, &n.name).map_err(Lost::Os)?;
            let facts = dirfd::fstat(&opened).map_err(Lost::Os)?;
            if n.ident.get() != Some(&facts.ident) {
                return Err(Lost::Changed);
            }
            fd = Arc::new(opened);
            if n.pending.load(Ordering::SeqCst) > 0 {
                self.fds.install(&n, fd.clone());
            }
        }
        Ok(fd)
    }

    /// Before removing `node` itself: if its parent's fd was dropped, reach the parent through
    /// `..` of `node`'s held fd (one open, verified), so climbing a deep chain stays linear.
    pub fn prefetch_parent(&self, node: &Arc<Node<V::Dir>>) {
        if let (Some(p), Some(own)) = (&node.parent, node.held_fd()) {
            if p.held_fd().is_none() {
                if let (Ok(up), Some(expect)) = (dirfd::open_dir_at(&*own, c".."), p.ident.get()) {
                    if dirfd::fstat(&up).map(|f| f.ident).ok() == Some(*expect) {
                        self.fds.install(p, Arc::new(up));
                    }
                }
            }
        }
    }

    /// Lets go of `node`'s fd (it is about to be removed, or is finished).
    pub fn release(&self, node: &Node<V::Dir>) {
        self.fds.release(node);
    }

    /// From `Visitor::finished`: lists `node` again (whole, before any of it is handed out)
    /// and finishes it once more after that, unless it was listed again `max` times already
    /// (false then). For a directory that is not empty when it should be: entries were
    /// skipped by a listing that shifted under the removals (some network file systems'
    /// directory cookies), or were added meanwhile.
    pub fn relist(&self, node: &Arc<Node<V::Dir>>, max: u32) -> bool {
        if node.relists.fetch_add(1, Ordering::SeqCst) >= max {
            return false;
        }
        // Nothing of it is pending (it is being finished): the new listing is its one child.
        node.pending.store(1, Ordering::SeqCst);
        node.requeued.store(true, Ordering::SeqCst);
        self.queue.push(Task::Dir(node.clone()));
        true
    }

    /// Whether `node` was queued to be listed again (once; clears it).
    pub(super) fn take_requeued(&self, node: &Node<V::Dir>) -> bool {
        node.requeued.swap(false, Ordering::SeqCst)
    }

    /// `openat(O_NOFOLLOW|O_DIRECTORY)`, dropping held fds and retrying when out of them.
    pub(super) fn open_at(&self, parent: &OwnedFd, name: &CStr) -> Result<OwnedFd, Errno> {
        loop {
            let opened = if self.opts.noatime {
                dirfd::open_dir_at_noatime(parent, name)
            } else {
                dirfd::open_dir_at(parent, name)
            };
            match opened {
                Err(Errno::MFILE) | Err(Errno::NFILE) if self.fds.shrink() => continue,
                other => return other,
            }
        }
    }

    /// Adds a subdirectory `name` of `node` to the walk.
    pub fn push_subdir(&self, node: &Arc<Node<V::Dir>>, name: CString) {
        node.pending.fetch_add(1, Ordering::SeqCst);
        let child = self.new_node(Some(node.clone()), node.root.clone(), name);
        self.queue.push(Task::Dir(child));
    }

    /// Opens, checks, lists and hands out one directory; it is finished in `child_done` once
    /// its last child is.
    pub(super) fn visit_dir(&self, w: &mut V::Worker, node: Arc<Node<V::Dir>>, buf: &mut DirBuf) {
        let parent = match self.parent_fd(&node) {
            Ok(fd) => fd,
            Err(lost) => {
                let path = node.path();
                self.visitor.lost(path, lost, &node);
                node.keep();
                return self.finish(w, node, false);
            }
        };
        let opened = self.open_checked(w, &node, &parent);
        // Hold no fd of the parent past this point: the ascent may remove it, and a removed
        // directory that is still open keeps its dentry (and a chain of them) alive, making
        // every later rmdir walk it (quadratic on deep trees).
        drop(parent);
        let fd = match opened {
            Ok(fd) => Arc::new(fd),
            Err(Next::Done | Next::Retry) => return self.finish(w, node, false),
            Err(Next::Keep) => {
                node.keep();
                return self.finish(w, node, false);
            }
        };
        self.fds.install(&node, fd.clone());
        match self.streams(&node) {
            Some(stream) => self.visit_streamed(w, node, fd, buf, &stream, Listing::default()),
            None => self.list(w, node, fd, buf, Listing::default()),
        }
    }

    /// How `node` is listed: streamed (`WalkOptions::stream`) unless shared (other processes take
    /// whole batches) or listed again (a listing that shifted under the removals is read
    /// whole this time).
    pub(super) fn streams(&self, node: &Node<V::Dir>) -> Option<Arc<Streaming>> {
        self.opts
            .stream
            .clone()
            .filter(|_| self.sharing.is_none() && node.relists.load(Ordering::SeqCst) == 0)
    }

    /// Reads `node` (open as `fd`) whole, after `all` (what was read of it before), and hands
    /// its entries out. On the calling thread alone (`run_growing`) it reads a piece at a
    /// time and, once the walk proved big, stops and queues the rest as a task of its own
    /// (read by the pool, streamed where the pool streams).
    pub(super) fn list(
        &self,
        w: &mut V::Worker,
        node: Arc<Node<V::Dir>>,
        fd: Arc<OwnedFd>,
        buf: &mut DirBuf,
        mut all: Listing,
    ) {
        let before = all.entries.len();
        // On the calling thread alone, a directory's first read is timed (`FirstReads`).
        let mut first =
            (self.proof.is_some() && before == 0 && !all.continued).then(std::time::Instant::now);
        let mut subdirs: Vec<CString> = Vec::new();
        let order = InodeOrder::default();
        for &(ino, ..) in &all.entries {
            order.saw(ino);
        }
        let mut take = |name: &CStr, ftype: FileType, ino: u64| {
            if ftype == FileType::Directory {
                subdirs.push(name.to_owned());
            } else {
                order.saw(ino);
                all.push(ino, name, ftype);
            }
        };
        // `rest`: the walk proved big on the calling thread; the pool reads on. `part`: this
        // part's entries are handed out before the rest is read (`listing_most`).
        let (mut rest, mut part) = (false, false);
        let mut most = self.opts.listing_most;
        // Entries read before (a walk that grew) count in this part.
        let mut got = before;
        let listed = match self.proof {
            None if most == usize::MAX => dirfd::for_each_entry(&fd, buf, &mut take).map(|()| 0),
            _ => loop {
                let mut read = 0u64;
                // Timed to its first name (the `getdents` alone, not the handling after), and
                // asking one page (`FirstReads::BYTES`).
                let bytes = if first.is_some() {
                    FirstReads::BYTES
                } else {
                    usize::MAX
                };
                let piece = dirfd::read_piece(&fd, buf, bytes, |n, t, i| {
                    if let Some(t0) = first.take() {
                        self.first_read(t0.elapsed());
                    }
                    read += 1;
                    take(n, t, i)
                });
                if let Some(t0) = first.take() {
                    self.first_read(t0.elapsed());
                }
                match piece {
                    Ok(true) => {
                        self.listed.fetch_add(read, Ordering::Relaxed);
                        if self.proof.is_some() && self.proved() {
                            rest = true;
                            break Ok(1);
                        }
                        got += read as usize;
                        if got >= most {
                            // A listing in inode order reads on (`LISTING_MOST_ORDERED`).
                            if most < LISTING_MOST_ORDERED && order.ordered() {
                                most = LISTING_MOST_ORDERED;
                            } else {
                                part = true;
                                break Ok(1);
                            }
                        }
                    }
                    Ok(false) => {
                        self.listed.fetch_add(read, Ordering::Relaxed);
                        break Ok(1);
                    }
                    Err(e) => break Err(e),
                }
            },
        };
        // Counted piece by piece above, else here.
        if listed == Ok(0) {
            let read = all.entries.len() - before + subdirs.len();
            self.listed.fetch_add(read as u64, Ordering::Relaxed);
        }
        match listed {
            // Removed by someone else while we read it: nothing left to do here.
            Ok(_) | Err(Errno::NOENT) => {}
            Err(e) => {
                node.keep();
                self.visitor.list_failed(&node, e);
            }
        }
        // Subdirectories go to the queue first so other workers can start on them.
        for name in subdirs {
            if !self.visitor.skip_subdir(w, &node, &name) {
                self.push_subdir(&node, name);
            }
        }
        if rest {
            // The listing goes on in a task of its own (it holds the listing's place in
            // `pending`).
            self.queue.push(Task::Rest(node, fd, all));
            return;
        }
        let n = all.entries.len();
        self.visitor.listed(w, &node, n);
        if n >= self.opts.sort_min {
            // Ascending inode order, as GNU rm: neighbouring inodes share inode-table blocks.
            let mut both: Vec<_> = all.entries.drain(..).zip(all.types.drain(..)).collect();
            both.sort_unstable_by_key(|e| e.0 .0);
            (all.entries, all.types) = both.into_iter().unzip();
        }
        let size = self.opts.batch.max(1);
        let partial = part || all.continued;
        let listing = Arc::new(all);
        if part {
            // The listing goes on in a task of its own once this part's batches are taken
            // (the queue is LIFO), with a place of its own in `pending`.
            node.pending.fetch_add(1, Ordering::SeqCst);
            let more = Listing {
                continued: true,
                ..Listing::default()
            };
            self.queue.push(Task::Rest(node.clone(), fd.clone(), more));
        }
        // The queue is LIFO: push the highest batches first, keep the lowest for this worker,
        // which unlinks in it first (counted before any other can take a batch).
        let batches = n.div_ceil(size);
        let shared = batches > 1;
        if shared {
            node.unlinkers.fetch_add(1, Ordering::SeqCst);
        }
        for b in (1..batches).rev() {
            node.pending.fetch_add(1, Ordering::SeqCst);
            let range = (b * size, ((b + 1) * size).min(n));
            self.queue
                .push(Task::Batch(node.clone(), listing.clone(), range.0, range.1));
        }
        if n > 0 {
            let few = batches == 1 && !partial;
            self.batch(w, &node, &fd, &listing, (0, size.min(n)), few);
        }
        if shared {
            self.unlinked(&node);
        }
        drop(fd);
        self.child_done(w, node);
    }

    /// `visit_dir` for `WalkOptions::stream`: the directory is read one `getdents` at a time and
    /// this worker does each piece's entries as soon as it is read, so a name's entry from
    /// the listing is still cached when it is unlinked. A directory that fits in the first
    /// piece is done as one batch, as `visit_dir` does it (its entries are then "few").
    pub(super) fn visit_streamed(
        &self,
        w: &mut V::Worker,
        node: Arc<Node<V::Dir>>,
        fd: Arc<OwnedFd>,
        buf: &mut DirBuf,
        stream: &Streaming,
        read: Listing,
    ) {
        // What was read before (a walk that grew) is the first piece.
        let mut piece = read;
        let mut pieces = 0usize;
        let mut total = 0usize;
        loop {
            let mut subdirs: Vec<CString> = Vec::new();
            let mut next = Listing::default();
            let read = dirfd::read_piece(&fd, buf, stream.bytes(), |name, ftype, ino| {
                if ftype == FileType::Directory {
                    subdirs.push(name.to_owned());
                } else {
                    next.push(ino, name, ftype);
                }
            });
            self.listed.fetch_add(
                (next.entries.len() + subdirs.len()) as u64,
                Ordering::Relaxed,
            );
            for name in subdirs {
                if !self.visitor.skip_subdir(w, &node, &name) {
                    self.push_subdir(&node, name);
                }
            }
            let more = match read {
                Ok(more) => more,
                // Removed by someone else while we read it: nothing left to do here.
                Err(Errno::NOENT) => false,
                Err(e) => {
                    node.keep();
                    self.visitor.list_failed(&node, e);
                    false
                }
            };
            if !more || crate::sys::interrupt::stopping() {
                break;
            }
            // The piece before this one is done now: every piece but the last is done one
            // read later (so a directory that fits in one piece is done whole, as "few").
            if !piece.entries.is_empty() {
                pieces += 1;
                total += piece.entries.len();
                let n = piece.entries.len();
                self.batch(w, &node, &fd, &piece, (0, n), false);
            }
            piece = next;
        }
        let n = piece.entries.len();
        if crate::sys::interrupt::stopping() {
            // What was not read or done stays (and so does the directory).
            node.keep();
        } else if n > 0 {
            let few = pieces == 0 && n <= self.opts.batch.max(1);
            total += n;
            self.visitor.listed(w, &node, total);
            self.batch(w, &node, &fd, &piece, (0, n), few);
        } else {
            self.visitor.listed(w, &node, total);
        }
        drop(fd);
        self.child_done(w, node);
    }

    /// The visitor's work on a batch; names that turn out to be directories join the walk.
    pub(super) fn batch(
        &self,
        w: &mut V::Worker,
        node: &Arc<Node<V::Dir>>,
        fd: &OwnedFd,
        listing: &Listing,
        range: (usize, usize),
        few: bool,
    ) {
        let names = Names { listing, range };
        for d in self.visitor.entries(w, node, fd, names, few, self) {
            self.push_subdir(node, d);
        }
    }

    /// Opens `node` under `parent` without following symlinks and checks it is the expected
    /// root or on the root's mount; otherwise asks the visitor what to do.
    pub(super) fn open_checked(
        &self,
        w: &mut V::Worker,
        node: &Arc<Node<V::Dir>>,
        parent: &OwnedFd,
    ) -> Result<OwnedFd, Next> {
        for _attempt in 0..8 {
            let why = match self.open_at(parent, &node.name) {
                Ok(fd) => {
                    let facts = match dirfd::fstat(&fd) {
                        Ok(f) => f,
                        Err(e) => {
                            return Err(self.visitor.not_opened(w, parent, node, NotOpened::Os(e)))
                        }
                    };
                    let root = &node.root;
                    let why = if node.parent.is_none() {
                        if facts.ident != root.expect {
                            Some(NotOpened::Changed)
                        } else {
                            let _ = root.mnt_id.set(facts.mnt_id);
                            None
                        }
                    } else if node.ident.get().is_some_and(|id| *id != facts.ident) {
                        // Listed again, and no longer the directory it was.
                        Some(NotOpened::Changed)
                    } else {
                        let same_mount = self.same_mount(root, &facts);
                        (!same_mount && !self.opts.cross_mounts).then_some(NotOpened::OtherMount)
                    };
                    match why {
                        None => {
                            let _ = node.ident.set(facts.ident);
                            if self.is_subvolume(node, parent, &facts)
                                && self.visitor.subvolume(w, parent, node, &fd, &facts)
                            {
                                return Err(Next::Done);
                            }
                            self.visitor.opened(w, node, &facts);
                            self.visitor.opened_fd(w, node, &fd);
                            return Ok(fd);
                        }
                        Some(why) => why,
                    }
                }
                Err(Errno::NOENT) => return Err(Next::Done),
                // Replaced by a symlink or a file: never followed.
                Err(Errno::LOOP) | Err(Errno::NOTDIR) => NotOpened::NotDir,
                Err(e) => NotOpened::Os(e),
            };
            match self.visitor.not_opened(w, parent, node, why) {
                Next::Retry => continue,
                other => return Err(other),
            }
        }
        Err(Next::Keep)
    }

    /// Whether a directory with `facts` belongs to `root`'s mount: by mount id (where the
    /// kernel tells it) and, unless `WalkOptions::subvolumes`, also by device.
    pub(super) fn same_mount(&self, root: &Root, facts: &Facts) -> bool {
        let same_mnt = root.mnt_id.get() == Some(&facts.mnt_id);
        if self.opts.subvolumes && facts.mnt_id != 0 {
            same_mnt
        } else {
            same_mnt && facts.ident.dev == root.expect.dev
        }
    }

    /// Whether `node` (just opened, with `facts`) is on another device than its parent
    /// `parent` but on the same mount: the root of a subvolume of that file system.
    pub(super) fn is_subvolume(
        &self,
        node: &Arc<Node<V::Dir>>,
        parent: &OwnedFd,
        facts: &Facts,
    ) -> bool {
        if !self.opts.subvolumes || facts.mnt_id == 0 {
            return false;
        }
        let (parent_dev, parent_mnt) = match node.parent.as_ref().and_then(|p| p.ident()) {
            Some(p) => (p.dev, node.root.mnt_id()),
            // A root: its base's own facts (once per root).
            None => match dirfd::fstat(parent) {
                Ok(p) => (p.ident.dev, Some(p.mnt_id)),
                Err(_) => return false,
            },
        };
        parent_dev != facts.ident.dev && parent_mnt == Some(facts.mnt_id)
    }

    /// One child (or the listing itself) of `node` is finished; finish it if it was the last.
    pub(super) fn child_done(&self, w: &mut V::Worker, node: Arc<Node<V::Dir>>) {
        if node.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.finish(w, node, true);
        }
    }

    /// Finishes directories bottom-up, iteratively (no recursion, whatever the depth): the
    /// visitor's `finished` for those that were walked (`walked`), then their parents' count.
    pub(super) fn finish(&self, w: &mut V::Worker, mut node: Arc<Node<V::Dir>>, mut walked: bool) {
        loop {
            if node.kept() {
                if let Some(p) = &node.parent {
                    p.keep();
                }
            }
            if let share::Role::Imported(from) = &node.share {
                // Work of another walk: finished here, reported there (its parent is theirs).
                return self.finish_imported(w, &node, from, walked);
            }
            if walked {
                self.visitor.finished(w, &node, self);
                if self.take_requeued(&node) {
                    // Listed again: it is finished (and its parent told) after that.
                    return;
                }
            }
            self.fds.release(&node);
            let Some(parent) = node.parent.clone() else {
                self.root_done(&node);
                return;
            };
            drop(node);
            if parent.pending.fetch_sub(1, Ordering::SeqCst) != 1 {
                return;
            }
            node = parent;
            walked = true;
        }
    }
}
