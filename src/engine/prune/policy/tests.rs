//! The plan never violates a keep rule, whatever the combination of rules and entries; the
//! keep rules decide as restic's `forget` does on the worked examples of its documentation.

use super::*;
use proptest::prelude::*;

const DAY: f64 = 86_400.0;
const NOW: f64 = 1_795_000_000.0;

/// Local time in these tests: a fixed zone an hour east of UTC, so that a calendar computed in
/// UTC by mistake would put some entries in the wrong day.
const ZONE: TimeZone = TimeZone::fixed(jiff::tz::offset(1));

fn cand(name: &str, age_days: f64, size: u64) -> Candidate {
    Candidate {
        name: name.into(),
        mtime: NOW - age_days * DAY,
        allocated: Some(size),
        dev: 1,
    }
}

fn plan(
    entries: &[Candidate],
    policy: &Policy,
    now: f64,
    space: &HashMap<u64, Space>,
) -> Result<Plan, PlanError> {
    super::plan(entries, policy, now, space, &ZONE)
}

fn removed(p: &Plan, entries: &[Candidate]) -> Vec<String> {
    let mut v: Vec<String> = p
        .decisions
        .iter()
        .zip(entries)
        .filter(|(d, _)| d.remove)
        .map(|(_, c)| c.name.clone())
        .collect();
    v.sort();
    v
}

fn space(total: u64, avail: u64, pending: u64) -> HashMap<u64, Space> {
    HashMap::from([(
        1,
        Space {
            total,
            avail,
            pending,
        },
    )])
}

#[test]
fn keep_last_then_older_than() {
    let e: Vec<Candidate> = (0..6)
        .map(|i| cand(&format!("b{i}"), i as f64, 10))
        .collect();
    let p = plan(
        &e,
        &Policy {
            keep_last: Some(2),
            older_than: Some(3.5 * DAY),
            ..Policy::default()
        },
        NOW,
        &HashMap::new(),
    )
    .unwrap();
    assert_eq!(removed(&p, &e), ["b4", "b5"]);
}

#[test]
fn older_than_never_removes_the_newest() {
    let e: Vec<Candidate> = (0..3)
        .map(|i| cand(&format!("b{i}"), 10.0 + i as f64, 10))
        .collect();
    let p = plan(
        &e,
        &Policy {
            older_than: Some(DAY),
            ..Policy::default()
        },
        NOW,
        &HashMap::new(),
    )
    .unwrap();
    assert_eq!(removed(&p, &e), ["b1", "b2"]);
    assert!(p.decisions[0].reasons[0].contains("newest"));
}

#[test]
fn keep_free_counts_pending_and_stops_when_met() {
    // 100 total, 10 free, 20 already pending in the trash: 30 of the 50 wanted; each entry 10.
    let e: Vec<Candidate> = (0..5)
        .map(|i| cand(&format!("b{i}"), i as f64, 10))
        .collect();
    let p = plan(
        &e,
        &Policy {
            keep_free: Some(FreeTarget::Percent(50.0)),
            ..Policy::default()
        },
        NOW,
        &space(100, 10, 20),
    )
    .unwrap();
    assert_eq!(removed(&p, &e), ["b3", "b4"], "oldest two, and no more");
    assert!(p.unmet.is_empty());
}

#[test]
fn keep_free_says_when_it_cannot_be_met() {
    let e: Vec<Candidate> = (0..3)
        .map(|i| cand(&format!("b{i}"), i as f64, 10))
        .collect();
    let p = plan(
        &e,
        &Policy {
            keep_free: Some(FreeTarget::Bytes(1000)),
            keep_last: Some(1),
            ..Policy::default()
        },
        NOW,
        &space(2000, 0, 0),
    )
    .unwrap();
    assert_eq!(removed(&p, &e), ["b1", "b2"]);
    assert_eq!(p.unmet.len(), 1);
}

#[test]
fn refuses_to_empty_without_allow_empty() {
    let e: Vec<Candidate> = (0..3)
        .map(|i| cand(&format!("b{i}"), i as f64, 10))
        .collect();
    let pol = Policy {
        max_total: Some(0),
        ..Policy::default()
    };
    assert_eq!(
        plan(&e, &pol, NOW, &HashMap::new()).unwrap_err(),
        PlanError::WouldEmpty(3)
    );
    let pol = Policy {
        allow_empty: true,
        ..pol
    };
    assert_eq!(
        removed(&plan(&e, &pol, NOW, &HashMap::new()).unwrap(), &e).len(),
        3
    );
}

#[test]
fn keep_rules_alone_remove_the_rest() {
    let e: Vec<Candidate> = (0..5)
        .map(|i| cand(&format!("b{i}"), i as f64, 10))
        .collect();
    let p = plan(
        &e,
        &Policy {
            keep_last: Some(3),
            ..Policy::default()
        },
        NOW,
        &HashMap::new(),
    )
    .unwrap();
    assert_eq!(removed(&p, &e), ["b3", "b4"]);
}

#[test]
fn sort_by_name_orders_dated_names() {
    // mtimes say the opposite of the names (copied backups): --sort name trusts the names.
    let mut e = vec![
        cand("backup-2026-11-01", 0.0, 1),
        cand("backup-2026-11-02", 1.0, 1),
        cand("backup-2026-11-03", 2.0, 1),
    ];
    e.reverse();
    let p = plan(
        &e,
        &Policy {
            keep_last: Some(1),
            sort: SortBy::Name,
            ..Policy::default()
        },
        NOW,
        &HashMap::new(),
    )
    .unwrap();
    assert_eq!(removed(&p, &e), ["backup-2026-11-01", "backup-2026-11-02"]);
}

#[test]
fn no_rule_is_an_error() {
    let e = vec![cand("a", 1.0, 1)];
    assert_eq!(
        plan(&e, &Policy::default(), NOW, &HashMap::new()).unwrap_err(),
        PlanError::NoRule
    );
}

#[test]
fn calendar_moves_carry_over_as_go_does() {
    use jiff::civil::date;
    let at = |y, m, d| date(y, m, d).at(11, 0, 0, 0);
    // March 31 minus a month is "February 31": March 3, or March 2 in a leap year.
    assert_eq!(add_date(at(2019, 3, 31), 0, -1, 0), Some(at(2019, 3, 3)));
    assert_eq!(add_date(at(2020, 3, 31), 0, -1, 0), Some(at(2020, 3, 2)));
    assert_eq!(
        add_date(at(2020, 1, 15), -1, -13, -15),
        Some(at(2017, 11, 30))
    );
    assert_eq!(add_date(at(2019, 12, 31), 0, 0, 1), Some(at(2020, 1, 1)));
    assert_eq!(add_date(at(2019, 1, 1), -20_000, 0, 0), None);
    // Beyond the calendar, every entry is within the span.
    let e = vec![cand("a", 1.0, 1)];
    let span = CalendarSpan {
        years: 1_000_000,
        ..CalendarSpan::default()
    };
    assert_eq!(within_cutoff(&e, span, NOW, &ZONE), Some(f64::NEG_INFINITY));
}

/// The messages of the plan: singular and plural, both numbers where a rounded pair would
/// look equal.
#[test]
fn messages_count_and_compare_clearly() {
    assert_eq!(
        PlanError::WouldEmpty(1).to_string(),
        "this policy would remove the only entry; refusing (pass --allow-empty if that is what you want)"
    );
    assert!(PlanError::WouldEmpty(1234)
        .to_string()
        .starts_with("this policy would remove all 1,234 entries;"));
    assert_eq!(limit(2 << 30, 1_987_654_321), "2.0 GiB");
    assert_eq!(
        limit(2_040_109_466, 2_040_109_465),
        "1.9 GiB (2,040,109,466 B)"
    );
    assert_eq!(
        two_ages(3.0 * DAY, 3.0 * DAY + 312.0),
        ("3d 00:00:00".into(), "3d 00:05:12".into())
    );
    assert_eq!(two_ages(3.0 * DAY, 5.0 * DAY), ("3d".into(), "5d".into()));
    // One GiB wanted, 1,073,741,823 B free: both read "1.0 GiB" rounded, so the reason shows
    // the exact numbers (the "1.9 GiB < --keep-free 1.9 GiB").
    let e: Vec<Candidate> = (0..2)
        .map(|i| cand(&format!("b{i}"), i as f64, 10))
        .collect();
    let p = plan(
        &e,
        &Policy {
            keep_free: Some(FreeTarget::Bytes(1 << 30)),
            ..Policy::default()
        },
        NOW,
        &space(4 << 30, (1 << 30) - 1, 0),
    )
    .unwrap();
    assert_eq!(
        p.decisions[1].reasons,
        ["removed: free space would be 1.0 GiB (1,073,741,823 B) < --keep-free 1.0 GiB (1,073,741,824 B)"]
    );
    let p = plan(
        &e,
        &Policy {
            keep_free: Some(FreeTarget::Percent(25.0)),
            ..Policy::default()
        },
        NOW,
        &space(4 << 30, (1 << 30) - 1, 0),
    )
    .unwrap();
    assert_eq!(
        p.decisions[1].reasons,
        ["removed: free space would be 1.0 GiB (1,073,741,823 B) < --keep-free 25% = 1.0 GiB (1,073,741,824 B)"]
    );
    let p = plan(
        &e,
        &Policy {
            keep_last: Some(1),
            keep_daily: Some(1),
            ..Policy::default()
        },
        NOW,
        &HashMap::new(),
    )
    .unwrap();
    assert_eq!(
        p.decisions[0].reasons,
        [
            "kept: the newest (--keep-last 1)",
            "kept: newest of its day (--keep-daily 1)"
        ]
    );
    assert_eq!(p.decisions[1].reasons, ["removed: no keep rule keeps it"]);
}

#[test]
fn local_zone_round_trips() {
    let local = crate::sys::format::local_zone();
    for t in [0.0, 1_000_000_000.0, NOW, NOW + 0.5] {
        let c = civil(&local, t);
        assert_eq!(instant(&local, c), t.floor(), "{c}");
    }
}

#[test]
fn daylight_saving_changes_resolve_as_temporal_does() {
    use jiff::civil::date;
    let Ok(berlin) = TimeZone::get("Europe/Berlin") else {
        crate::sys::testing::skipped(
            "daylight_saving_changes_resolve_as_temporal_does",
            "no time zone database here",
        );
        return;
    };
    // 2019-03-31 02:30 does not exist in Berlin (02:00 CET became 03:00 CEST): 03:30 CEST.
    let gap = instant(&berlin, date(2019, 3, 31).at(2, 30, 0, 0));
    assert_eq!(civil(&berlin, gap), date(2019, 3, 31).at(3, 30, 0, 0));
    // 2019-10-27 02:30 happened twice: the first, in CEST (00:30 UTC).
    let fold = instant(&berlin, date(2019, 10, 27).at(2, 30, 0, 0));
    assert_eq!(fold, 1_572_136_200.0);
    // A day bucket is a local day: 23:30 and 00:30 in Berlin are two days (both 2019-10-26
    // in UTC).
    let midnight = 1_572_127_200.0;
    let day = |t| Period::Day.bucket(&civil(&berlin, t));
    assert_ne!(day(midnight - 1800.0), day(midnight + 1800.0));
    assert_eq!(day(midnight + 1800.0), day(midnight + 23.0 * 3600.0));
}

#[test]
fn iso_weeks_run_monday_to_sunday_across_new_year() {
    let week = |y, m, d| Period::Week.bucket(&jiff::civil::date(y, m, d).at(12, 0, 0, 0));
    // 2019-12-30 is the Monday of ISO week 2020-W01, which ends on Sunday 2020-01-05.
    assert_eq!(week(2019, 12, 30), week(2020, 1, 5));
    assert_ne!(week(2019, 12, 29), week(2019, 12, 30));
    assert_ne!(week(2020, 1, 5), week(2020, 1, 6));
}

// restic's worked examples (doc/060_forget.rst, "Removing snapshots according to a policy"),
// as tables: the snapshots' local times, the policy, the time forget runs, and the snapshots
// restic keeps. Each entry is named after its time.

/// `"2019-11-17 11:00"` (or with `:SS`) in the test zone; fields may carry over
/// (`2019-02-31`).
fn at(s: &str) -> f64 {
    let n: Vec<i64> = s
        .split(['-', ' ', ':'])
        .map(|x| x.parse().unwrap_or_else(|_| panic!("{s}")))
        .collect();
    let second = n.get(5).copied().unwrap_or(0);
    let start = jiff::civil::date(n[0] as i16, 1, 1).at(n[3] as i8, n[4] as i8, second as i8, 0);
    let c = add_date(start, 0, n[1] - 1, n[2] - 1).unwrap_or_else(|| panic!("{s}"));
    instant(&ZONE, c)
}

/// `2019-11-17 11:00` of an instant in the test zone.
fn name(t: f64) -> String {
    crate::sys::format::minute(&civil(&ZONE, t))
}

/// Every day at `hh:mm` from `first` to `last` (dates `YYYY-MM-DD`), as names.
fn daily(first: &str, last: &str, hhmm: &str) -> Vec<String> {
    let (a, b) = (
        at(&format!("{first} {hhmm}")),
        at(&format!("{last} {hhmm}")),
    );
    let mut v = Vec::new();
    let mut c = civil(&ZONE, a);
    while instant(&ZONE, c) <= b {
        v.push(name(instant(&ZONE, c)));
        c = add_date(c, 0, 0, 1).expect("in the calendar");
    }
    v
}

struct Case {
    what: &'static str,
    snapshots: Vec<String>,
    policy: Policy,
    now: &'static str,
    keep: Vec<String>,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The twelve Sundays of the example: 2019-09-01 to 2019-11-17, 11:00.
fn sundays() -> Vec<String> {
    let first = at("2019-09-01 11:00");
    (0..12)
        .map(|w| name(first + (w * 7) as f64 * DAY))
        .collect()
}

fn restic_cases() -> Vec<Case> {
    let century = daily("1919-11-18", "2019-11-17", "11:00");
    let mut century_keep = strings(&[
        // --keep-daily 7: the last seven days.
        "2019-11-11 11:00",
        "2019-11-12 11:00",
        "2019-11-13 11:00",
        "2019-11-14 11:00",
        "2019-11-15 11:00",
        "2019-11-16 11:00",
        "2019-11-17 11:00",
        // --keep-weekly 5: four more Sundays ("the 7 dailies already include 1 weekly").
        "2019-11-10 11:00",
        "2019-11-03 11:00",
        "2019-10-27 11:00",
        "2019-10-20 11:00",
        // --keep-monthly 12: eleven more month ends (November's newest is already kept).
        "2019-10-31 11:00",
        "2019-09-30 11:00",
        "2019-08-31 11:00",
        "2019-07-31 11:00",
        "2019-06-30 11:00",
        "2019-05-31 11:00",
        "2019-04-30 11:00",
        "2019-03-31 11:00",
        "2019-02-28 11:00",
        "2019-01-31 11:00",
        "2018-12-31 11:00",
    ]);
    // --keep-yearly 75: 2019 to 1945; the newest of 2019 and of 2018 are already kept.
    century_keep.extend((1945..=2017).map(|y| format!("{y}-12-31 11:00")));
    vec![
        Case {
            what: "one backup every Sunday for 12 weeks; --keep-daily 4 keeps the last four",
            snapshots: sundays(),
            policy: Policy {
                keep_daily: Some(4),
                ..Policy::default()
            },
            now: "2019-11-18 09:00",
            keep: strings(&[
                "2019-10-27 11:00",
                "2019-11-03 11:00",
                "2019-11-10 11:00",
                "2019-11-17 11:00",
            ]),
        },
        Case {
            what: "one backup a day for 100 years; --keep-daily 7 --keep-weekly 5 \
                   --keep-monthly 12 --keep-yearly 75",
            snapshots: century,
            policy: Policy {
                keep_daily: Some(7),
                keep_weekly: Some(5),
                keep_monthly: Some(12),
                keep_yearly: Some(75),
                ..Policy::default()
            },
            now: "2019-11-18 09:00",
            keep: century_keep,
        },
        Case {
            what: "--keep-within 2y5m7d3h: the two years, five months, seven days and three \
                   hours before the latest snapshot (2017-06-10 08:00 here, not included)",
            snapshots: [
                daily("2016-01-01", "2019-11-17", "11:00"),
                strings(&["2017-06-10 07:00", "2017-06-10 08:00", "2017-06-10 08:01"]),
            ]
            .concat(),
            policy: Policy {
                keep_within: Some(CalendarSpan {
                    years: 2,
                    months: 5,
                    days: 7,
                    hours: 3,
                    seconds: 0,
                }),
                ..Policy::default()
            },
            now: "2019-11-18 09:00",
            keep: [
                strings(&["2017-06-10 08:01"]),
                daily("2017-06-10", "2019-11-17", "11:00"),
            ]
            .concat(),
        },
        Case {
            what: "--keep-within 1mo from March 31: \"February 31\" is March 3, as Go's AddDate",
            snapshots: daily("2019-02-20", "2019-03-31", "11:00"),
            policy: Policy {
                keep_within: Some(CalendarSpan {
                    months: 1,
                    ..CalendarSpan::default()
                }),
                ..Policy::default()
            },
            now: "2019-04-01 00:00",
            keep: daily("2019-03-04", "2019-03-31", "11:00"),
        },
        Case {
            what: "duration options ignore snapshots in the future: the latest is the newest \
                   past one, and the future one is not removed",
            snapshots: [
                daily("2019-11-01", "2019-11-17", "11:00"),
                strings(&["2030-01-01 00:00"]),
            ]
            .concat(),
            policy: Policy {
                keep_within: Some(CalendarSpan {
                    days: 7,
                    ..CalendarSpan::default()
                }),
                ..Policy::default()
            },
            now: "2019-11-18 09:00",
            keep: [
                daily("2019-11-11", "2019-11-17", "11:00"),
                strings(&["2030-01-01 00:00"]),
            ]
            .concat(),
        },
        Case {
            what: "not enough days to keep one for each of --keep-daily 5: the oldest \
                   snapshot is kept additionally",
            snapshots: strings(&[
                "2019-11-15 09:00",
                "2019-11-15 18:00",
                "2019-11-16 09:00",
                "2019-11-16 18:00",
                "2019-11-17 09:00",
                "2019-11-17 18:00",
            ]),
            policy: Policy {
                keep_daily: Some(5),
                ..Policy::default()
            },
            now: "2019-11-18 09:00",
            keep: strings(&[
                "2019-11-15 09:00",
                "2019-11-15 18:00",
                "2019-11-16 18:00",
                "2019-11-17 18:00",
            ]),
        },
        Case {
            what: "weeks are Monday 00:00 to Sunday 23:59",
            snapshots: strings(&[
                "2019-11-10 23:59",
                "2019-11-11 00:00",
                "2019-11-17 23:59",
                "2019-11-18 00:00",
            ]),
            policy: Policy {
                keep_weekly: Some(2),
                ..Policy::default()
            },
            now: "2019-11-19 09:00",
            keep: strings(&["2019-11-17 23:59", "2019-11-18 00:00"]),
        },
        Case {
            what: "hours are :00 to :59, days 00:00 to 23:59, months and years by the \
                   calendar; only periods with a snapshot count",
            snapshots: strings(&[
                "2017-06-01 12:00",
                "2018-12-31 23:59",
                "2019-01-01 00:00",
                "2019-10-31 23:59",
                "2019-11-01 00:00",
                "2019-11-17 10:00",
                "2019-11-17 10:59",
                "2019-11-17 11:00",
            ]),
            policy: Policy {
                keep_hourly: Some(2),
                keep_monthly: Some(2),
                keep_yearly: Some(3),
                ..Policy::default()
            },
            now: "2019-11-18 09:00",
            keep: strings(&[
                // hourly: 11:00 and the newest of the 10 o'clock hour
                "2019-11-17 11:00",
                "2019-11-17 10:59",
                // monthly: November's newest (above) and October's
                "2019-10-31 23:59",
                // yearly: 2019's newest (above), 2018's and 2017's
                "2018-12-31 23:59",
                "2017-06-01 12:00",
            ]),
        },
        Case {
            what: "each rule counts on its own and the results are ORed: --keep-last 2 \
                   --keep-weekly 3 on daily snapshots",
            snapshots: daily("2019-10-28", "2019-11-16", "11:00"),
            policy: Policy {
                keep_last: Some(2),
                keep_weekly: Some(3),
                ..Policy::default()
            },
            now: "2019-11-18 09:00",
            keep: strings(&[
                "2019-11-16 11:00",
                "2019-11-15 11:00",
                "2019-11-10 11:00",
                "2019-11-03 11:00",
            ]),
        },
    ]
}

#[test]
fn keep_rules_decide_as_restic_on_its_documented_examples() {
    for case in restic_cases() {
        let entries: Vec<Candidate> = case
            .snapshots
            .iter()
            .map(|s| Candidate {
                name: s.clone(),
                mtime: at(s),
                allocated: Some(1),
                dev: 1,
            })
            .collect();
        for e in &entries {
            assert_eq!(name(e.mtime), e.name, "the table's times round-trip");
        }
        let pol = Policy {
            allow_empty: true,
            ..case.policy
        };
        let p = plan(&entries, &pol, at(case.now), &HashMap::new()).unwrap();
        let mut kept: Vec<String> = entries
            .iter()
            .zip(&p.decisions)
            .filter(|(_, d)| !d.remove)
            .map(|(e, _)| e.name.clone())
            .collect();
        kept.sort();
        let mut want = case.keep.clone();
        want.sort();
        want.dedup();
        assert_eq!(kept, want, "{}", case.what);
        for (e, d) in entries.iter().zip(&p.decisions) {
            let rule = if d.remove { "removed:" } else { "kept:" };
            assert!(
                d.reasons.iter().any(|r| r.starts_with(rule)),
                "{}: {} {:?}",
                case.what,
                e.name,
                d.reasons
            );
        }
    }
}

#[test]
fn the_oldest_kept_for_unused_counts_says_so() {
    let entries: Vec<Candidate> = ["2019-11-16 09:00", "2019-11-16 18:00", "2019-11-17 18:00"]
        .iter()
        .map(|s| Candidate {
            name: s.to_string(),
            mtime: at(s),
            allocated: Some(1),
            dev: 1,
        })
        .collect();
    let p = plan(
        &entries,
        &Policy {
            keep_daily: Some(5),
            ..Policy::default()
        },
        at("2019-11-18 00:00"),
        &HashMap::new(),
    )
    .unwrap();
    assert_eq!(
        p.decisions[0].reasons,
        ["kept: the oldest entry, as fewer than 5 days have one (--keep-daily 5)"]
    );
    assert_eq!(
        p.decisions[1].reasons,
        ["kept: newest of its day (--keep-daily 5)"]
    );
}

#[test]
fn keep_within_names_its_limit_in_local_time() {
    let entries: Vec<Candidate> = ["2019-11-10 11:00", "2019-11-17 11:00"]
        .iter()
        .map(|s| Candidate {
            name: s.to_string(),
            mtime: at(s),
            allocated: Some(1),
            dev: 1,
        })
        .collect();
    let p = plan(
        &entries,
        &Policy {
            keep_within: Some(CalendarSpan {
                days: 3,
                hours: 2,
                ..CalendarSpan::default()
            }),
            allow_empty: true,
            ..Policy::default()
        },
        at("2019-11-18 00:00"),
        &HashMap::new(),
    )
    .unwrap();
    assert_eq!(
        p.decisions[1].reasons,
        ["kept: newer than 2019-11-14 09:00, 3d2h before the newest entry (--keep-within 3d2h)"]
    );
    assert!(p.decisions[0].remove);
}

fn arb_entries() -> impl Strategy<Value = Vec<Candidate>> {
    prop::collection::vec((0.0f64..40.0, 0u64..100), 1..30).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (age, size))| cand(&format!("e{i:02}"), age, size))
            .collect()
    })
}

fn arb_policy() -> impl Strategy<Value = Policy> {
    (
        (
            prop::option::of(0usize..6),
            prop::option::of(0usize..30),
            prop::option::of(0usize..6),
            prop::option::of(0usize..4),
            prop::option::of(0usize..3),
            prop::option::of(0usize..2),
            prop::option::of((0i64..2, 0i64..3, 0i64..20, 0i64..48)),
        ),
        prop::option::of(0.0f64..30.0),
        prop::option::of(prop_oneof![
            (0.0f64..100.0).prop_map(FreeTarget::Percent),
            (0u64..3000).prop_map(FreeTarget::Bytes),
            (0u64..3000).prop_map(FreeTarget::More)
        ]),
        prop::option::of(0u64..2000),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |((kl, kh, kd, kw, km, ky, kwi), ot, kf, mt, by_name, allow_empty)| Policy {
                keep_last: kl,
                keep_hourly: kh,
                keep_daily: kd,
                keep_weekly: kw,
                keep_monthly: km,
                keep_yearly: ky,
                keep_within: kwi.map(|(years, months, days, hours)| CalendarSpan {
                    years,
                    months,
                    days,
                    hours,
                    seconds: 0,
                }),
                older_than: ot.map(|d| d * DAY),
                keep_free: kf,
                max_total: mt,
                sort: if by_name { SortBy::Name } else { SortBy::Mtime },
                allow_empty,
            },
        )
}

proptest! {
    #[test]
    fn plan_never_violates_a_keep_rule(
        e in arb_entries(),
        pol in arb_policy(),
        avail in 0u64..1000,
        pending in 0u64..500,
    ) {
        let sp = space(2000, avail, pending);
        let Ok(p) = plan(&e, &pol, NOW, &sp) else {
            // Refusals: no rule, or it would remove everything without --allow-empty.
            let all = plan(&e, &Policy { allow_empty: true, ..pol.clone() }, NOW, &sp);
            prop_assert!(!pol.has_keep_rule() && !pol.has_remove_rule()
                || all.is_ok_and(|a| a.decisions.iter().all(|d| d.remove)) && !pol.allow_empty);
            return Ok(());
        };
        let order = newest_first(&e, pol.sort);
        // keep-last: the N newest stay.
        if let Some(n) = pol.keep_last {
            for &i in order.iter().take(n) {
                prop_assert!(!p.decisions[i].remove, "keep-last {} removed {}", n, e[i].name);
            }
        }
        // keep-hourly ... yearly: the newest of each of the N newest periods stays, and the
        // oldest entry too when fewer than N periods have one.
        for (period, n) in pol.periods() {
            let mut seen = Vec::new();
            for &i in &order {
                let k = period.bucket(&civil(&ZONE, e[i].mtime));
                if !seen.contains(&k) {
                    if seen.len() == n { break; }
                    seen.push(k);
                    prop_assert!(!p.decisions[i].remove, "{:?} keeper {} removed", period, e[i].name);
                }
            }
            if seen.len() < n {
                let oldest = *order.last().unwrap();
                prop_assert!(!p.decisions[oldest].remove, "oldest removed under {:?} {}", period, n);
            }
        }
        // keep-within: everything newer than the newest minus the span stays.
        if let Some(span) = pol.keep_within {
            // None: every entry is in the future (not before NOW), and all are kept.
            let cut = within_cutoff(&e, span, NOW, &ZONE).unwrap_or(f64::NEG_INFINITY);
            for (i, c) in e.iter().enumerate() {
                if c.mtime > cut {
                    prop_assert!(!p.decisions[i].remove, "within {} removed {}", span, c.name);
                }
            }
        }
        // Every removal has a reason that names its rule; the newest is never removed by age alone.
        for (i, d) in p.decisions.iter().enumerate() {
            if d.remove {
                prop_assert!(d.reasons.iter().any(|r| r.starts_with("removed:")));
                if Some(&i) == order.first() {
                    prop_assert!(d.reasons.iter().any(|r| !r.contains("older than")),
                        "newest removed for its age alone");
                }
            }
        }
        // Never empty without --allow-empty.
        if !pol.allow_empty {
            prop_assert!(p.decisions.iter().any(|d| !d.remove));
        }
        // Free-space target: removals stop as soon as it is met (none beyond what was
        // needed), unless another rule removed them.
        if let (Some(t), None, None) = (pol.keep_free, pol.older_than, pol.max_total) {
            if pol.has_keep_rule() { return Ok(()); }
            let want = match t {
                FreeTarget::Bytes(b) => b,
                FreeTarget::Percent(x) => (2000.0 * x / 100.0).ceil() as u64,
                FreeTarget::More(b) => avail + b,
            };
            let freed: u64 = p.decisions.iter().zip(&e).filter(|(d, _)| d.remove)
                .map(|(_, c)| c.allocated.unwrap_or(0)).sum();
            let newest_removed = order.iter().find(|&&i| p.decisions[i].remove);
            if let Some(&last) = newest_removed {
                let before = avail + pending + freed - e[last].allocated.unwrap_or(0);
                prop_assert!(before < want, "removed {} though {} >= {}", e[last].name, before, want);
            }
        }
    }
}
