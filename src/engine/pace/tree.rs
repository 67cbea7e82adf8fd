//! The governor of tree removal (many small files): a thread watches the probe in windows of
//! 250 ms while the engine's workers unlink, and steers concurrency first, then (when asked
//! with `--max-latency`) the rate. On a missed window it halves the active workers (down to
//! one) by a ceiling over what the concurrency controller measured (`Gate::set_cap`); with one
//! worker left, it holds the shared unlink rate to half of what the window achieved. On good
//! windows it gives the rate back first (up by a sixteenth, additive), then one worker after
//! every 2 s without a miss, until the ceiling no longer binds and is lifted. An idle disk
//! never misses, so nothing engages and the tree goes at full speed. It only reads the
//! counters and sets the gate and the throttle.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::controller::{Config, Controller, Verdict, Window};
use super::pacer::{baseline_until, percentile, sorted, LatencyStats, PaceReport, Pacing};
use super::probe::{Budget, Probe, Sample, Spacing};
use super::throttle::Throttle;
use crate::engine::walk::Gate;

const WINDOW: Duration = Duration::from_millis(250);
/// The limit never goes below this many unlinks per second.
const MIN_RATE: f64 = 20.0;
/// Good windows in a row before one more worker (2 s).
const GROW_AFTER: u32 = 8;
/// Probe spacing on a disk that answers slowly idle: at most one write a second, at most a
/// twentieth of the disk's time.
const SLOW_DISK_SPACING: Spacing = Spacing {
    min_interval: Duration::from_millis(2),
    max_interval: Duration::from_secs(1),
    load_factor: 20,
};
/// With probes spaced by the removal's operations (`Budget`) or sparse on a slow disk, a
/// window holds at least this many probe writes, or lasts this long.
const BUDGETED_SAMPLES: usize = 8;
const BUDGETED_WINDOW_MAX: Duration = Duration::from_secs(4);

/// Idle probe latency (of a few synchronous writes: see `idle_median`) from which a disk that says it
/// is rotational is governed by default. A spinning disk's synchronous write on a journaled file
/// system is two writes in different places (the data, the journal) and a cache flush: a seek
/// and on average half a rotation each, so its median is a full 7200 rpm rotation (8.3 ms) or
/// more (the emulated `hdd-7200`: 14 ms in theory, 20-130 ms measured on this VM). A virtual or
/// solid-state disk that calls itself rotational (virtio does) answers below it. The median,
/// not the p90: right after a `sync` of a freshly written tree, one or two writes of a fast disk
/// wait on writeback, and a p90 of 3 ms made this VM's disk look slow, so a 100,000-file tree
/// started with one worker and took 2.4x as long (bench --quick, 2026-11-23). Not 3 ms either:
/// a journaled ext4 or xfs loop image on this VM's virtio disk (a loop write is a write and a
/// flush of the image file underneath) answered 1.4-4.8 ms idle from one run to the next, so the
/// same removal was governed at one worker or not by chance (bench/RESULTS.md, 2026-11-26).
pub const SLOW_DISK: std::time::Duration = std::time::Duration::from_millis(8);

/// A few probe latencies on the file system of `dir` before any removal starts (empty when
/// it cannot be probed): the governor's baseline where they were taken anyway.
pub fn idle_samples(dir: impl AsFd) -> Vec<Duration> {
    match Probe::start(&dir, Spacing::default()) {
        Ok(probe) => super::pacer::baseline(&probe, SLOW_DISK),
        Err(_) => Vec::new(),
    }
}

/// Operations of the removal per probe write on a network file system (`Budget`): two round
/// trips (write and sync) per hundred or more of the removal's.
pub const NETWORK_OPS_PER_PROBE: u64 = 128;

/// The median of the idle probe latencies `idle` (`None`: none measured), and whether they say
/// the disk is slow (one rule for `reclaim rm` and the reaper): a disk that only says it is
/// rotational is governed by default only if, idle, it answers like one. Judged on the lower
/// quartile (of at least five writes: the second quickest), not the median: a journaled loop
/// image on this VM's virtio disk, whose median is 2-5 ms, answered one run in five with a
/// median of 17 ms while other engineers' builds wrote to the disk; a spinning disk has no quick
/// writes to show (each pays a seek and part of a rotation, twice).
pub fn idle_median(idle: &[Duration]) -> (Option<Duration>, bool) {
    let sorted = sorted(idle);
    let p50 = percentile(&sorted, 50.0);
    let p25 = percentile(&sorted, 25.0);
    (p50, p25.is_some_and(|d| d >= SLOW_DISK))
}

/// What the governor steers.
pub struct Knobs<'a> {
    pub throttle: &'a Throttle,
    /// The walk's active workers (`None`: the rate only).
    pub gate: Option<&'a Gate>,
    /// The most workers the gate may let in (it may start lower: a rotational disk starts
    /// with one and earns more).
    pub max_workers: usize,
    /// The user's own budget (`--max-latency` given): honoured down to the idle p90 (not 1.5x
    /// it, the default's margin), and the unlink rate held down too once one worker is left
    /// (on the emulated HDD, 120 ms held the neighbours' p99 to 0.57x `rm -rf`'s at 19.5x its
    /// time: bench/RESULTS.md, 2026-11-26 session 5). Not by default.
    pub rate: bool,
    /// Probe latencies measured before the removal started (`idle_samples`): the baseline,
    /// when there are some. One taken while the workers run sees their own load: on the
    /// emulated HDD it read 312 ms against 130 ms idle, so nothing ever counted as a miss.
    pub idle: &'a [Duration],
    /// Space the probe's writes by the removal's operations too (a network file system: the
    /// probe's writes are round trips among the removal's).
    pub budget: Option<Budget>,
}

/// A missed window: half the workers (down to one), then (with `Knobs::rate`) half the unlink
/// rate that the window `achieved`.
fn back_off(knobs: &Knobs<'_>, achieved: f64, report: &mut PaceReport) {
    match knobs.gate.filter(|g| g.allowed() > 1) {
        // Fewer operations in flight first: the harm is the queue they make (a ceiling over
        // what the concurrency controller measured).
        Some(g) => {
            let n = g.allowed() / 2;
            g.set_cap(n);
            report.workers_min = report.workers_min.map(|m| m.min(n));
        }
        None if !knobs.rate => {}
        None => {
            let current = knobs.throttle.rate().unwrap_or(f64::INFINITY);
            knobs
                .throttle
                .set_rate(Some((current.min(achieved) / 2.0).max(MIN_RATE)));
        }
    }
}

/// A good window: the rate back first (up by a sixteenth; past eight times what one worker
/// `achieved`, no cap at all), then a worker after `GROW_AFTER` good windows in a row.
fn give_back(knobs: &Knobs<'_>, achieved: f64, max_workers: usize, good_streak: &mut u32) {
    let throttle = knobs.throttle;
    if throttle.held_down() {
        if let Some(r) = throttle.rate() {
            let up = r + (r / 16.0).max(MIN_RATE);
            // Past what one worker achieved unthrottled: let it go entirely.
            throttle.set_rate(if up > 8.0 * achieved.max(MIN_RATE) {
                None
            } else {
                Some(up)
            });
        }
    } else if let Some(g) = knobs.gate.filter(|g| g.cap() < max_workers) {
        // A worker back only after GROW_AFTER good windows in a row: growing on every good
        // one kept the emulated HDD oscillating between one and four workers (48 misses in
        // 118 windows, probe p99 3.0x idle against rm's 1.7x; bench/RESULTS.md). Once the
        // ceiling no longer binds it is lifted: the concurrency controller's measurement
        // decides again.
        *good_streak += 1;
        if *good_streak >= GROW_AFTER {
            let n = g.allowed() + 1;
            g.set_cap(if n >= g.limit() { usize::MAX } else { n });
            *good_streak = 0;
        }
    }
}

/// The probe writes of a window that were issued after `changed` (the last back-off), and the
/// age of the one in flight counted from then at most (one still stuck a window after a
/// back-off is evidence against the new count too): a smaller worker count is judged only by
/// what waited behind it. Writes that queued behind the workers before it (done after it) made
/// one back-off look like three: on the emulated NFS, 64 workers on a client of 16 slots were
/// halved to 32, then to 16 and 8 by writes issued under 64, and the tree took 1.7x as long
/// as at a pinned 32 (bench/RESULTS.md).
fn issued_since(
    samples: Vec<Sample>,
    in_flight: Option<Duration>,
    changed: Option<Instant>,
    now: Instant,
) -> (Vec<Sample>, Option<Duration>) {
    let Some(changed) = changed else {
        return (samples, in_flight);
    };
    let samples = samples
        .into_iter()
        .filter(|s| {
            s.done
                .checked_sub(s.latency)
                .is_some_and(|at| at >= changed)
        })
        .collect();
    let in_flight = in_flight.map(|age| age.min(now.saturating_duration_since(changed)));
    (samples, in_flight)
}

/// The judge of the governor's windows: one worker more or fewer at a time, no pauses.
/// `sparse`: probes not issued on a clock (spaced by the removal's operations, or a second
/// apart on a slow disk); `strict`: the user's own budget (`--max-latency`), honoured down to
/// the idle p90.
fn controller(target: Duration, sparse: bool, strict: bool) -> Controller {
    Controller::new(Config {
        target,
        min_step: 1,
        max_step: 1,
        initial_step: 1,
        min_pause: Duration::ZERO,
        max_pause: Duration::ZERO,
        window: WINDOW,
        // Probes spaced by the removal's progress are not issued on a clock: no correction
        // for the ones a slow probe kept from being issued.
        probe_interval: if sparse {
            Duration::ZERO
        } else {
            Spacing::default().min_interval
        },
        strict,
    })
}

/// Whether a window of probes spaced by the removal's operations (a few per window) is too
/// thin to judge yet: it is judged by `BUDGETED_SAMPLES` of them (one slow write among three
/// is not a p90), unless a write is stuck past the `target` or it has lasted
/// `BUDGETED_WINDOW_MAX`.
fn too_thin(samples: usize, in_flight: Option<Duration>, target: Duration, start: Instant) -> bool {
    let stuck = in_flight.is_some_and(|age| age > target);
    samples < BUDGETED_SAMPLES && !stuck && start.elapsed() < BUDGETED_WINDOW_MAX
}

/// Watches the probe and steers the knobs until `done` is set, reading the entries removed so
/// far from `entries`; returns the books.
pub fn run(
    dir: impl AsFd,
    pacing: &Pacing,
    knobs: &Knobs<'_>,
    entries: &(dyn Fn() -> u64 + Sync),
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
    let budgeted = knobs.budget.is_some();
    // On a disk that answers slowly idle (a spinning one), every probe write is a journal
    // commit the neighbours queue behind: at most one a second there, judged in windows of a
    // few of them (as on a network file system). At the default spacing, four a second, the
    // probe alone put the neighbours' p99 1.15x above one unprobed worker's (bench/RESULTS.md,
    // 2026-11-26 session 5).
    // (A network file system's probe is spaced by the removal's operations already.)
    let slow_idle = !budgeted && idle_median(knobs.idle).1;
    let spacing = if slow_idle {
        SLOW_DISK_SPACING
    } else {
        Spacing::default()
    };
    let sparse = budgeted || slow_idle;
    let probe = match Probe::start_budgeted(&dir, spacing, knobs.budget.clone()) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            report.probe_error = Some(crate::sys::error::errno_text(e));
            return report;
        }
    };
    // Without an idle measurement the baseline is taken while the workers already run: a
    // tree's first directory reads are light, and holding the removal back for it would cost
    // every small run.
    let base = if knobs.idle.is_empty() {
        baseline_until(&probe, target / 4, &|| done.load(Ordering::Relaxed))
    } else {
        knobs.idle.to_vec()
    };
    let base_p90 = percentile(&sorted(&base), 90.0);
    let max_workers = knobs.max_workers.max(1);
    // The workers allowed when the governor starts (the concurrency controller's start, or
    // the ceiling a rotational disk starts with).
    report.workers_max = knobs.gate.map(Gate::allowed);
    report.workers_min = report.workers_max;
    let ctl = controller(target, sparse, knobs.rate);
    let ops = entries;
    let mut during = Vec::new();
    let mut good_streak = 0u32;
    let mut start = Instant::now();
    let mut last_ops = ops();
    let mut backed_off: Option<Instant> = None;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
        if start.elapsed() < WINDOW {
            continue;
        }
        let (samples, in_flight) = probe.since(start);
        let (samples, in_flight) = issued_since(samples, in_flight, backed_off, Instant::now());
        if sparse && too_thin(samples.len(), in_flight, target, start) {
            continue;
        }
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
                good_streak = 0;
                back_off(knobs, achieved, &mut report);
                backed_off = Some(Instant::now());
            }
            Verdict::Good => give_back(knobs, achieved, max_workers, &mut good_streak),
            Verdict::Unknown => {}
        }
        start = Instant::now();
        last_ops = now_ops;
    }
    report.probe_before = LatencyStats::of(&base);
    report.probe_during = LatencyStats::of(&during);
    report.workers_final = knobs.gate.map(Gate::allowed);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn after_a_back_off_only_writes_issued_under_it_judge() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let sample = |issued: u64, took: u64| Sample {
            done: at(issued + took),
            latency: Duration::from_millis(took),
        };
        // Backed off at 100 ms: a write issued at 90 and done at 130 is the old count's.
        let samples = vec![sample(90, 40), sample(110, 5), sample(120, 30)];
        let (kept, in_flight) = issued_since(
            samples.clone(),
            Some(Duration::from_millis(60)),
            Some(at(100)),
            at(150),
        );
        assert_eq!(kept.len(), 2);
        assert!(kept.iter().all(|s| s.done - s.latency >= at(100)));
        assert_eq!(
            in_flight,
            Some(Duration::from_millis(50)),
            "in flight since 90: counted from the back-off"
        );
        let (_, in_flight) = issued_since(
            Vec::new(),
            Some(Duration::from_millis(20)),
            Some(at(100)),
            at(150),
        );
        assert_eq!(in_flight, Some(Duration::from_millis(20)));
        // No back-off yet: everything counts.
        let (kept, _) = issued_since(samples, None, None, at(150));
        assert_eq!(kept.len(), 3);
    }

    #[test]
    fn a_slow_disk_is_told_by_its_quick_writes_not_its_outliers() {
        // A virtual disk with two writes delayed by someone else's writeback: not slow.
        let (p50, slow) = idle_median(&ms(&[2, 3, 17, 18, 19]));
        assert_eq!(p50, Some(Duration::from_millis(17)));
        assert!(!slow);
        // A spinning disk: every write pays a seek and part of a rotation.
        assert!(idle_median(&ms(&[9, 12, 15, 30, 100])).1);
        assert!(!idle_median(&ms(&[1, 1, 2, 2, 5])).1);
        assert_eq!(idle_median(&[]), (None, false));
    }
}
