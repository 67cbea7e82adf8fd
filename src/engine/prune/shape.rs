//! Which entries `prune` considers without `--match`: those whose names share the dominant
//! shape, a name with each run of digits stood for by `*` (`db-2026-11-20.tar.gz` is
//! `db-*-*-*.tar.gz`). A directory of dated backups holds one family of names; a `README.txt`
//! or `notes` beside them is not a backup, and taken for one it would be "the newest of its
//! day" and push a real backup out of the keep rules. So the other names are left out (kept,
//! and said), and where no shape dominates (a tie, or no two names alike) nothing is planned:
//! the shapes seen are the error, with the `--match` that chooses. Pure: no I/O.

use std::collections::HashMap;

use serde::Serialize;

/// The shape of a name: each maximal run of ASCII digits replaced by `*` (a shell pattern
/// that `--match` takes as it is).
pub fn of(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('*');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// Names of one shape that were left out: the shape, how many, and the first few names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub shape: String,
    pub count: usize,
    pub first: Vec<String>,
}

/// The most names of a left-out shape listed.
const FIRST: usize = 3;

/// What the names say: the indices of the entries to consider, and the shapes left out.
#[derive(Debug, PartialEq, Eq)]
pub struct Chosen {
    pub considered: Vec<usize>,
    /// The dominant shape, when there were others.
    pub dominant: Option<String>,
    pub left_out: Vec<Shape>,
}

/// Why no shape could be chosen: the shapes seen, most common first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe(.0))]
pub struct NoDominant(pub Vec<Shape>);

fn describe(shapes: &[Shape]) -> String {
    let seen: Vec<String> = shapes
        .iter()
        .take(6)
        .map(|s| format!("'{}' ({})", s.shape, s.count))
        .collect();
    let more = shapes.len().saturating_sub(seen.len());
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let tie = shapes.len() > 1 && shapes[0].count == shapes[1].count && shapes[0].count > 1;
    format!(
        "{}: {}{tail}; say which entries are the backups with --match (e.g. --match '{}'), or \
         --match '*' for every entry",
        if tie {
            "the names have more than one shape, none the most common"
        } else {
            "no two names share a shape"
        },
        seen.join(", "),
        shapes[0].shape
    )
}

/// The entries (by `names`) that share the dominant shape: all of them when every name has
/// the same shape; those of the one shape that more names have than any other, when at least
/// two do; otherwise `NoDominant`.
pub fn choose(names: &[&str]) -> Result<Chosen, NoDominant> {
    let mut by: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, n) in names.iter().enumerate() {
        by.entry(of(n)).or_default().push(i);
    }
    let mut shapes: Vec<(String, Vec<usize>)> = by.into_iter().collect();
    // Most names first; ties by shape, for a stable message.
    shapes.sort_by(|(a, x), (b, y)| y.len().cmp(&x.len()).then_with(|| a.cmp(b)));
    if shapes.len() <= 1 {
        return Ok(Chosen {
            considered: (0..names.len()).collect(),
            dominant: None,
            left_out: Vec::new(),
        });
    }
    let listed = |(shape, ids): &(String, Vec<usize>)| Shape {
        shape: shape.clone(),
        count: ids.len(),
        first: ids
            .iter()
            .take(FIRST)
            .map(|&i| names[i].to_string())
            .collect(),
    };
    let (top, second) = (shapes[0].1.len(), shapes[1].1.len());
    if top < 2 || top == second {
        return Err(NoDominant(shapes.iter().map(listed).collect()));
    }
    let mut considered = shapes[0].1.clone();
    considered.sort_unstable();
    Ok(Chosen {
        considered,
        dominant: Some(shapes[0].0.clone()),
        left_out: shapes[1..].iter().map(listed).collect(),
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn digits_become_stars() {
        assert_eq!(of("db-2026-11-20.tar.gz"), "db-*-*-*.tar.gz");
        assert_eq!(of("backup-00"), "backup-*");
        assert_eq!(of("README.txt"), "README.txt");
        assert_eq!(of("x264-1080p"), "x*-*p");
        assert_eq!(of(""), "");
    }

    /// The directory: eleven dated backups and a README; the README is left out, so
    /// it can be no day's newest entry.
    #[test]
    fn a_readme_beside_dated_backups_is_left_out() {
        let mut names: Vec<String> = (1..=11)
            .map(|d| format!("db-2026-11-{d:02}.tar.gz"))
            .collect();
        names.push("README.txt".into());
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let c = choose(&refs).unwrap();
        assert_eq!(c.considered, (0..11).collect::<Vec<_>>());
        assert_eq!(c.dominant.as_deref(), Some("db-*-*-*.tar.gz"));
        assert_eq!(
            c.left_out,
            [Shape {
                shape: "README.txt".into(),
                count: 1,
                first: vec!["README.txt".into()]
            }]
        );
    }

    #[test]
    fn one_shape_is_every_entry() {
        let c = choose(&["a-1", "a-22", "a-333"]).unwrap();
        assert_eq!(c.considered, [0, 1, 2]);
        assert!(c.left_out.is_empty() && c.dominant.is_none());
        assert_eq!(choose(&[]).unwrap().considered, Vec::<usize>::new());
        assert_eq!(choose(&["only"]).unwrap().considered, [0]);
    }

    #[test]
    fn a_tie_or_no_family_is_refused_with_the_shapes_seen() {
        let e = choose(&["db-1.tar", "db-2.tar", "app-1.log", "app-2.log"]).unwrap_err();
        assert_eq!(e.0.len(), 2);
        let msg = e.to_string();
        assert!(msg.starts_with("the names have more than one shape, none the most common: "));
        assert!(msg.contains("'app-*.log' (2), 'db-*.tar' (2)"), "{msg}");
        assert!(msg.contains("--match 'app-*.log'") && msg.contains("--match '*'"));
        let e = choose(&["alpha", "beta", "gamma"]).unwrap_err();
        assert!(
            e.to_string().starts_with("no two names share a shape: "),
            "{e}"
        );
    }

    proptest! {
        /// Whatever stray names lie beside a family of dated names that outnumbers them, no
        /// stray is considered and every dated name is.
        #[test]
        fn strays_beside_more_dated_names_are_never_considered(
            dates in prop::collection::btree_set((2000u32..2100, 1u32..13, 1u32..29), 2..40),
            strays in prop::collection::btree_set("[A-Za-z_.]{1,12}", 0..4),
        ) {
            let mut names: Vec<String> = dates
                .iter()
                .map(|(y, m, d)| format!("db-{y}-{m:02}-{d:02}.tar.gz"))
                .collect();
            let dated = names.len();
            prop_assume!(strays.len() < dated);
            names.extend(strays.iter().cloned());
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let c = choose(&refs).unwrap();
            prop_assert_eq!(c.considered, (0..dated).collect::<Vec<_>>());
        }

        /// Whatever the names, a considered entry shares its shape with every other considered
        /// one, and a refusal lists every shape seen.
        #[test]
        fn considered_entries_share_one_shape(names in prop::collection::vec("[a-c0-9.-]{0,6}", 0..30)) {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            match choose(&refs) {
                Ok(c) => {
                    let shapes: std::collections::HashSet<String> =
                        c.considered.iter().map(|&i| of(refs[i])).collect();
                    prop_assert!(shapes.len() <= 1);
                    let left: usize = c.left_out.iter().map(|s| s.count).sum();
                    prop_assert_eq!(c.considered.len() + left, names.len());
                }
                Err(NoDominant(seen)) => {
                    let total: usize = seen.iter().map(|s| s.count).sum();
                    prop_assert_eq!(total, names.len());
                }
            }
        }
    }
}
