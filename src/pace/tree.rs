//! Pacing of tree removal (many small files): a thread watches the probe in windows of
//! 250 ms while the engine's workers unlink, and moves the shared unlink rate limit: on a
//! missed window, half of what was achieved in it; on good windows, up again by a sixteenth
//! (additive). An idle disk never misses, so the limit never engages and the tree goes at
//! full speed. It only reads the counters and sets the throttle.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::controller::{Config, Controller, Verdict, Window};
use super::pacer::{baseline_until, percentile, sorted, LatencyStats, PaceReport, Pacing};
use super::probe::{Probe, Spacing};
use super::throttle::Throttle;
use crate::remove::Counters;

const WINDOW: Duration = Duration::from_millis(250);
/// The limit never goes below this many unlinks per second.
const MIN_RATE: f64 = 20.0;

/// Watches the probe and steers `throttle` until `done` is set; returns the books.
pub fn run(
    dir: impl AsFd,
    pacing: &Pacing,
    throttle: &Throttle,
    counters: &Counters,
    done: &AtomicBool,
) -> PaceReport {
    let mut report = PaceReport {
        max_latency_ms: pacing.max_latency.map(|d| d.as_secs_f64() * 1e3),
        rate_cap: None,
        ..PaceReport::default()
    };
    let Some(target) = pacing.max_latency else {
        return report;
    };
    let probe = match Probe::start(&dir, Spacing::default()) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            report.probe_error = Some(crate::error::errno_text(e));
            return report;
        }
    };
    // The baseline is taken while the workers already run: a tree's first directory reads
    // are light, and holding the removal back for it would cost every small run.
    let base = baseline_until(&probe, target / 4, &|| done.load(Ordering::Relaxed));
    let base_p90 = percentile(&sorted(&base), 90.0);
    let ctl = Controller::new(Config {
        target,
        min_step: 1,
        max_step: 1,
        initial_step: 1,
        min_pause: Duration::ZERO,
        max_pause: Duration::ZERO,
        window: WINDOW,
        probe_interval: Spacing::default().min_interval,
    });
    let ops = || counters.files.load(Ordering::Relaxed) + counters.dirs.load(Ordering::Relaxed);
    let mut during = Vec::new();
    let mut start = Instant::now();
    let mut last_ops = ops();
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
        if start.elapsed() < WINDOW {
            continue;
        }
        let (samples, in_flight) = probe.since(start);
        let now_ops = ops();
        let achieved = (now_ops - last_ops) as f64 / start.elapsed().as_secs_f64();
        let lat: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
        during.extend(&lat);
        let verdict = ctl.judge(&Window {
            samples: lat,
            in_flight,
            baseline: base_p90,
            ..Window::default()
        });
        report.windows += 1;
        match verdict {
            Verdict::Miss => {
                report.backoffs += 1;
                let current = throttle.rate().unwrap_or(f64::INFINITY);
                throttle.set_rate(Some((current.min(achieved) / 2.0).max(MIN_RATE)));
            }
            Verdict::Good => {
                if let Some(r) = throttle.rate() {
                    throttle.set_rate(Some(r + (r / 16.0).max(MIN_RATE)));
                }
            }
            Verdict::Unknown => {}
        }
        start = Instant::now();
        last_ops = now_ops;
    }
    report.probe_before = LatencyStats::of(&base);
    report.probe_during = LatencyStats::of(&during);
    report
}
