//! What the user sees of a selection (`reclaim rm -r --name ...`, `--from`, `--keep-free`)
//! after the summary: `--keep-free`'s target and cut, the duplicates of a `--from` list and
//! the totals per directory and owner as two small tables. Text only; the numbers are the
//! engine's (`engine::select`).

use crate::engine::select::keepfree::KeepFreeOutcome;
use crate::engine::select::{tally, Report};
use crate::sys::format::{age, bytes, group, plural};

/// The selection's lines after the summary.
pub fn lines(r: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(k) = &r.keep_free {
        lines.push(keep_free(k));
    }
    if let Some(d) = r.duplicates.filter(|d| *d > 0) {
        lines.push(format!(
            "{} listed more than once (removed once)",
            plural(d, "path", "paths")
        ));
    }
    if let Some(t) = &r.totals {
        let row = |what: String, t: &tally::Totals| {
            format!(
                "  {:>12} {:>9} {:>7}  {what}",
                bytes(t.bytes),
                group(t.files),
                group(t.dirs)
            )
        };
        let head = |what: &str| format!("  {:>12} {:>9} {:>7}  {what}", "bytes", "files", "dirs");
        if !t.by_top.is_empty() {
            lines.push(head("directory"));
            for l in &t.by_top {
                lines.push(row(l.path.to_string(), &l.totals));
            }
        }
        if !t.by_owner.is_empty() {
            lines.push(head("owner"));
            for l in &t.by_owner {
                let who = match &l.user {
                    Some(u) => format!("{u} ({})", l.uid),
                    None => l.uid.to_string(),
                };
                lines.push(row(who, &l.totals));
            }
        }
    }
    lines
}

/// `--keep-free`: what was free, the target, and where it cut.
fn keep_free(k: &KeepFreeOutcome) -> String {
    let have = k.free_before.saturating_add(k.pending);
    if k.need == 0 {
        return format!(
            "--keep-free: {} free ({} of it pending in the trash), target {}: nothing to remove",
            bytes(have),
            bytes(k.pending),
            bytes(k.target_free)
        );
    }
    let cut = match &k.cutoff {
        Some(c) => format!(
            "files older than {} ({} of {} matching)",
            age(c.age_s),
            bytes(c.bytes),
            bytes(k.candidate_bytes)
        ),
        None => format!(
            "every matching file ({}: less than needed)",
            bytes(k.candidate_bytes)
        ),
    };
    format!(
        "--keep-free: {} free ({} pending in the trash), target {}: {} to free; took {cut}{}",
        bytes(have),
        bytes(k.pending),
        bytes(k.target_free),
        bytes(k.need),
        if k.reached {
            "; stopped at the target"
        } else {
            ""
        }
    )
}
