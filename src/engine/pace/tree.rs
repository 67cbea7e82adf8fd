//! The governor of tree removal (many small files): a thread watches the probe in windows of
//! 250 ms while the engine's workers unlink, and steers concurrency first, then (when asked
//! with `--max-latency`) the rate. On a missed window it halves the active workers (down to
//! one) by a ceiling over what the concurrency controller measured (`workers::Steer::hold`); with one
//! worker left, it holds the shared unlink rate to half of what the window achieved. On good
//! windows it gives the rate back first (up by a sixteenth, additive), then one worker after
//! every 2 s without a miss, until the ceiling no longer binds and is lifted. An idle disk
//! never misses, so nothing engages and the tree goes at full speed. While the file system is
//! short of space (under `Pacing::floor`, or falling toward it) every limit is lifted. It only
//! reads the counters and sets the gate and the throttle.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::controller::{Config, Controller, Verdict, Window};
use super::pacer::{baseline_until, percentile, sorted, LatencyStats, PaceReport, Pacing};
use super::probe::{Budget, Probe, Sample, Spacing};
use super::throttle::Throttle;
use super::workers::Steer;
use crate::engine::walk::Gate;

const WINDOW: Duration = Duration::from_millis(250);
/// The limit never goes below this many unlinks per second.
const MIN_RATE: f64 = 20.0;
/// Good windows in a row before one more worker (2 s).
const GROW_AFTER: u32 = 8;
/// Longest a back-off waits to be in force (the workers over the new ceiling finishing their
/// tasks) before windows are judged again.
const IN_FORCE_MAX: Duration = Duration::from_secs(4);
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

/// Idle probe latency (the lower quartile of a few synchronous writes: see `idle_median`) from
/// which a disk that says it is rotational is governed by default. A spinning disk's synchronous
/// write on a journaled file system is two writes in different places (the data, the journal)
/// and a cache flush: a seek and on average half a rotation each, so even its quicker writes
/// take a full 7200 rpm rotation (8.3 ms) or more (the emulated `hdd-7200`: 14 ms in theory,
/// 20-130 ms measured on the benchmark machine). A virtual or solid-state disk that calls itself
/// rotational (virtio does) answers below it. The lower quartile, not the p90: right after a
/// `sync` of a freshly written tree, one or two writes of a fast disk wait on writeback, and a
/// p90 of 3 ms made the benchmark machine's virtio disk look slow, so a 100,000-file tree
/// started with one worker and took 2.4x as long (bench --quick, 2026-11-23). Not 3 ms either: a
/// journaled ext4 or xfs loop image on a virtio disk (a loop write is a write and a flush of the
/// image file underneath) answered 1.4-4.8 ms idle from one run to the next, so the
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
/// image on a virtio disk, whose median is 2-5 ms, answered one run in five with a
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
    /// time: bench/RESULTS.md, 2026-11-26, "Gentle trees on a spinning disk"). Not by default.
    pub rate: bool,
    /// Probe latencies measured before the removal started (`idle_samples`): the baseline,
    /// when there are some. One taken while the workers run sees their own load: on the
    /// emulated HDD it read 312 ms against 130 ms idle, so nothing ever counted as a miss.
    pub idle: &'a [Duration],
    /// Space the probe's writes by the removal's operations too (a network file system: the
    /// probe's writes are round trips among the removal's).
    pub budget: Option<Budget>,
    /// The ranks of an MPI job governed as one (`None`: this process alone).
    pub joint: Option<&'a dyn Joint>,
}

/// One governor for all ranks of a job: one rank probes and judges the windows, and every rank
/// acts on each verdict with its own workers (halves them on a miss, earns one back after good
/// windows). Every rank's probe sees the whole job's load on the shared server; judged apart,
/// each backed off on its own misses, so one congestion event halved the job's workers several
/// times over and where it settled varied from run to run (8 ranks: 11.5, 13.2 and 24.5 s
/// for the same tree, six ranks held at 1-2 workers in the slow one: bench/RESULTS.md,
/// 2026-11-26). One judge also means one probe for the job, not one per rank.
pub trait Joint: Send + Sync + std::fmt::Debug {
    /// Whether this rank judges (and probes); the others follow.
    fn judges(&self) -> bool;
    /// The ranks that act on the verdicts (the judge among them).
    fn ranks(&self) -> usize;
    /// The judge: tells every other rank a window's verdict.
    fn publish(&self, verdict: Verdict);
    /// A follower: the next verdict that arrived, if any.
    fn next(&self) -> Option<Verdict>;
    /// A follower: a verdict from the judge arrived (the job's messages are read elsewhere).
    fn arrive(&self, verdict: Verdict);
    /// The judge: the other ranks reported `removed` more entries removed.
    fn others_removed(&self, removed: u64);
    /// The judge: the entries the other ranks removed so far (as far as they reported): with
    /// its own, what spaces the job's one probe on a network file system (a probe write per
    /// so many of the job's operations, not of rank 0's alone: at one worker a rank, rank 0's
    /// own took 2.4 s to space a window's eight writes, and 8 good windows took 20 s).
    fn removed_by_others(&self) -> u64;
}

/// A missed window: half the workers (down to one), then (with `Knobs::rate`) half the unlink
/// rate that the window `achieved`.
fn back_off(knobs: &Knobs<'_>, achieved: f64, report: &mut PaceReport) {
    match knobs.gate.filter(|g| g.allowed() > 1) {
        // Fewer operations in flight first: the harm is the queue they make (a ceiling over
        // what the concurrency controller measured).
        Some(g) => {
            let n = g.allowed() / 2;
            Steer::of(g).hold(n);
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
            Steer::of(g).hold(g.allowed() + 1);
            *good_streak = 0;
        }
    }
}

/// Acts on a window's verdict (the judge's own, or one from the job's judge): a miss backs
/// off (whether it did: the judge then waits for it to be in force), a good window gives back.
fn act(
    verdict: Verdict,
    knobs: &Knobs<'_>,
    achieved: f64,
    max_workers: usize,
    good_streak: &mut u32,
    report: &mut PaceReport,
) -> bool {
    match verdict {
        Verdict::Miss => {
            report.backoffs += 1;
            *good_streak = 0;
            back_off(knobs, achieved, report);
            true
        }
        Verdict::Good => {
            give_back(knobs, achieved, max_workers, good_streak);
            false
        }
        Verdict::Unknown => false,
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
    if let Some(joint) = knobs.joint {
        if !joint.judges() {
            return follow(joint, knobs, entries, done, report);
        }
        report.ranks = Some(joint.ranks());
    }
    let budgeted = knobs.budget.is_some();
    // On a disk that answers slowly idle (a spinning one), every probe write is a journal
    // commit the neighbours queue behind: at most one a second there, judged in windows of a
    // few of them (as on a network file system). At the default spacing, four a second, the
    // probe alone put the neighbours' p99 1.15x above one unprobed worker's (bench/RESULTS.md,
    // 2026-11-26, "Gentle trees on a spinning disk").
    // (A network file system's probe is spaced by the removal's operations already.)
    let slow_idle = !budgeted && idle_median(knobs.idle).1;
    let spacing = if slow_idle {
        SLOW_DISK_SPACING
    } else {
        Spacing::default()
    };
    let sparse = budgeted || slow_idle;
    // The workers allowed when the governor starts (the concurrency controller's start, or
    // the ceiling a rotational disk starts with), said also if the probe cannot start.
    report.workers_max = knobs.gate.map(Gate::allowed);
    report.workers_min = report.workers_max;
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
    let ctl = controller(target, sparse, knobs.rate);
    // `--pace-trace`: one JSON line per window (the judge's, under MPI).
    let mut trace = pacing
        .trace
        .as_deref()
        .and_then(super::pacer::trace_file)
        .map(std::io::BufWriter::new);
    let begun = Instant::now();
    let ops = entries;
    let mut during = Vec::new();
    let mut good_streak = 0u32;
    let mut start = Instant::now();
    let mut last_ops = ops();
    let mut backed_off: Option<Instant> = None;
    // A back-off not in force yet (since when): a worker over a lowered ceiling finishes the
    // task it has (a directory, a batch of names), and until it does the probe still waits
    // behind as many requests as before. Judged meanwhile, one congestion was halved again
    // and again: 8 MPI ranks went from 16 workers each to 1 in 1.2 s, and took 20 s to earn
    // 4 back (27.6 s against 11 s: bench/RESULTS.md, 2026-11-26, "MPI: one latency governor for
    // the job").
    let mut taking_effect: Option<Instant> = None;
    // The file system's free space: short of it, every limit is lifted (as `rm -r` would go)
    // until it is back.
    let mut watch = crate::sys::space::Watch::new(pacing.floor);
    let mut yielding = false;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
        match (watch.pressure(&dir, None, false), yielding) {
            (Some(p), false) => {
                yielding = true;
                if let Some(g) = knobs.gate {
                    Steer::of(g).yield_to_space();
                }
                knobs.throttle.yield_all(true);
                report.yielded.get_or_insert(p);
                continue;
            }
            (Some(_), true) => continue,
            (None, true) => {
                // Judged afresh from here, at full speed.
                yielding = false;
                knobs.throttle.yield_all(false);
                (taking_effect, backed_off) = (None, None);
                start = Instant::now();
                last_ops = ops();
                continue;
            }
            (None, false) => {}
        }
        if let Some(since) = taking_effect {
            let in_force = knobs.gate.is_none_or(|g| g.working() <= g.allowed());
            if !in_force && since.elapsed() < IN_FORCE_MAX {
                continue;
            }
            // Judged from here on: only what waited behind the lower count.
            taking_effect = None;
            backed_off = Some(Instant::now());
            start = Instant::now();
            last_ops = ops();
            continue;
        }
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
            samples: lat.clone(),
            in_flight,
            baseline: base_p90,
            ..Window::default()
        });
        report.windows += 1;
        if let Some(joint) = knobs.joint.filter(|_| verdict != Verdict::Unknown) {
            joint.publish(verdict);
        }
        if act(
            verdict,
            knobs,
            achieved,
            max_workers,
            &mut good_streak,
            &mut report,
        ) {
            backed_off = Some(Instant::now());
            taking_effect = backed_off;
        }
        if let Some(out) = trace.as_mut() {
            trace_window(out, begun, &lat, in_flight, verdict, achieved, knobs);
        }
        start = Instant::now();
        last_ops = now_ops;
    }
    report.probe_before = LatencyStats::of(&base);
    report.probe_during = LatencyStats::of(&during);
    report.workers_final = knobs.gate.map(Gate::allowed);
    report
}

/// One line of `--pace-trace` for a window: what the probe saw, the verdict, what the
/// removal achieved (entries/s, the whole job's on rank 0 under MPI) and the workers allowed
/// after it.
fn trace_window(
    out: &mut impl std::io::Write,
    begun: Instant,
    lat: &[Duration],
    in_flight: Option<Duration>,
    verdict: Verdict,
    achieved: f64,
    knobs: &Knobs<'_>,
) {
    let v = sorted(lat);
    let ms = |d: Option<Duration>| d.map(|d| (d.as_secs_f64() * 1e5).round() / 1e2);
    let line = serde_json::json!({
        "t": (begun.elapsed().as_secs_f64() * 1e3).round() / 1e3,
        "n": v.len(),
        "p50_ms": ms(percentile(&v, 50.0)),
        "p90_ms": ms(percentile(&v, 90.0)),
        "max_ms": ms(v.last().copied()),
        "in_flight_ms": ms(in_flight),
        "verdict": format!("{verdict:?}"),
        "entries_per_s": achieved.round(),
        "workers": knobs.gate.map(Gate::allowed),
        "rate": knobs.throttle.rate(),
    });
    let _ = writeln!(out, "{line}");
}

/// A rank that follows the job's judge (`Joint`): no probe of its own; each verdict that
/// arrives steers its workers as the judge's own verdicts steer the judge's, until `done`.
fn follow(
    joint: &dyn Joint,
    knobs: &Knobs<'_>,
    ops: &(dyn Fn() -> u64 + Sync),
    done: &AtomicBool,
    mut report: PaceReport,
) -> PaceReport {
    let max_workers = knobs.max_workers.max(1);
    report.workers_max = knobs.gate.map(Gate::allowed);
    report.workers_min = report.workers_max;
    let mut good_streak = 0u32;
    let mut since = Instant::now();
    let mut last_ops = ops();
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
        let mut arrived = std::iter::from_fn(|| joint.next()).peekable();
        if arrived.peek().is_none() {
            continue;
        }
        // What this rank achieved since the last verdicts (its rate, for `Knobs::rate`).
        let now_ops = ops();
        let achieved = (now_ops - last_ops) as f64 / since.elapsed().as_secs_f64().max(1e-3);
        for verdict in arrived {
            report.windows += 1;
            act(
                verdict,
                knobs,
                achieved,
                max_workers,
                &mut good_streak,
                &mut report,
            );
        }
        since = Instant::now();
        last_ops = now_ops;
    }
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

    /// A judge that only records what it would tell the other ranks.
    #[derive(Debug)]
    struct Recorder(std::sync::Mutex<Vec<Verdict>>);

    impl Joint for Recorder {
        fn judges(&self) -> bool {
            true
        }
        fn ranks(&self) -> usize {
            4
        }
        fn publish(&self, verdict: Verdict) {
            self.0.lock().unwrap().push(verdict);
        }
        fn next(&self) -> Option<Verdict> {
            panic!("the judge waits for no verdicts")
        }
        fn arrive(&self, _: Verdict) {
            panic!("the judge is sent no verdicts")
        }
        fn others_removed(&self, _: u64) {}
        fn removed_by_others(&self) -> u64 {
            0
        }
    }

    #[test]
    fn the_judge_tells_the_ranks_every_verdict_it_acts_on() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = std::fs::File::open(scratch.path()).unwrap();
        let gate = Gate::new(8);
        let throttle = Throttle::new(None);
        let recorder = Recorder(Default::default());
        let knobs = Knobs {
            throttle: &throttle,
            gate: Some(&gate),
            max_workers: 8,
            rate: false,
            idle: &[],
            budget: None,
            joint: Some(&recorder),
        };
        let pacing = Pacing {
            max_latency: Some(Duration::from_millis(50)),
            rate: None,
            trace: None,
            floor: crate::sys::space::Floor::Off,
        };
        let done = AtomicBool::new(false);
        let report = std::thread::scope(|s| {
            let run = s.spawn(|| run(&dir, &pacing, &knobs, &|| 0, &done));
            let deadline = Instant::now() + Duration::from_secs(20);
            while recorder.0.lock().unwrap().len() < 3 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            done.store(true, Ordering::Relaxed);
            run.join().unwrap()
        });
        let told = recorder.0.lock().unwrap().clone();
        assert!(told.len() >= 3, "told the ranks {told:?}");
        assert!(
            !told.contains(&Verdict::Unknown),
            "nothing to act on: {told:?}"
        );
        // Every verdict it acted on was told (a window of no samples, Unknown, is not).
        let misses = told.iter().filter(|v| **v == Verdict::Miss).count() as u64;
        assert_eq!(report.backoffs, misses);
        assert!(report.windows >= told.len() as u64);
        assert!(report.probe_during.count > 0, "the judge probes");
        assert_eq!(report.ranks, Some(4));
    }

    #[test]
    fn a_back_off_is_judged_only_once_it_is_in_force() {
        // Every window misses (a budget of a microsecond). Eight workers are busy with tasks
        // and a lowered ceiling lets none in, but those working finish their tasks first:
        // until they do, the probe waits behind as many requests as before, and judging
        // that halved one congestion again and again (8 -> 1 in a few windows).
        let scratch = tempfile::tempdir().unwrap();
        let dir = std::fs::File::open(scratch.path()).unwrap();
        let gate = Gate::new(8);
        for _ in 0..8 {
            gate.enter();
            gate.begin();
        }
        let throttle = Throttle::new(None);
        let idle = [Duration::from_micros(1); 5];
        let knobs = Knobs {
            throttle: &throttle,
            gate: Some(&gate),
            max_workers: 8,
            rate: false,
            idle: &idle,
            budget: None,
            joint: None,
        };
        let pacing = Pacing {
            max_latency: Some(Duration::from_micros(1)),
            rate: None,
            trace: None,
            floor: crate::sys::space::Floor::Off,
        };
        let done = AtomicBool::new(false);
        let wait_for = |what: &dyn Fn() -> bool, secs: u64| {
            let deadline = Instant::now() + Duration::from_secs(secs);
            while !what() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        let (before, after, report) = std::thread::scope(|s| {
            let run = s.spawn(|| run(&dir, &pacing, &knobs, &|| 0, &done));
            wait_for(&|| gate.allowed() < 8, 10);
            // Eight windows and more pass while the eight are still at work.
            std::thread::sleep(Duration::from_millis(2_500));
            let before = gate.allowed();
            // Four finish their tasks: the ceiling of 4 is in force, and still missed.
            for _ in 0..4 {
                gate.leave(true);
            }
            wait_for(&|| gate.allowed() < before, 10);
            let after = gate.allowed();
            done.store(true, Ordering::Relaxed);
            (before, after, run.join().unwrap())
        });
        assert_eq!(
            before, 4,
            "halved again before the first halving took effect"
        );
        assert_eq!(after, 2, "a halving in force is judged");
        assert_eq!(report.workers_min, Some(2));
        for _ in 0..4 {
            gate.leave(true);
        }
    }
}
