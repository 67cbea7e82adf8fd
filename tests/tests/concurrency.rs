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
    let out = s.rm(&["-r", "--json", "t"]).output().unwrap();
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
    let out = s.rm(&["-r", "-v", "t"]).output().unwrap();
    util::assert_success(&out);
    let err = util::stderr_of(&out);
    assert!(err.contains("\n  concurrency: "), "{err}");
    assert!(err.contains("measured (started at"), "{err}");
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
