//! `reclaim reap`'s closing paragraph: what was freed (and what before its grace window ended,
//! for want of space), what waits for a grace window, what could not be freed, which trashes
//! another reaper had.

use std::time::Duration;

use crate::reaper::ReapSummary;
use crate::sys::format::{self, plural};
use crate::sys::quote::quote;

/// What a reaper run freed, in one paragraph for the terminal.
pub fn human(sum: &ReapSummary, took: Duration) -> String {
    // How the bytes were counted (`freed::Measure`), when anything was.
    let how = match sum.bytes_freed_measure.as_str() {
        "" => String::new(),
        m => format!(" returned: {m}"),
    };
    let mut s = format!(
        "freed {} ({}, {}{how}) in {}",
        plural(sum.entries_freed, "entry", "entries"),
        plural(sum.files, "file", "files"),
        format::bytes(sum.bytes_freed),
        format::seconds(took.as_secs_f64())
    );
    if sum.subvolumes_deleted > 0 {
        s.push_str(&match sum.cleaner_waited_s {
            Some(w) => format!(
                "; {} deleted whole, waited {} for btrfs's cleaner",
                plural(sum.subvolumes_deleted, "subvolume", "subvolumes"),
                format::seconds(w)
            ),
            None => format!(
                "; {} deleted whole (btrfs's cleaner frees {} in the background: `reclaim \
                 status` shows it; `reap --wait` waits)",
                plural(sum.subvolumes_deleted, "subvolume", "subvolumes"),
                if sum.subvolumes_deleted == 1 {
                    "it"
                } else {
                    "them"
                }
            ),
        });
    }
    if sum.waiting > 0 {
        let until = match (sum.next_grace_unix, sum.last_grace_unix) {
            (Some(a), Some(b)) if b - a >= 1.0 => {
                format!("{} to {}", format::local_time(a), format::local_time(b))
            }
            (Some(t), _) | (None, Some(t)) => format::local_time(t),
            (None, None) => "its grace window ends".into(),
        };
        s.push_str(&format!(
            "; {} waiting, restorable until {until} (then freed by a reaper that waits \
             for {}, or by the next `reclaim reap`)",
            plural(sum.waiting, "entry", "entries"),
            if sum.waiting == 1 { "it" } else { "them" }
        ));
    }
    if sum.entries_failed > 0 {
        s.push_str(&format!(
            "; {} could not be freed",
            plural(sum.entries_failed, "entry", "entries")
        ));
    }
    let other = sum
        .remaining
        .saturating_sub(sum.waiting)
        .saturating_sub(sum.entries_failed);
    if other > 0 {
        s.push_str(&format!(
            "; {} left (being hidden or restored, waiting for a retry, or another reaper's)",
            plural(other, "entry", "entries")
        ));
    }
    for t in &sum.skipped_locked {
        s.push_str(&format!(
            "\nskipped {}: another reaper is working on it",
            quote(t)
        ));
    }
    for e in &sum.freed_early {
        s.push_str(&format!(
            "\n  {} (entry {}): {}",
            e.original,
            quote(&e.id),
            e.text()
        ));
    }
    for g in &sum.gentle {
        s.push_str(&format!("\n  {}", super::report::gentle(g)));
    }
    s
}
