//! The reaper service's metrics for node_exporter's textfile collector (`reap --watch
//! --metrics FILE`): per file system, what its trashes hold (bytes, entries, in a grace window,
//! failed), its free space and floor, the rate space comes back, entries freed before their
//! grace ended; and since the service started, what it freed and how many attempts failed.
//! Prometheus's text format (0.0.4) by the `prometheus` crate (HELP and TYPE lines, label
//! escaping), replaced whole: written under a fresh name in the file's directory, then renamed
//! over it (`safefile`), so the collector never reads half a file and a name planted there is
//! replaced, never written through. Never prints.

use std::collections::BTreeMap;
use std::path::Path;

use prometheus::{Encoder, GaugeVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder};

use super::space::FsSpace;

/// What the service did since it started, per mount point of a file system.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Done {
    pub bytes_freed: u64,
    pub entries_freed: u64,
    /// Attempts at an entry that could not free it all (an entry retried counts again).
    pub failed_attempts: u64,
}

/// Why the metrics file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("{} has no directory and name", crate::sys::quote::quote(.0))]
    NoName(std::path::PathBuf),
    #[error("cannot open the directory of {}: {}", crate::sys::quote::quote(.0), crate::sys::error::errno_text(*.1))]
    Dir(std::path::PathBuf, rustix::io::Errno),
    #[error("cannot write {}: {}", crate::sys::quote::quote(.0), crate::sys::error::errno_text(*.1))]
    Write(std::path::PathBuf, rustix::io::Errno),
    #[error("{0}")]
    Encode(#[from] prometheus::Error),
}

/// The text of the metrics: `space` (each file system now) and `done` (by mount point, since
/// the service started at `started_unix`).
pub fn render(
    space: &[FsSpace],
    done: &BTreeMap<String, Done>,
    started_unix: f64,
) -> Result<String, prometheus::Error> {
    let r = Registry::new();
    let gauge = |name: &str, help: &str| -> Result<IntGaugeVec, prometheus::Error> {
        let g = IntGaugeVec::new(Opts::new(name, help), &["mount"])?;
        r.register(Box::new(g.clone()))?;
        Ok(g)
    };
    let counter = |name: &str, help: &str| -> Result<IntCounterVec, prometheus::Error> {
        let c = IntCounterVec::new(Opts::new(name, help), &["mount"])?;
        r.register(Box::new(c.clone()))?;
        Ok(c)
    };
    let pending = gauge(
        "reclaim_pending_bytes",
        "Bytes held in the file system's trashes, waiting to be freed (trees of unknown size not counted).",
    )?;
    let entries = gauge(
        "reclaim_pending_entries",
        "Entries in the file system's trashes.",
    )?;
    let grace = gauge(
        "reclaim_grace_entries",
        "Entries still in their grace window (restorable).",
    )?;
    let failed = gauge(
        "reclaim_failed_entries",
        "Entries a reaper could not free (failed or damaged).",
    )?;
    let unknown = gauge(
        "reclaim_unknown_size_entries",
        "Entries whose size is not known (trees not counted yet).",
    )?;
    let free = gauge(
        "reclaim_free_bytes",
        "Bytes applications may still write on the file system (f_bavail).",
    )?;
    let size = gauge("reclaim_size_bytes", "The file system's size.")?;
    let floor = gauge(
        "reclaim_floor_bytes",
        "The floor of free space (--min-free): under it reapers free grace entries early.",
    )?;
    let short = gauge(
        "reclaim_short_of_space",
        "1 while the file system is under its floor of free space.",
    )?;
    let rate = GaugeVec::new(
        Opts::new(
            "reclaim_freeing_bytes_per_second",
            "Bytes per second the reapers give back on the file system.",
        ),
        &["mount"],
    )?;
    r.register(Box::new(rate.clone()))?;
    let early = counter(
        "reclaim_freed_early_entries_total",
        "Entries freed before their grace window ended because space ran short.",
    )?;
    let bytes_freed = counter(
        "reclaim_freed_bytes_total",
        "Bytes the service's reapers freed since it started.",
    )?;
    let entries_freed = counter(
        "reclaim_freed_entries_total",
        "Entries the service's reapers freed since it started.",
    )?;
    let failures = counter(
        "reclaim_failures_total",
        "Attempts at an entry that could not free all of it, since the service started.",
    )?;
    for fs in space {
        let m = [fs.mount.as_str()];
        pending.with_label_values(&m).set(int(fs.pending_bytes));
        entries.with_label_values(&m).set(int(fs.entries));
        grace.with_label_values(&m).set(int(fs.in_grace));
        failed.with_label_values(&m).set(int(fs.failed));
        unknown.with_label_values(&m).set(int(fs.unknown_size));
        free.with_label_values(&m).set(int(fs.free_bytes));
        size.with_label_values(&m).set(int(fs.size_bytes));
        if let Some(b) = fs.floor_bytes {
            floor.with_label_values(&m).set(int(b));
        }
        short.with_label_values(&m).set(i64::from(fs.short));
        rate.with_label_values(&m).set(fs.rate_bps);
        early.with_label_values(&m).inc_by(fs.freed_early);
    }
    for (mount, d) in done {
        let m = [mount.as_str()];
        bytes_freed.with_label_values(&m).inc_by(d.bytes_freed);
        entries_freed.with_label_values(&m).inc_by(d.entries_freed);
        failures.with_label_values(&m).inc_by(d.failed_attempts);
    }
    let up = prometheus::Gauge::new(
        "reclaim_service_start_time_seconds",
        "When the reaper service started (Unix time).",
    )?;
    up.set(started_unix);
    r.register(Box::new(up))?;
    let updated = prometheus::Gauge::new(
        "reclaim_metrics_updated_time_seconds",
        "When these metrics were written (Unix time): a stale file means a stuck service.",
    )?;
    updated.set(crate::sys::format::now_unix());
    r.register(Box::new(updated))?;
    let mut out = Vec::new();
    TextEncoder::new().encode(&r.gather(), &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A count as a gauge's value (saturating).
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Replaces `file` with `text` (mode 0644: the collector runs as another user): a fresh file
/// in its directory, renamed over it.
pub fn write(file: &Path, text: &str) -> Result<(), MetricsError> {
    let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else {
        return Err(MetricsError::NoName(file.to_path_buf()));
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let name = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(name))
        .map_err(|_| MetricsError::NoName(file.to_path_buf()))?;
    let fd = crate::sys::dirfd::open_dir_path(dir)
        .map_err(|e| MetricsError::Dir(file.to_path_buf(), e))?;
    crate::trash::safefile::replace_mode(&fd, &name, text.as_bytes(), 0o644)
        .map_err(|e| MetricsError::Write(file.to_path_buf(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_has_help_and_type_and_labels_are_escaped() {
        let fs = FsSpace {
            mount: "/srv/a \"b\"\\c\nd".into(),
            pending_bytes: 5,
            entries: 1,
            floor_bytes: Some(7),
            ..FsSpace::default()
        };
        let done = BTreeMap::from([(
            fs.mount.clone(),
            Done {
                bytes_freed: 9,
                entries_freed: 2,
                failed_attempts: 1,
            },
        )]);
        let text = render(&[fs], &done, 1.0).unwrap();
        assert!(
            text.contains("# TYPE reclaim_pending_bytes gauge"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE reclaim_freed_bytes_total counter"),
            "{text}"
        );
        assert!(
            text.contains(r#"reclaim_pending_bytes{mount="/srv/a \"b\"\\c\nd"} 5"#),
            "{text}"
        );
        assert!(
            text.contains(r#"reclaim_freed_bytes_total{mount="/srv/a \"b\"\\c\nd"} 9"#),
            "{text}"
        );
        for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            let name = line.split_whitespace().nth(2).unwrap();
            assert!(text.contains(&format!("# HELP {name} ")), "{name}: {text}");
        }
    }
}
