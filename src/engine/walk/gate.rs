//! How many workers of a walk may be at work at once, changed while it runs: in the whole walk
//! (`Gate`: the measured concurrency sets its limit, the latency governor a ceiling) and in
//! one directory's unlink batches (`PerDir`: they contend on the directory's lock). Holds
//! counts only; never touches a file.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How many workers may be at work at once; changed while a walk runs, only through
/// `pace::workers::Steer`: the concurrency controller sets the limit (what measurement found
/// pays), the latency governor and the space-pressure yield the ceiling (lower when others are
/// hurt); the lower of the two holds. A worker enters before
/// it takes a task, so work it may not do yet stays queued (for another process to take).
#[derive(Debug)]
pub struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug)]
struct GateState {
    limit: usize,
    cap: usize,
    /// Workers inside (with a task or waiting for one).
    active: usize,
    /// Workers inside with a task.
    working: usize,
    /// Integral of `working` over time, up to `since`.
    work: Duration,
    since: Instant,
}

impl GateState {
    fn account(&mut self) {
        let now = Instant::now();
        self.work += now.saturating_duration_since(self.since) * self.working as u32;
        self.since = now;
    }

    fn allowed(&self) -> usize {
        self.limit.min(self.cap)
    }
}

impl Gate {
    pub fn new(limit: usize) -> Self {
        Gate {
            state: Mutex::new(GateState {
                limit: limit.max(1),
                cap: usize::MAX,
                active: 0,
                working: 0,
                work: Duration::ZERO,
                since: Instant::now(),
            }),
            changed: Condvar::new(),
        }
    }

    /// Sets the limit (at least 1). Changed only through `pace::workers::Steer`.
    pub(in crate::engine) fn set(&self, limit: usize) {
        self.state.lock().expect("gate lock").limit = limit.max(1);
        self.changed.notify_all();
    }

    pub fn limit(&self) -> usize {
        self.state.lock().expect("gate lock").limit
    }

    /// Sets the ceiling over the limit (at least 1; the latency governor's). Changed only
    /// through `pace::workers::Steer`.
    pub(in crate::engine) fn set_cap(&self, cap: usize) {
        self.state.lock().expect("gate lock").cap = cap.max(1);
        self.changed.notify_all();
    }

    /// The ceiling (`usize::MAX` when none was set).
    pub fn cap(&self) -> usize {
        self.state.lock().expect("gate lock").cap
    }

    /// Workers allowed at once now: the lower of the limit and the ceiling.
    pub fn allowed(&self) -> usize {
        self.state.lock().expect("gate lock").allowed()
    }

    /// Workers with a task right now (a worker over a lowered ceiling finishes its task).
    pub fn working(&self) -> usize {
        self.state.lock().expect("gate lock").working
    }

    /// Workers at work right now.
    #[cfg(test)]
    pub fn active(&self) -> usize {
        self.state.lock().expect("gate lock").active
    }

    /// Worker-time spent on tasks so far (the integral of busy workers over time).
    pub fn work_time(&self) -> Duration {
        let mut s = self.state.lock().expect("gate lock");
        s.account();
        s.work
    }

    pub(crate) fn enter(&self) {
        let mut s = self.state.lock().expect("gate lock");
        while s.active >= s.allowed() {
            s = self.changed.wait(s).expect("gate lock");
        }
        s.active += 1;
    }

    /// The worker that entered has a task now.
    pub(crate) fn begin(&self) {
        let mut s = self.state.lock().expect("gate lock");
        s.account();
        s.working += 1;
    }

    /// Leaves, with (`worked`) or without a task.
    pub(crate) fn leave(&self, worked: bool) {
        let mut s = self.state.lock().expect("gate lock");
        if worked {
            s.account();
            s.working -= 1;
        }
        s.active -= 1;
        drop(s);
        self.changed.notify_one();
    }
}

/// How many workers may unlink in one directory at once (its batches; the same number for every
/// directory), changed while a walk runs (`pace::unlinkers` measures it). A worker passes over
/// the batches of a directory that has that many at work and takes other work, or waits.
#[derive(Debug)]
pub struct PerDir {
    limit: AtomicUsize,
    /// A worker passed over a directory's batch since this was last asked: the limit binds.
    held_back: AtomicBool,
    /// A worker waited idle since this was last asked, with nothing queued but batches the
    /// limit held back: more workers would only wait too.
    waited: AtomicBool,
}

impl PerDir {
    pub fn new(limit: usize) -> Self {
        PerDir {
            limit: AtomicUsize::new(limit.max(1)),
            held_back: AtomicBool::new(false),
            waited: AtomicBool::new(false),
        }
    }

    /// Sets the limit (at least 1).
    pub fn set(&self, limit: usize) {
        self.limit.store(limit.max(1), Ordering::Relaxed);
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Whether a worker passed over a batch because of the limit since the last call.
    pub fn take_held_back(&self) -> bool {
        self.held_back.swap(false, Ordering::Relaxed)
    }

    /// Whether a worker waited idle for a held-back batch since the last call.
    pub fn take_waited(&self) -> bool {
        self.waited.swap(false, Ordering::Relaxed)
    }

    /// A worker waits with nothing queued that it may take but held-back batches.
    pub(crate) fn waits(&self) {
        self.waited.store(true, Ordering::Relaxed);
    }

    /// A worker may take a batch of a directory where `working` unlink now; if not, that is
    /// remembered (`take_held_back`).
    pub(crate) fn admits(&self, working: usize) -> bool {
        let ok = working < self.limit();
        if !ok {
            self.held_back.store(true, Ordering::Relaxed);
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn gate_holds_at_most_its_limit() {
        let g = Arc::new(Gate::new(2));
        let peak = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                let (g, peak) = (g.clone(), peak.clone());
                s.spawn(move || {
                    for _ in 0..50 {
                        g.enter();
                        g.begin();
                        peak.fetch_max(g.active(), Ordering::SeqCst);
                        std::thread::yield_now();
                        g.leave(true);
                    }
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            g.set(3);
        });
        assert!(peak.load(Ordering::SeqCst) <= 3);
        assert_eq!(g.active(), 0);
    }

    #[test]
    fn gate_cap_lowers_the_limit_and_work_is_timed() {
        let g = Gate::new(8);
        g.set_cap(2);
        assert_eq!((g.limit(), g.cap(), g.allowed()), (8, 2, 2));
        g.enter();
        g.begin();
        std::thread::sleep(Duration::from_millis(20));
        g.enter();
        // A third would wait: the cap holds.
        assert_eq!(g.active(), 2);
        g.leave(false);
        g.leave(true);
        let worked = g.work_time();
        assert!(worked >= Duration::from_millis(20), "{worked:?}");
        assert!(worked < Duration::from_secs(2), "{worked:?}");
        g.set_cap(usize::MAX);
        assert_eq!(g.allowed(), 8);
    }

    #[test]
    fn per_dir_admits_up_to_its_limit_and_says_when_it_held_one_back() {
        let p = PerDir::new(1);
        assert!(p.admits(0));
        assert!(!p.take_held_back());
        assert!(!p.admits(1));
        assert!(p.take_held_back());
        assert!(!p.take_held_back(), "asked once");
        p.set(2);
        assert!(p.admits(1));
        p.set(0);
        assert_eq!(p.limit(), 1);
    }
}
