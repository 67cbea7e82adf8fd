//! `reclaim status`'s text: one paragraph per trash with anything in it, its reaper, its log's
//! last lines and each entry; `--json` prints `reaper::status::Status` as it is.

use crate::reaper::status::{Item, Status, TrashStatus};
use crate::sys::format::{bytes, duration_rounded, group, now_unix, plural, rate};
use crate::sys::quote::quote;
use crate::trash;

/// Damaged entries of one trash shown in the human report (the rest are counted).
const MAX_DAMAGED_SHOWN: u64 = 3;

/// The human report: one paragraph per trash with anything in it.
pub fn human(st: &Status) -> String {
    let mut s = String::new();
    for u in &st.unusable {
        s.push_str(&format!("ignoring {}: {}\n", quote(&u.path), u.reason));
    }
    if st.unusable_more > 0 {
        s.push_str(&format!(
            "... and {} more names that look like a trash but are not usable (squatted, \
             links, open modes: `reclaim status --json` lists the first)\n",
            group(st.unusable_more)
        ));
    }
    for k in &st.skipped {
        s.push_str(&format!(
            "uid {}: {} more trashes not looked at (at most {} per user and file system)\n",
            k.uid,
            group(k.trashes),
            trash::discover::MAX_PER_USER
        ));
    }
    for e in &st.errors {
        s.push_str(&format!("cannot read {e}\n"));
    }
    for u in &st.unreachable {
        s.push_str(&format!("warning: {} {}\n", quote(&u.path), u.reason));
    }
    let busy: Vec<&TrashStatus> = st
        .trashes
        .iter()
        .filter(|t| t.entries > 0 || t.reaper.is_some())
        .collect();
    let freeing = file_systems(&st.file_systems);
    let space = space(&st.space);
    if busy.is_empty() {
        s.push_str(&freeing);
        s.push_str(&space);
        s.push_str("nothing pending: no trash holds entries");
        for t in st
            .trashes
            .iter()
            .filter(|t| !t.freed_early_recent.is_empty())
        {
            s.push('\n');
            s.push_str(freed_early(t).trim_end());
        }
        // What the reapers did last, from each trash's log.
        for t in st.trashes.iter().filter(|t| !t.log_tail.is_empty()) {
            s.push_str(&format!("\n{} last logged:", quote(&t.trash)));
            for l in &t.log_tail {
                s.push_str(&format!("\n  log: {l}"));
            }
        }
        return s;
    }
    s.push_str(&freeing);
    s.push_str(&space);
    let now = now_unix();
    for t in busy {
        trash(&mut s, t, now);
    }
    s.pop();
    s
}

/// `--brief`: one line per trash with anything in it (where, owner, entries, bytes, the
/// oldest entry's age, the reaper); warnings and unreadable trashes on lines of their own.
pub fn brief(st: &Status) -> String {
    let mut lines: Vec<String> = Vec::new();
    lines.extend(st.errors.iter().map(|e| format!("cannot read {e}")));
    lines.extend(
        st.unreachable
            .iter()
            .map(|u| format!("warning: {} {}", quote(&u.path), u.reason)),
    );
    let now = now_unix();
    let busy = st
        .trashes
        .iter()
        .filter(|t| t.entries > 0 || t.reaper.is_some());
    lines.extend(busy.map(|t| brief_line(t, now)));
    if lines.is_empty() {
        lines.push("nothing pending: no trash holds entries".into());
    }
    lines.join("\n")
}

/// One trash in one line.
fn brief_line(t: &TrashStatus, now: f64) -> String {
    let owner = crate::sys::asuser::user_name(t.uid).unwrap_or_else(|| format!("uid {}", t.uid));
    let size = match t.unknown_size {
        0 => bytes(t.pending_bytes),
        n if n == t.entries => "size unknown".into(),
        n => format!(
            "at least {} (+{} of unknown size)",
            bytes(t.pending_bytes),
            plural(n, "tree", "trees")
        ),
    };
    // Entries are listed oldest first.
    let oldest = t
        .items
        .iter()
        .filter_map(|i| i.created_unix)
        .next()
        .map(|c| format!(", oldest {} old", duration_rounded(now - c)))
        .unwrap_or_default();
    let failed = t
        .items
        .iter()
        .filter(|i| i.state == "failed" || i.state == "damaged")
        .count() as u64;
    let failed = if failed > 0 {
        format!(" ({failed} failed)")
    } else {
        String::new()
    };
    let reaper = match &t.reaper {
        Some(r) => format!("reaper {} {}", r.pid, r.state),
        None => "no reaper".into(),
    };
    format!(
        "{}  {owner}  {}{failed}, {size}{oldest}; {reaper}",
        quote(&t.trash),
        plural(t.entries, "entry", "entries"),
    )
}

/// A line per file system still freeing in its own threads (or that could not tell).
fn file_systems(fs: &[crate::reaper::status::FsFreeing]) -> String {
    let mut s = String::new();
    for f in fs {
        match (f.subvolumes_queued, &f.unknown) {
            (Some(0), _) => {}
            (Some(n), _) => s.push_str(&format!(
                "{} ({}): {} deleted {} still being freed by its cleaner \
                 (`reclaim rm --wait` waits for it)\n",
                quote(&f.mount),
                f.fs_type,
                n,
                if n == 1 { "subvolume" } else { "subvolumes" }
            )),
            (None, Some(why)) => s.push_str(&format!(
                "{} ({}): what its cleaner still frees is unknown: {why}\n",
                quote(&f.mount),
                f.fs_type
            )),
            (None, None) => {}
        }
    }
    s
}

/// A line per file system with trashes: its free space against the floor, what its trashes
/// hold, how fast it comes back, and the entries freed before their grace ended.
fn space(fs: &[crate::reaper::space::FsSpace]) -> String {
    let mut s = String::new();
    for f in fs {
        let floor = match f.floor_bytes {
            Some(b) if f.short => format!(" (floor {}: SHORT OF SPACE, under it)", bytes(b)),
            Some(b) => format!(" (floor {})", bytes(b)),
            None => " (no floor)".into(),
        };
        let grace = if f.in_grace > 0 {
            format!(" ({} in a grace window)", group(f.in_grace))
        } else {
            String::new()
        };
        let pending = match f.unknown_size {
            0 => bytes(f.pending_bytes),
            n => format!(
                "at least {} (+{} of unknown size)",
                bytes(f.pending_bytes),
                plural(n, "tree", "trees")
            ),
        };
        let rate = if f.rate_bps > 0.0 {
            format!(
                ", freeing {}, {}",
                rate(f.rate_bps),
                f.eta_s.map_or_else(
                    || "ETA ?".into(),
                    |e| format!("ETA {}", duration_rounded(e))
                )
            )
        } else {
            String::new()
        };
        let early = if f.freed_early > 0 {
            format!(
                "; {} freed before {} grace ended",
                plural(f.freed_early, "entry", "entries"),
                if f.freed_early == 1 { "its" } else { "their" }
            )
        } else {
            String::new()
        };
        s.push_str(&format!(
            "{}: {} free of {}{floor}: {}{grace}, {pending} pending{rate}{early}\n",
            quote(&f.mount),
            bytes(f.free_bytes),
            bytes(f.size_bytes),
            plural(f.entries, "entry", "entries"),
        ));
    }
    s
}

/// The latest entries of a trash freed before their grace ended, a line each.
fn freed_early(t: &TrashStatus) -> String {
    let mut s = String::new();
    for e in &t.freed_early_recent {
        s.push_str(&format!(
            "  {} (entry {}) at {}: {}\n",
            e.original,
            quote(&e.id),
            crate::sys::format::local_time(e.freed_unix),
            e.text()
        ));
    }
    s
}

/// One trash's paragraph: what it holds, its reaper, its log's last lines, each entry.
fn trash(s: &mut String, t: &TrashStatus, now: f64) {
    // What is known, and what is not (a tree is not walked unless --count).
    let pending = if t.unknown_size == 0 {
        format!(
            "{}, {} pending",
            plural(t.pending_files, "file", "files"),
            bytes(t.pending_bytes)
        )
    } else if t.unknown_size == t.entries {
        format!(
            "size unknown ({}: `reclaim status --count` walks {})",
            plural(t.unknown_size, "tree", "trees"),
            if t.unknown_size == 1 { "it" } else { "them" }
        )
    } else {
        format!(
            "at least {} in {} pending, and {} of unknown size \
             (`reclaim status --count` walks them)",
            bytes(t.pending_bytes),
            plural(t.pending_files, "file", "files"),
            plural(t.unknown_size, "tree", "trees"),
        )
    };
    s.push_str(&format!(
        "{} (file system at {}): {}, {pending}\n",
        quote(&t.trash),
        quote(&t.mount),
        plural(t.entries, "entry", "entries"),
    ));
    let stuck = t
        .items
        .iter()
        .all(|i| i.state == "failed" || i.state == "damaged");
    match &t.reaper {
        Some(r) if r.state == "waiting" || r.state == "finishing" => {
            s.push_str(&format!(
                "  reaper {} waiting for a grace window{}\n",
                r.pid,
                r.next_due_unix
                    .map(|d| format!(" (next in {})", duration_rounded(d - now)))
                    .unwrap_or_default()
            ));
        }
        Some(r) => {
            let eta = match r.eta_s {
                Some(e) => format!("ETA {}", duration_rounded(e)),
                None if t.unknown_size > 0 => "ETA ? (a tree of unknown size)".into(),
                None => "ETA ?".into(),
            };
            s.push_str(&format!(
                "  reaper {} {}: {}, {} freed and {} removed so far ({} files/s), {eta}{}\n",
                r.pid,
                r.state,
                rate(r.rate_bps),
                bytes(r.freed_bytes),
                plural(r.files, "file", "files"),
                group(r.files_per_s as u64),
                r.entry
                    .as_ref()
                    .map(|e| format!(" (now: {})", quote(e)))
                    .unwrap_or_default()
            ));
        }
        None if t.entries > 0 && !stuck => {
            s.push_str("  no reaper running: `reclaim reap` frees it\n");
        }
        None => {}
    }
    for l in &t.log_tail {
        s.push_str(&format!("  log: {l}\n"));
    }
    s.push_str(&freed_early(t));
    // Damaged entries (anyone can make thousands in their own trash): the first few.
    let mut damaged = 0u64;
    for i in &t.items {
        if i.damage.is_some() {
            damaged += 1;
            if damaged > MAX_DAMAGED_SHOWN {
                continue;
            }
        }
        item(s, i, now);
    }
    if damaged > MAX_DAMAGED_SHOWN {
        s.push_str(&format!(
            "  ... and {} more damaged entries, left alone (`reclaim status --json` lists \
             them)\n",
            group(damaged - MAX_DAMAGED_SHOWN)
        ));
    }
    if t.items_omitted > 0 {
        s.push_str(&format!(
            "  ... and {} more entries\n",
            group(t.items_omitted)
        ));
    }
}

/// One entry's line, and what is wrong with it.
fn item(s: &mut String, i: &Item, now: f64) {
    let size = i.allocated.map_or_else(|| "?".into(), bytes);
    let when = match (i.state.as_str(), i.grace_until_unix) {
        ("grace", Some(g)) => format!(", restorable for {}", duration_rounded(g - now)),
        _ => String::new(),
    };
    let original = crate::sys::quote::PathField {
        path: i.original.clone(),
        path_hex: i.original_hex.clone(),
    };
    let what = match i.held {
        // A batch: how many paths, in which directory.
        Some(n) => format!(
            "{} ({}) in {original}",
            plural(n, "path", "paths"),
            i.files.map_or_else(
                || "files not counted".into(),
                |f| plural(f, "file", "files")
            )
        ),
        None => format!("{} {original}", i.kind),
    };
    s.push_str(&format!(
        "  {}  {:<8} {:>10}  {what}{when}\n",
        quote(&i.id),
        i.state,
        size,
    ));
    if let Some(d) = &i.damage {
        s.push_str(&format!("      damaged: {d}; left alone\n"));
    }
    if let Some(f) = &i.failure {
        for e in &f.errors {
            s.push_str(&format!("      cannot free {e}\n"));
        }
        if f.more > 0 {
            s.push_str(&format!("      ... and {} more\n", group(f.more)));
        }
        s.push_str(&format!(
            "      {}; the next in {} (fix the cause where it is now, e.g. `chattr -i -a` an \
             immutable or append-only file, then `reclaim reap --now {id}`; or `reclaim restore \
             {id}` puts what is left back at its path)\n",
            plural(u64::from(f.attempts), "attempt", "attempts"),
            duration_rounded(f.next_attempt_unix - now),
            id = crate::sys::quote::quote_if_needed(&i.id),
        ));
    }
    if let Some(pid) = i.holder_pid {
        s.push_str(&format!("      being worked on by process {pid}\n"));
    }
}

#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use crate::trash::safefile::fuzz::bytes;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn status_of_arbitrary_bytes_reads_as_text(text in bytes()) {
            // What a child prints (hostile when it runs as another user).
            if let Ok(st) = serde_json::from_slice::<super::Status>(&text) {
                let _ = super::human(&st);
            }
        }
    }
}
