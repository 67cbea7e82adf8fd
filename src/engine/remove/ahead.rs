//! Looking the names of a large directory up ahead of their unlinks, in chunks (a network
//! file system; `Settings::look_ahead`).
//!
//! An unlink looks its name up under the directory's lock, held exclusively across the server's
//! round trip. A name the client has never seen (a batch of names another MPI rank listed,
//! `--from`'s names) is looked up under that lock too, shared: a lookup waits for the unlink in
//! progress, and the next unlink for the lookups in progress. Lookers racing the unlinks name by
//! name therefore alternate with them, one lookup per unlink: two round trips per name (measured:
//! 3.4 ms per name at a 2 ms round trip, 8 MPI ranks on one directory, `bench/RESULTS.md`
//! 2026-11-26, "One directory under MPI"). Looked up a chunk at a time, the lookups of a chunk wait
//! for the same unlink and then run together, as many as there are lookers, in one round trip: per
//! name, one round trip plus one per lookers. A name whose cached entry only expired is revalidated
//! outside the lock, and its lookups of the next chunk overlap the unlinks of this one.
//!
//! `Ahead` only orders the work: the unlinker releases the chunk after the one it starts on
//! and waits until this one is looked up; the lookers look up each released index once,
//! never one already unlinked, and stop at a signal (the unlinker then goes on without them).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// Chunks are this many names per looker: enough rounds that the lookups of a chunk wait
/// together, few enough that a chunk's entries stay fresh until their unlinks.
pub const ROUNDS: usize = 4;

/// The order between one unlinker and its lookers over `len` names.
pub struct Ahead {
    len: usize,
    chunk: usize,
    /// The next index a looker takes.
    next: AtomicUsize,
    /// Names the unlinker has passed (not looked up any more).
    unlinked: AtomicUsize,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// Lookers may look up the indices below this.
    released: usize,
    /// Per chunk: its lookups finished (or skipped).
    looked: Vec<usize>,
    /// Lookers still looking.
    lookers: usize,
}

impl Ahead {
    /// For `len` names and `lookers` threads (each to call `look`).
    pub fn new(len: usize, lookers: usize) -> Self {
        let chunk = lookers.max(1) * ROUNDS;
        Ahead {
            len,
            chunk,
            next: AtomicUsize::new(0),
            unlinked: AtomicUsize::new(0),
            state: Mutex::new(State {
                released: 0,
                looked: vec![0; len.div_ceil(chunk)],
                lookers,
            }),
            changed: Condvar::new(),
        }
    }

    /// Names per chunk.
    #[cfg(test)]
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Names in chunk `k`.
    fn size(&self, k: usize) -> usize {
        (self.len - k * self.chunk).min(self.chunk)
    }

    /// One looker: `look(i)` for each index it takes once it is released, unless the
    /// unlinker passed it; until every index is taken or `stop()` says so. An index taken
    /// after a stop is not counted: the unlinker's wait ends when the lookers are gone (no
    /// looker still waits for a release then: indices are taken in order, so one taken
    /// before the stop is below any taken after it, and released when that one's chunk is).
    pub fn look(&self, stop: impl Fn() -> bool, look: impl Fn(usize)) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.len || stop() {
                break;
            }
            {
                let mut s = self.state.lock().expect("look-ahead lock");
                while s.released <= i {
                    s = self.changed.wait(s).expect("look-ahead lock");
                }
            }
            if i >= self.unlinked.load(Ordering::Relaxed) && !stop() {
                look(i);
            }
            let k = i / self.chunk;
            let mut s = self.state.lock().expect("look-ahead lock");
            s.looked[k] += 1;
            if s.looked[k] == self.size(k) {
                self.changed.notify_all();
            }
        }
        let mut s = self.state.lock().expect("look-ahead lock");
        s.lookers -= 1;
        self.changed.notify_all();
    }

    /// The unlinker, before the name at `i`: at the start of a chunk, releases the next
    /// chunk's lookups and waits until this chunk's are done (or no looker is left).
    pub fn before(&self, i: usize) {
        if !i.is_multiple_of(self.chunk) {
            return;
        }
        let k = i / self.chunk;
        let end = (i + self.chunk).min(self.len);
        let mut s = self.state.lock().expect("look-ahead lock");
        s.released = (end + self.chunk).min(self.len).max(s.released);
        self.changed.notify_all();
        while s.looked[k] < self.size(k) && s.lookers > 0 {
            s = self.changed.wait(s).expect("look-ahead lock");
        }
    }

    /// The unlinker passed the first `n` names.
    pub fn unlinked(&self, n: usize) {
        self.unlinked.store(n, Ordering::Relaxed);
    }

    /// The unlinker is done (or stopped): lookers waiting for a release leave.
    pub fn end(&self) {
        self.next.store(self.len, Ordering::Relaxed);
        let mut s = self.state.lock().expect("look-ahead lock");
        s.released = self.len;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// Runs `len` names with `lookers` lookers; returns, per index, the chunk the unlinker
    /// was on when it was looked up (`None`: not looked up) and whether it had been unlinked.
    fn run(len: usize, lookers: usize, stop_at: Option<usize>) -> Vec<Option<(usize, bool)>> {
        let ahead = Ahead::new(len, lookers);
        let seen: Vec<Mutex<Vec<(usize, bool)>>> =
            (0..len).map(|_| Mutex::new(Vec::new())).collect();
        let at = AtomicUsize::new(0);
        let done: Vec<AtomicBool> = (0..len).map(|_| AtomicBool::new(false)).collect();
        let stopped = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..lookers {
                s.spawn(|| {
                    ahead.look(
                        || stopped.load(Ordering::Relaxed),
                        |i| {
                            let chunk = at.load(Ordering::SeqCst) / ahead.chunk();
                            seen[i]
                                .lock()
                                .unwrap()
                                .push((chunk, done[i].load(Ordering::SeqCst)));
                        },
                    )
                });
            }
            for (i, unlinked) in done.iter().enumerate() {
                if stop_at == Some(i) {
                    stopped.store(true, Ordering::Relaxed);
                }
                at.store(i, Ordering::SeqCst);
                ahead.before(i);
                if i % ahead.chunk() == 0 && stop_at.is_none() {
                    // This chunk is looked up before its first unlink.
                    let end = (i + ahead.chunk()).min(len);
                    for (j, s) in seen.iter().enumerate().take(end).skip(i) {
                        assert_eq!(
                            s.lock().unwrap().len(),
                            1,
                            "name {j} not looked up before its chunk"
                        );
                    }
                }
                unlinked.store(true, Ordering::SeqCst);
                ahead.unlinked(i + 1);
            }
            ahead.end();
        });
        seen.into_iter()
            .map(|s| {
                let s = s.into_inner().unwrap();
                assert!(s.len() <= 1, "a name looked up {} times", s.len());
                s.first().copied()
            })
            .collect()
    }

    #[test]
    fn every_name_is_looked_up_once_before_its_chunk_and_at_most_one_chunk_ahead() {
        for (len, lookers) in [(1, 1), (7, 2), (128, 3), (129, 7), (1000, 16)] {
            let seen = run(len, lookers, None);
            let chunk = lookers * ROUNDS;
            for (i, s) in seen.iter().enumerate() {
                let (at, unlinked) =
                    s.unwrap_or_else(|| panic!("{len}/{lookers}: name {i} never looked up"));
                assert!(
                    !unlinked,
                    "{len}/{lookers}: name {i} looked up after its unlink"
                );
                // Released when the unlinker started the chunk before it (or at the start).
                assert!(
                    at + 1 >= i / chunk,
                    "{len}/{lookers}: name {i} (chunk {}) looked up while the unlinker was on chunk {at}",
                    i / chunk
                );
            }
        }
    }

    #[test]
    fn lookers_that_stop_leave_the_unlinker_free() {
        // Stopped anywhere: the unlinker does not wait for lookups that never come (a hang
        // here is the failure), and nothing is looked up past the chunks released by then.
        for _ in 0..20 {
            for lookers in [1, 2, 4, 7] {
                for stop in [0, 1, 17, 40, 99, 250] {
                    let seen = run(300, lookers, Some(stop));
                    let released = (stop / (lookers * ROUNDS) + 2) * lookers * ROUNDS;
                    assert!(
                        seen.iter().skip(released).all(|s| s.is_none()),
                        "{lookers} lookers stopped at {stop}: looked up past {released}"
                    );
                }
            }
        }
    }

    #[test]
    fn no_lookers_no_wait() {
        let ahead = Ahead::new(100, 0);
        for i in 0..100 {
            ahead.before(i);
            ahead.unlinked(i + 1);
        }
        ahead.end();
    }
}
