//! The pacing controller: windows of probe latencies in, (step, pause) out.
//!
//! The remover shrinks a file in steps of `step()` cost units and sleeps `pause()` after each.
//! It does one step at a time, so the harm it does to other I/O is the wait behind its current
//! step (proportional to the step) times how often it is busy (the duty cycle, set by the
//! pause). The step is the main knob; the pause is the fallback for when even `min_step` is
//! too much. At every window end the caller hands over the probe latencies it collected.
//!
//! **Judge** the window against the budget `B = max(target, 1.5 * baseline)`:
//! * the signal is the p90 (nearest rank) of the probe latencies, corrected for coordinated
//!   omission: the probe is serial, so one that took `L` also stands for the probes it kept
//!   from being issued every `probe_interval`, which would have seen `L - i`, `L - 2i`, …
//!   (HdrHistogram's correction). A probe still in flight counts with its age. Uncorrected,
//!   a 200 ms stall is one sample among forty fast ones and the p90 looks fine;
//! * no completed samples: a probe in flight older than `B` → **Miss** (a stalled probe
//!   completes nothing, and that must never look good), otherwise → **Unknown** (no change);
//! * the caller's step held the file system (its truncate) longer than the headroom
//!   `B - baseline/2` → **Miss**: any I/O that needed the journal meanwhile waited that long,
//!   however few of those waits the probe happened to catch;
//! * p90 `> B` → **Miss**, else **Good**. (With `probe_interval` 0 there is no correction,
//!   and any in-flight probe older than `B` is a Miss.)
//!
//! **Adapt**:
//! * *Slow start* (until the first Miss): each Good doubles the step, pause = `min_pause`;
//!   when the caller says how long the step took and that was under half the budget, the
//!   step grows by budget/step-time instead (at most 16×). An idle fast disk reaches
//!   `max_step` in a few windows: nearly plain `rm`.
//! * *Miss* (multiplicative decrease, in force from the very next step): halve the step,
//!   which halves the wait of an op caught behind one of our steps; if that would go below
//!   `min_step`, set `min_step` and double the pause instead (from 10 ms when it was 0),
//!   which, once pauses outweigh step time, halves the duty cycle. Either way step/pause
//!   halves at once. (At pause 0 on a disk-bound step, halving the step halves the burst, not
//!   the throughput; if the harm is bandwidth, not bursts, the step walks down to `min_step`
//!   in a few windows and the pause takes over.)
//! * *Good* (additive increase): first shorten the pause, then grow the step, by a fraction
//!   of the current value: 1/16 right after a Miss, doubling every 8 Good windows in a row
//!   (1/8, 1/4, 1/2, capped at 1 = doubling). A pause under 1 ms snaps to `min_pause`.
//!
//! Why that increase: a doubling undone in ~10 Good windows puts about one Miss in 11 windows
//! near the limit, and the sawtooth spans 2× (from S/2 back to the S that missed), averaging
//! ~3/4 of the sustainable rate. A fixed 1/16 alone would take ~110 windows (half a minute) to
//! regain 1000× after a load spike passes; the streak doubling gets there in ~33 windows, while close
//! to the limit (streaks are short there) it still creeps. Everything is clamped to
//! `[min_step, max_step]` and `[min_pause, max_pause]`.

use serde::Serialize;
use std::time::Duration;

/// Pause used for the first back-off once the step is already at its minimum.
const FIRST_PAUSE: Duration = Duration::from_millis(10);
/// A pause shorter than this is not worth a sleep: it snaps to `min_pause`.
const PAUSE_SNAP: Duration = Duration::from_millis(1);
/// Right after a Miss, a Good grows the rate by `1 / 2^GROWTH_SHIFT` of its current value.
const GROWTH_SHIFT: u32 = 4;
/// The growth fraction doubles every this many Good windows in a row.
const STREAK_PER_DOUBLING: u32 = 8;

/// Controller settings; `Controller::new` repairs inconsistent values instead of failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Latency budget for other I/O (the probe's p90), e.g. 20 ms.
    pub target: Duration,
    /// Smallest step, in cost units (the caller's unit: extents or blocks of metadata work).
    pub min_step: u64,
    /// Largest step, in cost units.
    pub max_step: u64,
    /// First step, before anything is known.
    pub initial_step: u64,
    /// Shortest pause after a step, e.g. 0.
    pub min_pause: Duration,
    /// Longest pause after a step, e.g. 1 s.
    pub max_pause: Duration,
    /// Nominal window length, e.g. 250 ms. The caller decides when a window ends; this is
    /// informational (for reports and for the caller's own scheduling).
    pub window: Duration,
    /// How often the probe is issued (when not held up by a slow one), e.g. 5 ms; used to
    /// correct the p90 for coordinated omission. Zero disables the correction.
    pub probe_interval: Duration,
    /// The budget is the user's own (`--max-latency` given): honoured down to the idle p90
    /// itself. A default budget keeps half the idle latency again as margin on a disk slower
    /// than it (`budget`).
    pub strict: bool,
}

/// What the probe saw during one window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    /// Latencies of the probe operations that completed in this window.
    pub samples: Vec<Duration>,
    /// Age of a probe operation still outstanding at the window's end.
    pub in_flight: Option<Duration>,
    /// p90 of the probe before removal started, if known.
    pub baseline: Option<Duration>,
    /// How long the step itself took (the remover's syscalls), if known: in slow start, a
    /// step far quicker than the budget may grow by more than 2× (up to 16×).
    pub step_time: Option<Duration>,
    /// How long the step held the file system (the truncate itself, during which others'
    /// journal commits wait): longer than the headroom `budget - baseline/2` is a Miss.
    pub hold: Option<Duration>,
}

/// The judgement of one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Latency within budget: speed up.
    Good,
    /// Latency over budget (or a stalled probe): back off.
    Miss,
    /// Nothing measured: change nothing.
    Unknown,
}

/// Counters and current settings, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Windows observed, of any verdict.
    pub windows: u64,
    /// Miss windows (each one a back-off).
    pub misses: u64,
    /// Good windows.
    pub good: u64,
    /// Unknown windows.
    pub unknown: u64,
    /// Current step, in cost units.
    pub step: u64,
    /// Current pause.
    pub pause: Duration,
    /// Still in slow start (no Miss seen yet).
    pub slow_start: bool,
}

/// AIMD controller turning probe-latency windows into (step, pause); see the module docs.
#[derive(Debug, Clone)]
pub struct Controller {
    cfg: Config,
    step: u64,
    pause: Duration,
    slow_start: bool,
    /// Good windows in a row since the last Miss.
    streak: u32,
    stats: Stats,
}

impl Config {
    /// Makes the ranges non-empty and puts the initial step inside them.
    fn sanitized(mut self) -> Self {
        self.min_step = self.min_step.max(1);
        self.max_step = self.max_step.max(self.min_step);
        self.initial_step = self.initial_step.clamp(self.min_step, self.max_step);
        self.max_pause = self.max_pause.max(self.min_pause);
        self
    }
}

impl Controller {
    /// A controller in slow start at `initial_step` with the minimum pause.
    pub fn new(cfg: Config) -> Self {
        let cfg = cfg.sanitized();
        let mut c = Controller {
            cfg,
            step: cfg.initial_step,
            pause: cfg.min_pause,
            slow_start: true,
            streak: 0,
            stats: Stats {
                windows: 0,
                misses: 0,
                good: 0,
                unknown: 0,
                step: 0,
                pause: Duration::ZERO,
                slow_start: true,
            },
        };
        c.sync_stats();
        c
    }

    /// Cost units for the next step.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// How long to sleep after each step.
    pub fn pause(&self) -> Duration {
        self.pause
    }

    #[cfg(test)]
    /// Counters and current settings.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The latency budget a window is judged against: the target, widened to 1.5× the
    /// device's idle p90 when that is higher.
    pub fn budget(&self, baseline: Option<Duration>) -> Duration {
        let floor = match baseline {
            None => Duration::ZERO,
            // Nothing can be faster than the disk idle: an explicit budget below it would
            // hold the removal at its slowest for nothing.
            Some(b) if self.cfg.strict => b,
            Some(b) => b.saturating_mul(3) / 2,
        };
        self.cfg.target.max(floor)
    }

    /// Judges a window without changing anything.
    pub fn judge(&self, w: &Window) -> Verdict {
        let budget = self.budget(w.baseline);
        let interval = self.cfg.probe_interval;
        // Whoever needs the file system while our step holds it waits for the whole step: a
        // step longer than the headroom left above the idle latency is too big, whatever the
        // (sparse) probe happened to see.
        let headroom = budget.saturating_sub(w.baseline.unwrap_or_default() / 2);
        if w.hold.is_some_and(|h| h > headroom) {
            return Verdict::Miss;
        }
        let stalled = w.in_flight.is_some_and(|age| age > budget);
        if stalled && (w.samples.is_empty() || interval.is_zero()) {
            return Verdict::Miss;
        }
        if w.samples.is_empty() {
            return Verdict::Unknown;
        }
        let mut tally = Tally::default();
        for &lat in w.samples.iter().chain(&w.in_flight) {
            tally.add(lat, interval, budget);
        }
        if tally.p90_over_budget() {
            Verdict::Miss
        } else {
            Verdict::Good
        }
    }

    /// End of a window: judges it and adapts step and pause. Unknown changes nothing.
    pub fn observe(&mut self, w: &Window) -> Verdict {
        let verdict = self.judge(w);
        self.stats.windows += 1;
        match verdict {
            Verdict::Good => {
                self.stats.good += 1;
                self.speed_up(self.slow_start_factor(w));
            }
            Verdict::Miss => {
                self.stats.misses += 1;
                self.back_off();
            }
            Verdict::Unknown => self.stats.unknown += 1,
        }
        self.sync_stats();
        verdict
    }

    /// Multiplicative decrease: halve the step, or at the minimum step double the pause.
    fn back_off(&mut self) {
        self.slow_start = false;
        self.streak = 0;
        if self.step / 2 >= self.cfg.min_step {
            self.step /= 2;
        } else {
            self.step = self.cfg.min_step;
            self.pause = self
                .pause
                .saturating_mul(2)
                .max(FIRST_PAUSE)
                .clamp(self.cfg.min_pause, self.cfg.max_pause);
        }
    }

    /// Slow-start growth for a Good window: 2×, or up to 16× when the step took a small
    /// fraction of the budget (a fast, idle device: reach the full speed in a few steps).
    fn slow_start_factor(&self, w: &Window) -> u64 {
        let budget = self.budget(w.baseline);
        match w.step_time {
            Some(t) if !t.is_zero() => {
                ((budget.as_secs_f64() / t.as_secs_f64()) as u64).clamp(2, 16)
            }
            Some(_) => 16,
            None => 2,
        }
    }

    /// Slow start multiplies the step by `factor` (2 to 16); afterwards shorten the pause
    /// first, then grow the step.
    fn speed_up(&mut self, factor: u64) {
        if self.slow_start {
            self.step = self.step.saturating_mul(factor).min(self.cfg.max_step);
            self.pause = self.cfg.min_pause;
            return;
        }
        let shift = GROWTH_SHIFT.saturating_sub(self.streak / STREAK_PER_DOUBLING);
        self.streak = self.streak.saturating_add(1);
        if self.pause > self.cfg.min_pause {
            self.pause = self.shorter_pause(shift);
        } else {
            let inc = (self.step >> shift).max(1);
            self.step = self.step.saturating_add(inc).min(self.cfg.max_step);
        }
    }

    /// The pause less `1 / 2^shift` of itself; under 1 ms it snaps to `min_pause`.
    fn shorter_pause(&self, shift: u32) -> Duration {
        let p = self.pause - self.pause / (1u32 << shift);
        if p < PAUSE_SNAP {
            self.cfg.min_pause
        } else {
            p.max(self.cfg.min_pause)
        }
    }

    fn sync_stats(&mut self) {
        self.stats.step = self.step;
        self.stats.pause = self.pause;
        self.stats.slow_start = self.slow_start;
    }
}

/// Probe latencies corrected for coordinated omission, counted against a budget.
#[derive(Debug, Default)]
struct Tally {
    /// Values counted, real and synthetic.
    total: u128,
    /// Values over the budget.
    over: u128,
}

impl Tally {
    /// Counts a probe that took `lat` plus, when `interval` is set, the probes it kept from
    /// being issued: `lat - interval`, `lat - 2*interval`, … down to `interval`.
    fn add(&mut self, lat: Duration, interval: Duration, budget: Duration) {
        let (l, i, b) = (lat.as_nanos(), interval.as_nanos(), budget.as_nanos());
        let total = l.checked_div(i).map_or(1, |n| n.max(1));
        let over = match (l > b, i) {
            (false, _) => 0,
            (true, 0) => 1,
            (true, i) => (l - b).div_ceil(i).min(total),
        };
        self.total += total;
        self.over += over;
    }

    /// Nearest-rank p90 > budget ⟺ fewer than ⌈0.9·n⌉ values are within it.
    fn p90_over_budget(&self) -> bool {
        self.total - self.over < (self.total * 9).div_ceil(10)
    }
}

/// The 90th percentile by nearest rank (the ⌈0.9·n⌉-th smallest), uncorrected; `None` when
/// empty. For reports: the controller judges with the corrected count above.
#[cfg(test)]
pub fn p90(samples: &[Duration]) -> Option<Duration> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    let rank = (samples.len() * 9).div_ceil(10);
    let (_, nth, _) = v.select_nth_unstable(rank - 1);
    Some(*nth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    fn ms(m: u64) -> Duration {
        Duration::from_millis(m)
    }

    fn cfg() -> Config {
        Config {
            target: ms(20),
            min_step: 16,
            max_step: 1 << 20,
            initial_step: 256,
            min_pause: Duration::ZERO,
            max_pause: Duration::from_secs(1),
            window: ms(250),
            probe_interval: ms(5),
            strict: false,
        }
    }

    fn window(samples_ms: &[u64]) -> Window {
        Window {
            samples: samples_ms.iter().map(|&m| ms(m)).collect(),
            ..Window::default()
        }
    }

    /// xorshift64*: deterministic jitter for the simulated probe.
    struct Rng(u64);

    impl Rng {
        fn unit(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// A simulated device. The remover runs one step at a time: a step of `s` units takes
    /// `overhead + s / capacity` seconds (the fixed part is the fdatasync), then it sleeps the
    /// pause. A serial probe is issued every `probe_gap` (plus jitter, and never before the
    /// previous one completed). How our work hurts it depends on `harm`.
    struct Plant {
        harm: Harm,
        capacity: f64,
        overhead: f64,
        base: f64,
        probe_gap: f64,
        window: f64,
        /// Start of the next window.
        now: f64,
        /// When the remover's next step starts.
        cursor: f64,
        /// Steps (start, end, units) that may still matter.
        steps: Vec<(f64, f64, u64)>,
        /// When the next probe is issued (if none is outstanding).
        probe_at: f64,
        /// The outstanding probe: (issued, completes).
        pending: Option<(f64, f64)>,
        rng: Rng,
    }

    /// How the remover's work delays other I/O in the simulated device.
    #[derive(Clone, Copy)]
    enum Harm {
        /// The file system serializes other ops behind our step: a probe arriving during one
        /// waits for its rest, then takes `base`. Harm = burst length × how often we are busy;
        /// the step sets the first, the pause the second.
        Serialize,
        /// The device shares its bandwidth: a probe takes `base / (1 - u)`, u = the fraction
        /// of the window our steps kept the device busy (capped at 0.95). Only the duty cycle
        /// matters, so only the pause can help.
        Share,
    }

    /// One simulated window: what the probe saw and what the remover got done.
    struct Outcome {
        window: Window,
        units: u64,
    }

    impl Plant {
        fn new(capacity: f64) -> Self {
            Plant {
                harm: Harm::Serialize,
                capacity,
                overhead: 0.001,
                base: 0.0005,
                probe_gap: 0.005,
                window: 0.25,
                now: 0.0,
                cursor: 0.0,
                steps: Vec::new(),
                probe_at: 0.0,
                pending: None,
                rng: Rng(0x9e37_79b9_7f4a_7c15),
            }
        }

        /// A bandwidth-sharing device whose idle probe latency is `base`.
        fn sharing(capacity: f64, base: f64) -> Self {
            Plant {
                harm: Harm::Share,
                base,
                ..Plant::new(capacity)
            }
        }

        /// How long a step of `step` units takes on this device.
        fn step_time(&self, step: u64) -> f64 {
            self.overhead + step as f64 / self.capacity
        }

        /// The work rate (units/s) of a fixed (step, pause) on this device.
        fn rate(&self, step: u64, pause: Duration) -> f64 {
            step as f64 / (self.step_time(step) + pause.as_secs_f64())
        }

        /// How much of our step is left at time `q` (0 between steps).
        fn behind(&self, q: f64) -> f64 {
            self.steps
                .iter()
                .find(|&&(s, e, _)| s <= q && q < e)
                .map_or(0.0, |&(_, e, _)| e - q)
        }

        fn run_window(&mut self, step: u64, pause: Duration) -> Outcome {
            let (start, end) = (self.now, self.now + self.window);
            self.steps.retain(|&(_, e, _)| e >= start);
            let t = self.step_time(step);
            while self.cursor < end {
                self.steps.push((self.cursor, self.cursor + t, step));
                self.cursor += t + pause.as_secs_f64();
            }
            let units = self
                .steps
                .iter()
                .filter(|&&(_, e, _)| e >= start && e < end)
                .map(|&(_, _, u)| u)
                .sum();
            let busy = self
                .steps
                .iter()
                .map(|&(s, e, _)| (e.min(end) - s.max(start)).max(0.0))
                .sum::<f64>()
                / self.window;
            let mut w = Window::default();
            loop {
                if let Some((issued, done)) = self.pending {
                    if done >= end {
                        w.in_flight = Some(Duration::from_secs_f64(end - issued));
                        break;
                    }
                    w.samples.push(Duration::from_secs_f64(done - issued));
                    self.pending = None;
                    let jitter = self.rng.unit() * 0.002;
                    self.probe_at = done.max(issued + self.probe_gap) + jitter;
                }
                let q = self.probe_at;
                if q >= end {
                    break;
                }
                let took = match self.harm {
                    Harm::Serialize => self.base + self.behind(q),
                    Harm::Share => self.base / (1.0 - busy.min(0.95)),
                };
                self.pending = Some((q, q + took));
            }
            self.now = end;
            Outcome { window: w, units }
        }
    }

    /// A closed-loop run: per window the verdict, step, pause in force, and units done.
    struct Trace {
        verdicts: Vec<Verdict>,
        steps: Vec<u64>,
        pauses: Vec<Duration>,
        units: Vec<u64>,
    }

    impl Trace {
        /// Average work rate (units/s) over windows `from..`.
        fn rate(&self, from: usize, window: f64) -> f64 {
            let n = self.units.len() - from;
            self.units[from..].iter().sum::<u64>() as f64 / (n as f64 * window)
        }

        fn miss_fraction(&self, from: usize) -> f64 {
            let tail = &self.verdicts[from..];
            let misses = tail.iter().filter(|&&v| v == Verdict::Miss).count();
            misses as f64 / tail.len() as f64
        }

        /// max/min of the step over windows `from..`.
        fn step_band(&self, from: usize) -> f64 {
            let tail = &self.steps[from..];
            let (lo, hi) = (tail.iter().min(), tail.iter().max());
            match (lo, hi) {
                (Some(&lo), Some(&hi)) => hi as f64 / lo as f64,
                _ => f64::NAN,
            }
        }
    }

    /// Runs `n` windows closed loop; `capacity(i)` may change the device between windows.
    fn run(
        c: &mut Controller,
        plant: &mut Plant,
        n: usize,
        capacity: impl Fn(usize) -> f64,
    ) -> Trace {
        let mut tr = Trace {
            verdicts: Vec::new(),
            steps: Vec::new(),
            pauses: Vec::new(),
            units: Vec::new(),
        };
        for i in 0..n {
            plant.capacity = capacity(i);
            let (step, pause) = (c.step(), c.pause());
            let out = plant.run_window(step, pause);
            tr.steps.push(step);
            tr.pauses.push(pause);
            tr.units.push(out.units);
            tr.verdicts.push(c.observe(&out.window));
        }
        tr
    }

    /// The sustainable rate R: the best fixed (step, pause) whose windows miss at most 10% of
    /// the time, found by trying a grid of settings open loop on a fresh device.
    fn sustainable_rate(make: impl Fn() -> Plant, cfg: &Config) -> f64 {
        let judge = Controller::new(*cfg);
        let mut steps = vec![cfg.min_step];
        while let Some(&s) = steps.last().filter(|&&s| s < cfg.max_step) {
            steps.push((s + s / 4 + 1).min(cfg.max_step));
        }
        let mut pauses = vec![Duration::ZERO];
        let mut p = MS;
        while p <= cfg.max_pause {
            pauses.push(p);
            p = p * 5 / 4;
        }
        let mut best = 0.0f64;
        for &s in &steps {
            for &p in &pauses {
                let mut plant = make();
                if plant.rate(s, p) <= best {
                    continue;
                }
                let n = 100;
                let misses = (0..n)
                    .filter(|_| judge.judge(&plant.run_window(s, p).window) == Verdict::Miss)
                    .count();
                if misses * 10 <= n {
                    best = plant.rate(s, p);
                }
            }
        }
        best
    }

    #[test]
    fn p90_is_nearest_rank() {
        let d = |v: &[u64]| p90(&window(v).samples);
        assert_eq!(d(&[]), None);
        assert_eq!(d(&[7]), Some(ms(7)));
        assert_eq!(d(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), Some(ms(9)));
        assert_eq!(d(&[10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 11]), Some(ms(10)));
        assert_eq!(d(&[50, 1]), Some(ms(50)));
    }

    /// (1) Idle fast disk: max_step within log2(max/initial) + 1 windows, pause stays 0.
    #[test]
    fn idle_disk_goes_full_speed_at_once() {
        let cfg = cfg();
        let mut c = Controller::new(cfg);
        let mut plant = Plant::new(1e12);
        let tr = run(&mut c, &mut plant, 100, |_| 1e12);
        let bound = (cfg.max_step / cfg.initial_step).ilog2() as usize + 1;
        let first_max = tr.steps.iter().position(|&s| s == cfg.max_step);
        assert!(
            first_max.is_some_and(|i| i <= bound),
            "{first_max:?} > {bound}"
        );
        assert!(tr.pauses.iter().all(|p| p.is_zero()));
        assert!(tr.verdicts.iter().all(|&v| v == Verdict::Good));
        assert!(c.stats().slow_start);
    }

    /// (2, 3) Step-limited device: uses the budget (≥ 50% of R, few misses) and the step
    /// stays in AIMD's sawtooth band.
    #[test]
    fn converges_on_a_fast_disk() {
        let cfg = cfg();
        let capacity = 1e6;
        let r = sustainable_rate(|| Plant::new(capacity), &cfg);
        let mut c = Controller::new(cfg);
        let mut plant = Plant::new(capacity);
        let tr = run(&mut c, &mut plant, 600, |_| capacity);
        let (rate, miss, band) = (tr.rate(200, 0.25), tr.miss_fraction(200), tr.step_band(500));
        assert!(rate >= 0.5 * r, "rate {rate} vs R {r}");
        assert!(miss < 0.2, "miss fraction {miss}");
        // The sawtooth spans 2× (S/2 back up to S); noise may add a second halving. 4× means
        // no runaway and no collapse to the floor.
        assert!(band <= 4.0, "step band {band}");
        assert!(tr.pauses[200..].iter().all(|p| p.is_zero()));
    }

    /// (2, 3) Bandwidth-sharing device: at pause 0 we saturate it whatever the step, so the
    /// pause does the work (step stays at min_step); it settles in a band and uses the budget.
    #[test]
    fn converges_when_only_the_pause_helps() {
        let cfg = cfg();
        let make = || Plant::sharing(1000.0, 0.008); // budget allows 60% duty
        let r = sustainable_rate(make, &cfg);
        let mut c = Controller::new(cfg);
        let tr = run(&mut c, &mut make(), 600, |_| 1000.0);
        let (rate, miss) = (tr.rate(200, 0.25), tr.miss_fraction(200));
        let band = pause_band(&tr.pauses[500..]);
        assert!(rate >= 0.5 * r, "rate {rate} vs R {r}");
        assert!(miss < 0.2, "miss fraction {miss}");
        assert!(band <= 4.0, "pause band {band}");
        assert!(tr.steps[200..].iter().all(|&s| s == cfg.min_step));
    }

    /// Serializing device so slow that one min_step (65 ms) alone stalls others past the
    /// budget for over 10% of a window: no setting is Good in a window with a step in it, so
    /// the controller must give way as far as it may: min_step, pauses near max_pause.
    #[test]
    fn gives_way_when_one_step_is_too_long() {
        let cfg = cfg();
        let mut c = Controller::new(cfg);
        let tr = run(&mut c, &mut Plant::new(250.0), 600, |_| 250.0);
        let mut pauses = tr.pauses[200..].to_vec();
        pauses.sort_unstable();
        let median = pauses[pauses.len() / 2];
        assert!(tr.steps[200..].iter().all(|&s| s == cfg.min_step));
        assert!(median >= cfg.max_pause / 2, "median pause {median:?}");
    }

    /// max/min of the pauses (all should be non-zero).
    fn pause_band(pauses: &[Duration]) -> f64 {
        let lo = pauses.iter().min().map_or(0.0, |p| p.as_secs_f64());
        let hi = pauses.iter().max().map_or(0.0, |p| p.as_secs_f64());
        hi / lo
    }

    /// (4) Capacity drops 10×: the window after the first Miss runs at most half the step
    /// (half the burst other I/O waits behind); after the load goes away it recovers.
    #[test]
    fn backs_off_within_one_window_and_recovers() {
        let cfg = cfg();
        let mut c = Controller::new(cfg);
        let mut plant = Plant::new(1e6);
        let (drop_at, back_at) = (300, 500);
        let cap = |i: usize| {
            if (drop_at..back_at).contains(&i) {
                1e5
            } else {
                1e6
            }
        };
        let tr = run(&mut c, &mut plant, 700, cap);
        let first_miss = (drop_at..back_at).find(|&i| tr.verdicts[i] == Verdict::Miss);
        let Some(m) = first_miss else {
            panic!("no miss after the capacity drop");
        };
        assert!(m <= drop_at + 1, "first miss only at window {m}");
        assert!(tr.steps[m + 1] * 2 <= tr.steps[m]);
        // Harm = burst length: the time another op may wait behind one of our steps.
        let burst = |s: u64| 1e-3 + s as f64 / 1e5;
        assert!(burst(tr.steps[m + 1]) <= 0.55 * burst(tr.steps[m]));
        // Settles to the lower capacity: about 10× smaller steps, few misses.
        let before = median(&tr.steps[drop_at - 100..drop_at]);
        let during = median(&tr.steps[back_at - 100..back_at]);
        assert!(
            during * 5 <= before && during * 20 >= before,
            "step {before} -> {during}"
        );
        assert!(miss_in(&tr, back_at - 150, back_at) < 0.2);
        // Recovers to half its old step within 40 windows (10 s) of the load going away.
        let rec = (back_at..tr.steps.len()).find(|&i| tr.steps[i] * 2 >= before);
        assert!(rec.is_some_and(|i| i - back_at <= 40), "{rec:?}");
    }

    fn median(v: &[u64]) -> u64 {
        let mut v = v.to_vec();
        v.sort_unstable();
        v[v.len() / 2]
    }

    fn miss_in(tr: &Trace, from: usize, to: usize) -> f64 {
        let misses = tr.verdicts[from..to]
            .iter()
            .filter(|&&v| v == Verdict::Miss)
            .count();
        misses as f64 / (to - from) as f64
    }

    /// (5) A probe stuck longer than the budget is a Miss even with nothing completed, and
    /// even when the completed samples look fine; a young one alone is Unknown.
    #[test]
    fn stalled_probe_is_a_miss() {
        let mut c = Controller::new(cfg());
        let stalled = Window {
            in_flight: Some(ms(21)),
            ..Window::default()
        };
        assert_eq!(c.observe(&stalled), Verdict::Miss);
        assert_eq!(c.step(), 128);
        let mixed = Window {
            in_flight: Some(ms(200)),
            ..window(&[1, 1, 1, 1])
        };
        assert_eq!(c.judge(&mixed), Verdict::Miss);
        let young = Window {
            in_flight: Some(ms(5)),
            ..Window::default()
        };
        assert_eq!(c.judge(&young), Verdict::Unknown);
        let young_with_samples = Window {
            in_flight: Some(ms(5)),
            ..window(&[2, 3])
        };
        assert_eq!(c.judge(&young_with_samples), Verdict::Good);
    }

    /// (6b) The user's own budget (`strict`) is honoured down to the idle latency itself: on
    /// the emulated HDD (idle p90 ~150 ms) `--max-latency 150ms` meant 225 ms before.
    #[test]
    fn a_strict_budget_is_floored_by_the_idle_latency_only() {
        let c = Controller::new(Config {
            strict: true,
            target: ms(150),
            ..cfg()
        });
        assert_eq!(c.budget(Some(ms(140))), ms(150));
        assert_eq!(c.budget(Some(ms(180))), ms(180), "not below the disk idle");
        assert_eq!(c.budget(None), ms(150));
        let loose = Controller::new(Config {
            target: ms(150),
            ..cfg()
        });
        assert_eq!(loose.budget(Some(ms(140))), ms(210));
        let slow = |base: u64| Window {
            baseline: Some(ms(base)),
            ..window(&[200; 10])
        };
        assert_eq!(c.judge(&slow(140)), Verdict::Miss);
        assert_eq!(loose.judge(&slow(140)), Verdict::Good);
    }

    /// (6) Budget = max(target, 1.5 × baseline): a slow idle device can still make progress,
    /// but only to 50% over its own idle latency; a fast baseline does not lower the target.
    #[test]
    fn baseline_above_target_widens_the_budget() {
        let c = Controller::new(cfg());
        let with = |samples: &[u64], base: u64| Window {
            baseline: Some(ms(base)),
            ..window(samples)
        };
        assert_eq!(c.budget(Some(ms(30))), ms(45));
        assert_eq!(c.budget(Some(ms(2))), ms(20));
        assert_eq!(c.budget(None), ms(20));
        assert_eq!(c.judge(&window(&[32; 10])), Verdict::Miss);
        assert_eq!(c.judge(&with(&[32; 10], 30)), Verdict::Good);
        assert_eq!(c.judge(&with(&[70; 10], 30)), Verdict::Miss);
        assert_eq!(c.judge(&with(&[25; 10], 2)), Verdict::Miss);
        let stalled = Window {
            in_flight: Some(ms(40)),
            ..with(&[], 30)
        };
        assert_eq!(c.judge(&stalled), Verdict::Unknown);
    }

    /// (7) Unknown windows change nothing, in slow start or after it.
    #[test]
    fn unknown_changes_nothing() {
        let mut c = Controller::new(cfg());
        let quiet = Window::default();
        let before = c.stats();
        assert_eq!(c.observe(&quiet), Verdict::Unknown);
        let after = c.stats();
        assert_eq!(
            (after.step, after.pause, after.slow_start),
            (before.step, before.pause, true)
        );
        for _ in 0..10 {
            c.observe(&window(&[100]));
        }
        let before = c.stats();
        assert!(before.pause > Duration::ZERO);
        for _ in 0..5 {
            assert_eq!(c.observe(&quiet), Verdict::Unknown);
        }
        let after = c.stats();
        assert_eq!(
            (after.step, after.pause, after.slow_start),
            (before.step, before.pause, false)
        );
        assert_eq!((after.windows, after.unknown), (16, 6));
        // The good streak is not broken by Unknown either: the next Good grows as before.
        let mut d = c.clone();
        d.observe(&window(&[1]));
        c.observe(&quiet);
        c.observe(&window(&[1]));
        assert_eq!((c.step(), c.pause()), (d.step(), d.pause()));
    }

    /// Rules in isolation: slow start, halving, pause fallback, pause-first increase.
    #[test]
    fn rules_step_by_step() {
        let mut c = Controller::new(cfg());
        c.observe(&window(&[1]));
        assert_eq!((c.step(), c.pause()), (512, Duration::ZERO));
        c.observe(&window(&[100]));
        assert_eq!((c.step(), c.stats().slow_start), (256, false));
        c.observe(&window(&[1]));
        assert_eq!(c.step(), 256 + 16); // +1/16 after a miss
        for _ in 0..5 {
            c.observe(&window(&[100]));
        }
        // 272 -> 136 -> 68 -> 34 -> 17; then 17/2 < min_step: step = 16 and pause 0 -> 10 ms.
        assert_eq!((c.step(), c.pause()), (16, ms(10)));
        c.observe(&window(&[100]));
        assert_eq!((c.step(), c.pause()), (16, ms(20)));
        c.observe(&window(&[1]));
        assert_eq!((c.step(), c.pause()), (16, ms(20) - ms(20) / 16)); // pause first
        for _ in 0..200 {
            c.observe(&window(&[1]));
        }
        assert_eq!((c.step(), c.pause()), (1 << 20, Duration::ZERO));
    }

    /// The correction for coordinated omission: one long stall among many fast samples is a
    /// Miss when it covers more than 10% of the probe's issue slots.
    #[test]
    fn long_stall_among_fast_samples_is_a_miss() {
        let c = Controller::new(cfg());
        let fast = window(&[1; 40]);
        let mut slow = fast.clone();
        slow.samples.push(ms(200));
        assert_eq!(c.judge(&slow), Verdict::Miss);
        let mut stuck = fast.clone();
        stuck.in_flight = Some(ms(200));
        assert_eq!(c.judge(&stuck), Verdict::Miss);
        // One op a little over budget stands for few slots: not a Miss.
        let mut blip = fast.clone();
        blip.samples.push(ms(30));
        assert_eq!(c.judge(&blip), Verdict::Good);
        // Uncorrected (probe_interval 0), the 200 ms sample would hide behind the p90 ...
        let plain = Controller::new(Config {
            probe_interval: Duration::ZERO,
            strict: false,
            ..cfg()
        });
        assert_eq!(plain.judge(&slow), Verdict::Good);
        // ... so without it any in-flight probe over budget is a Miss.
        assert_eq!(plain.judge(&stuck), Verdict::Miss);
    }

    proptest! {
        /// Whatever the windows, step and pause stay within their clamps.
        #[test]
        fn stays_within_clamps(
            min_step in 1u64..1000,
            span in 0u64..100_000,
            initial in 0u64..200_000,
            min_pause_ms in 0u64..50,
            pause_span_ms in 0u64..2000,
            probe_ms in 0u64..10,
            windows in prop::collection::vec(
                (
                    prop::collection::vec(0u64..200, 0..20),
                    prop::option::of(0u64..500),
                    prop::option::of(0u64..100),
                ),
                0..300,
            ),
        ) {
            let cfg = Config {
                target: ms(20),
                min_step,
                max_step: min_step + span,
                initial_step: initial,
                min_pause: ms(min_pause_ms),
                max_pause: ms(min_pause_ms + pause_span_ms),
                window: ms(250),
                probe_interval: ms(probe_ms),
                strict: false,
            };
            let mut c = Controller::new(cfg);
            for (samples, in_flight, baseline) in windows {
                let w = Window {
                    samples: samples.into_iter().map(ms).collect(),
                    in_flight: in_flight.map(ms),
                    baseline: baseline.map(ms),
                    step_time: in_flight.map(|v| ms(v / 2)),
                    hold: None,
                };
                c.observe(&w);
                prop_assert!((cfg.min_step..=cfg.max_step).contains(&c.step()));
                prop_assert!((cfg.min_pause..=cfg.max_pause).contains(&c.pause()));
            }
        }
    }
}

#[cfg(test)]
mod slow_start_jump {
    use super::*;

    fn cfg() -> Config {
        Config {
            target: Duration::from_millis(20),
            min_step: 1,
            max_step: 1 << 20,
            initial_step: 4,
            min_pause: Duration::ZERO,
            max_pause: Duration::from_secs(1),
            window: Duration::from_millis(250),
            probe_interval: Duration::from_millis(2),
            strict: false,
        }
    }

    fn good(step_time: Option<Duration>) -> Window {
        Window {
            samples: vec![Duration::from_millis(1)],
            step_time,
            ..Window::default()
        }
    }

    #[test]
    fn quick_steps_grow_up_to_sixteenfold() {
        let mut c = Controller::new(cfg());
        c.observe(&good(Some(Duration::from_micros(100))));
        assert_eq!(c.step(), 64);
        // A step that took most of the budget only doubles.
        c.observe(&good(Some(Duration::from_millis(15))));
        assert_eq!(c.step(), 128);
        // Without a step time: the classic doubling.
        c.observe(&good(None));
        assert_eq!(c.step(), 256);
    }

    #[test]
    fn jump_ends_with_the_first_miss() {
        let mut c = Controller::new(cfg());
        c.observe(&good(Some(Duration::from_micros(100))));
        let miss = Window {
            samples: vec![Duration::from_millis(500)],
            ..Window::default()
        };
        c.observe(&miss);
        assert_eq!(c.step(), 32);
        c.observe(&good(Some(Duration::from_micros(100))));
        assert!(
            c.step() <= 36,
            "additive increase after a miss, got {}",
            c.step()
        );
    }
}

#[cfg(test)]
mod hold_rule {
    use super::*;

    #[test]
    fn a_step_that_holds_longer_than_the_headroom_is_a_miss() {
        let c = Controller::new(Config {
            target: Duration::from_millis(20),
            min_step: 1,
            max_step: 1024,
            initial_step: 4,
            min_pause: Duration::ZERO,
            max_pause: Duration::from_secs(1),
            window: Duration::from_millis(250),
            probe_interval: Duration::from_millis(2),
            strict: false,
        });
        let ms = Duration::from_millis;
        // Baseline 40 ms: budget 60 ms, headroom 40 ms.
        let w = |hold| Window {
            samples: vec![ms(41)],
            baseline: Some(ms(40)),
            hold: Some(hold),
            ..Window::default()
        };
        assert_eq!(c.judge(&w(ms(35))), Verdict::Good);
        assert_eq!(c.judge(&w(ms(45))), Verdict::Miss);
    }
}
