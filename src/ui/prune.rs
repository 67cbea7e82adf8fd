//! `reclaim prune`'s account: the plan as a table and the line on what its removal did; the
//! same `Report` is the `--json` object.

use serde::Serialize;

use crate::engine::prune::policy::civil;
use crate::engine::prune::Entry;
use crate::reaper::rm::Summary;
use crate::sys::format::{bytes, group, minute, plural, seconds};

/// `reclaim prune`'s account: the plan, and what was done; `--json` prints exactly this.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// Why nothing was done, when the run failed before removing anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub plan: Vec<Entry>,
    /// Entries left out for their names (without `--match`: not of the dominant shape).
    pub left_out: Vec<crate::engine::prune::shape::Shape>,
    pub unmet: Vec<String>,
    pub dry_run: bool,
    pub remove_count: usize,
    pub remove_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Summary>,
}

impl Report {
    /// The plan for `entries` (newest first), nothing done yet.
    pub fn new(entries: Vec<Entry>, unmet: Vec<String>, dry_run: bool) -> Self {
        let removing: Vec<&Entry> = entries.iter().filter(|e| e.remove).collect();
        Report {
            remove_count: removing.len(),
            remove_bytes: removing
                .iter()
                .filter_map(|e| e.allocated)
                .fold(0, u64::saturating_add),
            plan: entries,
            left_out: Vec::new(),
            unmet,
            dry_run,
            result: None,
            error: None,
        }
    }
}

/// The plan as a table, one line per entry (newest first), then the totals.
pub fn plan(r: &Report, zone: &jiff::tz::TimeZone) -> String {
    let mut s = String::new();
    for e in &r.plan {
        let size = e.allocated.map_or_else(|| "?".into(), bytes);
        s.push_str(&format!(
            "{:<6}  {}  {:>10}  {}  ({})\n",
            if e.remove { "REMOVE" } else { "keep" },
            minute(&civil(zone, e.mtime_unix)),
            size,
            e.path,
            e.reasons.join("; ")
        ));
    }
    for l in &r.left_out {
        let names: Vec<String> = l
            .first
            .iter()
            .map(|n| crate::sys::quote::quote(std::path::Path::new(n)))
            .collect();
        let more = l.count.saturating_sub(names.len());
        s.push_str(&format!(
            "left out: {} named '{}', unlike the others ({}{}): kept, not counted by any rule \
             (--match chooses the names)\n",
            plural(l.count as u64, "entry", "entries"),
            l.shape,
            names.join(", "),
            if more > 0 {
                format!(" and {} more", group(more as u64))
            } else {
                String::new()
            }
        ));
    }
    s.push_str(&format!(
        "plan: remove {} of {} ({}){}\n",
        group(r.remove_count as u64),
        plural(r.plan.len() as u64, "entry", "entries"),
        bytes(r.remove_bytes),
        if r.dry_run {
            "; dry run, nothing removed"
        } else {
            ""
        }
    ));
    s
}

/// What the removal of the plan did, in one line (`wait`: `--wait` was asked).
pub fn outcome(s: &Summary, wait: bool) -> String {
    let failed = if s.errors.is_empty() {
        String::new()
    } else {
        format!("; {} failed", s.errors.len())
    };
    if !s.hidden.is_empty() && !wait {
        // One trash entry per directory (a batch): say which, so `restore ID` can undo it.
        let mut ids: Vec<&str> = Vec::new();
        for h in &s.hidden {
            if !ids.contains(&h.id.as_str()) {
                ids.push(&h.id);
            }
        }
        let shown = if ids.len() <= 3 {
            ids.join(", ")
        } else {
            format!("{}, ... {}", ids[..2].join(", "), ids[ids.len() - 1])
        };
        format!(
            "hid {} into the trash as {} ({shown}); a reaper frees the space in the background (`reclaim status`){failed}",
            plural(s.hidden.len() as u64, "entry", "entries"),
            plural(ids.len() as u64, "trash entry", "trash entries")
        )
    } else {
        format!(
            "removed {} and {}, {} freed, in {}{failed}",
            plural(s.files, "file", "files"),
            plural(s.dirs, "directory", "directories"),
            bytes(s.bytes_freed),
            seconds(s.elapsed_s)
        )
    }
}
