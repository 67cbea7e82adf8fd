//! The plan never violates a keep rule, whatever the combination of rules and entries.

use super::*;
use proptest::prelude::*;

const DAY: f64 = 86_400.0;
const NOW: f64 = 1_795_000_000.0;

fn cand(name: &str, age_days: f64, size: u64) -> Candidate {
    let mtime = NOW - age_days * DAY;
    let (day, week) = local_day_week(mtime);
    Candidate {
        name: name.into(),
        mtime,
        allocated: Some(size),
        dev: 1,
        day,
        week,
    }
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
fn civil_days_match_the_epoch() {
    assert_eq!(days_from_civil(1970, 1, 1), 0);
    assert_eq!(days_from_civil(2000, 3, 1), 11_017);
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
        prop::option::of(0usize..6),
        prop::option::of(0usize..6),
        prop::option::of(0usize..4),
        prop::option::of(0.0f64..30.0),
        prop::option::of(prop_oneof![
            (0.0f64..100.0).prop_map(FreeTarget::Percent),
            (0u64..3000).prop_map(FreeTarget::Bytes)
        ]),
        prop::option::of(0u64..2000),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(kl, kd, kw, ot, kf, mt, by_name, allow_empty)| Policy {
            keep_last: kl,
            keep_daily: kd,
            keep_weekly: kw,
            older_than: ot.map(|d| d * DAY),
            keep_free: kf,
            max_total: mt,
            sort: if by_name { SortBy::Name } else { SortBy::Mtime },
            allow_empty,
        })
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
        // keep-daily / weekly: the newest of each of the N newest buckets stays.
        for (n, key) in [
            (pol.keep_daily, &(|c: &Candidate| c.day.0 as i64 * 1000 + c.day.1 as i64) as &dyn Fn(&Candidate) -> i64),
            (pol.keep_weekly, &|c: &Candidate| c.week),
        ] {
            let Some(n) = n else { continue };
            let mut seen = Vec::new();
            for &i in &order {
                let k = key(&e[i]);
                if !seen.contains(&k) {
                    if seen.len() == n { break; }
                    seen.push(k);
                    prop_assert!(!p.decisions[i].remove, "bucket keeper {} removed", e[i].name);
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
