//! What a removal measures of its own work for the concurrency controller: its workers' metadata
//! operations (`Meter`), read in windows (`Window`) with the gate's worker-time. Counts only;
//! never touches a file.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What the engine's workers measure of their own metadata operations (unlinks, rmdirs, and
/// under a selection the stats that test its entries).
#[derive(Debug, Default)]
pub struct Meter {
    ops: AtomicU64,
    busy_ns: AtomicU64,
}

impl Meter {
    /// One operation that took `took`.
    pub fn record(&self, took: Duration) {
        self.ops.fetch_add(1, Ordering::Relaxed);
        self.busy_ns
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Operations so far and the time they took together.
    pub fn read(&self) -> (u64, Duration) {
        (
            self.ops.load(Ordering::Relaxed),
            Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed)),
        )
    }
}

/// One window of measurements.
#[derive(Clone, Copy, Debug, Default)]
pub struct Window {
    /// Operations completed.
    pub ops: u64,
    /// Their time, summed.
    pub busy: Duration,
    /// Worker-time with a task (from the gate).
    pub worked: Duration,
    pub elapsed: Duration,
    /// Workers the gate allowed.
    pub allowed: usize,
    /// A worker passed over a directory's batch in it: the unlinkers' limit (`walk::PerDir`)
    /// bound ...
    pub held_back: bool,
    /// ... and one waited idle for it: the work queued was one directory's batches.
    pub waited_for_dir: bool,
}

impl Window {
    /// Operations per second.
    pub fn rate(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Mean seconds per operation (its round trip, queueing included).
    pub fn latency(&self) -> f64 {
        self.busy.as_secs_f64() / (self.ops.max(1) as f64)
    }

    /// Share of the allowed workers that had work.
    pub fn utilization(&self) -> f64 {
        self.worked.as_secs_f64() / (self.elapsed.as_secs_f64() * self.allowed.max(1) as f64)
    }
}
