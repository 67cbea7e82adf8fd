//! Pacing: how fast a gentle removal may go. A probe measures the latency other I/O sees on the
//! same file system; the controller turns windows of those measurements into a step size and a
//! pause, AIMD-style (like cgroup io.latency or TCP), so removal uses the budget and no more.

/// The latency budget for other I/O when large files are freed and none is given.
pub const DEFAULT_MAX_LATENCY: std::time::Duration = std::time::Duration::from_millis(20);

pub mod controller;
pub mod pacer;
pub mod probe;
pub mod signals;
pub mod throttle;
pub mod tree;

pub use pacer::{LatencyStats, PaceReport, Pacer, Pacing};
