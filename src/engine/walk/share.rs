//! One walk shared by several processes (the ranks of `spread/`): a process hands queued
//! directories (and, where allowed, batches of a large directory's entries) to another by the
//! names and inode numbers that lead to them from the root, and gets each back finished, with
//! whether something in it failed and what it adds to its parent. A handed-over directory is
//! reached again from the receiver's own open root, one verified `openat(O_NOFOLLOW)` at a time
//! (the same `fd_of` as a dropped fd), so no symlink is ever followed and a directory swapped
//! in between is refused as changed. A process never removes a directory it did not list:
//! the parent of handed-over work stays with the process that handed it over.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use super::{Listing, NoSuchRoot, Node, Root, Task, Visitor, Walk, WalkOptions};
use crate::sys::dirfd::Ident;

/// Work handed from one walk to another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handoff {
    /// The sender's name for it (it comes back with `Event::Done`).
    pub token: u64,
    /// Index of the root it is under.
    pub root: usize,
    /// Names and inode numbers of the directories from below the root down to the one that
    /// holds the work (for a batch: down to the directory itself).
    pub chain: Vec<(CString, u64)>,
    pub work: Work,
}

/// What a handoff asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Work {
    /// The subdirectory of this name of the chain's last directory: walk it, finish it.
    Dir(CString),
    /// These entries of the chain's last directory (one directory's batch).
    Batch(Vec<CString>),
}

/// What a shared walk tells its transport.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// Work handed over by walk `to` as `token` is finished here; `kept`: something in it
    /// could not be removed (its parent must stay); `summary` from `Visitor::summary`.
    Done {
        to: usize,
        token: u64,
        kept: bool,
        summary: Vec<u8>,
    },
    /// Root `index` of this walk is finished: all its work is done, wherever it was done.
    RootDone(usize),
}

/// What a transport may do with a shared walk while it runs.
pub trait Shared: Sync {
    /// Takes up to half of the queued work (at most `max` pieces), oldest (shallowest) first,
    /// out of this walk, for another one.
    fn export(&self, max: usize) -> Vec<Handoff>;
    /// Queues work handed over by walk `from`. Fails if it names a root this walk lacks.
    fn import(&self, from: usize, h: Handoff) -> Result<(), NoSuchRoot>;
    /// Work exported as `token` came back finished.
    fn returned(&self, token: u64, kept: bool, summary: Vec<u8>);
    /// Tasks waiting in the queue (none: idle workers would take more).
    fn queued(&self) -> usize;
    /// Workers this walk lets work at once now (its gate's, else all its threads): how much
    /// handed-over work it can start at once.
    fn capacity(&self) -> usize;
}

/// How a node of a shared walk relates to the others.
pub(super) enum Role {
    /// This walk's own.
    Local,
    /// Stands for a directory another walk holds (an ancestor of imported work): only ever a
    /// parent, never finished here.
    Stub,
    /// Work of another walk: finished here, reported there.
    Imported(From),
}

pub(super) struct From {
    rank: usize,
    token: u64,
    batch: bool,
}

/// Exported work: the node (the directory, or the one whose batch it was), and whether it
/// was a batch.
type Exported<D> = (Arc<Node<D>>, bool);

/// A shared walk's bookkeeping.
pub(super) struct Sharing<D> {
    /// Exported work by token: the node (the directory, or the one whose batch it was).
    exports: Mutex<HashMap<u64, Exported<D>>>,
    next: AtomicU64,
    events: mpsc::Sender<Event>,
    /// Whether batches of one directory may go to other walks (not only whole directories).
    batches: bool,
}

/// Exported work that came back, for a worker to finish.
pub(super) struct Returned<D> {
    node: Arc<Node<D>>,
    batch: bool,
    kept: bool,
    summary: Vec<u8>,
}

/// Runs a walk shared with others: `drive` runs on the calling thread (MPI's thread) with the
/// walk and its events, while the workers run; the workers keep waiting for work until `drive`
/// returns. `start`: this walk begins with the roots queued (one walk of all, rank 0); the
/// others only receive work. `batches`: see `Sharing`.
pub fn run_shared<V: Visitor, R>(
    visitor: &V,
    roots: Vec<Root>,
    opts: &WalkOptions,
    start: bool,
    batches: bool,
    drive: impl FnOnce(&dyn Shared, &mpsc::Receiver<Event>) -> R,
) -> (Vec<V::Worker>, R) {
    let (events, received) = mpsc::channel();
    let sharing = Sharing {
        exports: Mutex::new(HashMap::new()),
        next: AtomicU64::new(1),
        events,
        batches,
    };
    let walk = Walk::new(visitor, roots, opts, Some(sharing));
    // Held while `drive` runs: the workers wait for imports instead of ending.
    walk.queue.hold();
    if start {
        walk.push_roots();
    }
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..walk.opts.threads.max(1))
            .map(|_| s.spawn(|| walk.work()))
            .collect();
        let r = drive(&walk, &received);
        walk.queue.done();
        let states = workers
            .into_iter()
            .map(|w| w.join().expect("walk worker panicked"))
            .collect();
        (states, r)
    })
}

impl<V: Visitor> Walk<'_, V> {
    /// A node with a known identity (a stub, or imported work of a batch).
    fn placed(
        &self,
        parent: Option<Arc<Node<V::Dir>>>,
        root: &Arc<Root>,
        name: CString,
        ident: Ident,
        role: Role,
    ) -> Arc<Node<V::Dir>> {
        let node = self.node(parent, root.clone(), name, role);
        let _ = node.ident.set(ident);
        node
    }

    /// An imported node is finished: `finished` for a directory that was walked here (it is
    /// removed here), then the event for its sender.
    pub(super) fn finish_imported(
        &self,
        w: &mut V::Worker,
        node: &Arc<Node<V::Dir>>,
        from: &From,
        walked: bool,
    ) {
        if walked && !from.batch {
            self.visitor.finished(w, node, self);
            if self.take_requeued(node) {
                // Listed again: reported once it is finished after that.
                return;
            }
        }
        self.fds.release(node);
        // Kept itself, or its own removal failed (the visitor keeps the parent then).
        let kept = node.kept() || node.parent.as_ref().is_some_and(|p| p.kept());
        let summary = if from.batch {
            Vec::new()
        } else {
            self.visitor.summary(node)
        };
        self.send(Event::Done {
            to: from.rank,
            token: from.token,
            kept,
            summary,
        });
    }

    /// A root of this walk finished (never a stub: those never finish).
    pub(super) fn root_done(&self, node: &Node<V::Dir>) {
        if matches!(node.share, Role::Local) {
            self.send(Event::RootDone(node.root.index));
        }
    }

    fn send(&self, e: Event) {
        if let Some(sh) = &self.sharing {
            // The receiver lives as long as the walk's driver; after it, nothing is sent.
            let _ = sh.events.send(e);
        }
    }

    /// Work that came back: as if the child had finished here.
    pub(super) fn returned(&self, w: &mut V::Worker, r: Returned<V::Dir>) {
        if r.kept {
            r.node.keep();
        }
        if r.batch {
            self.child_done(w, r.node);
        } else {
            self.visitor.absorb(w, &r.node, &r.summary);
            self.finish(w, r.node, false);
        }
    }

    /// Names and inode numbers from below the root down to `node` (included).
    fn chain(node: &Arc<Node<V::Dir>>) -> Option<Vec<(CString, u64)>> {
        let mut chain = Vec::new();
        let mut n = node;
        while let Some(p) = &n.parent {
            chain.push((n.name.clone(), n.ident()?.ino));
            n = p;
        }
        chain.reverse();
        Some(chain)
    }
}

impl<V: Visitor> Shared for Walk<'_, V> {
    fn export(&self, max: usize) -> Vec<Handoff> {
        let Some(sh) = &self.sharing else {
            return Vec::new();
        };
        let exportable = |t: &Task<V::Dir>| match t {
            // Not a root (every walk opens those itself), only below opened directories, and
            // not work this walk received and has not started: what comes back for it would
            // be added to its parent here, which is a stand-in (a scan's sums were lost so).
            // Only work on the root's device: the chain names directories by inode alone, and
            // the other walk places them on its root's device (work inside a subvolume that
            // is walked stays here).
            Task::Dir(n) => {
                matches!(n.share, Role::Local)
                    && n.parent
                        .as_ref()
                        .and_then(|p| p.ident())
                        .is_some_and(|p| p.dev == n.root.expect.dev)
            }
            Task::Batch(n, ..) => {
                sh.batches && n.ident().is_some_and(|i| i.dev == n.root.expect.dev)
            }
            // The rest of a listing this walk began (a shared walk never begins one so:
            // `run_growing` walks alone).
            Task::Returned(_) | Task::Rest(..) => false,
        };
        let taken = self
            .queue
            .take_oldest(exportable, |n| n.div_ceil(2).min(max));
        let mut out = Vec::with_capacity(taken.len());
        for task in taken {
            let token = sh.next.fetch_add(1, Ordering::Relaxed);
            let (node, chain, work, batch) = match task {
                Task::Dir(n) => {
                    let parent = n.parent.clone().expect("exportable: has a parent");
                    let chain = Self::chain(&parent).expect("exportable: opened");
                    let name = n.name.clone();
                    (n, chain, Work::Dir(name), false)
                }
                Task::Batch(n, listing, from, to) => {
                    let chain = Self::chain(&n).expect("exportable: opened");
                    let names = (from..to).map(|i| listing.name(i).to_owned()).collect();
                    (n, chain, Work::Batch(names), true)
                }
                Task::Returned(_) | Task::Rest(..) => unreachable!("not exportable"),
            };
            out.push(Handoff {
                token,
                root: node.root.index,
                chain,
                work,
            });
            sh.exports
                .lock()
                .expect("exports lock")
                .insert(token, (node, batch));
            // Taken out of the queue without running: no longer outstanding here (the hold
            // keeps the workers waiting).
            self.queue.done();
        }
        out
    }

    fn import(&self, from: usize, h: Handoff) -> Result<(), NoSuchRoot> {
        let root = self
            .roots
            .get(h.root)
            .ok_or(NoSuchRoot {
                root: h.root,
                roots: self.roots.len(),
            })?
            .clone();
        let dev = root.expect.dev;
        let mut dir = self.placed(None, &root, root.name.clone(), root.expect, Role::Stub);
        let n = h.chain.len();
        let is_batch = matches!(h.work, Work::Batch(_));
        let imported = Role::Imported(From {
            rank: from,
            token: h.token,
            batch: is_batch,
        });
        let mut imported = Some(imported);
        if is_batch && n == 0 {
            // A batch of the root directory itself.
            let role = imported.take().expect("once");
            dir = self.placed(None, &root, root.name.clone(), root.expect, role);
        }
        for (i, (name, ino)) in h.chain.into_iter().enumerate() {
            let role = if is_batch && i + 1 == n {
                imported.take().expect("once")
            } else {
                Role::Stub
            };
            dir = self.placed(Some(dir), &root, name, Ident { dev, ino }, role);
        }
        match h.work {
            Work::Dir(name) => {
                let role = imported.take().expect("once");
                let node = self.node(Some(dir), root, name, role);
                self.queue.push(Task::Dir(node));
            }
            Work::Batch(names) => {
                let mut listing = Listing::default();
                for name in &names {
                    listing.push(0, name, rustix::fs::FileType::Unknown);
                }
                let len = names.len();
                // Its one pending count (the listing's) is this batch's.
                self.queue.push(Task::Batch(dir, Arc::new(listing), 0, len));
            }
        }
        Ok(())
    }

    fn returned(&self, token: u64, kept: bool, summary: Vec<u8>) {
        let Some(sh) = &self.sharing else {
            return;
        };
        let Some((node, batch)) = sh.exports.lock().expect("exports lock").remove(&token) else {
            return;
        };
        self.queue.push(Task::Returned(Returned {
            node,
            batch,
            kept,
            summary,
        }));
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }

    fn capacity(&self) -> usize {
        let threads = self.opts.threads.max(1);
        self.opts
            .gate
            .as_ref()
            .map_or(threads, |g| g.allowed().min(threads))
    }
}
