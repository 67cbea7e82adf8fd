//! The reaper's log records: a freed entry, a failed attempt, a back-off, a damaged entry, a
//! trash gone; and where they go (`log`: the trash's `reaper.log` as its owner, or the sink).
//! Words and fields only: it decides nothing.

use std::ffi::CStr;
use std::path::Path;
use std::time::Duration;

use super::failure::FailedRecord;
use crate::sys::format::now_unix;
use crate::sys::format::{self, plural};
use crate::sys::freed::Measure;
use crate::sys::logging::{Dest, Priority, Record, Sink};
use crate::sys::quote::quote;
use crate::trash::{safefile, Found, Gone, Trash, LOG};

/// Logs one line for the damaged entries of a run beyond the first `MAX_DAMAGED_LOGGED` (which
/// were logged one by one): anyone can make thousands in their own trash.
pub(super) fn damaged_beyond_logged(trash: &Trash, to: &Sink, damaged: u64) {
    if damaged <= MAX_DAMAGED_LOGGED {
        return;
    }
    let more = damaged - MAX_DAMAGED_LOGGED;
    let line = format!(
        "{}: {} more damaged entries left alone",
        quote(&trash.path),
        format::group(more)
    );
    let rec = Record::new(Priority::Err, line)
        .field("RECLAIM_EVENT", "damaged")
        .field("RECLAIM_COUNT", more.to_string());
    log(trash, to, rec);
}

/// Logs a record about `trash` where this reaper logs: a dated line in the trash's
/// `reaper.log` (written as the trash's owner, as hostile ground), or the sink's place, with
/// the trash as the stderr line's start and as the journal's `RECLAIM_TRASH`.
pub(super) fn log(trash: &Trash, to: &Sink, rec: Record) {
    match to.dest() {
        Dest::None => {}
        Dest::File => {
            let stamp = format::utc_stamp(now_unix() as u64);
            let line = format!("{stamp}Z {}", rec.message);
            let _ = safefile::append_log(&trash.dir, LOG, trash.uid, &line);
        }
        _ => to.write(
            &rec.path("RECLAIM_TRASH", &trash.path),
            Some(&quote(&trash.path)),
        ),
    }
}

/// The record of a freed entry: what (its original path; for a batch, its directory and how
/// many paths it held), how much (and how that was counted), how long, how fast.
pub(super) fn freed_record(
    entry: &CStr,
    (path, held): (&Path, Option<u64>),
    files: u64,
    (bytes, measure): (u64, Measure),
    took: Duration,
) -> Record {
    let secs = took.as_secs_f64();
    let rate = (secs > 0.0).then(|| (bytes as f64 / secs) as u64);
    let how = match measure {
        Measure::Nothing => String::new(),
        m => format!(" ({})", m.text()),
    };
    let what = match held {
        Some(n) => format!("{} in {}", plural(n, "path", "paths"), quote(path)),
        None => quote(path),
    };
    let line = format!(
        "freed {what}: {}, {}{how} in {secs:.2} s{}",
        plural(files, "file", "files"),
        format::bytes(bytes),
        rate.map_or_else(String::new, |r| format!(", {}/s", format::bytes(r)))
    );
    let rec = Record::new(Priority::Info, line)
        .field("RECLAIM_EVENT", "freed")
        .field("RECLAIM_ENTRY", entry.to_bytes())
        .path("RECLAIM_PATH", path)
        .field("RECLAIM_FILES", files.to_string())
        .field("RECLAIM_BYTES", bytes.to_string())
        .field("RECLAIM_BYTES_MEASURE", measure.text())
        .field("RECLAIM_SECONDS", format!("{secs:.3}"));
    let rec = match held {
        Some(n) => rec.field("RECLAIM_PATHS", n.to_string()),
        None => rec,
    };
    match rate {
        Some(r) => rec.field("RECLAIM_RATE", r.to_string()),
        None => rec,
    }
}

/// The records of a failed attempt at an entry (its original path `path`): one per path that
/// could not be freed (with why), then one saying how many failed and when the next attempt
/// is.
pub(super) fn failed_records(entry: &CStr, path: &Path, record: &FailedRecord) -> Vec<Record> {
    let with = |rec: Record| {
        rec.field("RECLAIM_EVENT", "failed")
            .field("RECLAIM_ENTRY", entry.to_bytes())
            .field("RECLAIM_ATTEMPTS", record.attempts.to_string())
            .field(
                "RECLAIM_NEXT_ATTEMPT_UNIX",
                format!("{:.0}", record.next_attempt_unix),
            )
    };
    let mut out: Vec<Record> = record
        .errors
        .iter()
        .map(|e| {
            with(Record::new(Priority::Err, format!("cannot free {e}")))
                .path("RECLAIM_PATH", &e.path.exact())
                .field("RECLAIM_ERROR", e.error.as_bytes())
        })
        .collect();
    let failed = (record.errors.len() as u64).saturating_add(record.more);
    out.push(
        with(Record::new(
            Priority::Warning,
            format!(
                "{}: {} could not be freed (attempt {}); next attempt at {}",
                quote(path),
                plural(failed, "path", "paths"),
                record.attempts,
                format::local_time(record.next_attempt_unix)
            ),
        ))
        .path("RECLAIM_PATH", path),
    );
    out
}

/// The record of an entry left until its back-off ends.
pub(super) fn backoff_record(entry: &CStr, path: &Path, record: &FailedRecord) -> Record {
    Record::new(
        Priority::Notice,
        format!(
            "{}: not retried before {} (failed {})",
            quote(path),
            format::local_time(record.next_attempt_unix),
            plural(u64::from(record.attempts), "time", "times")
        ),
    )
    .field("RECLAIM_EVENT", "backoff")
    .field("RECLAIM_ENTRY", entry.to_bytes())
    .path("RECLAIM_PATH", path)
    .field("RECLAIM_ATTEMPTS", record.attempts.to_string())
    .field(
        "RECLAIM_NEXT_ATTEMPT_UNIX",
        format!("{:.0}", record.next_attempt_unix),
    )
}

/// Says, once, that the trash `t` is gone (`why`) and that this reaper leaves it: where the
/// reaper logs, or on stderr when that is the trash's own log (gone with it).
pub(super) fn say_gone(t: &Found, why: &Gone, to: &Sink) {
    let rec = Record::new(
        Priority::Warning,
        format!("{}: {why}; this reaper leaves it", quote(&t.path)),
    )
    .field("RECLAIM_EVENT", "gone")
    .path("RECLAIM_TRASH", &t.path);
    match to.dest() {
        Dest::None => {}
        Dest::File => Sink::new(Dest::Stderr).write(&rec, None),
        _ => to.write(&rec, None),
    }
}

/// Damaged entries of one trash logged one by one in a run (the rest in one line).
pub(super) const MAX_DAMAGED_LOGGED: u64 = 3;
