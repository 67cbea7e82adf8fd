//! The pacer: runs the probe, judges each step's window with the controller, sleeps what the
//! controller says, enforces an optional bytes/s cap, and keeps the books (latency before vs
//! during, back-offs) for the summary and an optional per-window trace. It never touches the
//! data being removed; the caller does the steps.

use std::io::Write;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::controller::{Config, Controller, Verdict, Window};
use super::probe::{Probe, Spacing};
use super::signals::{Reading, Signals};
use crate::sys::space::{Floor, Pressure, Watch};

/// How the user asked removal to be paced.
#[derive(Clone, Debug)]
pub struct Pacing {
    /// Latency budget for other I/O; `None` = no latency pacing.
    pub max_latency: Option<Duration>,
    /// Cap on bytes freed per second.
    pub rate: Option<u64>,
    /// Write one JSON line per window here.
    pub trace: Option<std::path::PathBuf>,
    /// The free space to leave the others: under it, or falling toward it before this removal
    /// would end, pacing yields (the rest goes at full speed, as `rm` would free it).
    pub floor: Floor,
}

impl Pacing {
    /// No pacing at all (`--fast`).
    pub fn fast() -> Self {
        Pacing {
            max_latency: None,
            rate: None,
            trace: None,
            floor: Floor::Off,
        }
    }

    pub fn is_fast(&self) -> bool {
        self.max_latency.is_none() && self.rate.is_none()
    }
}

/// What the pacing cost others and how often it backed off (summary / JSON).
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PaceReport {
    pub max_latency_ms: Option<f64>,
    pub rate_cap: Option<u64>,
    /// Probe writes before removal started (the baseline) and during it.
    pub probe_before: LatencyStats,
    pub probe_during: LatencyStats,
    pub windows: u64,
    pub backoffs: u64,
    /// Block devices from the file system down to the disk (where the device stats come from).
    pub devices: Vec<String>,
    /// Why there was no probe, if there was none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_error: Option<String>,
    /// Trees: the workers the governor started with, went down to, and ended with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers_max: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers_min: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers_final: Option<usize>,
    /// Under MPI: the ranks that acted on these verdicts (every rank of the job follows rank
    /// 0's governor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<usize>,
    /// Trees: the file system ran short of space (under the floor, or falling toward it):
    /// pacing yielded, and the rest went at full speed (a large file says so in its own
    /// outcome).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yielded: Option<Pressure>,
}

#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LatencyStats {
    pub count: usize,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

impl LatencyStats {
    pub fn of(samples: &[Duration]) -> Self {
        let mut v: Vec<Duration> = samples.to_vec();
        v.sort();
        let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 1e2;
        LatencyStats {
            count: v.len(),
            p50_ms: percentile(&v, 50.0).map(ms),
            p99_ms: percentile(&v, 99.0).map(ms),
            max_ms: v.last().copied().map(ms),
        }
    }
}

/// Nearest-rank percentile of a sorted slice.
pub fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// The longest the baseline measurement may take.
const BASELINE_MAX: Duration = Duration::from_secs(1);

/// Paces one removal on one file system.
pub struct Pacer {
    probe: Option<Probe>,
    ctl: Controller,
    pacing: Pacing,
    baseline: Vec<Duration>,
    during: Vec<Duration>,
    window_start: Instant,
    started: Instant,
    bytes: u64,
    signals: Signals,
    last: Reading,
    trace: Option<std::io::BufWriter<std::fs::File>>,
    report: PaceReport,
    /// The file system's free space, watched (`Pacing::floor`) through this copy of the fd.
    watch: Watch,
    watched: Option<std::os::fd::OwnedFd>,
}

impl Pacer {
    /// Starts pacing removal on the file system of `dir` (device `dev`), whose steps are
    /// measured in cost units: `initial` is the first step, `max` the largest useful one.
    pub fn start(dir: impl AsFd, dev: u64, pacing: Pacing, initial: u64, max: u64) -> Pacer {
        let target = pacing.max_latency.unwrap_or(Duration::from_secs(3600));
        let ctl = Controller::new(Config {
            target,
            min_step: 1,
            max_step: max.max(1),
            initial_step: initial.clamp(1, max.max(1)),
            min_pause: Duration::ZERO,
            max_pause: Duration::from_secs(2),
            window: Duration::from_millis(250),
            probe_interval: Spacing::default().min_interval,
            strict: false,
        });
        let mnt_id = crate::sys::dirfd::fstat(&dir).map_or(0, |f| f.mnt_id);
        let signals = Signals::for_dev(dev, mnt_id);
        let mut report = PaceReport {
            max_latency_ms: pacing.max_latency.map(|d| d.as_secs_f64() * 1e3),
            rate_cap: pacing.rate,
            devices: signals.chain.clone(),
            ..PaceReport::default()
        };
        let probe = if pacing.max_latency.is_some() {
            match Probe::start(&dir, Spacing::default()) {
                Ok(p) => Some(p),
                Err(e) => {
                    report.probe_error = Some(crate::sys::error::errno_text(e));
                    None
                }
            }
        } else {
            None
        };
        let trace = pacing
            .trace
            .as_ref()
            .and_then(|p| trace_file(p).map(std::io::BufWriter::new));
        let now = Instant::now();
        let watched = (pacing.floor != Floor::Off)
            .then(|| dir.as_fd().try_clone_to_owned().ok())
            .flatten();
        let mut pacer = Pacer {
            watch: Watch::new(pacing.floor),
            watched,
            probe,
            ctl,
            pacing,
            baseline: Vec::new(),
            during: Vec::new(),
            window_start: now,
            started: now,
            bytes: 0,
            last: signals.read(),
            signals,
            trace,
            report,
        };
        pacer.measure_baseline();
        pacer
    }

    fn measure_baseline(&mut self) {
        let Some(probe) = &self.probe else { return };
        self.baseline = baseline(probe, self.pacing.max_latency.unwrap_or_default() / 4);
        self.window_start = Instant::now();
        self.started = self.window_start;
    }

    /// Most bytes one step may free under the `--rate` cap: a quarter second's worth, so the
    /// cap holds within a step too, not only on average (one step could free gigabytes).
    pub fn max_step_bytes(&self) -> Option<u64> {
        self.pacing.rate.map(|r| (r / 4).max(1 << 20))
    }

    /// Cost units for the next step.
    pub fn step(&self) -> u64 {
        self.ctl.step()
    }

    /// Call after each step that freed `bytes`, took `step_time` in all and held the file
    /// system for `hold` (the truncate): waits for the probe's verdict on the window and
    /// adapts. Returns how long to wait before the next step (the controller's pause, and
    /// whatever the rate cap needs); the caller sleeps it, so it can keep watch meanwhile.
    pub fn after_step(&mut self, bytes: u64, step_time: Duration, hold: Duration) -> Duration {
        self.bytes += bytes;
        let mut wait = Duration::ZERO;
        if let (Some(probe), Some(target)) = (&self.probe, self.pacing.max_latency) {
            // Never block on the probe: on a busy slow disk it writes only every few hundred
            // ms, and waiting for it after every step would make the steps that slow. The
            // window is judged when the probe has something to say (a write completed since
            // the last verdict, or one stuck beyond the budget); until then only the hold rule
            // can judge a step (Unknown otherwise: keep going at the same step and pause).
            let baseline = percentile(&sorted(&self.baseline), 90.0);
            let budget = self.ctl.budget(baseline).max(target);
            let (mut samples, in_flight) = probe.since(self.window_start);
            // A step far quicker than the budget on a quiet probe is judged by the probe's
            // latest write: on a fast idle device, slow start then grows at every step.
            if samples.is_empty()
                && step_time < budget / 10
                && in_flight.is_none_or(|age| age < budget / 2)
            {
                samples.extend(probe.last());
            }
            let lat: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
            let window = Window {
                samples: lat.clone(),
                in_flight,
                baseline,
                step_time: Some(step_time),
                hold: Some(hold),
            };
            let verdict = self.ctl.observe(&window);
            if !matches!(verdict, Verdict::Unknown) {
                self.during.extend(&lat);
                self.report.windows += 1;
                self.window_start = Instant::now();
            }
            if matches!(verdict, Verdict::Miss) {
                self.report.backoffs += 1;
            }
            self.trace_window(&lat, in_flight, &verdict, bytes);
            wait = self.ctl.pause();
        }
        if let Some(rate) = self.pacing.rate {
            // Never ahead of `rate` bytes/s since the start.
            let due = Duration::from_secs_f64(self.bytes as f64 / rate.max(1) as f64);
            wait = wait.max(due.saturating_sub(self.started.elapsed()));
        }
        wait
    }

    fn trace_window(
        &mut self,
        lat: &[Duration],
        in_flight: Option<Duration>,
        verdict: &Verdict,
        bytes: u64,
    ) {
        let Some(out) = self.trace.as_mut() else {
            return;
        };
        let now = self.signals.read();
        let delta = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a.saturating_sub(b));
        let v = sorted(lat);
        let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e3);
        let line = serde_json::json!({
            "t": self.started.elapsed().as_secs_f64(),
            "bytes": bytes,
            "step": self.ctl.step(),
            "pause_ms": self.ctl.pause().as_secs_f64() * 1e3,
            "n": v.len(),
            "p90_ms": ms(percentile(&v, 90.0)),
            "max_ms": ms(v.last().copied()),
            "in_flight_ms": ms(in_flight),
            "verdict": format!("{verdict:?}"),
            "psi_some_ms": delta(now.psi_some_us, self.last.psi_some_us).map(|u| u as f64 / 1e3),
            "disk_in_flight": now.in_flight,
            "disk_queue_ms": delta(now.queue_ms, self.last.queue_ms),
        });
        self.last = now;
        let _ = writeln!(out, "{line}");
    }

    /// Whether the file system is short of space (under the floor, or falling toward it before
    /// the `left` bytes would be freed at the pace so far): pacing then yields. Read at most
    /// once a second.
    pub fn pressed(&mut self, left: u64) -> Option<Pressure> {
        let fd = self.watched.as_ref()?;
        let secs = self.started.elapsed().as_secs_f64();
        let eta = (self.bytes > 0 && secs > 0.0).then(|| left as f64 / (self.bytes as f64 / secs));
        self.watch.pressure(fd, eta, false)
    }

    /// The latest latency the probe measured during removal.
    pub fn last_latency(&self) -> Option<Duration> {
        self.during.last().copied()
    }

    /// The books so far.
    pub fn report(&self) -> PaceReport {
        let mut r = self.report.clone();
        r.probe_before = LatencyStats::of(&self.baseline);
        r.probe_during = LatencyStats::of(&self.during);
        r
    }
}

impl Drop for Pacer {
    fn drop(&mut self) {
        if let Some(t) = self.trace.as_mut() {
            let _ = t.flush();
        }
    }
}

/// Measures the probe before removal starts: until 8 samples; or 2 that are all under `quick`
/// (a fast idle device: no need to wait longer); or 5 after 100 ms (a slow device: fewer made
/// its median a coin toss); or 1 s in
/// any case.
pub fn baseline(probe: &Probe, quick: Duration) -> Vec<Duration> {
    baseline_until(probe, quick, &|| false)
}

/// `baseline`, giving up early (with what it has) once `stop` says so.
pub fn baseline_until(probe: &Probe, quick: Duration, stop: &dyn Fn() -> bool) -> Vec<Duration> {
    const TICK: Duration = Duration::from_millis(10);
    let t0 = Instant::now();
    loop {
        let (samples, _) = probe.wait(t0, BASELINE_MAX, TICK);
        if stop() {
            return samples.iter().map(|s| s.latency).collect();
        }
        if samples.is_empty() && t0.elapsed() < BASELINE_MAX {
            continue;
        }
        let n = samples.len();
        let waited = t0.elapsed();
        let done = n >= 8
            || (n >= 2 && samples.iter().all(|s| s.latency < quick))
            || (n >= 5 && waited >= Duration::from_millis(100))
            || waited >= BASELINE_MAX
            || probe.error().is_some();
        if done {
            return samples.iter().map(|s| s.latency).collect();
        }
        // Wait for the next sample rather than spin on the same one.
        let last = samples
            .last()
            .map_or(t0, |s| s.done + Duration::from_nanos(1));
        probe.wait(
            last,
            BASELINE_MAX,
            TICK.min(BASELINE_MAX.saturating_sub(waited)),
        );
    }
}

pub(crate) fn sorted(v: &[Duration]) -> Vec<Duration> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// The `--trace` file, opened as root may open it where others write: never through a symlink,
/// never blocking on a FIFO, and only a regular file is truncated and written (else no trace).
pub(crate) fn trace_file(path: &std::path::Path) -> Option<std::fs::File> {
    let (fd, st) = crate::sys::safeopen::file::open_output(path, 0o644, false).ok()?;
    (rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile)
        .then(|| std::fs::File::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<Duration> = (1..=4).map(Duration::from_millis).collect();
        assert_eq!(percentile(&v, 50.0), Some(Duration::from_millis(2)));
        assert_eq!(percentile(&v, 99.0), Some(Duration::from_millis(4)));
        assert_eq!(percentile(&[], 50.0), None);
        let s = LatencyStats::of(&v);
        assert_eq!((s.count, s.p50_ms, s.max_ms), (4, Some(2.0), Some(4.0)));
    }
}
