//! How many workers a removal keeps in flight (issue 24; docs/ARCHITECTURE.md): measured from where
//! the file system's profile starts, said in `--json` and `-v`, pinned by `--threads`. (On
//! network file systems, and directories listed again when a listing skipped entries:
//! `netfs.rs`.)

use serde_json::Value;

use crate::util::{self, scratch, Scratch};

fn tree(s: &Scratch, dirs: usize, files: usize) {
    for d in 0..dirs {
        for f in 0..files {
            s.file(format!("t/d{d}/f{f}"), b"");
        }
    }
}

#[test]
fn concurrency_is_measured_and_said() {
    let s = scratch!();
    tree(&s, 20, 100);
    // The big phase from the first (a tree this small may stay on one thread: `start.rs`).
    let out = s
        .rm(&["-r", "--json", "--start-pool", "t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v: Value = util::json_object(&out.stdout);
    assert!(!s.exists("t"));
    let c = &v["concurrency"];
    assert_eq!(c["rule"], "measured", "{v}");
    assert_eq!(c["start"], v["profile"]["start"], "{v}");
    assert_eq!(c["max"], v["profile"]["max_workers"], "{v}");
    let chosen = c["chosen"].as_u64().unwrap();
    assert!(chosen >= 1 && chosen <= c["max"].as_u64().unwrap(), "{v}");
    assert!(c["why"].as_str().is_some_and(|w| !w.is_empty()), "{v}");
    assert!(c["changes"].is_array(), "{v}");
    // -v says it in the summary.
    tree(&s, 2, 10);
    let out = s.rm(&["-r", "-v", "--start-pool", "t"]).output().unwrap();
    util::assert_success(&out);
    let err = util::stderr_of(&out);
    assert!(err.contains("\n  file system: "), "{err}");
    assert!(
        err.contains(" worker, measured (")
            || err.contains(" workers, measured (")
            || err.contains(" worker, as the ")
            || err.contains(" workers, as the "),
        "{err}"
    );
}

#[test]
fn threads_pins_the_concurrency() {
    let s = scratch!();
    tree(&s, 10, 50);
    // Not governed (the latency governor may hold a pinned count lower, and says so).
    let out = s
        .rm(&[
            "-r",
            "--json",
            "--threads",
            "3",
            "--profile",
            "local-ssd",
            "--start-pool",
            "t",
        ])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v: Value = util::json_object(&out.stdout);
    let c = &v["concurrency"];
    assert_eq!(c["rule"], "pinned", "{v}");
    assert_eq!(c["chosen"], 3, "{v}");
    assert_eq!(c["final"], 3, "{v}");
    assert_eq!(c["max"], 3, "{v}");
    assert_eq!(c["why"], "--threads 3", "{v}");
    assert_eq!(c["changes"].as_array().map(Vec::len), Some(0), "{v}");
    assert!(!s.exists("t"));
}

#[test]
fn a_selection_is_measured_by_its_own_operations() {
    // The field report's `--name` in one large directory (with `--json`, each entry is stated
    // for the bytes it frees): its stats and unlinks are what the rule measures (they were
    // not counted, and the rule judged nothing: no round trip, no rate, no change).
    let s = scratch!();
    let d = s.mkdir("logs");
    for i in 0..60_000 {
        std::fs::File::create(d.join(format!("test{i}.txt"))).unwrap();
    }
    s.file("logs/keep.log", "");
    let out = s
        .rm(&["-r", "--json", "--name", "test*.txt", "logs"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v: Value = util::json_object(&out.stdout);
    assert_eq!(v["files"], 60_000, "{v}");
    assert!(s.exists("logs/keep.log"));
    let c = &v["concurrency"];
    assert!(c["op_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{v}");
    assert!(c["ops_per_s"].as_f64().is_some_and(|x| x > 0.0), "{v}");
}

/// On a terminal the summary says what was done, how fast and what is left, in the user's
/// words; how (the file system's profile, the workers) only with `-v` (and in `--json`).
#[test]
fn the_summary_on_a_terminal_says_what_not_how_unless_verbose() {
    let s = scratch!();
    for (flag, how) in [("", false), ("-v", true)] {
        tree(&s, 20, 100);
        // The pool from the first, so what -v says does not depend on how fast the tree goes.
        let seen = util::on_a_terminal(&s, &format!("rm -r --start-pool {flag} t >/dev/null"));
        assert!(
            seen.contains("removed 2,000 files and 21 directories"),
            "{seen}"
        );
        for detail in ["file system: ", " worker"] {
            assert_eq!(seen.contains(detail), how, "{flag:?}: {detail:?} in {seen}");
        }
        assert!(how || !seen.contains("profile"), "{seen}");
        assert!(!seen.contains("-/-"), "{seen}");
    }
}

/// A mount point named as a tree is its own file system: its profile is the mount's (tmpfs
/// here), not its parent's; a directory below it says the same.
#[test]
fn a_mount_point_named_as_a_tree_has_its_own_profile() {
    let s = scratch!();
    util::require_root!();
    let _m = util::or_skip!(util::Volume::tmpfs(&s, "m"));
    for d in 0..20 {
        for f in 0..100 {
            s.file(format!("m/sub/d{d}/f{f}"), b"");
        }
    }
    let parent = util::stdout_of(
        &s.cmd(&["scan", "--no-estimate", "--json", "."])
            .output()
            .unwrap(),
    );
    let parent_fs = util::json_object(parent.as_bytes())["profile"]["fs_type"].clone();
    assert_ne!(
        parent_fs, "tmpfs",
        "the scratch directory is on another file system"
    );
    for arg in ["m", "m/sub"] {
        let out = s
            .rm(&["-r", "--dry-run", "--json", "--start-pool", arg])
            .output()
            .unwrap();
        let v = util::json_object(&out.stdout);
        assert_eq!(v["profile"]["fs_type"], "tmpfs", "{arg}: {v}");
        assert_eq!(v["profile"]["class"], "memory", "{arg}: {v}");
    }
}
