//! Pacing: how fast a gentle removal may go. A probe measures the latency other I/O sees on the
//! same file system; the controller turns windows of those measurements into a step size and a
//! pause, AIMD-style (like cgroup io.latency or TCP), so removal uses the budget and no more.

pub mod asked;
pub mod concurrency;
pub mod controller;
pub mod meter;
pub mod pacer;
pub mod probe;
pub mod roundtrip;
pub mod signals;
pub mod throttle;
pub mod tree;
pub mod unlinkers;
pub mod workers;

pub use pacer::{PaceReport, Pacer, Pacing};
