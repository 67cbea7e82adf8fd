//! What the `reap --watch` service tells the world about itself: systemd's notification
//! protocol (`READY=1` once it watches, `STATUS=` with the backlog and the rate, `WATCHDOG=1`
//! at half `WATCHDOG_USEC` from its main loop, `STOPPING=1`; `sys::notify`) and the Prometheus
//! metrics file (`metrics`), refreshed from a status of every trash taken every
//! `STATUS_EVERY` in a thread of its own. Never prints; a metrics file it cannot write is
//! said through the service's log, once until that changes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::metrics::{self, Done};
use super::space::FsSpace;
use super::ReapSummary;
use crate::sys::format::{self, plural};
use crate::sys::notify::{self, Notifier};
use crate::sys::space::Floor;

/// How often the trashes' status (the metrics, `STATUS=`) is taken: a status of another
/// user's trash costs a child.
pub const STATUS_EVERY: Duration = Duration::from_secs(10);

/// The service's word to systemd and to Prometheus.
pub struct Service {
    notifier: Option<Notifier>,
    /// Every how long `WATCHDOG=1` is sent, and when next.
    watchdog: Option<(Duration, Instant)>,
    metrics: Option<PathBuf>,
    pub floor: Floor,
    /// What the passes freed, by mount point, since the start.
    done: BTreeMap<String, Done>,
    started_unix: f64,
    /// The last failure to write the metrics, as said.
    said: Option<String>,
}

impl Service {
    /// From the environment systemd gives (`NOTIFY_SOCKET`, `WATCHDOG_USEC`) and the flags.
    pub fn new(metrics: Option<PathBuf>, floor: Floor) -> Service {
        Service {
            notifier: Notifier::from_env(),
            watchdog: notify::watchdog_every().map(|d| (d, Instant::now())),
            metrics,
            floor,
            done: BTreeMap::new(),
            started_unix: format::now_unix(),
            said: None,
        }
    }

    /// Whether anyone reads the trashes' status (systemd, or a metrics file).
    pub fn wants_status(&self) -> bool {
        self.notifier.is_some() || self.metrics.is_some()
    }

    fn send(&self, lines: &[&str]) {
        if let Some(n) = &self.notifier {
            let _ = n.send(lines);
        }
    }

    /// The service watches the trashes now.
    pub fn ready(&self) {
        self.send(&["READY=1", "STATUS=watching the trashes"]);
    }

    /// When `WATCHDOG=1` is due next.
    pub fn next_beat(&self) -> Option<Instant> {
        self.watchdog.map(|(_, next)| next)
    }

    /// Sends `WATCHDOG=1` if it is due (called from the main loop: a loop that hangs stops
    /// sending it, and systemd restarts the service).
    pub fn beat(&mut self) {
        if let Some((every, next)) = &mut self.watchdog {
            let now = Instant::now();
            if now >= *next {
                *next = now + *every;
                if let Some(n) = &self.notifier {
                    let _ = n.send(&["WATCHDOG=1"]);
                }
            }
        }
    }

    /// Counts what a pass over a trash on the file system mounted at `mount` did.
    pub fn done(&mut self, mount: &str, s: &ReapSummary) {
        let d = self.done.entry(mount.to_string()).or_default();
        d.bytes_freed = d.bytes_freed.saturating_add(s.bytes_freed);
        d.entries_freed = d.entries_freed.saturating_add(s.entries_freed);
        d.failed_attempts = d.failed_attempts.saturating_add(s.entries_failed);
    }

    /// Tells systemd and the metrics file what the trashes hold now (`space`); a line to log
    /// when the metrics file could not be written (once until that changes).
    pub fn report(&mut self, space: &[FsSpace]) -> Option<String> {
        let line = format!("STATUS={}", status_line(space));
        self.send(&[line.as_str()]);
        let file = self.metrics.as_ref()?;
        let r = metrics::render(space, &self.done, self.started_unix)
            .map_err(metrics::MetricsError::from)
            .and_then(|text| metrics::write(file, &text));
        let now = r.err().map(|e| format!("cannot write the metrics: {e}"));
        let say = (now != self.said).then(|| now.clone()).flatten();
        self.said = now;
        say
    }

    /// The service is stopping.
    pub fn stopping(&self) {
        self.send(&["STOPPING=1", "STATUS=stopping"]);
    }
}

/// The backlog and the rate in one line (`STATUS=`): `3 entries, 2.5 GiB pending on 1 file
/// system (1 in a grace window); freeing 120.0 MiB/s; '/srv' short of space`.
pub fn status_line(space: &[FsSpace]) -> String {
    let entries: u64 = space.iter().map(|f| f.entries).sum();
    if entries == 0 {
        return "nothing pending".into();
    }
    let bytes: u64 = space.iter().map(|f| f.pending_bytes).sum();
    let grace: u64 = space.iter().map(|f| f.in_grace).sum();
    let rate: f64 = space.iter().map(|f| f.rate_bps).sum();
    let busy = space.iter().filter(|f| f.entries > 0).count() as u64;
    let mut s = format!(
        "{}, {} pending on {}",
        plural(entries, "entry", "entries"),
        format::bytes(bytes),
        plural(busy, "file system", "file systems")
    );
    if grace > 0 {
        s.push_str(&format!(" ({grace} in a grace window)"));
    }
    if rate > 0.0 {
        s.push_str(&format!("; freeing {}", format::rate(rate)));
    }
    for f in space.iter().filter(|f| f.short) {
        s.push_str(&format!(
            "; {} short of space",
            crate::sys::quote::quote(&f.mount)
        ));
    }
    s
}

/// Every trash this user may see (root: every user's) and what each file system holds, read
/// now under `floor` (another user's trash through a child as that user).
pub fn take_status(floor: Floor) -> Vec<FsSpace> {
    let found = crate::trash::discover(crate::trash::uid());
    let trashes = found.trashes.clone();
    let st = super::status::collect(found, false, &mut |_| {});
    super::space::by_file_system(&trashes, &st, floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_says_backlog_rate_and_shortage() {
        assert_eq!(status_line(&[]), "nothing pending");
        let fs = FsSpace {
            mount: "/srv".into(),
            entries: 3,
            pending_bytes: 5 << 30,
            in_grace: 1,
            rate_bps: (120 << 20) as f64,
            short: true,
            ..FsSpace::default()
        };
        assert_eq!(
            status_line(&[fs]),
            "3 entries, 5.0 GiB pending on 1 file system (1 in a grace window); freeing 120.0 \
             MiB/s; '/srv' short of space"
        );
    }
}
