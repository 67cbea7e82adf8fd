//! A shared rate limit on operations (unlinks), adjustable while workers run: the tree pacer
//! lowers it when other I/O is hurt and raises it back; `--iops` caps it; while the file system
//! is short of space it yields (no limit at all, `--iops` neither). Unlimited costs one atomic
//! load per operation. It only ever delays the caller; it never fails.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Operations allowed ahead of the schedule (a small burst, so workers are not serialised
/// by the limiter itself).
const BURST: Duration = Duration::from_millis(20);

#[derive(Debug)]
pub struct Throttle {
    limited: AtomicBool,
    /// Yielding to a file system short of space: no limit while set.
    yielding: AtomicBool,
    state: Mutex<State>,
    /// Never more than this many operations per second (`--iops`).
    cap: Option<f64>,
}

#[derive(Debug)]
struct State {
    /// Operations per second; `None` = unlimited.
    rate: Option<f64>,
    /// Generic cell rate algorithm: when the next operation is due.
    next: Instant,
}

impl Throttle {
    pub fn new(cap: Option<u64>) -> Self {
        let cap = cap.map(|c| c.max(1) as f64);
        Throttle {
            limited: AtomicBool::new(cap.is_some()),
            yielding: AtomicBool::new(false),
            state: Mutex::new(State {
                rate: cap,
                next: Instant::now(),
            }),
            cap,
        }
    }

    /// Waits until one more operation is allowed.
    pub fn acquire(&self) {
        if !self.limited.load(Ordering::Relaxed) || self.yielding.load(Ordering::Relaxed) {
            return;
        }
        let wait = {
            let mut st = self.lock();
            let Some(rate) = st.rate else { return };
            let now = Instant::now();
            let due = st.next.max(now - BURST);
            st.next = due + Duration::from_secs_f64(1.0 / rate);
            due.saturating_duration_since(now)
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }

    /// Lifts every limit (`on`: the file system is short of space; operations go as fast as
    /// `rm`'s), or puts back the one set.
    pub fn yield_all(&self, on: bool) {
        self.yielding.store(on, Ordering::Relaxed);
    }

    /// The current limit (operations per second), `None` if unlimited.
    pub fn rate(&self) -> Option<f64> {
        self.lock().rate
    }

    /// Whether a limit below the cap (`--iops`) is set: the pacer is holding it down.
    pub fn held_down(&self) -> bool {
        match (self.lock().rate, self.cap) {
            (Some(r), Some(c)) => r < c,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// Sets the limit (`None` = unlimited), never above the cap.
    pub fn set_rate(&self, rate: Option<f64>) {
        let rate = match (rate, self.cap) {
            (Some(r), Some(c)) => Some(r.min(c)),
            (None, c) => c,
            (r, None) => r,
        };
        let mut st = self.lock();
        st.rate = rate.map(|r| r.max(1.0));
        self.limited.store(st.rate.is_some(), Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_never_waits() {
        let t = Throttle::new(None);
        let t0 = Instant::now();
        for _ in 0..100_000 {
            t.acquire();
        }
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert_eq!(t.rate(), None);
    }

    #[test]
    fn limit_spaces_operations() {
        let t = Throttle::new(Some(1000));
        let t0 = Instant::now();
        for _ in 0..120 {
            t.acquire();
        }
        // 120 operations at 1000/s with a 20 ms burst: at least ~100 ms.
        assert!(
            t0.elapsed() >= Duration::from_millis(90),
            "{:?}",
            t0.elapsed()
        );
    }

    #[test]
    fn yielding_lifts_even_the_cap() {
        let t = Throttle::new(Some(10));
        t.yield_all(true);
        let t0 = Instant::now();
        for _ in 0..1000 {
            t.acquire();
        }
        assert!(t0.elapsed() < Duration::from_millis(500));
        t.yield_all(false);
        assert_eq!(t.rate(), Some(10.0), "the cap is back");
    }

    #[test]
    fn cap_bounds_every_setting() {
        let t = Throttle::new(Some(500));
        t.set_rate(Some(10_000.0));
        assert_eq!(t.rate(), Some(500.0));
        t.set_rate(None);
        assert_eq!(t.rate(), Some(500.0));
        t.set_rate(Some(0.0));
        assert_eq!(t.rate(), Some(1.0));
        let u = Throttle::new(None);
        u.set_rate(Some(50.0));
        assert_eq!(u.rate(), Some(50.0));
        u.set_rate(None);
        assert_eq!(u.rate(), None);
    }
}
