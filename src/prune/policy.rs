//! The retention policy as a pure function: given the candidate entries (age, size, file
//! system) and the rules, decide what to keep and what to remove, with a reason for each.
//! No I/O here, so every combination of rules can be property-tested.
//!
//! Rules, in the spirit of restic/borg `forget`, tmpreaper and MythTV's autoexpire:
//! - keep rules (`--keep-last N`, `--keep-daily N`, `--keep-weekly N`) protect entries; a kept
//!   entry is never removed, whatever the other rules say;
//! - `--older-than D` removes entries older than D, except the newest entry (an age rule alone
//!   never empties a directory of backups that simply stopped coming);
//! - `--max-total SIZE` removes oldest first until what is left totals at most SIZE;
//! - `--keep-free 15%|200G` removes oldest first until the file system will have that much free,
//!   counting space already on its way back (trash entries still being freed, and what this
//!   plan removes), so it never removes more than needed because freeing lags;
//! - with only keep rules, everything they do not keep is removed (restic's semantics);
//! - a plan that removes every entry is refused unless `allow_empty`.

use std::collections::HashMap;

use serde::Serialize;

/// One candidate: an entry of a directory being pruned.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub name: String,
    /// Modification time, seconds since the epoch.
    pub mtime: f64,
    /// Allocated bytes (`st_blocks`, the whole tree for a directory); `None` if not measured.
    pub allocated: Option<u64>,
    /// Which file system it is on (`st_dev`).
    pub dev: u64,
    /// Calendar day and week of `mtime` in local time (`(year, day of year)`, week index).
    pub day: (i32, i32),
    pub week: i64,
}

/// How candidates are ordered from newest to oldest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
pub enum SortBy {
    #[default]
    Mtime,
    /// By name (dated names such as `backup-2026-11-20`): the greatest name is the newest.
    Name,
}

/// A free-space target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FreeTarget {
    Percent(f64),
    Bytes(u64),
}

/// A file system's space as the plan sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Space {
    pub total: u64,
    /// Available to unprivileged users now (`f_bavail`).
    pub avail: u64,
    /// Already on its way back: trash entries not yet freed.
    pub pending: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Policy {
    pub keep_last: Option<usize>,
    pub keep_daily: Option<usize>,
    pub keep_weekly: Option<usize>,
    /// Seconds.
    pub older_than: Option<f64>,
    pub keep_free: Option<FreeTarget>,
    pub max_total: Option<u64>,
    pub sort: SortBy,
    pub allow_empty: bool,
}

impl Policy {
    pub fn has_remove_rule(&self) -> bool {
        self.older_than.is_some() || self.keep_free.is_some() || self.max_total.is_some()
    }

    pub fn has_keep_rule(&self) -> bool {
        self.keep_last.is_some() || self.keep_daily.is_some() || self.keep_weekly.is_some()
    }
}

/// The decision about one candidate (same index as the input).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Decision {
    pub remove: bool,
    pub reasons: Vec<String>,
}

/// Why no plan was made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("no rule given (use --keep-last, --keep-daily, --keep-weekly, --older-than, --keep-free or --max-total)")]
    NoRule,
    #[error("this policy would remove all {0} entries; refusing (pass --allow-empty if that is what you want)")]
    WouldEmpty(usize),
    #[error("the free-space target cannot be met: {0}")]
    CannotFree(String),
}

/// The plan, and whether a free-space target stays unmet (all removable entries removed).
#[derive(Clone, Debug)]
pub struct Plan {
    pub decisions: Vec<Decision>,
    pub unmet: Vec<String>,
}

/// Decides what to remove. `now` is seconds since the epoch; `space` is per `dev`.
pub fn plan(
    entries: &[Candidate],
    policy: &Policy,
    now: f64,
    space: &HashMap<u64, Space>,
) -> Result<Plan, PlanError> {
    if !policy.has_remove_rule() && !policy.has_keep_rule() {
        return Err(PlanError::NoRule);
    }
    let order = newest_first(entries, policy.sort);
    let mut d: Vec<Decision> = entries
        .iter()
        .map(|_| Decision {
            remove: false,
            reasons: Vec::new(),
        })
        .collect();
    let mut kept = vec![false; entries.len()];
    if let Some(n) = policy.keep_last {
        for &i in order.iter().take(n) {
            kept[i] = true;
            d[i].reasons.push(format!("kept: one of the last {n}"));
        }
    }
    if let Some(n) = policy.keep_daily {
        keep_buckets(
            &order,
            n,
            |c| (c.day.0 as i64) * 1000 + c.day.1 as i64,
            entries,
            |i| {
                kept[i] = true;
                d[i].reasons
                    .push(format!("kept: newest of its day (--keep-daily {n})"));
            },
        );
    }
    if let Some(n) = policy.keep_weekly {
        keep_buckets(
            &order,
            n,
            |c| c.week,
            entries,
            |i| {
                kept[i] = true;
                d[i].reasons
                    .push(format!("kept: newest of its week (--keep-weekly {n})"));
            },
        );
    }
    let newest = order.first().copied();
    let removable = |i: usize, d: &[Decision]| !kept[i] && !d[i].remove;

    if !policy.has_remove_rule() {
        for &i in &order {
            if removable(i, &d) {
                d[i].remove = true;
                d[i].reasons.push("removed: no keep rule keeps it".into());
            }
        }
    }
    if let Some(age) = policy.older_than {
        for &i in &order {
            let old = now - entries[i].mtime;
            if old > age && Some(i) != newest && removable(i, &d) {
                d[i].remove = true;
                d[i].reasons.push(format!(
                    "removed: older than {} (age {})",
                    human_age(age),
                    human_age(old)
                ));
            } else if old > age && Some(i) == newest && !kept[i] {
                d[i].reasons
                    .push("kept: the newest entry is never removed for its age alone".into());
            }
        }
    }
    let oldest_first: Vec<usize> = order.iter().rev().copied().collect();
    if let Some(max) = policy.max_total {
        let mut total: u64 = (0..entries.len())
            .filter(|&i| !d[i].remove)
            .map(|i| entries[i].allocated.unwrap_or(0))
            .sum();
        for &i in &oldest_first {
            if total <= max {
                break;
            }
            if removable(i, &d) {
                d[i].remove = true;
                d[i].reasons.push(format!(
                    "removed: the entries total {} > --max-total {}",
                    crate::report::bytes(total),
                    crate::report::bytes(max)
                ));
                total = total.saturating_sub(entries[i].allocated.unwrap_or(0));
            }
        }
    }
    let mut unmet = Vec::new();
    if let Some(target) = policy.keep_free {
        let mut devs: Vec<u64> = entries.iter().map(|c| c.dev).collect();
        devs.sort_unstable();
        devs.dedup();
        for dev in devs {
            let sp = space.get(&dev).copied().unwrap_or_default();
            let want = match target {
                FreeTarget::Bytes(b) => b,
                FreeTarget::Percent(p) => (sp.total as f64 * p / 100.0).ceil() as u64,
            };
            let freeing = |d: &[Decision]| -> u64 {
                (0..entries.len())
                    .filter(|&i| entries[i].dev == dev && d[i].remove)
                    .map(|i| entries[i].allocated.unwrap_or(0))
                    .sum()
            };
            let mut will_be = sp.avail + sp.pending + freeing(&d);
            for &i in oldest_first.iter().filter(|&&i| entries[i].dev == dev) {
                if will_be >= want {
                    break;
                }
                if removable(i, &d) {
                    d[i].remove = true;
                    d[i].reasons.push(format!(
                        "removed: free space would be {} < --keep-free {}",
                        crate::report::bytes(will_be),
                        crate::report::bytes(want)
                    ));
                    will_be += entries[i].allocated.unwrap_or(0);
                }
            }
            if will_be < want {
                unmet.push(format!(
                    "free space will be {} of the {} wanted, with every removable entry removed",
                    crate::report::bytes(will_be),
                    crate::report::bytes(want)
                ));
            }
        }
    }
    for (i, dec) in d.iter_mut().enumerate() {
        if !dec.remove && dec.reasons.is_empty() {
            dec.reasons.push(if kept[i] {
                "kept".into()
            } else {
                "kept: no rule removes it".into()
            });
        }
    }
    let removed = d.iter().filter(|x| x.remove).count();
    if removed == entries.len() && removed > 0 && !policy.allow_empty {
        return Err(PlanError::WouldEmpty(removed));
    }
    Ok(Plan {
        decisions: d,
        unmet,
    })
}

/// Indices of `entries`, newest first (ties broken by name, for a stable plan).
pub fn newest_first(entries: &[Candidate], sort: SortBy) -> Vec<usize> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&entries[a], &entries[b]);
        match sort {
            SortBy::Mtime => y
                .mtime
                .partial_cmp(&x.mtime)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| y.name.cmp(&x.name)),
            SortBy::Name => y.name.cmp(&x.name),
        }
    });
    order
}

/// Keeps the first entry (in newest-first order) of each of the first `n` distinct buckets.
/// With `--sort name` the buckets (days of mtime) need not come in order: each counts once.
fn keep_buckets<K: PartialEq>(
    order: &[usize],
    n: usize,
    key: impl Fn(&Candidate) -> K,
    entries: &[Candidate],
    mut keep: impl FnMut(usize),
) {
    let mut seen: Vec<K> = Vec::new();
    for &i in order {
        if seen.len() == n {
            break;
        }
        let k = key(&entries[i]);
        if !seen.contains(&k) {
            seen.push(k);
            keep(i);
        }
    }
}

/// `3d 4h`, `5 min`, `12 s`.
pub fn human_age(secs: f64) -> String {
    let s = secs.max(0.0);
    if s >= 86_400.0 {
        let d = (s / 86_400.0).floor();
        let h = ((s - d * 86_400.0) / 3600.0).floor();
        if h > 0.0 {
            format!("{d:.0}d {h:.0}h")
        } else {
            format!("{d:.0}d")
        }
    } else if s >= 3600.0 {
        format!("{:.1}h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

/// The broken-down local time of `t` (seconds since the epoch), if the C library has one.
pub fn local_tm(t: f64) -> Option<libc::tm> {
    let secs = t.floor() as libc::time_t;
    // SAFETY: a zeroed tm is a valid value; localtime_r writes only into the tm we pass.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&secs, &mut tm).is_null() };
    ok.then_some(tm)
}

/// Calendar day `(year, day of year)` and Monday-based week index of a time, in local time.
pub fn local_day_week(t: f64) -> ((i32, i32), i64) {
    let Some(tm) = local_tm(t) else {
        let days = (t / 86_400.0).floor() as i64;
        return ((1970, days as i32), (days + 3).div_euclid(7));
    };
    // Days since the epoch of the local date: count from the local calendar date itself.
    let local_days = days_from_civil(
        tm.tm_year as i64 + 1900,
        tm.tm_mon as i64 + 1,
        tm.tm_mday as i64,
    );
    // 1970-01-01 was a Thursday: +3 makes weeks start on Monday.
    (
        (tm.tm_year + 1900, tm.tm_yday),
        (local_days + 3).div_euclid(7),
    )
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests;
