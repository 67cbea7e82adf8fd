//! The retention policy as a pure function: given the candidate entries (time, size, file
//! system) and the rules, decide what to keep and what to remove, with a reason for each.
//! No I/O here (local time comes in as a `TimeZone`), so every combination of rules can be tested.
//!
//! Keep rules are restic's `forget` rules, with its documented semantics (its worked examples
//! are tables in `policy/tests.rs`):
//! - `--keep-last N` keeps the N newest entries;
//! - `--keep-hourly/-daily/-weekly/-monthly/-yearly N`: for the last N hours / days / ISO weeks
//!   (Monday to Sunday) / months / years of the local calendar that have an entry, the newest
//!   entry of each; when fewer than N of them have one, the oldest entry is kept too;
//! - `--keep-within SPAN` keeps every entry newer than the newest entry's time minus SPAN
//!   (years, months and days on the local calendar, then hours; an entry in the future is
//!   never the newest);
//! - each rule counts on its own and an entry is kept if any rule keeps it; a kept entry is
//!   never removed, whatever the other rules say.
//!
//! Remove rules, in the spirit of tmpreaper and MythTV's autoexpire:
//! - `--older-than D` removes entries older than D, except the newest entry (an age rule alone
//!   never empties a directory of backups that simply stopped coming);
//! - `--max-total SIZE` removes oldest first until what is left totals at most SIZE;
//! - `--keep-free 15%|200G` removes oldest first until the file system will have that much free,
//!   counting space already on its way back (trash entries still being freed, and what this
//!   plan removes), so it never removes more than needed because freeing lags;
//! - with only keep rules, everything they do not keep is removed (restic's semantics);
//! - a plan that removes every entry is refused unless `allow_empty`.

use std::collections::{HashMap, HashSet};
use std::fmt;

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp};
use serde::Serialize;

use crate::sys::format::{age, age_to_the_second, bytes, bytes_exact, group};

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
    /// This many bytes more than free now (`prune --free`).
    More(u64),
}

/// A span of calendar time as `--keep-within` takes it (restic's rule, reclaim's duration
/// grammar: `1y6mo`, `7d`, `36h`, `90min`): years, months and days on the calendar, then hours
/// and seconds of elapsed time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CalendarSpan {
    pub years: i64,
    pub months: i64,
    pub days: i64,
    pub hours: i64,
    pub seconds: i64,
}

impl CalendarSpan {
    /// The same span with months over 12 as years and seconds over an hour as hours, so it
    /// prints as a person writes it (`1y6mo`, not `18mo`).
    pub fn tidy(self) -> CalendarSpan {
        let months = self.years * 12 + self.months;
        let seconds = self.hours * 3600 + self.seconds;
        CalendarSpan {
            years: months / 12,
            months: months % 12,
            days: self.days,
            hours: seconds / 3600,
            seconds: seconds % 3600,
        }
    }

    /// Elapsed seconds below the calendar's days.
    fn elapsed(&self) -> f64 {
        self.hours as f64 * 3600.0 + self.seconds as f64
    }
}

impl fmt::Display for CalendarSpan {
    /// In the duration grammar: `2y5mo7d3h30min`, zero parts left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, unit) in [
            (self.years, "y"),
            (self.months, "mo"),
            (self.days, "d"),
            (self.hours, "h"),
            (self.seconds / 60, "min"),
            (self.seconds % 60, "s"),
        ] {
            if n != 0 {
                write!(f, "{n}{unit}")?;
            }
        }
        Ok(())
    }
}

/// The local calendar time of an instant (seconds since the epoch), to the second; beyond the
/// calendar's range (years -9999 to 9999) the first or last second it has.
pub fn civil(zone: &TimeZone, t: f64) -> DateTime {
    let ts = Timestamp::from_second(t.floor() as i64).unwrap_or(if t < 0.0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    });
    zone.to_datetime(ts)
}

/// The instant of a local calendar time, in seconds since the epoch. A time that a daylight
/// saving change skips or repeats is taken as Temporal's "compatible" does: later across a
/// gap (by its length), the earlier of the two in a fold.
pub fn instant(zone: &TimeZone, c: DateTime) -> f64 {
    match zone.to_ambiguous_timestamp(c).compatible() {
        Ok(ts) => ts.as_second() as f64,
        Err(_) if c.year() < 0 => f64::NEG_INFINITY,
        Err(_) => f64::INFINITY,
    }
}

/// `c` moved by whole years, months and days on the calendar, the days carried over as Go's
/// `time.AddDate` (restic) does: March 31 minus one month is "February 31", March 3 (or 2 in
/// a leap year). `None` beyond the calendar's range.
pub fn add_date(c: DateTime, years: i64, months: i64, days: i64) -> Option<DateTime> {
    let m0 = i64::from(c.month()) - 1 + months;
    let year = i64::from(c.year()) + years + m0.div_euclid(12);
    let first = Date::new(i16::try_from(year).ok()?, m0.rem_euclid(12) as i8 + 1, 1).ok()?;
    let day = Span::new().try_days(i64::from(c.day()) - 1 + days).ok()?;
    Some(first.checked_add(day).ok()?.to_datetime(c.time()))
}

/// A calendar period of restic's `--keep-hourly` ... `--keep-yearly`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Period {
    Hour,
    Day,
    Week,
    Month,
    Year,
}

impl Period {
    /// The number of the period a local time falls in: one per hour, day, ISO week (Monday to
    /// Sunday), month or year (numbers to tell periods apart, not to count them).
    pub fn bucket(self, c: &DateTime) -> i64 {
        let (year, month) = (i64::from(c.year()), i64::from(c.month()));
        let day = year * 366 + i64::from(c.day_of_year());
        match self {
            Period::Hour => day * 24 + i64::from(c.hour()),
            Period::Day => day,
            Period::Week => {
                let w = c.date().iso_week_date();
                i64::from(w.year()) * 53 + i64::from(w.week())
            }
            Period::Month => year * 12 + month - 1,
            Period::Year => year,
        }
    }

    pub fn flag(self) -> &'static str {
        match self {
            Period::Hour => "--keep-hourly",
            Period::Day => "--keep-daily",
            Period::Week => "--keep-weekly",
            Period::Month => "--keep-monthly",
            Period::Year => "--keep-yearly",
        }
    }

    fn noun(self) -> (&'static str, &'static str) {
        match self {
            Period::Hour => ("hour", "hours"),
            Period::Day => ("day", "days"),
            Period::Week => ("week", "weeks"),
            Period::Month => ("month", "months"),
            Period::Year => ("year", "years"),
        }
    }
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
    pub keep_hourly: Option<usize>,
    pub keep_daily: Option<usize>,
    pub keep_weekly: Option<usize>,
    pub keep_monthly: Option<usize>,
    pub keep_yearly: Option<usize>,
    pub keep_within: Option<CalendarSpan>,
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
        self.keep_last.is_some() || self.keep_within.is_some() || !self.periods().is_empty()
    }

    /// The calendar rules given, finest first (restic's order).
    pub fn periods(&self) -> Vec<(Period, usize)> {
        [
            (Period::Hour, self.keep_hourly),
            (Period::Day, self.keep_daily),
            (Period::Week, self.keep_weekly),
            (Period::Month, self.keep_monthly),
            (Period::Year, self.keep_yearly),
        ]
        .into_iter()
        .filter_map(|(p, n)| Some((p, n?)))
        .collect()
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
    #[error("no rule given (use --keep-last, --keep-hourly, --keep-daily, --keep-weekly, --keep-monthly, --keep-yearly, --keep-within, --older-than, --keep-free or --max-total)")]
    NoRule,
    #[error(
        "this policy would remove {}; refusing (pass --allow-empty if that is what you want)",
        every_entry(*.0)
    )]
    WouldEmpty(usize),
}

/// `the only entry`, `all 3 entries`.
fn every_entry(n: usize) -> String {
    if n == 1 {
        "the only entry".into()
    } else {
        format!("all {} entries", group(n as u64))
    }
}

/// The plan, and whether a free-space target stays unmet (all removable entries removed).
#[derive(Clone, Debug)]
pub struct Plan {
    pub decisions: Vec<Decision>,
    pub unmet: Vec<String>,
}

/// Decides what to remove. `now` is seconds since the epoch; `space` is per `dev`; `zone` says
/// what local time is (calendar rules). The keep rules first (what they keep is never removed),
/// then the remove rules, each on what is left.
pub fn plan(
    entries: &[Candidate],
    policy: &Policy,
    now: f64,
    space: &HashMap<u64, Space>,
    zone: &TimeZone,
) -> Result<Plan, PlanError> {
    if !policy.has_remove_rule() && !policy.has_keep_rule() {
        return Err(PlanError::NoRule);
    }
    let mut p = Planner::new(entries, policy.sort);
    if let Some(n) = policy.keep_last {
        p.keep_last(n);
    }
    p.keep_periods(&policy.periods(), zone);
    if let Some(span) = policy.keep_within {
        p.keep_within(span, now, zone);
    }
    if !policy.has_remove_rule() {
        p.remove_unkept();
    }
    if let Some(age) = policy.older_than {
        p.remove_older_than(age, now);
    }
    if let Some(max) = policy.max_total {
        p.remove_above_total(max);
    }
    let unmet = match policy.keep_free {
        Some(target) => p.remove_for_free_space(target, space),
        None => Vec::new(),
    };
    let decisions = p.finish();
    let removed = decisions.iter().filter(|x| x.remove).count();
    if removed == entries.len() && removed > 0 && !policy.allow_empty {
        return Err(PlanError::WouldEmpty(removed));
    }
    Ok(Plan { decisions, unmet })
}

/// A plan being made: the decision on each entry, and which a keep rule keeps.
struct Planner<'e> {
    entries: &'e [Candidate],
    /// Indices, newest first.
    order: Vec<usize>,
    d: Vec<Decision>,
    kept: Vec<bool>,
}

impl<'e> Planner<'e> {
    fn new(entries: &'e [Candidate], sort: SortBy) -> Self {
        Planner {
            entries,
            order: newest_first(entries, sort),
            d: entries
                .iter()
                .map(|_| Decision {
                    remove: false,
                    reasons: Vec::new(),
                })
                .collect(),
            kept: vec![false; entries.len()],
        }
    }

    fn keep(&mut self, i: usize, why: String) {
        self.kept[i] = true;
        self.d[i].reasons.push(why);
    }

    /// Neither kept by a rule nor removed yet.
    fn removable(&self, i: usize) -> bool {
        !self.kept[i] && !self.d[i].remove
    }

    fn remove(&mut self, i: usize, why: String) {
        self.d[i].remove = true;
        self.d[i].reasons.push(why);
    }

    /// Indices, oldest first.
    fn oldest_first(&self) -> Vec<usize> {
        self.order.iter().rev().copied().collect()
    }

    /// `--keep-last N`.
    fn keep_last(&mut self, n: usize) {
        for i in self.order.clone().into_iter().take(n) {
            let why = if n == 1 {
                "kept: the newest (--keep-last 1)".to_string()
            } else {
                format!("kept: one of the {n} newest (--keep-last {n})")
            };
            self.keep(i, why);
        }
    }

    /// `--keep-hourly/-daily/-weekly/-monthly/-yearly N`, on the local calendar.
    fn keep_periods(&mut self, periods: &[(Period, usize)], zone: &TimeZone) {
        if periods.is_empty() {
            return;
        }
        let local: Vec<DateTime> = self.entries.iter().map(|c| civil(zone, c.mtime)).collect();
        for &(period, n) in periods {
            let (one, many) = period.noun();
            let flag = period.flag();
            for (i, oldest) in keep_periods(&self.order, n, |i| period.bucket(&local[i])) {
                // `oldest` only when fewer than n buckets were found, so n >= 2 there.
                let why = if oldest {
                    format!(
                        "kept: the oldest entry, as fewer than {n} {many} have one ({flag} {n})"
                    )
                } else {
                    format!("kept: newest of its {one} ({flag} {n})")
                };
                self.keep(i, why);
            }
        }
    }

    /// `--keep-within SPAN`.
    fn keep_within(&mut self, span: CalendarSpan, now: f64, zone: &TimeZone) {
        let cut = within_cutoff(self.entries, span, now, zone);
        for i in 0..self.entries.len() {
            match cut {
                Some(cut) if self.entries[i].mtime > cut => self.keep(
                    i,
                    format!(
                        "kept: newer than {}, {span} before the newest entry (--keep-within {span})",
                        crate::sys::format::minute(&civil(zone, cut))
                    ),
                ),
                None => self.keep(
                    i,
                    format!("kept: every entry is in the future (--keep-within {span})"),
                ),
                Some(_) => {}
            }
        }
    }

    /// Keep rules alone: what they do not keep goes (restic's semantics).
    fn remove_unkept(&mut self) {
        for i in self.order.clone() {
            if self.removable(i) {
                self.remove(i, "removed: no keep rule keeps it".into());
            }
        }
    }

    /// `--older-than AGE`: never the newest entry.
    fn remove_older_than(&mut self, age: f64, now: f64) {
        let newest = self.order.first().copied();
        for i in self.order.clone() {
            let old = now - self.entries[i].mtime;
            if old > age && Some(i) != newest && self.removable(i) {
                let (a, o) = two_ages(age, old);
                self.remove(
                    i,
                    format!("removed: older than {a} (age {o}; --older-than)"),
                );
            } else if old > age && Some(i) == newest && !self.kept[i] {
                self.d[i]
                    .reasons
                    .push("kept: the newest entry is never removed for its age alone".into());
            }
        }
    }

    /// `--max-total SIZE`: oldest first until what is left totals at most `max`.
    fn remove_above_total(&mut self, max: u64) {
        let size = |i: usize| self.entries[i].allocated.unwrap_or(0);
        let mut total: u64 = (0..self.entries.len())
            .filter(|&i| !self.d[i].remove)
            .map(size)
            .fold(0, u64::saturating_add);
        for i in self.oldest_first() {
            if total <= max {
                break;
            }
            if self.removable(i) {
                self.remove(
                    i,
                    format!(
                        "removed: the entries total {} > --max-total {}",
                        bytes_exact(total),
                        limit(max, total)
                    ),
                );
                total = total.saturating_sub(self.entries[i].allocated.unwrap_or(0));
            }
        }
    }

    /// `--keep-free 15%|200G`, per file system: oldest first until it will have that much
    /// free, counting what is on its way back. Returns the targets that stay unmet.
    fn remove_for_free_space(
        &mut self,
        target: FreeTarget,
        space: &HashMap<u64, Space>,
    ) -> Vec<String> {
        let mut unmet = Vec::new();
        let mut devs: Vec<u64> = self.entries.iter().map(|c| c.dev).collect();
        devs.sort_unstable();
        devs.dedup();
        for dev in devs {
            let sp = space.get(&dev).copied().unwrap_or_default();
            let want = match target {
                FreeTarget::Bytes(b) => b,
                FreeTarget::Percent(p) => (sp.total as f64 * p / 100.0).ceil() as u64,
                FreeTarget::More(b) => sp.avail.saturating_add(b),
            };
            let wanted = |have: u64| match target {
                FreeTarget::Bytes(_) => limit(want, have),
                FreeTarget::Percent(p) => format!("{p}% = {}", limit(want, have)),
                FreeTarget::More(b) => {
                    format!("{} more than now = {}", bytes_exact(b), limit(want, have))
                }
            };
            let on_dev = |i: &usize| self.entries[*i].dev == dev;
            let freeing: u64 = (0..self.entries.len())
                .filter(|i| on_dev(i) && self.d[*i].remove)
                .map(|i| self.entries[i].allocated.unwrap_or(0))
                .fold(0, u64::saturating_add);
            let mut will_be = sp.avail.saturating_add(sp.pending).saturating_add(freeing);
            let candidates: Vec<usize> = self.oldest_first().into_iter().filter(on_dev).collect();
            for i in candidates {
                if will_be >= want {
                    break;
                }
                if self.removable(i) {
                    self.remove(
                        i,
                        format!(
                            "removed: free space would be {} < --keep-free {}",
                            bytes_exact(will_be),
                            wanted(will_be)
                        ),
                    );
                    will_be = will_be.saturating_add(self.entries[i].allocated.unwrap_or(0));
                }
            }
            if will_be < want {
                unmet.push(format!(
                    "free space will be {} of the {} wanted, with every removable entry removed",
                    bytes_exact(will_be),
                    wanted(will_be)
                ));
            }
        }
        unmet
    }

    /// The decisions, each with a reason (an entry no rule spoke of is kept).
    fn finish(mut self) -> Vec<Decision> {
        for (i, dec) in self.d.iter_mut().enumerate() {
            if !dec.remove && dec.reasons.is_empty() {
                dec.reasons.push(if self.kept[i] {
                    "kept".into()
                } else {
                    "kept: no rule removes it".into()
                });
            }
        }
        self.d
    }
}

/// restic's `--keep-within` limit: the newest entry's time (an entry in the future does not
/// count) minus `span`: years, months and days on the local calendar (carried over as Go's
/// `time.AddDate` does: March 31 minus one month is "February 31", March 3 or 2), then hours,
/// minutes and seconds of elapsed time. Entries strictly newer are kept. `None` when every entry is in the
/// future: restic then measures from the year 1, so all are kept.
pub fn within_cutoff(
    entries: &[Candidate],
    span: CalendarSpan,
    now: f64,
    zone: &TimeZone,
) -> Option<f64> {
    let latest = entries
        .iter()
        .map(|c| c.mtime)
        .filter(|&t| t < now)
        .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))))?;
    let back = add_date(civil(zone, latest), -span.years, -span.months, -span.days);
    let day = back.map_or(f64::NEG_INFINITY, |c| instant(zone, c));
    Some(day + (latest - latest.floor()) - span.elapsed())
}

/// restic's bucket rule: going from newest to oldest (`order`), keeps the first entry of each
/// new bucket until `n` buckets are counted, and the oldest entry too if fewer than `n` were
/// (`true` then, when its bucket already had an entry). With `--sort name` the buckets need
/// not come in time order: each counts once.
fn keep_periods(order: &[usize], n: usize, bucket: impl Fn(usize) -> i64) -> Vec<(usize, bool)> {
    let mut seen: HashSet<i64> = HashSet::new();
    let mut out = Vec::new();
    for (rank, &i) in order.iter().enumerate() {
        if seen.len() == n {
            break;
        }
        if seen.insert(bucket(i)) {
            out.push((i, false));
        } else if rank + 1 == order.len() {
            out.push((i, true));
        }
    }
    out
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

/// A limit compared with `other`: rounded, unless it would look the same as `other` rounded.
fn limit(n: u64, other: u64) -> String {
    if bytes(n) == bytes(other) {
        bytes_exact(n)
    } else {
        bytes(n)
    }
}

/// Two ages that are compared: rounded, unless they would look the same (then to the second).
fn two_ages(limit: f64, age_secs: f64) -> (String, String) {
    let (a, b) = (age(limit), age(age_secs));
    if a == b {
        (age_to_the_second(limit), age_to_the_second(age_secs))
    } else {
        (a, b)
    }
}

#[cfg(test)]
mod tests;
