use std::time::{Duration, SystemTime};

use rustix::fs::FileType;

use super::*;

fn sel(spec: Spec) -> Selection {
    Selection::new(
        &spec,
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000),
    )
    .unwrap()
}

fn here(depth: u32, carried: bool, rel: &str) -> Here {
    Here {
        depth,
        carried,
        rel: Some(rel.as_bytes().to_vec()),
    }
}

fn file(size: u64, secs_ago: i64) -> Stat {
    Stat {
        kind: FileType::RegularFile,
        size,
        uid: 1000,
        gid: 1000,
        time: Some((1_000_000_000 - secs_ago, 0)),
        allocated: 4096,
        nlink: 1,
        counted: true,
    }
}

#[test]
fn names_choose_and_directories_carry() {
    let s = sel(Spec {
        names: vec!["cache".into()],
        ..Spec::default()
    });
    let top = here(1, false, "");
    assert_eq!(
        s.place(&top, b"cache", FileType::RegularFile),
        Place::Chosen
    );
    assert_eq!(s.place(&top, b"other", FileType::RegularFile), Place::Out);
    assert_eq!(s.descend(&top, b"cache"), Some(true));
    assert_eq!(s.descend(&top, b"src"), Some(false));
    // Inside a carried directory everything is carried.
    assert_eq!(
        s.place(&here(2, true, "cache"), b"x", FileType::Unknown),
        Place::Carried
    );
}

#[test]
fn empty_and_type_without_names_carry_nothing() {
    let s = sel(Spec {
        types: parse_types("d").unwrap(),
        ..Spec::default()
    });
    assert_eq!(s.descend(&here(1, false, ""), b"a"), Some(false));
    assert_eq!(
        s.place(&here(1, false, ""), b"f", FileType::RegularFile),
        Place::Out
    );
    assert_eq!(
        s.place(&here(1, false, ""), b"f", FileType::Unknown),
        Place::ChosenIfType
    );
    let s = sel(Spec {
        names: vec!["*".into()],
        empty: true,
        ..Spec::default()
    });
    assert_eq!(s.descend(&here(1, false, ""), b"a"), Some(false));
}

#[test]
fn ages_are_exact_and_guard_carried_entries() {
    let day = 86_400;
    let s = sel(Spec {
        names: vec!["cache".into()],
        older_than: Some(Duration::from_secs(30 * day as u64)),
        ..Spec::default()
    });
    // 30 days to the second: at the cutoff it goes, a second younger it stays.
    assert!(s.attributes(&file(1, 30 * day), true));
    assert!(!s.attributes(&file(1, 30 * day - 1), true));
    let mut d = file(4096, 40 * day);
    d.kind = FileType::Directory;
    assert!(s.attributes(&d, true));
}

#[test]
fn depth_exclusion_and_paths() {
    let s = sel(Spec {
        paths: vec!["logs/*.gz".into()],
        exclude: vec![crate::engine::glob::exclude::parse("keep").unwrap()],
        max_depth: Some(2),
        ..Spec::default()
    });
    assert_eq!(
        s.place(&here(2, false, "logs"), b"a.gz", FileType::RegularFile),
        Place::Chosen
    );
    assert_eq!(
        s.place(&here(3, false, "x/logs"), b"a.gz", FileType::RegularFile),
        Place::Out
    );
    assert_eq!(
        s.place(&here(2, false, "logs"), b"keep", FileType::RegularFile),
        Place::Excluded
    );
    assert_eq!(s.descend(&here(1, false, ""), b"keep"), None);
    // At the last depth a directory that cannot be chosen is not entered.
    assert_eq!(s.descend(&here(2, false, "logs"), b"sub"), None);
}

#[test]
fn sizes_owners_and_impossible_combinations() {
    let s = sel(Spec {
        larger_than: Some(10),
        smaller_than: Some(100),
        users: vec![1000],
        ..Spec::default()
    });
    assert!(s.attributes(&file(50, 0), false));
    assert!(!s.attributes(&file(10, 0), false));
    assert!(!s.attributes(&file(100, 0), false));
    let mut other = file(50, 0);
    other.uid = 0;
    assert!(!s.attributes(&other, false));
    let bad = Spec {
        larger_than: Some(10),
        smaller_than: Some(11),
        ..Spec::default()
    };
    assert!(Selection::new(&bad, SystemTime::now()).is_err());
    let bad = Spec {
        older_than: Some(Duration::from_secs(10)),
        newer_than: Some(Duration::from_secs(5)),
        ..Spec::default()
    };
    assert!(Selection::new(&bad, SystemTime::now()).is_err());
    assert!(parse_types("f,x").is_err());
}

#[test]
fn values_naming_no_time_or_type_are_said_with_the_choices() {
    assert_eq!(
        TimeField::parse("mtimes").unwrap_err().to_string(),
        "'mtimes' is not a time (use mtime, atime, ctime or btime)"
    );
    assert_eq!(
        parse_types("f, x").unwrap_err().to_string(),
        "'x' is not a type (use f, d, l, p, s, b, c, comma-separated)"
    );
}
