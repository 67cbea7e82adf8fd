//! Scale tests (slow, `#[ignore]`; CI runs them with `--include-ignored`): a million-entry
//! flat directory, and a 10,000-level chain whose paths are far longer than PATH_MAX, with a
//! small fd budget, default settings, and a low RLIMIT_NOFILE.

use std::time::{Duration, Instant};

use reclaim::workload::{self, Shape, Spec};

use crate::util::{self, parse_report, scratch, Scratch};

const DEEP: usize = 10_000;

/// Runs `reclaim rm -r --json ARGS... target` in the scratch dir (optionally under a shell
/// `ulimit -n`), expects success and a complete removal, returns the report.
fn remove_completely(s: &Scratch, args: &[&str], nofile: Option<u32>) -> util::Report {
    remove_completely_at(s, "target", args, nofile)
}

fn remove_completely_at(
    s: &Scratch,
    target: &str,
    args: &[&str],
    nofile: Option<u32>,
) -> util::Report {
    let start = Instant::now();
    let mut all = vec!["-r", "--json"];
    all.extend_from_slice(args);
    all.push(target);
    let out = match nofile {
        None => s
            .rm(&all)
            .timeout(Duration::from_secs(1200))
            .output()
            .unwrap(),
        Some(n) => {
            // Check the paths as usual, then run the same arguments under the limit.
            let _ = s.rm(&all);
            let script = format!("ulimit -n {n} && exec \"$0\" rm \"$@\"");
            assert_cmd::Command::new("sh")
                .env("RECLAIM_CONFIG", "")
                .env("RECLAIM_UNDER", s.root())
                .current_dir(s.root())
                .arg("-c")
                .arg(script)
                .arg(util::reclaim_bin())
                .args(&all)
                .timeout(Duration::from_secs(1200))
                .output()
                .unwrap()
        }
    };
    let stderr = util::stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert!(!s.exists(target), "{target} left behind");
    let r = parse_report(&out.stdout);
    eprintln!(
        "rm {args:?} (nofile {nofile:?}): {} files, {} dirs in {:.2} s",
        r.files,
        r.dirs,
        start.elapsed().as_secs_f64()
    );
    assert!(
        r.errors.is_empty(),
        "{:?}",
        &r.errors[..r.errors.len().min(10)]
    );
    r
}

#[test]
#[ignore = "slow: one million files"]
fn removes_million_entry_flat_directory() {
    let s = scratch!();
    // On a fresh ext4 image when root (a real htree directory, and no dependence on how many
    // files the host's file system freed recently, which slows inode allocation on ext4
    // without a journal by 10x); else in the scratch dir.
    let volume = util::Volume::ext4(&s, "vol", 8 << 30, 1_200_000)
        .inspect_err(|e| eprintln!("on the scratch dir's file system: {e}"))
        .ok();
    let target = if volume.is_some() {
        "vol/target"
    } else {
        "target"
    };
    let root = s.mkdir(target);
    let spec = Spec {
        shape: Shape::Flat,
        files: 1_000_000,
        file_size: 0,
    };
    let start = Instant::now();
    workload::create(&root, &spec, 2).unwrap();
    eprintln!(
        "created 1,000,000 files in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let r = remove_completely_at(&s, target, &["--threads", "2"], None);
    assert_eq!((r.files, r.dirs), (1_000_000, 1));
    drop(volume);
}

fn deep_chain(s: &Scratch) {
    let root = s.mkdir("target");
    workload::create_deep_chain(&root, DEEP, 100).unwrap();
}

/// Files in the chain: one every 100 levels.
const DEEP_FILES: u64 = (DEEP as u64).div_ceil(100);

#[test]
#[ignore = "slow: 10,000-level tree"]
fn removes_deep_tree_with_fd_budget() {
    let s = scratch!();
    deep_chain(&s);
    let r = remove_completely(&s, &["--fd-budget", "64"], None);
    assert_eq!((r.files, r.dirs), (DEEP_FILES, DEEP as u64 + 1));
}

#[test]
#[ignore = "slow: 10,000-level tree"]
fn removes_deep_tree_with_default_settings() {
    let s = scratch!();
    deep_chain(&s);
    let r = remove_completely(&s, &[], None);
    assert_eq!((r.files, r.dirs), (DEEP_FILES, DEEP as u64 + 1));
}

#[test]
#[ignore = "slow: 10,000-level tree"]
fn removes_deep_tree_under_low_nofile_limit() {
    let s = scratch!();
    deep_chain(&s);
    let r = remove_completely(&s, &["--threads", "2"], Some(128));
    assert_eq!((r.files, r.dirs), (DEEP_FILES, DEEP as u64 + 1));
}

#[test]
#[ignore = "slow: wide and deep tree under a low fd limit"]
fn removes_wide_tree_under_low_nofile_limit() {
    let s = scratch!();
    let root = s.mkdir("target");
    let spec = Spec {
        shape: Shape::Tree {
            fanout: 16,
            per_leaf: 10,
        },
        files: 100_000,
        file_size: 0,
    };
    workload::create(&root, &spec, 2).unwrap();
    let r = remove_completely(&s, &["--threads", "2"], Some(64));
    assert_eq!((r.files, r.dirs), (100_000, spec.dir_count() + 1));
}
