//! What a reaper run did (`ReapSummary`, `reclaim reap --json`, also what a child pass prints)
//! and what it tells its caller while it works (`Progress`). Never acts on a trash.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::sys::error::ErrorEntry;
use crate::sys::freed::Measure;

/// What a reaper run did (`reclaim reap --json`).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ReapSummary {
    pub entries_freed: u64,
    pub files: u64,
    /// Directories removed (inside the trees freed).
    #[serde(default)]
    pub dirs: u64,
    pub bytes_freed: u64,
    /// Paths that could not be freed (inner paths under the entry's original path), and
    /// damaged entries (`"damaged: ..."`).
    pub errors: Vec<ErrorEntry>,
    /// Entries left in the trashes it worked on (in grace, failed, damaged, or another's).
    pub remaining: u64,
    /// Of those, entries in their grace window (still restorable; not freed before it ends).
    #[serde(default)]
    pub waiting: u64,
    /// Of those, entries that could not be freed (failed or damaged; see `errors`).
    #[serde(default)]
    pub entries_failed: u64,
    /// Trashes another reaper was working on.
    pub skipped_locked: Vec<String>,
    /// Large files shrunk in steps (resumed ones say so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gentle: Vec<crate::engine::shrink::Gentle>,
    /// When the earliest grace window of what is left ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_grace_unix: Option<f64>,
    /// When the latest grace window of what is left ends (the last entry stops being
    /// restorable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_grace_unix: Option<f64>,
    /// When the earliest failed entry is due for another attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_unix: Option<f64>,
    /// Stopped by a signal before the end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// A failure of the run as a whole (the trash could not be opened, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How `bytes_freed` was counted (`freed::Measure::text`): per file, the blocks no other
    /// name, process or file holds; for trees, the file system's free-space delta.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bytes_freed_measure: String,
    /// btrfs subvolumes the file system deleted whole (their blocks are freed by its cleaner
    /// afterwards; not in `bytes_freed`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub subvolumes_deleted: u64,
    /// `reap --wait`: seconds waited for the file systems' cleaners (btrfs) after the entries
    /// were freed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleaner_waited_s: Option<f64>,
    /// Entries freed before their grace window ended: their file system ran short of space
    /// (`pressure`), and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub freed_early: Vec<crate::trash::early::Early>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a reaper run tells its caller while it works (the command words and shows it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Progress<'a> {
    /// Freeing an entry (`what`, its original path): `freed` bytes and `files` so far, against
    /// its recorded size and file count when known (0: not known; a tree is measured only by
    /// `status --count` or `prune`), `secs` since it started.
    Freeing {
        what: &'a str,
        freed: u64,
        total: u64,
        files: u64,
        total_files: u64,
        secs: f64,
    },
    /// Waiting for reaper `pid` to finish with `trash`; in one's own trash (read from its
    /// `reaper.json`) what that reaper frees: the entry, bytes freed so far, bytes per second.
    WaitingFor {
        trash: &'a Path,
        pid: u32,
        freeing: Option<(&'a str, u64, f64)>,
    },
    /// Another reaper holds the trash; it frees the entries waited for too (`rm --wait`).
    OthersFree,
}

/// Where a reaper run's `Progress` goes.
pub type OnProgress<'a> = &'a (dyn Fn(&Progress<'_>) + Sync);

pub(super) fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

pub(super) fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

impl ReapSummary {
    /// Adds what another run did.
    pub fn merge(&mut self, s: ReapSummary) {
        self.entries_freed = self.entries_freed.saturating_add(s.entries_freed);
        self.files = self.files.saturating_add(s.files);
        self.dirs = self.dirs.saturating_add(s.dirs);
        self.bytes_freed = self.bytes_freed.saturating_add(s.bytes_freed);
        self.errors.extend(s.errors);
        self.remaining = self.remaining.saturating_add(s.remaining);
        self.waiting = self.waiting.saturating_add(s.waiting);
        self.entries_failed = self.entries_failed.saturating_add(s.entries_failed);
        self.skipped_locked.extend(s.skipped_locked);
        self.gentle.extend(s.gentle);
        self.freed_early.extend(s.freed_early);
        self.subvolumes_deleted = self.subvolumes_deleted.saturating_add(s.subvolumes_deleted);
        self.next_grace_unix = min_opt(self.next_grace_unix, s.next_grace_unix);
        self.last_grace_unix = max_opt(self.last_grace_unix, s.last_grace_unix);
        self.next_retry_unix = min_opt(self.next_retry_unix, s.next_retry_unix);
        self.interrupted |= s.interrupted;
        if self.error.is_none() {
            self.error = s.error;
        }
        self.counted(Measure::from_text(&s.bytes_freed_measure));
    }

    /// Notes that some of `bytes_freed` was counted so.
    pub(super) fn counted(&mut self, m: Measure) {
        self.bytes_freed_measure = Measure::from_text(&self.bytes_freed_measure)
            .and(m)
            .text()
            .to_string();
    }
}

#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use crate::trash::safefile::fuzz::bytes;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn reaper_records_from_arbitrary_bytes(text in bytes()) {
            let d = tempfile::tempdir().unwrap();
            let dir = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
            std::fs::write(d.path().join("failed.json"), &text).unwrap();
            std::fs::write(d.path().join("reaper.json"), &text).unwrap();
            let me = rustix::process::geteuid().as_raw();
            if let Ok(Some(f)) = crate::reaper::failure::FailedRecord::read(&dir, me) {
                for e in &f.errors {
                    let _ = e.to_string();
                }
            }
            let _ = crate::reaper::state::read(&dir, me).map(|s| s.alive());
            // What a child prints (hostile when it runs as another user).
            let _ = serde_json::from_slice::<super::ReapSummary>(&text);
        }
    }
}
