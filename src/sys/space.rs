//! Free space of the file systems being worked on, from `fstatvfs`: what a removal really gave
//! back (`FreeSpace`, without a `stat` per file: it counts every change on those file systems
//! during the run, so it measures the file system, not reclaim alone, clamped at zero), and the
//! watch that keeps others from running out (`Floor`, `pressure`): the space applications may
//! still use (`f_bavail`, what an unprivileged writer gets before ENOSPC), read about once a
//! second per file system while someone asks, with its recent fall rate. It only reads and
//! judges; what to do under pressure (yield, free early) is the caller's.

use std::collections::{HashMap, VecDeque};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::sys::format;

/// Free bytes per file system (keyed by fsid), taken at one moment.
#[derive(Debug, Default, Clone)]
pub struct FreeSpace(HashMap<u64, u64>);

impl FreeSpace {
    /// Records the free bytes of `fd`'s file system (the first reading per file system wins).
    pub fn add(&mut self, fd: impl AsFd) {
        if let Ok(st) = rustix::fs::fstatvfs(fd) {
            self.0.entry(st.f_fsid).or_insert(st.f_bfree * st.f_frsize);
        }
    }

    /// A reading of `fd`'s file system alone.
    pub fn of(fd: impl AsFd) -> FreeSpace {
        let mut s = FreeSpace::default();
        s.add(fd);
        s
    }

    /// Bytes that became free since this reading, on the same file systems.
    pub fn freed_since(&self, later: &FreeSpace) -> u64 {
        self.0
            .iter()
            .filter_map(|(fsid, before)| later.0.get(fsid).map(|now| now.saturating_sub(*before)))
            .sum()
    }
}

/// The free space a removal must leave the others on a file system (`--min-free`, the
/// configuration's `min_free`): under it, or falling toward it, pacing yields and reapers free
/// what they hold, oldest first.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Floor {
    /// The smaller of `DEFAULT_PERCENT` of the file system and `DEFAULT_MAX`.
    #[default]
    Default,
    /// No floor (`--min-free 0`): nothing is watched.
    Off,
    Bytes(u64),
    /// A share of the file system's size, from 0 to 100.
    Percent(f64),
}

/// A `--min-free` percentage that is not one from 0% to 100% (as given).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a percentage from 0% to 100%")]
pub struct NotAPercentage(pub String);

/// For a size parser whose errors are text.
impl From<NotAPercentage> for String {
    fn from(e: NotAPercentage) -> String {
        e.to_string()
    }
}

impl Floor {
    /// The default floor's share of the file system ...
    pub const DEFAULT_PERCENT: f64 = 5.0;
    /// ... and its most.
    pub const DEFAULT_MAX: u64 = 10 << 30;

    /// The floor in bytes on a file system of `total` bytes; `None` when off.
    pub fn bytes(&self, total: u64) -> Option<u64> {
        // In thousandths of a percent, exactly: 5% of a file system is its twentieth.
        let share = |p: f64| (u128::from(total) * (p * 1000.0).round() as u128 / 100_000) as u64;
        match *self {
            Floor::Off | Floor::Bytes(0) => None,
            Floor::Default => Some(share(Self::DEFAULT_PERCENT).min(Self::DEFAULT_MAX)),
            Floor::Bytes(b) => Some(b),
            Floor::Percent(p) if p <= 0.0 => None,
            Floor::Percent(p) => Some(share(p.min(100.0))),
        }
    }

    /// As `--min-free` reads it back (a reaper's command line): `default`, `0`, `5%`, bytes.
    pub fn arg(&self) -> String {
        match *self {
            Floor::Default => "default".into(),
            Floor::Off => "0".into(),
            Floor::Bytes(b) => b.to_string(),
            Floor::Percent(p) => format!("{p}%"),
        }
    }

    /// `--min-free`'s value: `default` (the smaller of 5% and 10G), `0` (off), a percentage of
    /// the file system (`5%`), or a size (`2G`, parsed by `size`). `Err`: the size's error, or
    /// a percentage out of range made one.
    pub fn parse<E: From<NotAPercentage>>(
        s: &str,
        size: impl Fn(&str) -> Result<u64, E>,
    ) -> Result<Floor, E> {
        let t = s.trim();
        if t == "default" {
            return Ok(Floor::Default);
        }
        if t == "0" || t == "0%" {
            return Ok(Floor::Off);
        }
        match t.strip_suffix('%') {
            Some(p) => match p.trim().parse::<f64>() {
                Ok(v) if (0.0..=100.0).contains(&v) => Ok(Floor::Percent(v)),
                _ => Err(NotAPercentage(s.to_string()).into()),
            },
            None => size(t).map(Floor::Bytes),
        }
    }
}

/// One look at a file system's space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// Which file system: its device (`st_dev`) and `f_fsid` (tmpfs mounts may all say 0).
    pub key: (u64, u64),
    /// What applications may still write (`f_bavail`: blocks reserved for root not counted).
    pub avail: u64,
    /// The file system's size (`f_blocks`).
    pub total: u64,
}

/// Reads `fd`'s file system's space.
pub fn read(fd: impl AsFd) -> Result<Reading, rustix::io::Errno> {
    let dev = rustix::fs::fstat(&fd)?.st_dev;
    let st = rustix::fs::fstatvfs(fd)?;
    Ok(Reading {
        key: (dev, st.f_fsid),
        avail: st.f_bavail.saturating_mul(st.f_frsize),
        total: st.f_blocks.saturating_mul(st.f_frsize),
    })
}

/// How far back the fall rate looks: recent enough that a writer that just started counts
/// within seconds.
pub const FALL_WINDOW: Duration = Duration::from_secs(5);
/// How far ahead a fall rate is trusted: a file system that would reach its floor within this
/// long (and before the work in hand would be done) is pressed. A rate of the last seconds says
/// little of the next hour: a copy of some gigabytes ends, and an undo window of a day is not
/// given up for a log growing at 100 KB/s.
pub const FALL_HORIZON: Duration = Duration::from_secs(60);
/// How often a file system is read at most (a caller may ask every few milliseconds).
pub const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Samples of one file system's available bytes over the last `FALL_WINDOW`.
#[derive(Clone, Debug, Default)]
pub struct Gauge {
    samples: VecDeque<(Instant, u64)>,
}

impl Gauge {
    /// Adds a sample; those older than the window go, but the two newest always stay. One
    /// taken within a moment of the last replaces it (several watches read at once: the
    /// newest sample is always the latest reading).
    pub fn add(&mut self, at: Instant, avail: u64) {
        if self.samples.len() > 1
            && self
                .samples
                .back()
                .is_some_and(|(t, _)| at.saturating_duration_since(*t) < LOOK_EVERY / 4)
        {
            self.samples.pop_back();
        }
        self.samples.push_back((at, avail));
        while self.samples.len() > 2
            && at.saturating_duration_since(self.samples[1].0) >= FALL_WINDOW
        {
            self.samples.pop_front();
        }
    }

    /// Bytes per second the available space fell over the window (negative: it grew); `None`
    /// with less than half a second of samples. A fall that is over (the last sample is not the
    /// lowest of the window: a burst written and removed again) is no fall: `Some(0.0)`.
    pub fn fall_rate(&self) -> Option<f64> {
        let (t0, a0) = *self.samples.front()?;
        let (t1, a1) = *self.samples.back()?;
        let secs = t1.saturating_duration_since(t0).as_secs_f64();
        if secs < 0.5 {
            return None;
        }
        let lowest = self.samples.iter().map(|s| s.1).min().unwrap_or(a1);
        if a1 > lowest {
            return Some(0.0);
        }
        Some((a0 as f64 - a1 as f64) / secs)
    }

    /// When the last sample was taken, and what it read.
    #[cfg(test)]
    fn last(&self) -> Option<(Instant, u64)> {
        self.samples.back().copied()
    }
}

/// A file system short of space, or about to be: what pacing yields to and what frees grace
/// entries early (said in status, logs, `--json` and `restore`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pressure {
    /// The file system's mount point, as the mount table says.
    pub mount: String,
    /// Bytes applications could still write.
    pub avail: u64,
    pub floor: u64,
    /// Falling this fast (bytes/s): at the floor in `to_floor_s` (when above it still).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub falling_bps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_floor_s: Option<f64>,
}

impl Pressure {
    /// `/srv had 1.1 GiB free, floor 2.0 GiB`, and how fast it fell when that was the reason:
    /// `, falling 150.0 MiB/s (the floor in 6 s)`.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{} had {} free, floor {}",
            crate::sys::quote::quote(&self.mount),
            format::bytes(self.avail),
            format::bytes(self.floor)
        );
        if let (Some(r), Some(t)) = (self.falling_bps, self.to_floor_s) {
            s.push_str(&format!(
                ", falling {} (the floor in {})",
                format::rate(r),
                format::duration_rounded(t)
            ));
        }
        s
    }
}

/// Whether a file system with `avail` bytes free, a `floor`, falling `fall` bytes/s, is pressed
/// while work that gives space back would be done in `eta` seconds (`None`: not known): under
/// the floor, or falling fast enough to reach it before then (looking at most `FALL_HORIZON`
/// ahead). Returns (the rate, the seconds to the floor) when the fall is the reason, `None`
/// for under it; the outer `None`: not pressed.
pub fn judge(
    avail: u64,
    floor: u64,
    fall: Option<f64>,
    eta: Option<f64>,
) -> Option<Option<(f64, f64)>> {
    if avail < floor {
        return Some(None);
    }
    let rate = fall.filter(|r| *r > 0.0)?;
    let horizon = FALL_HORIZON.as_secs_f64();
    let ahead = eta.map_or(horizon, |e| e.clamp(0.0, horizon));
    let to_floor = (avail - floor) as f64 / rate;
    (to_floor < ahead).then_some(Some((rate, to_floor)))
}

/// What this process knows of one file system: its gauge (shared by every watch on it) and
/// its mount point, for messages.
#[derive(Default)]
struct Known {
    gauge: Gauge,
    mount: Option<String>,
}

/// The file systems this process watches, by device and fsid.
static KNOWN: Mutex<Option<HashMap<(u64, u64), Known>>> = Mutex::new(None);

/// One caller's watch over the file system of the fds it is given (a pacer's, a reaper's):
/// reads it at most once per `LOOK_EVERY` (a pacer asks at every step), into a gauge shared
/// by every watch of this process on the same file system, so a new pacer knows the fall
/// rate at once.
#[derive(Debug)]
pub struct Watch {
    floor: Floor,
    /// The last look: when, what it read, the fall rate then.
    last: Option<(Instant, Reading, Option<f64>)>,
}

impl Watch {
    pub fn new(floor: Floor) -> Watch {
        Watch { floor, last: None }
    }

    /// Whether `fd`'s file system is pressed (see `judge`) for work done in `eta` seconds, by
    /// the last look if it is less than `LOOK_EVERY` old, unless `fresh`. `None` when the floor
    /// is off or the file system cannot be read.
    pub fn pressure(&mut self, fd: impl AsFd, eta: Option<f64>, fresh: bool) -> Option<Pressure> {
        if self.floor == Floor::Off {
            return None;
        }
        let fd = fd.as_fd();
        let now = Instant::now();
        let stale = self
            .last
            .is_none_or(|(at, _, _)| now.saturating_duration_since(at) >= LOOK_EVERY);
        if fresh || stale {
            let r = read(fd).ok()?;
            let fall = sample(r, now);
            self.last = Some((now, r, fall));
        }
        let (_, r, fall) = self.last?;
        let floor = self.floor.bytes(r.total)?;
        let why = judge(r.avail, floor, fall, eta)?;
        Some(Pressure {
            mount: known_mount(r.key, fd),
            avail: r.avail,
            floor,
            falling_bps: why.map(|(rate, _)| rate),
            to_floor_s: why.map(|(_, t)| t),
        })
    }
}

/// Adds reading `r` to its file system's shared gauge; returns the fall rate.
fn sample(r: Reading, now: Instant) -> Option<f64> {
    let mut g = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    let k = g.get_or_insert_with(HashMap::new).entry(r.key).or_default();
    k.gauge.add(now, r.avail);
    k.gauge.fall_rate()
}

/// The mount point of file system `key` (of `fd`), looked up once.
fn known_mount(key: (u64, u64), fd: std::os::fd::BorrowedFd<'_>) -> String {
    let known = {
        let g = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
        g.as_ref()
            .and_then(|m| m.get(&key))
            .and_then(|k| k.mount.clone())
    };
    known.unwrap_or_else(|| {
        let m = mount_of(fd);
        let mut g = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
        g.get_or_insert_with(HashMap::new)
            .entry(key)
            .or_default()
            .mount = Some(m.clone());
        m
    })
}

/// Whether `fd`'s file system is under `floor` now (a fresh reading; the fall rate not
/// considered).
pub fn under_floor(fd: impl AsFd, floor: Floor) -> Option<Pressure> {
    let fd = fd.as_fd();
    let r = read(fd).ok()?;
    let floor_bytes = floor.bytes(r.total)?;
    (r.avail < floor_bytes).then(|| Pressure {
        mount: mount_of(fd),
        avail: r.avail,
        floor: floor_bytes,
        falling_bps: None,
        to_floor_s: None,
    })
}

/// The mount point of `fd`'s mount, for messages (its path if the table does not say).
fn mount_of(fd: impl AsFd) -> String {
    let point: Option<PathBuf> = crate::sys::dirfd::fstat(&fd)
        .ok()
        .and_then(|f| crate::sys::mounts::by_id(f.mnt_id))
        .map(|m| m.point)
        .or_else(|| crate::sys::mounts::fd_path(&fd));
    point.map_or_else(|| "?".into(), |p| p.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn the_default_floor_is_the_smaller_of_5_percent_and_10_gib() {
        assert_eq!(Floor::Default.bytes(4 * GIB), Some(4 * GIB / 20));
        assert_eq!(Floor::Default.bytes(1000 * GIB), Some(10 * GIB));
        assert_eq!(Floor::Off.bytes(4 * GIB), None);
        assert_eq!(Floor::Percent(0.0).bytes(4 * GIB), None);
        assert_eq!(Floor::Percent(50.0).bytes(4 * GIB), Some(2 * GIB));
        assert_eq!(Floor::Bytes(5).bytes(4 * GIB), Some(5));
    }

    #[test]
    fn floors_read_back_from_their_argument() {
        let size = |s: &str| s.parse::<u64>().map_err(|e| e.to_string());
        for f in [
            Floor::Default,
            Floor::Off,
            Floor::Bytes(123),
            Floor::Percent(2.5),
        ] {
            assert_eq!(Floor::parse(&f.arg(), size), Ok(f));
        }
        assert!(Floor::parse("150%", size).is_err());
        assert_eq!(
            Floor::parse("150%", size),
            Err("'150%' is not a percentage from 0% to 100%".to_string())
        );
        assert!(Floor::parse("x%", size).is_err());
        assert_eq!(Floor::parse("0%", size), Ok(Floor::Off));
    }

    #[test]
    fn the_fall_rate_is_over_the_last_seconds() {
        let t0 = Instant::now();
        let mut g = Gauge::default();
        g.add(t0, 10 * GIB);
        assert_eq!(g.fall_rate(), None, "one sample says nothing");
        g.add(t0 + Duration::from_secs(1), 9 * GIB);
        assert_eq!(g.fall_rate(), Some(GIB as f64));
        // Long after, the early samples are gone: a steady level is no fall.
        for s in 2..20 {
            g.add(t0 + Duration::from_secs(s), 9 * GIB);
        }
        assert_eq!(g.fall_rate(), Some(0.0));
        g.add(t0 + Duration::from_secs(20), 10 * GIB);
        assert_eq!(g.fall_rate(), Some(0.0), "space coming back: no fall");
        // A burst written and removed again within the window: over, no fall.
        let mut g = Gauge::default();
        g.add(t0, 10 * GIB);
        g.add(t0 + Duration::from_secs(1), 5 * GIB);
        g.add(t0 + Duration::from_secs(2), 8 * GIB);
        assert_eq!(g.fall_rate(), Some(0.0));
        g.add(t0 + Duration::from_secs(3), 4 * GIB);
        assert_eq!(g.fall_rate(), Some(2.0 * GIB as f64), "falling again, now");
    }

    #[test]
    fn a_reading_a_moment_after_the_last_replaces_it() {
        let t0 = Instant::now();
        let mut g = Gauge::default();
        g.add(t0, 10 * GIB);
        g.add(t0 + Duration::from_secs(1), 6 * GIB);
        // Read again at once by another watch: space came back meanwhile.
        g.add(t0 + Duration::from_millis(1010), 10 * GIB);
        assert_eq!(g.last(), Some((t0 + Duration::from_millis(1010), 10 * GIB)));
        assert!(g.fall_rate().unwrap() <= 0.0);
    }

    #[test]
    fn pressed_under_the_floor_or_falling_to_it_before_the_work_is_done() {
        let floor = 2 * GIB;
        assert_eq!(judge(GIB, floor, None, None), Some(None));
        assert_eq!(judge(3 * GIB, floor, None, None), None);
        // 1 GiB above the floor, falling 100 MiB/s: there in ~10 s.
        let rate_given = 100.0 * (1 << 20) as f64;
        let fall = Some(rate_given);
        let (rate, to) = judge(3 * GIB, floor, fall, Some(600.0)).unwrap().unwrap();
        assert_eq!(rate, rate_given);
        assert!((to - 10.24).abs() < 0.01, "{to}");
        // Done in 5 s: it frees before the floor is reached.
        assert_eq!(judge(3 * GIB, floor, fall, Some(5.0)), None);
        // Not known when done: the horizon.
        assert!(judge(3 * GIB, floor, fall, None).is_some());
        // Far from the floor: beyond the horizon, whatever the work's ETA.
        assert_eq!(judge(100 * GIB, floor, fall, Some(86_400.0)), None);
        // Rising: not pressed.
        assert_eq!(judge(3 * GIB, floor, Some(-1e9), Some(600.0)), None);
    }

    #[test]
    fn pressure_is_said_with_the_numbers() {
        let p = Pressure {
            mount: "/srv".into(),
            avail: 1100 << 20,
            floor: 2 * GIB,
            falling_bps: None,
            to_floor_s: None,
        };
        assert_eq!(p.text(), "'/srv' had 1.1 GiB free, floor 2.0 GiB");
    }
}
