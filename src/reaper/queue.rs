//! The `--watch` supervisor's queue of trashes due for a pass: one queue per user, served in
//! turn (one trash of each user with work before a second of any), so a user with many
//! trashes, or trashes that change all the time, delays the others by one pass at most per
//! turn. Owns the order only; the supervisor decides what is due and how many passes run.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};

/// A trash waiting for its pass, with what the supervisor noted when it queued it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Due<T> {
    pub uid: u32,
    pub path: PathBuf,
    pub note: T,
}

/// Trashes waiting for a pass, fair across users.
#[derive(Debug)]
pub struct Fair<T> {
    /// Users with something queued, in the order they are served.
    turn: VecDeque<(u32, VecDeque<Due<T>>)>,
    queued: HashSet<PathBuf>,
}

impl<T> Default for Fair<T> {
    fn default() -> Self {
        Fair {
            turn: VecDeque::new(),
            queued: HashSet::new(),
        }
    }
}

impl<T> Fair<T> {
    /// Queues `due` unless its trash is queued already.
    pub fn push(&mut self, due: Due<T>) {
        if !self.queued.insert(due.path.clone()) {
            return;
        }
        match self.turn.iter_mut().find(|(u, _)| *u == due.uid) {
            Some((_, q)) => q.push_back(due),
            None => self.turn.push_back((due.uid, VecDeque::from([due]))),
        }
    }

    /// The next trash to work on: the oldest of the user whose turn it is (who then goes to
    /// the back of the line).
    pub fn take_next(&mut self) -> Option<Due<T>> {
        let (uid, mut q) = self.turn.pop_front()?;
        let due = q.pop_front()?;
        if !q.is_empty() {
            self.turn.push_back((uid, q));
        }
        self.queued.remove(&due.path);
        Some(due)
    }

    /// Puts `due` back first in line (its pass could not start).
    pub fn put_back(&mut self, due: Due<T>) {
        if !self.queued.insert(due.path.clone()) {
            return;
        }
        match self.turn.iter().position(|(u, _)| *u == due.uid) {
            Some(i) => {
                let (uid, mut q) = self.turn.remove(i).expect("found");
                q.push_front(due);
                self.turn.push_front((uid, q));
            }
            None => self.turn.push_front((due.uid, VecDeque::from([due]))),
        }
    }

    pub fn contains(&self, path: &Path) -> bool {
        self.queued.contains(path)
    }

    pub fn len(&self) -> usize {
        self.queued.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn due(uid: u32, p: &str) -> Due<()> {
        Due {
            uid,
            path: PathBuf::from(p),
            note: (),
        }
    }

    #[test]
    fn users_are_served_in_turn() {
        let mut q = Fair::default();
        for i in 0..5 {
            q.push(due(1, &format!("/a{i}")));
        }
        q.push(due(2, "/b"));
        q.push(due(3, "/c"));
        q.push(due(1, "/a0"));
        assert_eq!(q.len(), 7);
        let order: Vec<String> = std::iter::from_fn(|| q.take_next())
            .map(|d| d.path.to_string_lossy().into_owned())
            .collect();
        assert_eq!(order, ["/a0", "/b", "/c", "/a1", "/a2", "/a3", "/a4"]);
        assert!(q.is_empty());
    }

    #[test]
    fn one_put_back_is_next() {
        let mut q = Fair::default();
        q.push(due(1, "/a"));
        q.push(due(2, "/b"));
        let first = q.take_next().unwrap();
        q.put_back(first);
        assert!(q.contains(Path::new("/a")));
        assert_eq!(q.take_next().unwrap().path, PathBuf::from("/a"));
        assert_eq!(q.take_next().unwrap().path, PathBuf::from("/b"));
        assert_eq!(q.take_next(), None);
    }
}
