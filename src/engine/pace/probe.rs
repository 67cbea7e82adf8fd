//! The latency probe: appends 4 KiB with `O_DSYNC` to an anonymous file on the file system being
//! freed, every few milliseconds, and times each write — the latency a database's WAL would see
//! right now. It owns that one file (an `O_TMPFILE`, so nothing is left behind even after
//! `kill -9`) and writes nowhere else.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::fs::OFlags;
use rustix::io::{pwrite, Errno};

/// Bytes per probe write (one page: the smallest commit a WAL makes).
pub const PROBE_BYTES: usize = 4096;
/// The probe file is truncated back to zero at this size (a WAL segment switch).
const WRAP_BYTES: u64 = 16 << 20;

/// One completed probe write.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub done: Instant,
    pub latency: Duration,
}

#[derive(Default)]
struct State {
    samples: Vec<Sample>,
    in_flight_since: Option<Instant>,
    error: Option<Errno>,
}

struct Shared {
    stop: AtomicBool,
    state: Mutex<State>,
    done: Condvar,
}

/// A running probe; stops (and its file vanishes) when dropped.
pub struct Probe {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Spaces probe writes by the removal's own progress as well: a write waits until `ops()` has
/// advanced `per_probe` since the one before (a network file system, where every probe write
/// is two round trips, its write and its sync, that the removal's requests queue behind: at
/// one per 100 operations it is at most 2% of them). And only while `actionable()`: while
/// what the probe would tell could change nothing (one worker at work, as in one directory
/// whose unlinks the client serializes), it writes nothing.
#[derive(Clone)]
pub struct Budget {
    pub ops: Arc<dyn Fn() -> u64 + Send + Sync>,
    pub per_probe: u64,
    pub actionable: Arc<dyn Fn() -> bool + Send + Sync>,
}

/// Spacing of probe writes: at least `min_interval`, and at least `load_factor` times the
/// recent latency, so the probe itself never takes more than 1/load_factor of a slow disk.
#[derive(Clone, Copy, Debug)]
pub struct Spacing {
    pub min_interval: Duration,
    pub max_interval: Duration,
    pub load_factor: u32,
}

impl Default for Spacing {
    fn default() -> Self {
        Spacing {
            min_interval: Duration::from_millis(2),
            max_interval: Duration::from_millis(250),
            load_factor: 5,
        }
    }
}

impl Spacing {
    fn next_gap(&self, last: Duration) -> Duration {
        (last * self.load_factor).clamp(self.min_interval, self.max_interval)
    }
}

/// Opens the probe's anonymous file in `dir` (`O_TMPFILE`; where unsupported, a hidden name
/// created exclusively and unlinked at once).
fn open_probe_file(dir: impl AsFd) -> Result<OwnedFd, Errno> {
    use crate::sys::safeopen;
    let flags = OFlags::WRONLY | OFlags::DSYNC;
    match safeopen::create_unnamed_in(&dir, flags, 0o600) {
        Ok(fd) => Ok(fd),
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOENT) => {
            let name = std::ffi::CString::new(format!(".reclaim-probe.{}", std::process::id()))
                .expect("no NUL");
            let fd = safeopen::create_at(&dir, &name, flags, 0o600, false)?;
            // Gone already is as good: a removal of this directory met it first.
            match safeopen::unlink_at(&dir, &name) {
                Ok(()) | Err(Errno::NOENT) => Ok(fd),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

impl Probe {
    /// Starts probing the file system of `dir`.
    pub fn start(dir: impl AsFd, spacing: Spacing) -> Result<Probe, Errno> {
        Probe::start_budgeted(dir, spacing, None)
    }

    /// `start`, with the writes also spaced by `budget`.
    pub fn start_budgeted(
        dir: impl AsFd,
        spacing: Spacing,
        budget: Option<Budget>,
    ) -> Result<Probe, Errno> {
        let file = open_probe_file(dir)?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            done: Condvar::new(),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("reclaim-probe".into())
            .spawn(move || run(file, &s, spacing, budget.as_ref()))
            .map_err(|_| Errno::AGAIN)?;
        Ok(Probe {
            shared,
            thread: Some(thread),
        })
    }

    /// Samples completed after `since`, and the age of the write in flight (if any).
    pub fn since(&self, since: Instant) -> (Vec<Sample>, Option<Duration>) {
        let st = self.lock();
        let from = st.samples.partition_point(|s| s.done < since);
        (
            st.samples[from..].to_vec(),
            st.in_flight_since.map(|t| t.elapsed()),
        )
    }

    /// Blocks until a sample completes after `since`, the write in flight gets older than
    /// `patience`, or `timeout` passes. Returns what `since` returns then.
    pub fn wait(
        &self,
        since: Instant,
        patience: Duration,
        timeout: Duration,
    ) -> (Vec<Sample>, Option<Duration>) {
        let deadline = Instant::now() + timeout;
        let mut st = self.lock();
        loop {
            let now = Instant::now();
            let have = st.samples.last().is_some_and(|s| s.done >= since);
            let stuck = st.in_flight_since.is_some_and(|t| now - t > patience);
            if have || stuck || now >= deadline || st.error.is_some() {
                break;
            }
            // Wake up when the write in flight would exceed `patience`, at the latest.
            let wake = st
                .in_flight_since
                .map(|t| t + patience)
                .unwrap_or(deadline)
                .min(deadline);
            let dur = wake.saturating_duration_since(now) + Duration::from_micros(200);
            st = self
                .shared
                .done
                .wait_timeout(st, dur)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(st);
        self.since(since)
    }

    /// The latest completed sample, whenever it completed.
    pub fn last(&self) -> Option<Sample> {
        self.lock().samples.last().copied()
    }

    /// The first error the probe hit (it stops probing then).
    pub fn error(&self) -> Option<Errno> {
        self.lock().error
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.done.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(file: OwnedFd, shared: &Shared, spacing: Spacing, budget: Option<&Budget>) {
    let page = [0x5au8; PROBE_BYTES];
    let mut offset: u64 = 0;
    let mut gap = spacing.min_interval;
    let mut ops_at_last = budget.map(|b| (b.ops)());
    while !shared.stop.load(Ordering::Relaxed) {
        if let (Some(b), Some(last)) = (budget, ops_at_last) {
            // Not before the removal did its share of operations since the last write.
            let mut st = lock(shared);
            while !shared.stop.load(Ordering::Relaxed)
                && ((b.ops)() < last + b.per_probe || !(b.actionable)())
            {
                st = shared
                    .done
                    .wait_timeout(st, spacing.min_interval.max(Duration::from_millis(1)))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            drop(st);
            if shared.stop.load(Ordering::Relaxed) {
                return;
            }
            ops_at_last = Some((b.ops)());
        }
        if offset >= WRAP_BYTES {
            if let Err(e) = rustix::fs::ftruncate(&file, 0) {
                fail(shared, e);
                return;
            }
            offset = 0;
        }
        let start = Instant::now();
        lock(shared).in_flight_since = Some(start);
        let result = pwrite(&file, &page, offset);
        let done = Instant::now();
        let latency = done - start;
        {
            let mut st = lock(shared);
            st.in_flight_since = None;
            match result {
                Ok(_) => st.samples.push(Sample { done, latency }),
                Err(e) => {
                    st.error = Some(e);
                    drop(st);
                    shared.done.notify_all();
                    return;
                }
            }
        }
        shared.done.notify_all();
        offset += PROBE_BYTES as u64;
        // Smooth the spacing so one outlier does not silence the probe for long.
        gap = (gap + spacing.next_gap(latency)) / 2;
        let mut st = lock(shared);
        let until = done + gap;
        while !shared.stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now >= until {
                break;
            }
            st = shared
                .done
                .wait_timeout(st, until - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, State> {
    shared.state.lock().unwrap_or_else(|e| e.into_inner())
}

fn fail(shared: &Shared, e: Errno) {
    lock(shared).error = Some(e);
    shared.done.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spacing_follows_latency_within_bounds() {
        let s = Spacing::default();
        assert_eq!(s.next_gap(Duration::from_micros(100)), s.min_interval);
        assert_eq!(
            s.next_gap(Duration::from_millis(20)),
            Duration::from_millis(100)
        );
        assert_eq!(s.next_gap(Duration::from_secs(2)), s.max_interval);
    }

    #[test]
    fn probe_measures_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let fd = crate::sys::dirfd::open_dir_path(dir.path()).unwrap();
        let t0 = Instant::now();
        let probe = Probe::start(&fd, Spacing::default()).unwrap();
        let (samples, _) = probe.wait(t0, Duration::from_secs(5), Duration::from_secs(5));
        assert!(!samples.is_empty(), "no probe write completed in 5 s");
        assert!(samples
            .iter()
            .all(|s| s.done >= t0 && s.latency > Duration::ZERO));
        drop(probe);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
