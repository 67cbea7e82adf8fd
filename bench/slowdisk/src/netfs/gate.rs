//! `Gate`: a counting semaphore with an optional cap and a high-water mark.
//!
//! netfs uses one gate for the server (`--server-ops`: operations in flight across all
//! mounts of one backing directory). Without a cap it only counts. It also integrates the
//! units held over time (`busy`): how close to its cap the server was kept.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Gate {
    /// `None`: unlimited (counting only).
    cap: Option<usize>,
    in_use: Mutex<usize>,
    /// Units held integrated over time, up to the instant beside it.
    busy: Mutex<(Duration, Instant)>,
    freed: Condvar,
    /// Mirror of `in_use` readable without the lock, and its maximum.
    now: AtomicUsize,
    max: AtomicUsize,
}

/// Held while an operation is in flight; releases its unit on drop.
#[derive(Debug)]
pub struct GateGuard<'a> {
    gate: &'a Gate,
}

impl Gate {
    /// `cap == Some(0)` is treated as 1 (a gate that never opens would hang).
    pub fn new(cap: Option<usize>) -> Gate {
        Gate {
            cap: cap.map(|c| c.max(1)),
            in_use: Mutex::new(0),
            busy: Mutex::new((Duration::ZERO, Instant::now())),
            freed: Condvar::new(),
            now: AtomicUsize::new(0),
            max: AtomicUsize::new(0),
        }
    }

    pub fn cap(&self) -> Option<usize> {
        self.cap
    }

    /// Wait for a free unit.
    pub fn acquire(&self) -> GateGuard<'_> {
        let mut n = self.in_use.lock().unwrap();
        if let Some(cap) = self.cap {
            while *n >= cap {
                n = self.freed.wait(n).unwrap();
            }
        }
        self.account(*n);
        *n += 1;
        self.note(*n);
        GateGuard { gate: self }
    }

    /// Adds `held` units since the last change to the integral (under the `in_use` lock).
    fn account(&self, held: usize) {
        let mut b = self.busy.lock().unwrap();
        let now = Instant::now();
        let (total, since) = &mut *b;
        *total += now.saturating_duration_since(*since) * held as u32;
        *since = now;
    }

    /// Unit-time held so far (the integral of units in use over time): divided by elapsed
    /// time and the cap, how busy the server was kept.
    pub fn busy(&self) -> Duration {
        let n = self.in_use.lock().unwrap();
        self.account(*n);
        let b = self.busy.lock().unwrap();
        b.0
    }

    /// Take a unit only if one is free now.
    pub fn try_acquire(&self) -> Option<GateGuard<'_>> {
        let mut n = self.in_use.lock().unwrap();
        if self.cap.is_some_and(|cap| *n >= cap) {
            return None;
        }
        self.account(*n);
        *n += 1;
        self.note(*n);
        Some(GateGuard { gate: self })
    }

    fn note(&self, n: usize) {
        self.now.store(n, Ordering::Relaxed);
        self.max.fetch_max(n, Ordering::Relaxed);
    }

    /// Units held right now.
    pub fn in_use(&self) -> usize {
        self.now.load(Ordering::Relaxed)
    }

    /// Most units ever held at once.
    pub fn max_in_use(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }

    fn release(&self) {
        let mut n = self.in_use.lock().unwrap();
        self.account(*n);
        *n -= 1;
        self.now.store(*n, Ordering::Relaxed);
        drop(n);
        if self.cap.is_some() {
            self.freed.notify_one();
        }
    }
}

impl Drop for GateGuard<'_> {
    fn drop(&mut self) {
        self.gate.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn cap_is_enforced_and_released() {
        let g = Gate::new(Some(2));
        let a = g.try_acquire().expect("first unit");
        let b = g.try_acquire().expect("second unit");
        assert!(g.try_acquire().is_none(), "third unit over the cap");
        assert_eq!(g.in_use(), 2);
        drop(a);
        assert_eq!(g.in_use(), 1);
        let c = g.try_acquire().expect("a unit came free");
        drop((b, c));
        assert_eq!(g.in_use(), 0);
        assert_eq!(g.max_in_use(), 2);
    }

    #[test]
    fn unlimited_gate_counts() {
        let g = Gate::new(None);
        let held: Vec<_> = (0..100).map(|_| g.acquire()).collect();
        assert_eq!(g.in_use(), 100);
        drop(held);
        assert_eq!(g.in_use(), 0);
        assert_eq!(g.max_in_use(), 100);
    }

    #[test]
    fn busy_integrates_units_over_time() {
        let g = Gate::new(Some(4));
        let a = g.acquire();
        let b = g.acquire();
        std::thread::sleep(Duration::from_millis(50));
        drop((a, b));
        let busy = g.busy();
        assert!(busy >= Duration::from_millis(100), "{busy:?}");
        assert!(busy < Duration::from_millis(1000), "{busy:?}");
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(g.busy(), busy, "nothing held: nothing added");
    }

    #[test]
    fn zero_cap_means_one() {
        let g = Gate::new(Some(0));
        assert_eq!(g.cap(), Some(1));
        let _a = g.try_acquire().unwrap();
        assert!(g.try_acquire().is_none());
    }

    /// 8 threads each holding a unit for 30 ms through a gate of 2: never more than 2
    /// at once, and the whole takes about 4 x 30 ms.
    #[test]
    fn blocking_acquire_serialises_beyond_the_cap() {
        let g = Arc::new(Gate::new(Some(2)));
        let t0 = Instant::now();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || {
                    let _u = g.acquire();
                    std::thread::sleep(Duration::from_millis(30));
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let el = t0.elapsed();
        assert_eq!(g.max_in_use(), 2);
        assert!(el >= Duration::from_millis(120), "{el:?}");
        assert!(el < Duration::from_millis(400), "{el:?}");
    }
}
