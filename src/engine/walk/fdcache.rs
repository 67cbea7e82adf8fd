//! The bounded window of directory fds that the tree walkers (the removal engine and `scan`)
//! hold: at most `budget` at once, the shallowest closed first when a new one comes (deep
//! work needs its nearest ancestors; a closed one is reopened, verified, by its owner). Owns
//! only the bookkeeping: it never opens anything, and closes an fd only by taking it from its
//! node's slot.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, Weak};

/// A tree node that can hold a directory fd.
pub trait HoldsFd {
    /// Eviction order: `(depth, sequence)`, shallowest (then oldest) first.
    fn key(&self) -> (u32, u64);
    /// Where the node keeps its fd.
    fn slot(&self) -> &Mutex<Option<Arc<OwnedFd>>>;
}

/// The nodes holding an fd, shallowest first.
pub struct FdCache<T> {
    held: Mutex<BTreeMap<(u32, u64), Weak<T>>>,
    budget: usize,
}

impl<T: HoldsFd> FdCache<T> {
    pub fn new(budget: usize) -> Self {
        FdCache {
            held: Mutex::new(BTreeMap::new()),
            budget,
        }
    }

    /// Gives `node` its fd, closing the shallowest others' above the budget (never the one
    /// just installed).
    pub fn install(&self, node: &Arc<T>, fd: Arc<OwnedFd>) {
        *node.slot().lock().expect("fd lock") = Some(fd);
        let key = node.key();
        let mut evict = Vec::new();
        {
            let mut held = self.held.lock().expect("fd cache lock");
            held.insert(key, Arc::downgrade(node));
            while held.len() > self.budget {
                match held.pop_first() {
                    Some((k, w)) if k == key => {
                        held.insert(k, w);
                        break;
                    }
                    Some((_, w)) => evict.push(w),
                    None => break,
                }
            }
        }
        for n in evict.iter().filter_map(Weak::upgrade) {
            take(&*n);
        }
    }

    /// Holds at most `budget` from the next install on (a walk that grew: more workers,
    /// each with a few fds in flight).
    pub fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
    }

    /// Closes `node`'s fd (it is done with it).
    pub fn release(&self, node: &T) {
        take(node);
        self.held.lock().expect("fd cache lock").remove(&node.key());
    }

    /// Closes the shallowest half of the held fds (on EMFILE); false if none was held.
    pub fn shrink(&self) -> bool {
        let victims: Vec<Weak<T>> = {
            let mut held = self.held.lock().expect("fd cache lock");
            let n = held.len().div_ceil(2);
            (0..n)
                .filter_map(|_| held.pop_first().map(|(_, w)| w))
                .collect()
        };
        for n in victims.iter().filter_map(Weak::upgrade) {
            take(&*n);
        }
        !victims.is_empty()
    }
}

fn take<T: HoldsFd>(node: &T) -> Option<Arc<OwnedFd>> {
    node.slot().lock().expect("fd lock").take()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct N(u32, u64, Mutex<Option<Arc<OwnedFd>>>);
    impl HoldsFd for N {
        fn key(&self) -> (u32, u64) {
            (self.0, self.1)
        }
        fn slot(&self) -> &Mutex<Option<Arc<OwnedFd>>> {
            &self.2
        }
    }

    fn fd() -> Arc<OwnedFd> {
        Arc::new(crate::sys::dirfd::open_dir_path(std::path::Path::new("/")).unwrap())
    }

    #[test]
    fn evicts_the_shallowest_first_never_the_newest() {
        let c = FdCache::new(2);
        let nodes: Vec<Arc<N>> = [(3, 0), (1, 1), (2, 2), (0, 3)]
            .iter()
            .map(|&(d, s)| Arc::new(N(d, s, Mutex::new(None))))
            .collect();
        for n in &nodes {
            c.install(n, fd());
        }
        let held: Vec<bool> = nodes
            .iter()
            .map(|n| n.2.lock().unwrap().is_some())
            .collect();
        // Budget 2: depth 1 went when depth 2 came; depth 0 came shallowest of all, and the
        // one just installed is never evicted (the window is one over until the next).
        assert_eq!(held, [true, false, true, true]);
        assert!(c.shrink());
        c.release(&nodes[0]);
        assert!(nodes.iter().all(|n| n.2.lock().unwrap().is_none()));
        assert!(!c.shrink());
    }
}
