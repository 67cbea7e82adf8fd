//! Pacing of tree removal: `reclaim rm -r` shares an unlink rate limit among its workers,
//! capped by `--iops` and lowered by the pacer when the latency probe sees other I/O hurt.
//! These tests check the cap is honoured (a lower bound on time: the cap may never be
//! exceeded, however fast the machine) and that the report says how the removal was paced.

use std::time::Instant;

use serde_json::Value;

use crate::util::{self, scratch, Scratch};

fn tree(s: &Scratch, files: usize) {
    for d in 0..4 {
        for f in 0..files / 4 {
            s.file(format!("t/d{d}/f{f}"), b"x");
        }
    }
}

#[test]
fn iops_cap_is_never_exceeded() {
    let s = scratch!();
    tree(&s, 400);
    let t0 = Instant::now();
    let out = s
        .rm(&["-r", "--iops", "200", "--json", "t"])
        .output()
        .unwrap();
    let elapsed = t0.elapsed().as_secs_f64();
    util::assert_success(&out);
    assert!(!s.exists("t"));
    // 400 unlinks at 200/s, less a 20 ms burst: at least ~1.9 s.
    assert!(
        elapsed >= 1.8,
        "400 unlinks under --iops 200 took only {elapsed:.2} s"
    );
}

#[test]
fn iops_cap_applies_with_fast_too() {
    let s = scratch!();
    tree(&s, 100);
    let t0 = Instant::now();
    let out = s
        .rm(&["-r", "--fast", "--iops", "100", "t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    assert!(t0.elapsed().as_secs_f64() >= 0.75);
    assert!(!s.exists("t"));
}

#[test]
fn tree_is_governed_only_when_asked_or_on_a_slow_or_shared_file_system() {
    let s = scratch!();
    tree(&s, 200);
    // What the big phase decides (trees this small may stay on one thread: `start.rs`, so it
    // starts at once here). A local SSD is not governed by default (issue 2's speed).
    let out = s
        .rm(&[
            "-r",
            "--json",
            "--start-pool",
            "--profile",
            "local-ssd",
            "t",
        ])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("pace").is_none(), "{v}");
    assert_eq!(v["profile"]["class"], "local-ssd", "{v}");
    // Whatever this machine's disk is: a disk that only says it is rotational is governed
    // once the probe confirms it is slow; otherwise nothing is steered.
    tree(&s, 200);
    let out = s
        .rm(&["-r", "--json", "--start-pool", "t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    if v["profile"]["governed"] == false {
        assert!(v.get("pace").is_none(), "{v}");
    }
    // A network file system is governed by default; its workers are measured from 8 (the
    // governor steers a ceiling over what the measurement allows).
    tree(&s, 200);
    let out = s
        .rm(&["-r", "--json", "--start-pool", "--profile", "network", "t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["profile"]["start"], 8, "{v}");
    assert_eq!(v["concurrency"]["start"], 8, "{v}");
    let max = v["profile"]["max_workers"].as_u64().unwrap();
    let workers = v["pace"]["workers_max"]
        .as_u64()
        .unwrap_or_else(|| panic!("no workers in {v}"));
    assert!((1..=max).contains(&workers), "{v}");
    tree(&s, 200);
    let out = s
        .rm(&["-r", "--max-latency", "20ms", "--json", "--start-pool", "t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pace = &v["pace"];
    assert_eq!(pace["max_latency_ms"].as_f64(), Some(20.0), "{v}");
    assert!(pace["windows"].as_u64().is_some(), "{v}");
    assert!(pace["backoffs"].as_u64() <= pace["windows"].as_u64(), "{v}");
    // --fast: no pacing, no report.
    tree(&s, 20);
    let out = s.rm(&["-r", "--fast", "--json", "t"]).output().unwrap();
    util::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("pace").is_none(), "{v}");
}

#[test]
fn zero_iops_is_a_usage_error() {
    let s = scratch!();
    tree(&s, 4);
    let out = s.rm(&["-r", "--iops", "0", "t"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--iops"));
    assert!(s.exists("t"));
}
